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

package controllers_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/audit"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentjob"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentprovider"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentreconciliation"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentrefund"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/ttl"
	"github.com/idempotency-dev/paymentjob-operator/internal/events"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/egress"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/testenv"
	"github.com/idempotency-dev/paymentjob-operator/pkg/operator"
)

// The controller suite runs the reconcilers in real managers against the
// self-built API server, one manager (or several) per test, each watching
// only the test's own namespaces, so tests can run in parallel.
var (
	env       *testenv.Env
	scheme    = runtime.NewScheme()
	k8sClient client.Client
)

const (
	// timeout bounds every wait for the operator to reach a state.
	timeout = 60 * time.Second
	// providerName is the PaymentProvider every test namespace gets.
	providerName = "sandbox"
	// testSecretValue is the fake API key; it must never show up in status
	// or events.
	testSecretValue = "sk_test_suite_4eC39HqLyjWDarjtT1zdp7dc"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapLevel())))
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := paymentsv1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	watcher, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme})
	if err == nil {
		k8sClient = watcher
		code = runCheckingRefundWords(m, watcher)
	} else {
		fmt.Fprintf(os.Stderr, "cannot create a client: %v\n", err)
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "cannot stop the control plane: %v\n", err)
	}
	os.Exit(code)
}

// runCheckingRefundWords runs the suite and then checks that no condition
// or event the managers wrote on a PaymentRefund speaks of charging
// (refundWords); a run that wrote none on refunds fails too, unless -run
// chose tests that make no refund.
func runCheckingRefundWords(m *testing.M, c client.WithWatch) int {
	words := watchRefundWords(c)
	code := m.Run()
	bad, seen, err := words.check(context.Background(), c)
	switch {
	case err != nil:
		fmt.Fprintf(os.Stderr, "FAIL: the refunds' words: %v\n", err)
		return 1
	case seen == 0 && flag.Lookup("test.run").Value.String() == "":
		fmt.Fprintln(os.Stderr, "FAIL: the refunds' words: the suite wrote no condition or event on a PaymentRefund")
		return 1
	case len(bad) > 0:
		fmt.Fprintf(os.Stderr, "FAIL: %d of the %d conditions and events written on PaymentRefunds speak of charging:\n  %s\n",
			len(bad), seen, strings.Join(bad, "\n  "))
		return 1
	}
	fmt.Fprintf(os.Stderr, "The refunds' words: none of the %d conditions and events written on PaymentRefunds speaks of charging\n", seen)
	return code
}

// zapLevel keeps the manager logs to errors unless PAYMENTJOB_TEST_VERBOSE
// is set.
func zapLevel() zapcore.Level {
	if os.Getenv("PAYMENTJOB_TEST_VERBOSE") != "" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

// providerFunc is a payment.Provider written as a function: the fakes of the
// crash-window tests wrap the sandbox with it.
type providerFunc func(ctx context.Context, key string, req payment.ChargeRequest) (payment.Outcome, error)

func (f providerFunc) Charge(ctx context.Context, key string, req payment.ChargeRequest) (payment.Outcome, error) {
	return f(ctx, key, req)
}

// writeCounter counts the manager's reads of PaymentJobs and its writes that
// the API server accepted, through an interceptor client. A write refused
// with a conflict changed nothing and is not counted.
type writeCounter struct {
	gets   atomic.Int64
	writes atomic.Int64

	mu  sync.Mutex
	log []string
}

// record notes an accepted write, for the message of a failed count.
func (w *writeCounter) record(what string, o client.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	job := o.(*paymentsv1alpha1.PaymentJob)
	w.log = append(w.log, fmt.Sprintf("%s %s phase=%s rv=%s finalizers=%v labels=%v",
		what, job.Name, job.Status.Phase, job.ResourceVersion, job.Finalizers, job.Labels))
}

// writes returns the accepted writes so far, one line each.
func (w *writeCounter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.log, "\n")
}

