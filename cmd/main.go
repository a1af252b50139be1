/*
Copyright 2026 The paymentjob-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Command manager runs the paymentjob-operator: the controllers that turn
// PaymentJobs into payments at their provider exactly once.
package main

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	// Import all Kubernetes client auth plugins (e.g. Azure, GCP, OIDC, etc.)
	// to ensure that exec-entrypoint and run can make use of them.
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controller"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/egress"
)

var (
	scheme   = runtime.NewScheme()
	setupLog = ctrl.Log.WithName("setup")
)

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(paymentsv1alpha1.AddToScheme(scheme))
}

func main() {
	var (
		metricsAddr          string
		probeAddr            string
		pprofAddr            string
		enableLeaderElection bool
		leaderElectionNS     string
		secureMetrics        bool
		enableHTTP2          bool
		concurrency          int
		qps                  float64
		burst                int
		claimLease           time.Duration
		providerTimeout      time.Duration
		keyRetention         time.Duration
		useLedger            bool
		ledgerRetention      time.Duration
		defaultTTL           int
		insecureHosts        string
		auditInterval        time.Duration
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", "The address the metrics endpoint binds to. "+
		"Use :8443 for HTTPS or :8080 for HTTP, or leave as 0 to disable the metrics service.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "The address the probe endpoint binds to.")
	flag.StringVar(&pprofAddr, "pprof-bind-address", "",
		"The address of Go's pprof endpoints (/debug/pprof), for profiling; empty or 0 disables them. Bind it to 127.0.0.1.")
	flag.BoolVar(&enableLeaderElection, "leader-elect", false,
		"Enable leader election for the manager. Enabling this ensures there is only one active manager.")
	flag.StringVar(&leaderElectionNS, "leader-election-namespace", "",
		"The namespace of the leader election Lease. Defaults to the pod's namespace in a cluster; required outside one.")
	flag.BoolVar(&secureMetrics, "metrics-secure", true,
		"If set, the metrics endpoint is served securely via HTTPS, with authentication and authorization.")
	flag.BoolVar(&enableHTTP2, "enable-http2", false,
		"If set, HTTP/2 is enabled for the metrics server.")
	flag.IntVar(&concurrency, "max-concurrent-reconciles", 10,
		"The number of PaymentJobs worked on at once. Provider calls are synchronous, so this bounds the calls in flight.")
	flag.Float64Var(&qps, "kube-api-qps", controller.DefaultKubeAPIQPS,
		"The client-side limit of requests per second to the API server. A job costs 4 writes; reads come from the cache.")
	flag.IntVar(&burst, "kube-api-burst", controller.DefaultKubeAPIBurst, "The client-side burst of requests to the API server.")
	flag.DurationVar(&claimLease, "claim-lease-duration", 60*time.Second,
		"How long a claim on a PaymentJob is held before another manager may take it over, with the same idempotency key.")
	flag.DurationVar(&providerTimeout, "provider-timeout", 30*time.Second,
		"The longest provider call, unless a PaymentProvider sets timeoutSeconds. Must be shorter than the claim lease.")
	flag.DurationVar(&keyRetention, "provider-key-retention", controller.DefaultKeyRetention,
		"How long providers remember idempotency keys. A job Processing for longer is looked up by its key "+
			"(where the provider supports it) before it is charged again. 0 disables lookups.")
	flag.BoolVar(&useLedger, "ledger", true,
		"Record every final outcome in the cluster-scoped outcome ledger (PaymentLedger pages) and finish re-created jobs "+
			"from it with no provider call. Needed by --ttl-seconds-after-finished and spec.ttlSecondsAfterFinished.")
	flag.DurationVar(&ledgerRetention, "ledger-retention", ledger.DefaultRetention,
		"How long outcomes stay in the ledger at least; a page is deleted once its newest entry is older.")
	flag.IntVar(&defaultTTL, "ttl-seconds-after-finished", -1,
		"Delete Completed and Failed jobs this many seconds after they finished, unless spec.ttlSecondsAfterFinished says "+
			"otherwise; their outcome stays in the ledger. Negative keeps them.")
	flag.StringVar(&insecureHosts, egress.FlagName, "",
		"Comma-separated provider hosts that may be reached over plain http and at loopback or private addresses "+
			"(for example a payment service inside the cluster, or 127.0.0.1 for the sandbox). Every other provider URL "+
			"must be https to a public address; link-local addresses (cloud metadata) are always refused.")
	flag.DurationVar(&auditInterval, "audit-interval", controller.DefaultAuditInterval,
		"How often the manager checks that its admission policies are installed and enforced, and lists "+
			"PaymentJobs that carry the finished label without an outcome.")
	opts := zap.Options{Development: false}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))

	if providerTimeout <= 0 || claimLease <= providerTimeout {
		setupLog.Error(errors.New("invalid flags"), "--claim-lease-duration must be longer than --provider-timeout",
			"claimLeaseDuration", claimLease, "providerTimeout", providerTimeout)
		os.Exit(1)
	}
	if !useLedger && defaultTTL >= 0 {
		setupLog.Error(errors.New("invalid flags"), "--ttl-seconds-after-finished needs the ledger: "+
			"without it, deleting a finished job deletes the only record that it was paid")
		os.Exit(1)
	}
	if ledgerRetention < 24*time.Hour {
		setupLog.Error(errors.New("invalid flags"), "--ledger-retention must be at least 24h", "ledgerRetention", ledgerRetention)
		os.Exit(1)
	}
	hosts, err := egress.ParseHosts(insecureHosts)
	if err != nil {
		setupLog.Error(err, "Invalid --"+egress.FlagName)
		os.Exit(1)
	}
	egressPolicy := &egress.Policy{InsecureHosts: hosts}
	if auditInterval <= 0 {
		setupLog.Error(errors.New("invalid flags"), "--audit-interval must be positive", "auditInterval", auditInterval)
		os.Exit(1)
	}
	holder, err := holderIdentity()
	if err != nil {
		setupLog.Error(err, "Unable to derive the claim holder identity")
		os.Exit(1)
	}

	// HTTP/2 is disabled by default: the HTTP/2 Stream Cancellation and Rapid
	// Reset CVEs (GHSA-qppj-fm5r-hxr3, GHSA-4374-p667-p6c8) make HTTP/1.1 the
	// safer choice for an endpoint that does not need HTTP/2.
	var tlsOpts []func(*tls.Config)
	if !enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) {
			c.NextProtos = []string{"http/1.1"}
		})
	}

	metricsOptions := metricsserver.Options{
		BindAddress:   metricsAddr,
		SecureServing: secureMetrics,
		TLSOpts:       tlsOpts,
	}
	if secureMetrics {
		// Only authenticated and authorized clients (a ServiceAccount bound
		// to the metrics-reader ClusterRole) may read the metrics.
		metricsOptions.FilterProvider = filters.WithAuthenticationAndAuthorization
	}

	restConfig := ctrl.GetConfigOrDie()
	restConfig.QPS = float32(qps)
	restConfig.Burst = burst
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsOptions,
		HealthProbeBindAddress:  probeAddr,
		PprofBindAddress:        pprofAddr,
		LeaderElection:          enableLeaderElection,
		LeaderElectionID:        "paymentjob-operator.payments.idempotency.dev",
		LeaderElectionNamespace: leaderElectionNS,
		// The leader steps down when the manager stops, so a standby takes
		// over at once instead of waiting for the lease to expire.
		LeaderElectionReleaseOnCancel: true,
		// Finished jobs stay out of the cache, and managedFields out of
		// every cached object: memory grows with active jobs only.
		Cache: controller.CacheOptions(),
	})
	if err != nil {
		setupLog.Error(err, "Unable to create manager")
		os.Exit(1)
	}

	// One adapter and one token bucket per PaymentProvider, shared by the
	// two reconcilers. Secrets come from the cache, which the API server
	// fills with the Secrets labelled for the operator only.
	adapters := &controller.ProviderCache{SecretReader: mgr.GetClient(), Build: controller.NewAdapterFactory(egressPolicy)}
	if err := mgr.Add(adapters); err != nil {
		setupLog.Error(err, "Unable to set up the provider cache")
		os.Exit(1)
	}
	if err := (&controller.PaymentProviderReconciler{
		Client:       mgr.GetClient(),
		SecretReader: mgr.GetClient(),
		APIReader:    mgr.GetAPIReader(),
		Adapters:     adapters,
		Egress:       egressPolicy,
		Recorder:     mgr.GetEventRecorder("paymentprovider-controller"),
	}).SetupWithManager(mgr); err != nil {
		setupLog.Error(err, "Unable to create controller", "controller", "PaymentProvider")
		os.Exit(1)
	}
	// The outcome ledger and the collector of finished jobs it makes safe.
	var (
		outcomes  controller.OutcomeLedger
		collector *controller.FinishedJobCollector
	)
	if useLedger {
		l, err := controller.NewLedger(mgr, ledgerRetention)
		if err != nil {
			setupLog.Error(err, "Unable to set up the outcome ledger")
			os.Exit(1)
		}
		outcomes = l
		collector = &controller.FinishedJobCollector{
			Client:     mgr.GetClient(),
			Reader:     mgr.GetAPIReader(),
			Ledger:     l,
			DefaultTTL: time.Duration(defaultTTL) * time.Second,
			Clock:      clock.RealClock{},
		}
		if err := mgr.Add(collector); err != nil {
			setupLog.Error(err, "Unable to set up the collector of finished jobs")
			os.Exit(1)
		}
		if err := mgr.AddReadyzCheck("ledger", func(*http.Request) error { return l.Loaded() }); err != nil {
			setupLog.Error(err, "Unable to set up ready check")
			os.Exit(1)
		}
	}
	if err := (&controller.PaymentJobReconciler{
		Ledger:                  outcomes,
		Collector:               collector,
		APIReader:               mgr.GetAPIReader(),
		Client:                  mgr.GetClient(),
		Recorder:                mgr.GetEventRecorder("paymentjob-controller"),
		Providers:               adapters,
		Clock:                   clock.RealClock{},
		Holder:                  holder,
		ClaimLease:              claimLease,
		ProviderTimeout:         providerTimeout,
		Backoff:                 controller.DefaultBackoff,
		KeyRetention:            keyRetention,
		MaxConcurrentReconciles: concurrency,
	}).SetupWithManager(mgr); err != nil {
		setupLog.Error(err, "Unable to create controller", "controller", "PaymentJob")
		os.Exit(1)
	}

	// The admission policies, and the jobs that only they would have kept
	// from going unseen.
	if err := (&controller.Auditor{
		Reader:   mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("paymentjob-audit"),
		Interval: auditInterval,
	}).SetupWithManager(mgr); err != nil {
		setupLog.Error(err, "Unable to set up the audit")
		os.Exit(1)
	}

	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		setupLog.Error(err, "Unable to set up health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("informers", controller.InformersSynced(mgr.GetCache())); err != nil {
		setupLog.Error(err, "Unable to set up ready check")
		os.Exit(1)
	}

	setupLog.Info("Starting manager", "holder", holder, "claimLease", claimLease, "providerTimeout", providerTimeout,
		"insecureProviderHosts", hosts)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setupLog.Error(err, "Problem running manager")
		os.Exit(1)
	}
}

// holderIdentity names this process in claims: the pod name (or host name)
// and a random id, so a restarted process never mistakes an earlier
// process's claim for its own.
func holderIdentity() (string, error) {
	name := os.Getenv("POD_NAME")
	if name == "" {
		host, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("cannot read the host name: %w", err)
		}
		name = host
	}
	id := make([]byte, 4)
	if _, err := rand.Read(id); err != nil {
		return "", fmt.Errorf("cannot generate a process id: %w", err)
	}
	return name + "/" + hex.EncodeToString(id), nil
}
