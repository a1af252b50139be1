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

package campaign

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentjob"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentrefund"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/ttl"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/sandboxprovider"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// The world of one history: a fake API server holding the objects and the
// CRD ledger's pages, the sandbox engine as the provider, a fake clock, and
// the managers (reconcilers of both kinds and their ledger) that work on
// them. Nothing listens on the network.

// The credentials Secrets of every namespace: secretName holds a key of
// account, otherSecretName one of otherAccount; the PaymentProvider names
// one of them (spec.http.secretKeyRef), and a credential names its
// account (credentialOf).
const (
	secretName      = "pay-credentials"
	otherSecretName = "pay-other"
	secretKey       = "apiKey"
)

// namespaces are the two tenants; a key sent from one never meets the
// other's (payment.SentKey prefixes the namespace).
var namespaces = []string{"shop", "books"}

// start is the fake clock's time when a history begins.
var start = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// world is one history's cluster, provider, ledger, clock and managers.
type world struct {
	scheme *runtime.Scheme
	// store is the fake API server; the campaign's own reads and the
	// users' writes go here directly, never through a fault.
	store client.WithWatch
	clock *clocktesting.FakeClock
	// sbx is the provider's account; other is otherAccount, at the same
	// provider (another sandbox engine).
	sbx, other *sandbox.Engine
	nextID     atomic.Int64
	// scopes are the key scopes of the namespaces' PaymentProviders
	// (spec.keyScope), drawn per history.
	scopes map[string]string
	// managers are the operator's processes; a crash replaces one.
	managers [2]*manager
	// kills are the manager processes killed in the middle of a pass
	// (killMidPass): every request of theirs fails from then on.
	kills kills
	// conflictNext answers the next write of a payment object by any
	// manager with a 409.
	conflictNext atomic.Bool
	// ledgerFaults answers the next n requests for PaymentLedger pages by
	// any manager with a 503 or a timeout: the ledger unavailable.
	ledgerFaults atomic.Int32
	// restarts counts the managers started, to name their holders.
	restarts int
	// stale holds, by manager and object, an older copy that the
	// manager's next cached read of it answers: its informer cache behind
	// the API server. Writes and the reads past the cache (APIReader) go to
	// the API server.
	staleMu sync.Mutex
	stale   map[staleKey]client.Object
	// takenBack are the status writes that took an outcome back
	// (oracle_final_test.go).
	takenBack takenBack
	// logger receives the reconcilers' logs; discarded unless debugging.
	logger logr.Logger
	// refundsSent are the refund requests the managers sent
	// (oracle_refunds_test.go).
	refundsSent refundLog
}

// manager is one operator process: the reconcilers of both kinds sharing a
// ledger index, a provider cache and a claim holder, and everything they
// keep in memory.
type manager struct {
	holder string
	jobs   *engine.Reconciler
	refs   *engine.Reconciler
	ledger *ledger.Ledger
	// outcomes is the ledger as the reconcilers see it: a manager started
	// while its ledger cannot load answers ErrNotLoaded for a while.
	outcomes *loadingLedger
	// providers is the manager's provider cache, which its PaymentProvider
	// reconciler refreshes when a Secret changes.
	providers *providercache.ProviderCache
	// collector is the manager's TTL collector of finished jobs, swept
	// by the ttlExpiry action instead of its ticker.
	collector *ttl.FinishedJobCollector
	stop      func()
}

// staleKey names an object as one manager's cache holds it.
type staleKey struct {
	holder string
	key    types.NamespacedName
}

// newWorld builds the world of a history whose provider draws ids from
// seed.
func newWorld(seed int64) (*world, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := paymentsv1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	w := &world{scheme: scheme, clock: clocktesting.NewFakeClock(start), logger: logr.Discard(), scopes: map[string]string{}}
	if uint64(seed)%3 == 0 {
		// One history in three: books' provider sends its keys under a
		// key scope (two clusters sharing an account).
		w.scopes["books"] = "eu"
	}
	w.sbx = sandbox.NewEngine(sandbox.WithAccount(account), sandbox.WithClock(w.clock.Now),
		sandbox.WithRand(rand.New(rand.NewPCG(uint64(seed), 0))))
	w.other = sandbox.NewEngine(sandbox.WithAccount(otherAccount), sandbox.WithClock(w.clock.Now),
		sandbox.WithRand(rand.New(rand.NewPCG(uint64(seed), 1))))
	b := fake.NewClientBuilder().WithScheme(scheme).
		WithStatusSubresource(&paymentsv1alpha1.PaymentJob{}, &paymentsv1alpha1.PaymentRefund{},
			&paymentsv1alpha1.PaymentProvider{})
	for _, ix := range engine.FieldIndexes() {
		b = b.WithIndex(ix.Object, ix.Field, ix.Extract)
	}
	objs := make([]client.Object, 0, 3*len(namespaces))
	for _, ns := range namespaces {
		objs = append(objs, newProvider(ns, types.UID("pp-"+ns), w.scopes[ns]),
			newSecret(ns, secretName, credential(account, 1)), newSecret(ns, otherSecretName, credential(otherAccount, 1)))
	}
	w.store = b.WithObjects(objs...).Build()
	for i := range w.managers {
		m, err := w.startManager()
		if err != nil {
			return nil, err
		}
		w.managers[i] = m
	}
	return w, nil
}