func (w *writeCounter) funcs(next interceptor.Funcs) interceptor.Funcs {
	isJob := func(o client.Object) bool { _, ok := o.(*paymentsv1alpha1.PaymentJob); return ok }
	count := func(o client.Object, err error) error {
		if err == nil && isJob(o) {
			w.writes.Add(1)
			w.record("write", o)
		}
		return err
	}
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if isJob(obj) {
				w.gets.Add(1)
			}
			if next.Get != nil {
				return next.Get(ctx, c, key, obj, opts...)
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if next.Create != nil {
				return next.Create(ctx, c, obj, opts...)
			}
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if next.Update != nil {
				return count(obj, next.Update(ctx, c, obj, opts...))
			}
			return count(obj, c.Update(ctx, obj, opts...))
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			return count(obj, c.Patch(ctx, obj, patch, opts...))
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if next.SubResourceUpdate != nil {
				return count(obj, next.SubResourceUpdate(ctx, c, sub, obj, opts...))
			}
			return count(obj, c.SubResource(sub).Update(ctx, obj, opts...))
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			return count(obj, c.SubResource(sub).Patch(ctx, obj, patch, opts...))
		},
	}
}

// managerConfig is what a test changes about the manager it starts.
type managerConfig struct {
	namespaces []string
	// provider charges every job; build, when set, makes the adapter from
	// the PaymentProvider instead, as the manager does.
	provider    payment.Provider
	build       providercache.AdapterFactory
	lease       time.Duration
	timeout     time.Duration
	backoff     engine.Backoff
	concurrency int
	// keyRetention enables lookups of old Processing jobs; zero disables.
	keyRetention time.Duration
	// intercept wraps the manager's client; nil passes everything through.
	intercept interceptor.Funcs
	// noLedger runs the manager without the outcome ledger (--ledger=false).
	noLedger bool
	// ttl is the manager's --ttl-seconds-after-finished; zero keeps
	// finished jobs (the flag's -1), since a TTL of 0 is ttlZero.
	ttl time.Duration
	// sweep is the collector's sweep interval; an hour when zero.
	sweep time.Duration
	// refundRecheck runs the refund watch at this interval; zero runs none.
	refundRecheck time.Duration
	// egress checks the providers' URLs; nil checks nothing.
	egress paymentprovider.EndpointPolicy
	// transport wraps the manager's connection to the API server.
	transport func(http.RoundTripper) http.RoundTripper
	// events serves the signed events endpoint on a loopback port
	// (testManager.eventsURL).
	events bool
}

// ttlZero asks for a TTL of zero seconds in managerConfig.ttl.
const ttlZero = time.Nanosecond

// testManager is a running manager: one operator process, with its own claim
// holder identity.
type testManager struct {
	holder   string
	ledger   *ledger.Ledger
	counter  *writeCounter
	cache    cache.Cache
	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once
	// events is the events endpoint, with managerConfig.events.
	events *events.Server
}

// crash stops the manager without waiting: what a SIGKILL does to a process
// that is in the middle of a reconcile, as far as the API server can tell.
func (m *testManager) crash() { m.cancel() }

// stop stops the manager and waits until it has exited.
func (m *testManager) stop() {
	m.stopOnce.Do(m.cancel)
	<-m.done
}

