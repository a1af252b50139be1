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
	"crypto/tls"
	"errors"
	"flag"
	"os"
	"strconv"
	"time"

	// Import all Kubernetes client auth plugins (e.g. Azure, GCP, OIDC, etc.)
	// to ensure that exec-entrypoint and run can make use of them.
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentrefund"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/egress"
	"github.com/idempotency-dev/paymentjob-operator/pkg/operator"
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
	if len(os.Args) > 1 && os.Args[1] == "ledger" {
		// manager ledger copy|verify: the ledger moved between backends.
		os.Exit(ledgerCommand(os.Args[2:], os.Stdout, os.Stderr))
	}
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
		refundRecheck        time.Duration
		refundWatch          time.Duration
		settleMargin         time.Duration
		eventsAddr           string
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
	flag.IntVar(&concurrency, "max-concurrent-reconciles", operator.DefaultConcurrency,
		"The number of PaymentJobs worked on at once. Provider calls are synchronous, so this bounds the calls in flight.")
	flag.Float64Var(&qps, "kube-api-qps", operator.DefaultKubeAPIQPS,
		"The client-side limit of requests per second to the API server. A job costs 4 writes; reads come from the cache.")
	flag.IntVar(&burst, "kube-api-burst", operator.DefaultKubeAPIBurst, "The client-side burst of requests to the API server.")
	flag.DurationVar(&claimLease, "claim-lease-duration", operator.DefaultClaimLease,
		"How long a claim on a PaymentJob is held before another manager may take it over, with the same idempotency key.")
	flag.DurationVar(&providerTimeout, "provider-timeout", operator.DefaultProviderTimeout,
		"The longest provider call, unless a PaymentProvider sets timeoutSeconds. Must be shorter than the claim lease.")
	flag.DurationVar(&keyRetention, "provider-key-retention", operator.DefaultKeyRetention,
		"How long providers remember idempotency keys. A job Processing for longer is looked up by its key "+
			"(where the provider supports it) before it is charged again; 0 disables that lookup. The lookup before a "+
			"job's first charge is the PaymentProvider's spec.lookup.policy (Never turns it off).")
	flag.BoolVar(&useLedger, "ledger", true,
		"Record every final outcome in the cluster-scoped outcome ledger (PaymentLedger pages) and finish re-created jobs "+
			"from it with no provider call. Needed by --ttl-seconds-after-finished and spec.ttlSecondsAfterFinished.")
	flag.DurationVar(&ledgerRetention, "ledger-retention", operator.DefaultLedgerRetention,
		"How long outcomes stay in the ledger at least; a page is deleted once its newest entry is older.")
	var ledgerBackend string
	flag.StringVar(&ledgerBackend, "ledger-backend", string(operator.LedgerCRD),
		"Where the outcome ledger is kept: crd (PaymentLedger pages in the cluster's etcd) or postgres (a PostgreSQL "+
			"database, --ledger-postgres-*; docs/operations.md says when to choose which).")
	pgFlags := bindPostgresFlags(flag.CommandLine)
	etcdQuota := etcdQuotaFlag(operator.DefaultEtcdQuotaBytes)
	flag.Var(&etcdQuota, "etcd-quota-bytes",
		"The etcd quota of the cluster in `bytes` (etcd's --quota-backend-bytes; 2 GiB is etcd's default), exported as "+
			"paymentjob_etcd_quota_bytes: the alerts warn when the ledger's pages take 10% of it, and 25%. 0 means unknown "+
			"and silences those alerts; a negative value is refused.")
	flag.IntVar(&defaultTTL, "ttl-seconds-after-finished", -1,
		"Delete Completed and Failed jobs this many seconds after they finished, unless spec.ttlSecondsAfterFinished says "+
			"otherwise; their outcome stays in the ledger. Negative keeps them.")
	flag.StringVar(&insecureHosts, egress.FlagName, "",
		"Comma-separated provider hosts that may be reached over plain http and at loopback or private addresses "+
			"(for example a payment service inside the cluster, or 127.0.0.1 for the sandbox). Every other provider URL "+
			"must be https to a public address; link-local addresses (cloud metadata) are always refused.")
	flag.DurationVar(&auditInterval, "audit-interval", operator.DefaultAuditInterval,
		"How often the manager checks that its admission policies are installed and enforced, and lists "+
			"PaymentJobs that carry the finished label without an outcome.")
	flag.DurationVar(&refundRecheck, "refund-recheck-interval", paymentrefund.DefaultRefundRecheckInterval,
		"How often Completed PaymentRefunds are read again at their providers: a refund that later fails there is set "+
			"Failed (RefundFailedAfterSuccess).")
	flag.DurationVar(&refundWatch, "refund-watch-period", paymentrefund.DefaultRefundWatchPeriod,
		"How long after it completed a PaymentRefund is read again at its provider.")
	flag.StringVar(&eventsAddr, "events-bind-address", "0",
		"The address the signed provider events endpoint (POST /events/<namespace>/<provider>) binds to, such as :9444; "+
			"\"0\" turns it off. Only PaymentProviders with spec.events accept events; see docs/security.md.")
	flag.DurationVar(&settleMargin, "reconciliation-settle-margin", operator.DefaultReconciliationSettleMargin,
		"How long after the end of its window a PaymentReconciliation runs (a window without spec.to ends this long "+
			"before the run): the payments of the last minutes may not have their outcome recorded yet.")
	opts := zap.Options{Development: false}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))

	if providerTimeout <= 0 || claimLease <= providerTimeout {
		setupLog.Error(errors.New("invalid flags"), "--claim-lease-duration must be longer than --provider-timeout",
			"claimLeaseDuration", claimLease, "providerTimeout", providerTimeout)
		os.Exit(1)
	}
	postgres, err := checkLedgerFlags(useLedger, defaultTTL, ledgerRetention, ledgerBackend, pgFlags)
	if err != nil {
		setupLog.Error(err, "Invalid flags")
		os.Exit(1)
	}
	hosts, err := egress.ParseHosts(insecureHosts)
	if err != nil {
		setupLog.Error(err, "Invalid --"+egress.FlagName)
		os.Exit(1)
	}
	if settleMargin < 0 {
		setupLog.Error(errors.New("invalid flags"), "--reconciliation-settle-margin must not be negative")
		os.Exit(1)
	}
	if refundRecheck <= 0 || refundWatch <= 0 {
		setupLog.Error(errors.New("invalid flags"), "--refund-recheck-interval and --refund-watch-period must be positive")
		os.Exit(1)
	}
	if auditInterval <= 0 {
		setupLog.Error(errors.New("invalid flags"), "--audit-interval must be positive", "auditInterval", auditInterval)
		os.Exit(1)
	}
	holder, err := operator.HolderIdentity()
	if err != nil {
		setupLog.Error(err, "Unable to derive the claim holder identity")
		os.Exit(1)
	}

	metricsOptions := metricsServerOptions(metricsAddr, secureMetrics, enableHTTP2)

	restConfig := ctrl.GetConfigOrDie()
	restConfig.QPS = float32(qps)
	restConfig.Burst = burst
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsOptions,
		HealthProbeBindAddress:  probeAddr,
		PprofBindAddress:        pprofAddr,
		LeaderElection:          enableLeaderElection,
		LeaderElectionID:        operator.LeaderElectionID,
		LeaderElectionNamespace: leaderElectionNS,
		// The leader steps down when the manager stops, so a standby takes
		// over at once instead of waiting for the lease to expire.
		LeaderElectionReleaseOnCancel: true,
		// Finished jobs stay out of the cache, and managedFields out of
		// every cached object: memory grows with active jobs only.
		Cache: operator.CacheOptions(),
	})
	if err != nil {
		setupLog.Error(err, "Unable to create manager")
		os.Exit(1)
	}

	// The reconcilers, the adapters behind the egress policy, the ledger,
	// the collector of finished jobs and the audit.
	operatorOpts := operator.Options{
		Holder:                     holder,
		ClaimLease:                 claimLease,
		ProviderTimeout:            providerTimeout,
		BackoffInitial:             operator.DefaultBackoffInitial,
		BackoffMax:                 operator.DefaultBackoffMax,
		MaxConcurrentReconciles:    concurrency,
		KeyRetention:               keyRetention,
		InsecureProviderHosts:      hosts,
		DisableLedger:              !useLedger,
		LedgerBackend:              operator.LedgerBackend(ledgerBackend),
		Postgres:                   postgres,
		LedgerRetention:            ledgerRetention,
		EtcdQuotaBytes:             etcdQuota.option(),
		AuditInterval:              auditInterval,
		RefundRecheckInterval:      refundRecheck,
		RefundWatchPeriod:          refundWatch,
		ReconciliationSettleMargin: &settleMargin,
		EventsBindAddress:          eventsAddr,
	}
	if keyRetention == 0 {
		operatorOpts.KeyRetention = -1
	}
	if defaultTTL >= 0 {
		ttl := time.Duration(defaultTTL) * time.Second
		operatorOpts.TTLAfterFinished = &ttl
	}
	if err := operator.Setup(mgr, operatorOpts); err != nil {
		setupLog.Error(err, "Unable to set up the operator")
		os.Exit(1)
	}

	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		setupLog.Error(err, "Unable to set up health check")
		os.Exit(1)
	}

	setupLog.Info("Starting manager", "holder", holder, "claimLease", claimLease, "providerTimeout", providerTimeout,
		"insecureProviderHosts", hosts)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		if errors.Is(err, operator.ErrEtcdRestored) {
			// Only a new process has caches and watches of the restored
			// etcd: the Deployment (the kubelet) starts one.
			setupLog.Error(err, "Exiting: etcd was restored from a snapshot under the manager; "+
				"it must start again with fresh caches", "exitCode", exitEtcdRestored)
			os.Exit(exitEtcdRestored)
		}
		setupLog.Error(err, "Problem running manager")
		os.Exit(1)
	}
}