// close stops every manager.
func (w *world) close() {
	for _, m := range w.managers {
		if m != nil {
			m.stop()
		}
	}
}

// newProvider is the PaymentProvider of namespace ns: Ready, with the
// endpoints refunds need, its credentials in secretName (account), its
// keys under scope, already guarded by its in-use finalizer, and never
// looking a key up before a first charge.
func newProvider(ns string, uid types.UID, scope string) *paymentsv1alpha1.PaymentProvider {
	return &paymentsv1alpha1.PaymentProvider{
		ObjectMeta: metav1.ObjectMeta{Name: providerName, Namespace: ns, UID: uid, Generation: 1,
			Finalizers: []string{paymentsv1alpha1.ProviderFinalizer}},
		Spec: paymentsv1alpha1.PaymentProviderSpec{HTTP: &paymentsv1alpha1.HTTPProvider{
			URL: endpoint + "/charges", RefundURL: endpoint + "/refunds", LookupURL: endpoint + "/lookup",
			SecretKeyRef: &paymentsv1alpha1.SecretKeyReference{Name: secretName, Key: secretKey}},
			KeyScope: scope,
			// The look before a first charge is batched on the wall
			// clock (providercache.LookupBatcher), which a history on a
			// fake clock cannot wait for: the campaign does not reach it.
			Lookup: &paymentsv1alpha1.ProviderLookup{Policy: paymentsv1alpha1.LookupNever}},
		Status: paymentsv1alpha1.PaymentProviderStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{{
			Type: paymentsv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: paymentsv1alpha1.ReasonReady,
			Message: "Ready", ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(start.Add(-time.Hour)),
		}}},
	}
}

// startManager starts a process: new reconcilers, a new provider cache and
// a new ledger index loaded from the pages, as cmd/main.go wires them.
func (w *world) startManager() (*manager, error) {
	w.restarts++
	m := &manager{holder: fmt.Sprintf("manager-%d/%04d", w.restarts, w.restarts)}
	// c is the manager's cached client; api reads past its cache.
	c := interceptor.NewClient(w.store, w.faults(m.holder))
	api := interceptor.NewClient(w.store, w.faults(""))
	m.ledger = ledger.New(c, api, ledger.Options{Clock: w.clock})
	m.outcomes = &loadingLedger{Ledger: m.ledger}
	ctx, cancel := context.WithCancel(log.IntoContext(context.Background(), logr.Discard()))
	var wg sync.WaitGroup
	wg.Go(func() { _ = m.ledger.Start(ctx) })
	m.stop = func() { cancel(); wg.Wait() }
	for m.ledger.Loaded() != nil {
		select {
		case <-ctx.Done():
			return nil, errors.New("the ledger stopped before it loaded")
		case <-time.After(time.Millisecond):
		}
	}
	providers := &providercache.ProviderCache{
		SecretReader: w.store,
		Clock:        w.clock,
		// The provider of the account the credential names, as a real
		// key reaches its own account.
		Build: func(_ paymentsv1alpha1.PaymentProviderSpec, cred string) (payment.Provider, error) {
			e := w.engineOf(accountOf(cred))
			if e == nil {
				return nil, fmt.Errorf("no account for the credential of %q", accountOf(cred))
			}
			return w.watched(sandboxprovider.NewProvider(e)), nil
		},
	}
	m.providers = providers
	reconciler := func(k engine.AnyKind) *engine.Reconciler {
		return &engine.Reconciler{
			Kind:            k,
			Client:          c,
			APIReader:       api,
			Recorder:        &events.FakeRecorder{},
			Providers:       providers,
			Clock:           w.clock,
			Holder:          m.holder,
			ClaimLease:      engine.DefaultClaimLease,
			ProviderTimeout: engine.DefaultProviderTimeout,
			Backoff:         engine.Backoff{Initial: time.Second, Max: 5 * time.Minute},
			KeyRetention:    engine.DefaultKeyRetention,
			Ledger:          m.outcomes,
		}
	}
	refunds := paymentrefund.Kind(paymentrefund.Deps{Client: c, APIReader: api, Ledger: m.outcomes})
	m.jobs, m.refs = reconciler(paymentjob.Kind()), reconciler(refunds)
	// As pkg/operator wires it, with no default TTL (the flag's default).
	m.collector = &ttl.FinishedJobCollector{Kinds: []engine.AnyKind{paymentjob.Kind(), refunds},
		Client: c, Reader: api, Ledger: m.outcomes, DefaultTTL: -1, Clock: w.clock}
	return m, nil
}

