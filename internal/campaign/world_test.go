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
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentprovider"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentprovider/providercache"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentrefund"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// The world of one history: a fake API server holding the objects and the
// CRD ledger's pages, the sandbox engine as the provider, a fake clock, and
// the managers (reconcilers of both kinds and their ledger) that work on
// them. Nothing listens on the network.

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
	store  client.WithWatch
	clock  *clocktesting.FakeClock
	sbx    *sandbox.Engine
	nextID atomic.Int64
	// managers are the operator's processes; a crash replaces one.
	managers [2]*manager
	// conflictNext answers the next write of a payment object by any
	// manager with a 409.
	conflictNext atomic.Bool
	// restarts counts the managers started, to name their holders.
	restarts int
	// stale holds, by object, an older copy that the next read of it by a
	// manager answers: an informer cache behind the API server.
	staleMu sync.Mutex
	stale   map[types.NamespacedName]client.Object
	// logger receives the reconcilers' logs; discarded unless debugging.
	logger logr.Logger
}

// manager is one operator process: the reconcilers of both kinds sharing a
// ledger index, a provider cache and a claim holder, and everything they
// keep in memory.
type manager struct {
	holder string
	jobs   *engine.Reconciler
	refs   *engine.Reconciler
	ledger *ledger.Ledger
	stop   func()
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
	w := &world{scheme: scheme, clock: clocktesting.NewFakeClock(start), logger: logr.Discard()}
	w.sbx = sandbox.NewEngine(sandbox.WithAccount(account), sandbox.WithClock(w.clock.Now),
		sandbox.WithRand(rand.New(rand.NewPCG(uint64(seed), 0))))
	b := fake.NewClientBuilder().WithScheme(scheme).
		WithStatusSubresource(&paymentsv1alpha1.PaymentJob{}, &paymentsv1alpha1.PaymentRefund{},
			&paymentsv1alpha1.PaymentProvider{})
	for _, ix := range engine.FieldIndexes() {
		b = b.WithIndex(ix.Object, ix.Field, ix.Extract)
	}
	objs := make([]client.Object, 0, len(namespaces))
	for _, ns := range namespaces {
		objs = append(objs, newProvider(ns))
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
// endpoints refunds need, already guarded by its in-use finalizer, and
// never looking a key up before a first charge.
func newProvider(ns string) *paymentsv1alpha1.PaymentProvider {
	return &paymentsv1alpha1.PaymentProvider{
		ObjectMeta: metav1.ObjectMeta{Name: providerName, Namespace: ns, UID: types.UID("pp-" + ns), Generation: 1,
			Finalizers: []string{paymentsv1alpha1.ProviderFinalizer}},
		Spec: paymentsv1alpha1.PaymentProviderSpec{HTTP: &paymentsv1alpha1.HTTPProvider{
			URL: endpoint + "/charges", RefundURL: endpoint + "/refunds", LookupURL: endpoint + "/lookup"},
			// The look before a first charge is batched on the wall
			// clock (providercache.LookupBatcher), which a history on a
			// fake clock cannot wait for: the campaign does not reach it.
			Lookup: &paymentsv1alpha1.ProviderLookup{Policy: paymentsv1alpha1.LookupNever}},
		Status: paymentsv1alpha1.PaymentProviderStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{{
			Type: paymentsv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: paymentprovider.ReasonReady,
			Message: "Ready", ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(start.Add(-time.Hour)),
		}}},
	}
}

// startManager starts a process: new reconcilers, a new provider cache and
// a new ledger index loaded from the pages, as cmd/main.go wires them.
func (w *world) startManager() (*manager, error) {
	w.restarts++
	m := &manager{holder: fmt.Sprintf("manager-%d/%04d", w.restarts, w.restarts)}
	c := interceptor.NewClient(w.store, w.faults())
	m.ledger = ledger.New(c, w.store, ledger.Options{Clock: w.clock})
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
	provider := sandbox.NewProvider(w.sbx)
	providers := &providercache.ProviderCache{
		SecretReader: w.store,
		Clock:        w.clock,
		Build: func(paymentsv1alpha1.PaymentProviderSpec, string) (payment.Provider, error) {
			return provider, nil
		},
	}
	reconciler := func(k engine.Kind) *engine.Reconciler {
		return &engine.Reconciler{
			Kind:            k,
			Client:          c,
			APIReader:       c,
			Recorder:        &events.FakeRecorder{},
			Providers:       providers,
			Clock:           w.clock,
			Holder:          m.holder,
			ClaimLease:      engine.DefaultClaimLease,
			ProviderTimeout: engine.DefaultProviderTimeout,
			Backoff:         engine.Backoff{Initial: time.Second, Max: 5 * time.Minute},
			KeyRetention:    engine.DefaultKeyRetention,
			Ledger:          m.ledger,
		}
	}
	m.jobs, m.refs = reconciler(paymentjob.Kind()), reconciler(paymentrefund.Kind())
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

// faults are the API server's faults the campaign switches on: a 409 on
// the next write of a PaymentJob or PaymentRefund.
func (w *world) faults() interceptor.Funcs {
	conflict := func(obj client.Object) error {
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
			if old := w.takeStale(key, obj); old != nil {
				reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(old.DeepCopyObject()).Elem())
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := conflict(obj); err != nil {
				return err
			}
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := conflict(obj); err != nil {
				return err
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if err := conflict(obj); err != nil {
				return err
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := conflict(obj); err != nil {
				return err
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}
}

// takeStale returns, once, the older copy of key that the next read of
// obj's type answers, or nil.
func (w *world) takeStale(key client.ObjectKey, obj client.Object) client.Object {
	w.staleMu.Lock()
	defer w.staleMu.Unlock()
	old, ok := w.stale[key]
	if !ok || reflect.TypeOf(old) != reflect.TypeOf(obj) {
		return nil
	}
	delete(w.stale, key)
	return old
}

// freeze makes the next read of obj by a manager answer obj as it is now.
func (w *world) freeze(obj client.Object) {
	w.staleMu.Lock()
	defer w.staleMu.Unlock()
	if w.stale == nil {
		w.stale = map[types.NamespacedName]client.Object{}
	}
	w.stale[client.ObjectKeyFromObject(obj)] = obj
}

// faultsOff switches every fault off: the API server's and the provider's.
func (w *world) faultsOff() {
	w.conflictNext.Store(false)
	w.staleMu.Lock()
	w.stale = nil
	w.staleMu.Unlock()
	for _, k := range []sandbox.FaultKind{sandbox.FaultBeforeCommit, sandbox.FaultAfterCommit, sandbox.FaultRateLimit} {
		w.sbx.FailNextAny(k, 0)
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
	ctx := log.IntoContext(context.Background(), w.logger)
	return r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
}

// errPanic marks a reconcile pass that panicked.
var errPanic = errors.New("reconcile panicked")

// uid is a fresh object UID: a re-created object is another object.
func (w *world) uid() types.UID { return types.UID(fmt.Sprintf("uid-%d", w.nextID.Add(1))) }