func startManager(t *testing.T, cfg managerConfig) *testManager {
	t.Helper()
	g := NewWithT(t)
	if cfg.lease == 0 {
		cfg.lease = 20 * time.Second
	}
	if cfg.timeout == 0 {
		cfg.timeout = 10 * time.Second
	}
	if cfg.backoff == (engine.Backoff{}) {
		cfg.backoff = engine.Backoff{Initial: 20 * time.Millisecond, Max: 500 * time.Millisecond}
	}
	if cfg.concurrency == 0 {
		cfg.concurrency = 4
	}
	counter := &writeCounter{}
	restConfig := rest.CopyConfig(env.Config)
	if cfg.transport != nil {
		restConfig.Wrap(cfg.transport)
	}
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// The manager's own cache settings: finished jobs are left out.
		Cache:      operator.CacheOptions(cfg.namespaces...),
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		NewClient: func(c *rest.Config, o client.Options) (client.Client, error) {
			cl, err := client.NewWithWatch(c, o)
			if err != nil {
				return nil, err
			}
			return interceptor.NewClient(cl, counter.funcs(cfg.intercept)), nil
		},
	})
	g.Expect(err).NotTo(HaveOccurred())

	holder := "test-" + rand.String(5) + "/" + rand.String(8)
	build := cfg.build
	if build == nil {
		provider := cfg.provider
		build = func(paymentsv1alpha1.PaymentProviderSpec, string) (payment.Provider, error) { return provider, nil }
	}
	g.Expect(engine.IndexFields(mgr)).To(Succeed())
	adapters := &providercache.ProviderCache{SecretReader: mgr.GetClient(), Build: build}
	g.Expect(mgr.Add(adapters)).To(Succeed())
	g.Expect((&paymentprovider.Reconciler{
		Kinds:              []engine.AnyKind{paymentjob.Kind(), paymentrefund.Kind(paymentrefund.Deps{})},
		Client:             mgr.GetClient(),
		SecretReader:       mgr.GetClient(),
		APIReader:          mgr.GetAPIReader(),
		Adapters:           adapters,
		Egress:             cfg.egress,
		Recorder:           mgr.GetEventRecorder("paymentprovider-controller"),
		SecretPollInterval: 200 * time.Millisecond,
	}).SetupWithManager(mgr)).To(Succeed())
	var (
		outcomes  engine.OutcomeLedger
		l         *ledger.Ledger
		collector engine.Scheduler // nil without the ledger, never a nil pointer
	)
	if !cfg.noLedger {
		l, err = engine.NewLedger(mgr, ledger.Options{Retention: ledger.DefaultRetention})
		g.Expect(err).NotTo(HaveOccurred())
		outcomes = l
		defaultTTL := time.Duration(-1)
		switch cfg.ttl {
		case 0:
		case ttlZero:
			defaultTTL = 0
		default:
			defaultTTL = cfg.ttl
		}
		c := &ttl.FinishedJobCollector{
			Kinds:  []engine.AnyKind{paymentjob.Kind(), paymentrefund.Kind(paymentrefund.Deps{})},
			Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Ledger: l,
			DefaultTTL: defaultTTL, SweepInterval: cfg.sweep, Clock: clock.RealClock{}, Namespaces: cfg.namespaces,
		}
		collector = c
		g.Expect(mgr.Add(c)).To(Succeed())
	}
	// The manager runs both kinds on the engine, as pkg/operator does.
	refunds := paymentrefund.Kind(paymentrefund.Deps{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Ledger: outcomes})
	wakers := make(events.Wakers, 0, 3)
	var jobsReconciler *engine.Reconciler
	for _, kind := range []engine.AnyKind{paymentjob.Kind(), refunds} {
		r := &engine.Reconciler{
			Kind: kind,
			// The manager's own check of the resolve-attribution policy; the
			// suite installs no admission policies, so it is not enforced.
			Attribution:             &audit.Auditor{Reader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("paymentjob-audit")},
			Ledger:                  outcomes,
			Collector:               collector,
			APIReader:               mgr.GetAPIReader(),
			Client:                  mgr.GetClient(),
			Recorder:                mgr.GetEventRecorder(strings.ToLower(kind.Name()) + "-controller"),
			Providers:               adapters,
			Clock:                   clock.RealClock{},
			Holder:                  holder,
			ClaimLease:              cfg.lease,
			ProviderTimeout:         cfg.timeout,
			Backoff:                 cfg.backoff,
			KeyRetention:            cfg.keyRetention,
			MaxConcurrentReconciles: cfg.concurrency,
		}
		g.Expect(r.SetupWithManager(mgr)).To(Succeed())
		wakers = append(wakers, r)
		if kind.Name() != refunds.Name() {
			jobsReconciler = r
		}
		if kind.Name() == refunds.Name() && cfg.refundRecheck > 0 {
			watch := &paymentrefund.RefundWatch{Refunds: r, Jobs: jobsReconciler, Reader: mgr.GetAPIReader(), Interval: cfg.refundRecheck,
				Namespaces: cfg.namespaces}
			g.Expect(mgr.Add(watch)).To(Succeed())
			wakers = append(wakers, watch)
		}
	}

	// Reconciliation, read-only, with no settle margin: a test's window
	// ends when its payments are done.
	var recordsLedger paymentreconciliation.Ledger
	if l != nil {
		recordsLedger = paymentreconciliation.PagesLedger(l, mgr.GetAPIReader())
	}
	g.Expect((&paymentreconciliation.Reconciler{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Providers: adapters, Ledger: recordsLedger,
		Recorder: mgr.GetEventRecorder("paymentreconciliation-controller"), Clock: clock.RealClock{},
		Namespaces: cfg.namespaces,
		// Slices of a few charges: every run compares its window in
		// several, across their edges.
		SliceObjects: 3,
	}).SetupWithManager(mgr)).To(Succeed())

	var eventsServer *events.Server
	if cfg.events {
		eventsServer = &events.Server{Addr: "127.0.0.1:0", Reader: mgr.GetClient(), Waker: wakers,
			Identities: events.CachedIdentities{Cache: adapters}, Log: testr.New(t).WithName("events")}
		g.Expect(mgr.Add(eventsServer)).To(Succeed())
	}

	ctx, cancel := context.WithCancel(context.Background())
	m := &testManager{holder: holder, ledger: l, counter: counter, cache: mgr.GetCache(), cancel: cancel, done: make(chan struct{}),
		events: eventsServer}
	go func() {
		defer close(m.done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager %s stopped with an error: %v", holder, err)
		}
	}()
	t.Cleanup(m.stop)
	return m
}