// crash replaces manager i by a new process: every in-memory state is
// lost, and the new one starts from what the API server holds.
func (w *world) crash(i int) error {
	w.managers[i].stop()
	m, err := w.startManager()
	if err != nil {
		return err
	}
	w.managers[i] = m
	return nil
}

// errConflict is the API server's answer to a write on an older
// resourceVersion.
func errConflict(obj client.Object) error {
	return apierrors.NewConflict(schema.GroupResource{Group: paymentsv1alpha1.GroupVersion.Group, Resource: "payments"},
		obj.GetName(), errors.New("the object has been modified; please apply your changes to the latest version and try again"))
}

// faults are the API server's faults the campaign switches on, for the
// client of the manager holder ("" for a client that reads past the
// cache): a 409 on the next write of a PaymentJob or PaymentRefund, the
// stale copy a manager's cache answers, and the ledger's pages
// unavailable.
func (w *world) faults(holder string) interceptor.Funcs {
	conflict := func(obj client.Object) error {
		if err := w.kills.check(holder); err != nil {
			return err
		}
		if err := w.ledgerFault(obj); err != nil {
			return err
		}
		switch obj.(type) {
		case *paymentsv1alpha1.PaymentJob, *paymentsv1alpha1.PaymentRefund:
			if w.conflictNext.CompareAndSwap(true, false) {
				return errConflict(obj)
			}
		}
		return nil
	}
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := w.kills.check(holder); err != nil {
				return err
			}
			if err := w.ledgerFault(obj); err != nil {
				return err
			}
			if old := w.takeStale(holder, key, obj); old != nil {
				reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(old.DeepCopyObject()).Elem())
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := w.kills.check(holder); err != nil {
				return err
			}
			if err := w.ledgerFault(obj); err != nil {
				return err
			}
			return w.kills.wrote(holder, c.Create(ctx, obj, opts...))
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := conflict(obj); err != nil {
				return err
			}
			return w.kills.wrote(holder, c.Update(ctx, obj, opts...))
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := conflict(obj); err != nil {
				return err
			}
			return w.kills.wrote(holder, c.Patch(ctx, obj, patch, opts...))
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if err := conflict(obj); err != nil {
				return err
			}
			return w.kills.wrote(holder, w.keepsOutcome(ctx, obj, func() error { return c.SubResource(sub).Update(ctx, obj, opts...) }))
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := conflict(obj); err != nil {
				return err
			}
			return w.kills.wrote(holder, w.keepsOutcome(ctx, obj, func() error { return c.SubResource(sub).Patch(ctx, obj, patch, opts...) }))
		},
	}
}

// faultsOff switches every fault off: the API server's, the ledger's and
// the provider's (search lag included; forgotten keys stay forgotten).
func (w *world) faultsOff() {
	w.conflictNext.Store(false)
	w.ledgerFaults.Store(0)
	w.staleMu.Lock()
	w.stale = nil
	w.staleMu.Unlock()
	for _, m := range w.managers {
		m.outcomes.loading.Store(0)
	}
	for _, e := range []*sandbox.Engine{w.sbx, w.other} {
		for _, k := range []sandbox.FaultKind{sandbox.FaultBeforeCommit, sandbox.FaultAfterCommit, sandbox.FaultRateLimit} {
			e.FailNextAny(k, 0)
		}
		e.SetSearchLag(0)
	}
}

// reconcile runs one pass of manager m's reconciler of kind on the object
// key. A panic is returned as an error: the manager would recover it, and
// the campaign reports it as a finding.
func (w *world) reconcile(m *manager, kind string, key types.NamespacedName) (res ctrl.Result, err error) {
	r := m.jobs
	if kind == kindRefund {
		r = m.refs
	}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: %v", errPanic, v)
		}
	}()
	w.watchPages(m)
	ctx := log.IntoContext(context.Background(), w.logger)
	return r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
}

// watchPages delivers to m's ledger the watch events of the ledger's
// pages that the API server holds now (ledger.WatchPages' informer, up to
// date before every pass): a page another manager wrote is read again
// before m's next Find.
func (w *world) watchPages(m *manager) {
	var pages paymentsv1alpha1.PaymentLedgerList
	if err := w.store.List(context.Background(), &pages); err != nil {
		return
	}
	for i := range pages.Items {
		m.ledger.Observe(pages.Items[i].Name, pages.Items[i].ResourceVersion)
	}
}

// errPanic marks a reconcile pass that panicked.
var errPanic = errors.New("reconcile panicked")

// uid is a fresh object UID: a re-created object is another object.
func (w *world) uid() types.UID { return types.UID(fmt.Sprintf("uid-%d", w.nextID.Add(1))) }
