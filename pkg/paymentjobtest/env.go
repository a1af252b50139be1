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

package paymentjobtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/operator"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// Options configure Start. The zero value starts a control plane from
// KUBEBUILDER_ASSETS and an operator that watches every namespace.
type Options struct {
	// Config reaches an API server that is already running, such as the
	// one of the user's own envtest.Environment; the CRDs are installed
	// on it. Nil starts etcd and kube-apiserver from KUBEBUILDER_ASSETS.
	Config *rest.Config
	// Namespaces the operator watches; nil is every namespace.
	Namespaces []string
	// Operator tunes the operator. The kit's defaults suit tests: 5-second
	// provider calls, a claim lease of twice the provider timeout (10
	// seconds at least), retries from 50 ms to 1 s, Completed refunds read
	// again at the sandbox every second (so that a refund failed there
	// after it succeeded, Faults.FailRefund, shows). InsecureProviderHosts
	// always includes 127.0.0.1, where the sandbox listens; Namespaces is
	// always the Options' own. EventsBindAddress "" serves the events
	// endpoint on a free 127.0.0.1 port (Env.EventsURL); "0" turns it off.
	Operator operator.Options
	// Logger receives the operator's logs; the zero value discards them.
	Logger logr.Logger
}

// Env is a running test environment: the API server, the operator's
// reconcilers in this process, and the payment sandbox on 127.0.0.1.
type Env struct {
	config *rest.Config
	client client.Client
	scheme *runtime.Scheme
	engine *sandbox.Engine
	clock  *clock
	server *httptest.Server
	// eventsAddr is where the operator's events endpoint listens, "" when
	// it is off.
	eventsAddr string
	testEnv    *envtest.Environment
	cancel     context.CancelFunc
	done       chan error
	exited     atomic.Bool
}

// Start installs the CRDs, starts the sandbox and the operator, and
// returns when the operator runs. Stop ends them. In a TestMain, call
// Start once and Stop before os.Exit; in a test, StartT does both.
func Start(opts Options) (*Env, error) {
	e := &Env{clock: &clock{}, done: make(chan error, 1)}
	e.engine = sandbox.NewEngine(sandbox.WithClock(e.clock.now))
	e.scheme = runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(e.scheme); err != nil {
		return nil, err
	}
	if err := paymentsv1alpha1.AddToScheme(e.scheme); err != nil {
		return nil, err
	}
	crds, err := CRDs()
	if err != nil {
		return nil, err
	}
	if opts.Config == nil {
		assets := os.Getenv("KUBEBUILDER_ASSETS")
		if assets == "" {
			return nil, errors.New("paymentjobtest: no Options.Config and KUBEBUILDER_ASSETS is not set; " +
				"point it at a folder with etcd and kube-apiserver (see docs/testing.md: build them with " +
				"the operator's hack/envtest module, or download them with setup-envtest)")
		}
		e.testEnv = &envtest.Environment{BinaryAssetsDirectory: assets, CRDs: crds,
			ErrorIfCRDPathMissing: false, ControlPlaneStartTimeout: 90 * time.Second}
		if e.config, err = e.testEnv.Start(); err != nil {
			// It may have started etcd and kube-apiserver before it failed.
			return nil, errors.Join(fmt.Errorf("paymentjobtest: cannot start the control plane from %s: %w", assets, err), e.testEnv.Stop())
		}
	} else {
		e.config = rest.CopyConfig(opts.Config)
		if _, err := envtest.InstallCRDs(e.config, envtest.CRDInstallOptions{CRDs: crds}); err != nil {
			return nil, fmt.Errorf("paymentjobtest: cannot install the CRDs: %w", err)
		}
	}
	if err := e.start(opts); err != nil {
		return nil, errors.Join(err, e.Stop())
	}
	return e, nil
}

// StartT is Start for one test: it fails t if the environment cannot
// start, and stops it when t ends.
func StartT(t testing.TB, opts Options) *Env {
	t.Helper()
	e, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("paymentjobtest: %v", err)
		}
	})
	return e
}