// metricsServerOptions is how the metrics endpoint is served: at addr, over
// HTTPS with authentication and authorization when secure, and over HTTP/1.1
// only unless http2.
func metricsServerOptions(addr string, secure, http2 bool) metricsserver.Options {
	// HTTP/2 is disabled by default: the HTTP/2 Stream Cancellation and Rapid
	// Reset CVEs (GHSA-qppj-fm5r-hxr3, GHSA-4374-p667-p6c8) make HTTP/1.1 the
	// safer choice for an endpoint that does not need HTTP/2.
	var tlsOpts []func(*tls.Config)
	if !http2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) {
			c.NextProtos = []string{"http/1.1"}
		})
	}

	opts := metricsserver.Options{
		BindAddress:   addr,
		SecureServing: secure,
		TLSOpts:       tlsOpts,
	}
	if secure {
		// Only authenticated and authorized clients (a ServiceAccount bound
		// to the metrics-reader ClusterRole) may read the metrics.
		opts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return opts
}

// exitEtcdRestored is the manager's exit code when it stopped because etcd
// was restored from a snapshot under it (operator.ErrEtcdRestored).
const exitEtcdRestored = 3

// etcdQuotaFlag is the value of --etcd-quota-bytes: bytes, never negative;
// 0 is unknown.
type etcdQuotaFlag int64

// String implements flag.Value.
func (q *etcdQuotaFlag) String() string {
	return strconv.FormatInt(int64(*q), 10)
}

// Set implements flag.Value, refusing a negative quota.
func (q *etcdQuotaFlag) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return err
	}
	if n < 0 {
		return errors.New("must not be negative; 0 means unknown")
	}
	*q = etcdQuotaFlag(n)
	return nil
}

// option is operator.Options.EtcdQuotaBytes for q: the flag's 0 (unknown)
// is negative there, where zero is the default.
func (q etcdQuotaFlag) option() int64 {
	if q == 0 {
		return -1
	}
	return int64(q)
}