// loopbackAdapters is the manager's adapter factory with the egress policy
// of `make demo` and the e2e suite: plain http and loopback allowed for
// 127.0.0.1 only.
func loopbackAdapters() providercache.AdapterFactory {
	return providercache.NewAdapterFactory(&egress.Policy{InsecureHosts: []string{"127.0.0.1"}})
}

// newNamespace creates a namespace with a Secret and a Ready-able
// PaymentProvider named "sandbox" in it.
func newNamespace(t *testing.T, withSecret bool) string {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	ns := "t-" + rand.String(8)
	g.Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	if withSecret {
		createSecret(t, ns)
	}
	g.Expect(k8sClient.Create(ctx, &paymentsv1alpha1.PaymentProvider{
		ObjectMeta: metav1.ObjectMeta{Name: providerName, Namespace: ns},
		Spec: paymentsv1alpha1.PaymentProviderSpec{Stripe: &paymentsv1alpha1.StripeProvider{
			APIBase:      "http://127.0.0.1:12111",
			SecretKeyRef: paymentsv1alpha1.SecretKeyReference{Name: "sandbox-credentials", Key: "apiKey"},
		}},
	})).To(Succeed())
	return ns
}

func createSecret(t *testing.T, ns string) {
	t.Helper()
	NewWithT(t).Expect(k8sClient.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sandbox-credentials", Namespace: ns,
			Labels: map[string]string{paymentsv1alpha1.LabelCredentials: "true"}},
		Data: map[string][]byte{"apiKey": []byte(testSecretValue)},
	})).To(Succeed())
}

// jobSpec is a valid PaymentJobSpec that the sandbox charges.
func jobSpec() paymentsv1alpha1.PaymentJobSpec {
	return paymentsv1alpha1.PaymentJobSpec{
		ProviderRef:   paymentsv1alpha1.ProviderReference{Name: providerName},
		Amount:        2000,
		Currency:      "usd",
		PaymentMethod: "pm_card_visa",
		Description:   "March invoice",
		Metadata:      map[string]string{"invoice": "42"},
	}
}

// declinedCard pays with a card the sandbox declines.
func declinedCard(s *paymentsv1alpha1.PaymentJobSpec) { s.PaymentMethod = "pm_card_chargeDeclined" }

// suspended creates the job with spec.suspend.
func suspended(s *paymentsv1alpha1.PaymentJobSpec) { s.Suspend = ptr.To(true) }

// keyed gives the job the idempotency key.
func keyed(key string) func(*paymentsv1alpha1.PaymentJobSpec) {
	return func(s *paymentsv1alpha1.PaymentJobSpec) { s.IdempotencyKey = key }
}

// backoffLimit sets the job's spec.backoffLimit.
func backoffLimit(n int32) func(*paymentsv1alpha1.PaymentJobSpec) {
	return func(s *paymentsv1alpha1.PaymentJobSpec) { s.BackoffLimit = ptr.To(n) }
}

func createJob(t *testing.T, ns, name string, mutate ...func(*paymentsv1alpha1.PaymentJobSpec)) *paymentsv1alpha1.PaymentJob {
	t.Helper()
	job := &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       jobSpec(),
	}
	for _, m := range mutate {
		m(&job.Spec)
	}
	NewWithT(t).Expect(k8sClient.Create(context.Background(), job)).To(Succeed())
	return job
}

func condition(job *paymentsv1alpha1.PaymentJob, t string) *metav1.Condition {
	return meta.FindStatusCondition(job.Status.Conditions, t)
}

// lockedBuffer collects what is written to it (a process's stderr, a
// logger's lines) while the test may read it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// errCrashed is what a fake provider answers after it crashed its manager.
var errCrashed = errors.New("the manager crashed during the call")

// eventsURL is the URL of the manager's events endpoint for the
// scenario's provider of namespace ns, once it listens.
func (m *testManager) eventsURL(t *testing.T, ns string) string {
	t.Helper()
	var addr string
	NewWithT(t).Eventually(m.events.Address, timeout).ShouldNot(BeEmpty(), "the events endpoint listens")
	addr = m.events.Address()
	return "http://" + addr + events.PathPrefix + ns + "/" + providerName
}