// start serves the sandbox on loopback and runs the operator.
func (e *Env) start(opts Options) error {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("paymentjobtest: cannot listen on loopback: %w", err)
	}
	e.server = &httptest.Server{Listener: listener,
		Config: &http.Server{Handler: sandbox.NewServer(e.engine, sandbox.ServerOptions{}), ReadHeaderTimeout: 10 * time.Second}}
	e.server.Start()

	if e.client, err = client.New(e.config, client.Options{Scheme: e.scheme}); err != nil {
		return fmt.Errorf("paymentjobtest: cannot create a client: %w", err)
	}
	mgr, err := ctrl.NewManager(rest.CopyConfig(e.config), ctrl.Options{
		Scheme:                 e.scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  operator.CacheOptions(opts.Namespaces...),
		Logger:                 logger(opts.Logger),
		// The runnables that log from their context (the refund watch, the
		// collector) log where the reconcilers do.
		BaseContext: func() context.Context { return ctrllog.IntoContext(context.Background(), logger(opts.Logger)) },
		// Several environments may run in one test binary.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return fmt.Errorf("paymentjobtest: cannot create the manager: %w", err)
	}
	o := opts.Operator
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.ProviderTimeout, 5*time.Second)
	def(&o.ClaimLease, max(10*time.Second, 2*o.ProviderTimeout))
	def(&o.BackoffInitial, 50*time.Millisecond)
	def(&o.BackoffMax, time.Second)
	def(&o.RefundRecheckInterval, time.Second)
	o.InsecureProviderHosts = slices.Concat(o.InsecureProviderHosts, []string{"127.0.0.1"})
	// The cache, the collector and the audit all watch the same namespaces.
	o.Namespaces = opts.Namespaces
	if o.EventsBindAddress == "" {
		if o.EventsBindAddress, err = freeLoopbackAddress(); err != nil {
			return err
		}
	}
	if o.EventsBindAddress != "0" {
		e.eventsAddr = o.EventsBindAddress
	}
	if err := operator.Setup(mgr, o); err != nil {
		return fmt.Errorf("paymentjobtest: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	go func() {
		err := mgr.Start(ctx)
		e.exited.Store(true)
		e.done <- err
	}()
	synced, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	if !mgr.GetCache().WaitForCacheSync(synced) {
		// Stop returns the manager's own error, if it ended with one.
		return errors.New("paymentjobtest: the operator's cache did not sync within a minute")
	}
	if e.eventsAddr != "" {
		return e.waitForEventsEndpoint(synced)
	}
	return nil
}

// logger is l, or a logger that discards when l is the zero value. Not
// logr.Discard(): controller-runtime replaces a logger without a sink with
// its global one, which warns on stderr when no test set it.
func logger(l logr.Logger) logr.Logger {
	if l.GetSink() == nil {
		return logr.New(discard{})
	}
	return l
}

// discard is a logr.LogSink that drops everything.
type discard struct{}

func (discard) Init(logr.RuntimeInfo)            {}
func (discard) Enabled(int) bool                 { return false }
func (discard) Info(int, string, ...any)         {}
func (discard) Error(error, string, ...any)      {}
func (d discard) WithValues(...any) logr.LogSink { return d }
func (d discard) WithName(string) logr.LogSink   { return d }

// stopped reports whether the operator is no longer running.
func (e *Env) stopped() bool { return e.exited.Load() }

// Stop stops the operator, the sandbox and, if Start started them, etcd
// and kube-apiserver. It may be called more than once.
func (e *Env) Stop() error {
	var errs []error
	if e.cancel != nil {
		e.cancel()
		e.cancel = nil
		if err := <-e.done; err != nil {
			errs = append(errs, fmt.Errorf("the operator stopped with an error: %w", err))
		}
	}
	if e.server != nil {
		e.server.Close()
		e.server = nil
	}
	if e.testEnv != nil {
		if err := e.testEnv.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("cannot stop the control plane: %w", err))
		}
		e.testEnv = nil
	}
	return errors.Join(errs...)
}

// Config reaches the API server as an administrator.
func (e *Env) Config() *rest.Config { return rest.CopyConfig(e.config) }

// Client is a client of the API server that knows the operator's types.
func (e *Env) Client() client.Client { return e.client }

// Sandbox is the payment sandbox the providers of CreateProvider and
// CreateHTTPProvider charge at, for what Faults does not cover.
func (e *Env) Sandbox() *sandbox.Engine { return e.engine }

// SandboxURLs are where the sandbox answers, on 127.0.0.1, for a
// PaymentProvider of the test's own (see WaitForProviderReady) or for
// pkg/providertest.
type SandboxURLs struct {
	// StripeAPIBase is the base of the sandbox's Stripe API: a stripe
	// provider's spec.stripe.apiBase.
	StripeAPIBase string
	// HTTPCharges is the charge endpoint of the operator's HTTP contract
	// (/http/charges): an http provider's spec.http.url.
	HTTPCharges string
	// HTTPLookup is its lookup endpoint (/http/charges/lookup):
	// spec.http.lookupURL.
	HTTPLookup string
	// HTTPRefunds is its refund endpoint (/http/refunds):
	// spec.http.refundURL.
	HTTPRefunds string
}

// SandboxURLs returns the sandbox's URLs. The sandbox accepts any bearer
// token, or none, on its HTTP contract routes.
func (e *Env) SandboxURLs() SandboxURLs {
	base := e.server.URL
	return SandboxURLs{
		StripeAPIBase: base,
		HTTPCharges:   base + "/http/charges",
		HTTPLookup:    base + "/http/charges/lookup",
		HTTPRefunds:   base + "/http/refunds",
	}
}
