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

package protocol_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentjob"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
)

// The harness of the tables: a world of one object that moves money (a
// PaymentJob, or a PaymentRefund and the PaymentJob it refunds), its
// PaymentProvider in a fake API server, a scripted provider, an optional
// ledger and a fake clock, and the code that runs a row against it. Nothing
// here starts a process or listens on the network. What only refunds need
// is in refund_harness_test.go.

// The names of the world.
const (
	namespace    = "billing"
	jobName      = "invoice-42"
	jobUID       = "job-uid"
	providerName = "pay"
	providerUID  = "pp-uid"
	endpoint     = "https://payments.example/charges"
	// amount and currency are the job's request, and what the provider
	// answers that it charged.
	amount   = 2000
	currency = "usd"
	// me is the reconciler's claim holder; other is another replica.
	me    = "manager-a/1111"
	other = "manager-b/2222"
)

// The reconciler's settings, as cmd/main.go defaults them.
const (
	lease           = 60 * time.Second
	providerTimeout = 30 * time.Second
)

var (
	backoff = engine.Backoff{Initial: time.Second, Max: 5 * time.Minute}
	// start is the fake clock's time when a row begins. It lies in the past
	// on purpose: the Ready condition's lastTransitionTime comes from the
	// wall clock (meta.SetStatusCondition), and pendingRecheck measures the
	// wait since then with the reconciler's clock; from the past, that wait
	// is always below Backoff.Initial, whatever the wall clock says.
	start = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	// jobKey is where the reconciler finds the job.
	jobKey = types.NamespacedName{Namespace: namespace, Name: jobName}
)

// window bounds a pass's RequeueAfter; the zero window (a step that sets
// none) is "no requeue".
type window struct{ min, max time.Duration }

// exactly is a requeue of d, without jitter.
func exactly(d time.Duration) window { return window{d, d} }

// jittered is d plus the reconciler's jitter (up to 20%).
func jittered(d time.Duration) window { return window{d, d + d/5} }

// between is any requeue from lo to hi.
func between(lo, hi time.Duration) window { return window{lo, hi} }

// answer is one scripted answer of the provider.
type answer func() (payment.Outcome, error)

// chargeOutcome is what the provider answers for a charge that succeeded.
func chargeOutcome(replayed bool) payment.Outcome { return succeededAs("pi_1", replayed) }

// succeededAs is what the provider answers for a payment of amount that
// succeeded as id: a charge, or a refund of the whole charge.
func succeededAs(id string, replayed bool) payment.Outcome {
	return payment.Outcome{ID: id, Status: "succeeded", Amount: amount, Currency: currency,
		Created: start.Add(-time.Second), Replayed: replayed}
}

// The provider's answers.
var (
	succeeded answer = func() (payment.Outcome, error) { return chargeOutcome(false), nil }
	replayed  answer = func() (payment.Outcome, error) { return chargeOutcome(true), nil }
	declined  answer = func() (payment.Outcome, error) {
		return payment.Outcome{}, payment.Declined("", "Your card was declined.")
	}
	invalid answer = func() (payment.Outcome, error) {
		return payment.Outcome{}, payment.Invalid("amount must be at least 50 cents")
	}
	keyReused answer = func() (payment.Outcome, error) {
		return payment.Outcome{}, payment.KeyReused("Keys for idempotent requests can only be used with the same parameters")
	}
	transient answer = func() (payment.Outcome, error) {
		return payment.Outcome{}, payment.Transient(errors.New("502 Bad Gateway"), 0)
	}
	timedOut answer = func() (payment.Outcome, error) { return payment.Outcome{}, context.DeadlineExceeded }
)

// retryAfter is a 429 with a Retry-After header.
func retryAfter(d time.Duration) answer {
	return func() (payment.Outcome, error) {
		return payment.Outcome{}, payment.Transient(errors.New("429 Too Many Requests"), d)
	}
}

// API errors a fault can answer with.
var (
	conflict = apierrors.NewConflict(schema.GroupResource{Group: paymentsv1alpha1.GroupVersion.Group, Resource: "paymentjobs"},
		jobName, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	serverError = apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
)

// fault makes the API server refuse one write, the first one the effects
// list would name on, and lets another writer act meanwhile.
type fault struct {
	on        string
	err       error
	meanwhile func(w *world)
}

// providerState is the PaymentProvider a row starts with.
type providerState int

const (
	// providerReady is Ready and already carries the in-use finalizer of
	// earlier jobs.
	providerReady providerState = iota
	// providerUnguarded is Ready, and no job has used it yet.
	providerUnguarded
	// providerNotReady has Ready=False: its Secret is missing.
	providerNotReady
	// providerDeleting is Ready but being deleted.
	providerDeleting
	// providerMissing does not exist.
	providerMissing
	// providerNoLookup is Ready and looks no key up before a first
	// charge (spec.lookup.policy Never).
	providerNoLookup
)

// ledgerState is the outcome ledger a row starts with.
type ledgerState struct {
	entries []ledger.Entry
	// findErr fails every Find; recordErrs fail the first Records.
	findErr    error
	recordErrs []error
	// outside is a ledger kept outside etcd (PostgreSQL): an etcd restore
	// does not take back what it holds.
	outside bool
	// recordedMeanwhile is an outcome another object recorded under the
	// job's key after its lookup: Find does not see it, Record keeps it.
	recordedMeanwhile *ledger.Entry
}

// newJob is the PaymentJob of the world, changed by opts in order.
func newJob(opts ...func(*paymentsv1alpha1.PaymentJob)) *paymentsv1alpha1.PaymentJob {
	job := &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: jobName, Namespace: namespace, UID: jobUID, Generation: 1,
			CreationTimestamp: metav1.NewTime(start.Add(-time.Minute))},
		Spec: paymentsv1alpha1.PaymentJobSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: providerName},
			Amount: amount, Currency: currency, PaymentMethod: "pm_card_visa",
			Description: "Protocol table", Metadata: map[string]string{"row": "any"}, BackoffLimit: ptr.To[int32](6)},
	}
	for _, o := range opts {
		o(job)
	}
	return job
}

// sentTo is where the reconciler sends keys: the world's provider.
func sentTo() *paymentsv1alpha1.ProviderIdentity {
	return &paymentsv1alpha1.ProviderIdentity{UID: providerUID, Endpoint: endpoint}
}

// Options of newJob.

func suspended(j *paymentsv1alpha1.PaymentJob) { j.Spec.Suspend = ptr.To(true) }

func withFinalizer(j *paymentsv1alpha1.PaymentJob) {
	controllerutil.AddFinalizer(j, paymentsv1alpha1.Finalizer)
}

// deleting is a deletion the finalizer holds up.
func deleting(j *paymentsv1alpha1.PaymentJob) {
	withFinalizer(j)
	j.DeletionTimestamp = ptr.To(metav1.NewTime(start.Add(-time.Second)))
}

func deadline(seconds int64) func(*paymentsv1alpha1.PaymentJob) {
	return func(j *paymentsv1alpha1.PaymentJob) { j.Spec.ActiveDeadlineSeconds = ptr.To(seconds) }
}

func backoffLimit(n int32) func(*paymentsv1alpha1.PaymentJob) {
	return func(j *paymentsv1alpha1.PaymentJob) { j.Spec.BackoffLimit = ptr.To(n) }
}

// claimed is a job that holder claimed ago, its first attempt, as the
// reconciler's claim write sets it (paymentjob.ClaimStatus).
func claimed(holder string, ago time.Duration) func(*paymentsv1alpha1.PaymentJob) {
	return func(j *paymentsv1alpha1.PaymentJob) {
		withFinalizer(j)
		j.Status.Provider = sentTo()
		paymentjob.ClaimStatus(j, paymentjob.ChargeOf(j), holder, start.Add(-ago), lease, paymentsv1alpha1.ReasonClaimed)
	}
}

// completedEarlier is a job whose charge was recorded a minute ago, as the
// outcome write sets it (paymentjob.CompletedStatus); its finalizer is
// still there, as if the process died before the finishing write.
func completedEarlier(j *paymentsv1alpha1.PaymentJob) {
	claimed(me, 2*time.Minute)(j)
	paymentjob.CompletedStatus(j, chargeOutcome(false), false, start.Add(-time.Minute))
}

// finished is what the finishing write leaves: the label, no finalizer.
func finished(j *paymentsv1alpha1.PaymentJob) {
	controllerutil.RemoveFinalizer(j, paymentsv1alpha1.Finalizer)
	j.Labels = map[string]string{paymentsv1alpha1.LabelFinished: "true"}
}

// specEdited is a job whose spec changed (spec.suspend) after its status
// was written.
func specEdited(j *paymentsv1alpha1.PaymentJob) { j.Generation++ }

func requestHash(h string) func(*paymentsv1alpha1.PaymentJob) {
	return func(j *paymentsv1alpha1.PaymentJob) { j.Status.RequestHash = h }
}

func statusKey(k string) func(*paymentsv1alpha1.PaymentJob) {
	return func(j *paymentsv1alpha1.PaymentJob) { j.Status.IdempotencyKey = k }
}

func sentToUID(uid string) func(*paymentsv1alpha1.PaymentJob) {
	return func(j *paymentsv1alpha1.PaymentJob) { j.Status.Provider.UID = uid }
}

// chargePending is a job whose provider holds its charge id, not final.
func chargePending(id string) func(*paymentsv1alpha1.PaymentJob) {
	return func(j *paymentsv1alpha1.PaymentJob) {
		j.Status.ProviderResponse = &paymentsv1alpha1.ProviderResponse{ID: id, Status: "processing"}
	}
}

// newProvider is the PaymentProvider of the world in state s, or nil.
func newProvider(s providerState) *paymentsv1alpha1.PaymentProvider {
	if s == providerMissing {
		return nil
	}
	pp := &paymentsv1alpha1.PaymentProvider{
		ObjectMeta: metav1.ObjectMeta{Name: providerName, Namespace: namespace, UID: providerUID, Generation: 1,
			Finalizers: []string{paymentsv1alpha1.ProviderFinalizer}},
		Spec: paymentsv1alpha1.PaymentProviderSpec{HTTP: &paymentsv1alpha1.HTTPProvider{URL: endpoint}},
		Status: paymentsv1alpha1.PaymentProviderStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{{
			Type: paymentsv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: paymentsv1alpha1.ReasonReady,
			Message: "Ready", ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(start.Add(-time.Hour)),
		}}},
	}
	switch s {
	case providerUnguarded:
		pp.Finalizers = nil
	case providerNotReady:
		pp.Status.Conditions[0].Status = metav1.ConditionFalse
		pp.Status.Conditions[0].Reason = paymentsv1alpha1.ReasonSecretNotFound
		pp.Status.Conditions[0].Message = `Secret "payments-token" not found`
	case providerDeleting:
		pp.DeletionTimestamp = ptr.To(metav1.NewTime(start.Add(-time.Second)))
	case providerNoLookup:
		pp.Spec.Lookup = &paymentsv1alpha1.ProviderLookup{Policy: paymentsv1alpha1.LookupNever}
	}
	return pp
}

// world is one row's fake API server, provider, ledger and clock, and the
// reconciler that works on them.
type world struct {
	// store is the fake API server itself: the test's own reads and the
	// changes of other writers go here, unrecorded.
	store    client.WithWatch
	clock    *clocktesting.FakeClock
	recorder *events.FakeRecorder
	provider *fakeProvider
	r        *engine.Reconciler
	// kind and key are the object the reconciler is asked about.
	kind engine.AnyKind
	key  types.NamespacedName
	// guarded are the provider calls that must follow a claim write.
	guarded []string

	mu      sync.Mutex
	effects []string
	faults  []fault
}

// setup is what a world is made of.
type setup struct {
	// kind makes the kind, given the world's client and ledger (nil
	// without one).
	kind func(c client.Client, l engine.OutcomeLedger) engine.AnyKind
	key  types.NamespacedName
	// objects are in the API server before the first pass.
	objects []client.Object
	ledger  *ledgerState
	// adapter is what the PaymentProvider resolves to, given the world's
	// scripted provider.
	adapter func(*fakeProvider) payment.Provider
	answers []answer
	settle  answer
	// settles, when set, script the settles one by one instead.
	settles []answer
	guarded []string
}

func newWorld(t *testing.T, tt row) *world {
	return newWorldOf(t, tt, func(client.Client, engine.OutcomeLedger) engine.AnyKind { return paymentjob.Kind() })
}

// newWorldOf is the world of row tt, whose job is reconciled as kind makes
// it (the table runs the example kind too).
func newWorldOf(t *testing.T, tt row, kind func(client.Client, engine.OutcomeLedger) engine.AnyKind) *world {
	objs := []client.Object{tt.job.DeepCopy()}
	if pp := newProvider(tt.provider); pp != nil {
		objs = append(objs, pp)
	}
	return build(t, setup{kind: kind, key: jobKey, objects: objs, ledger: tt.ledger,
		answers: tt.answers, settle: tt.settle, settles: tt.settles, guarded: []string{"charge", "settle"},
		adapter: func(p *fakeProvider) payment.Provider {
			if tt.looker {
				return lookingProvider{p}
			}
			return p
		}})
}

// build makes the world of s: the reconciler of s.kind, as cmd/main.go
// sets it up, on a fake API server holding s.objects.
func build(t *testing.T, s setup) *world {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := paymentsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	w := &world{
		clock:    clocktesting.NewFakeClock(start),
		recorder: events.NewFakeRecorder(100),
		key:      s.key,
		guarded:  s.guarded,
	}
	w.provider = &fakeProvider{answers: s.answers, settle: s.settle, settles: s.settles, note: w.note}
	// The manager's cache indexes (engine.FieldIndexes): the refund
	// kind lists a payment's refunds by them, and the PaymentProvider
	// watch's mapping lists its users.
	b := fake.NewClientBuilder().
		WithScheme(scheme).
		WithStatusSubresource(&paymentsv1alpha1.PaymentJob{}, &paymentsv1alpha1.PaymentRefund{},
			&paymentsv1alpha1.PaymentProvider{})
	for _, ix := range engine.FieldIndexes() {
		b = b.WithIndex(ix.Object, ix.Field, ix.Extract)
	}
	w.store = b.WithObjects(s.objects...).Build()
	providers := &providercache.ProviderCache{
		SecretReader: w.store,
		Clock:        w.clock,
		Build: func(paymentsv1alpha1.PaymentProviderSpec, string) (payment.Provider, error) {
			return s.adapter(w.provider), nil
		},
	}
	c := interceptor.NewClient(w.store, w.interceptors())
	var outcomes engine.OutcomeLedger
	if s.ledger != nil {
		outcomes = &fakeLedger{state: *s.ledger, note: w.note}
	}
	w.r = &engine.Reconciler{
		Kind:            s.kind(c, outcomes),
		Client:          c,
		Ledger:          outcomes,
		Recorder:        w.recorder,
		Providers:       providers,
		Clock:           w.clock,
		Holder:          me,
		ClaimLease:      lease,
		ProviderTimeout: providerTimeout,
		Backoff:         backoff,
	}
	w.kind = w.r.Kind
	return w
}

// pass is one Reconcile of the world's object, and what it did.
type pass struct {
	result  ctrl.Result
	err     error
	effects []string
	events  []string
}

func (w *world) reconcile(t *testing.T, faults []fault) pass {
	w.mu.Lock()
	w.effects, w.faults = nil, faults
	w.mu.Unlock()
	ctx := log.IntoContext(context.Background(), testr.New(t))
	res, err := w.reconcileOnce(ctx)
	p := pass{result: res, err: err}
	w.mu.Lock()
	p.effects = w.effects
	w.mu.Unlock()
	for {
		select {
		case e := <-w.recorder.Events:
			// "<type> <reason> <message>"
			if f := strings.Fields(e); len(f) > 1 {
				p.events = append(p.events, f[1])
			}
		default:
			return p
		}
	}
}

// reconcileOnce runs Reconcile once. A panic is an error and the effect
// "panic", as the manager recovers it (RecoverPanic), so that one broken
// row does not end the others.
func (w *world) reconcileOnce(ctx context.Context) (res ctrl.Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			w.note("panic")
			err = fmt.Errorf("panic: %v", v)
		}
	}()
	return w.r.Reconcile(ctx, ctrl.Request{NamespacedName: w.key})
}

// note appends an effect.
func (w *world) note(effect string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.effects = append(w.effects, effect)
}

// takeFault returns the fault for the write named what, once.
func (w *world) takeFault(what string) *fault {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, f := range w.faults {
		if f.on == what {
			w.faults = append(w.faults[:i:i], w.faults[i+1:]...)
			return &f
		}
	}
	return nil
}

// interceptors record every write the reconciler makes, and answer the
// faulted ones.
func (w *world) interceptors() interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return w.write(ctx, obj, "create: "+kindOf(obj), func() error { return c.Create(ctx, obj, opts...) })
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return w.write(ctx, obj, "update: "+kindOf(obj), func() error { return c.Update(ctx, obj, opts...) })
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			return w.write(ctx, obj, w.describePatch(ctx, obj), func() error { return c.Patch(ctx, obj, patch, opts...) })
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			return w.write(ctx, obj, "delete: "+kindOf(obj), func() error { return c.Delete(ctx, obj, opts...) })
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			return w.write(ctx, obj, describeStatus(sub, obj), func() error { return c.SubResource(sub).Update(ctx, obj, opts...) })
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			return w.write(ctx, obj, describeStatus(sub, obj)+" (patch)", func() error { return c.SubResource(sub).Patch(ctx, obj, patch, opts...) })
		},
	}
}

// write records the write named what, and does it unless a fault answers
// it. The record says how the API server answered: nothing when it took
// it, (conflict) or (error) when it refused, (deleted) when the write
// removed the last finalizer of an object being deleted.
func (w *world) write(ctx context.Context, obj client.Object, what string, do func() error) error {
	if f := w.takeFault(what); f != nil {
		if f.meanwhile != nil {
			f.meanwhile(w)
		}
		w.note(what + outcomeOf(f.err, false))
		return f.err
	}
	err := do()
	gone := apierrors.IsNotFound(w.store.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object)))
	w.note(what + outcomeOf(err, gone))
	return err
}

func outcomeOf(err error, gone bool) string {
	switch {
	case gone && (err == nil || apierrors.IsNotFound(err)):
		return " (deleted)"
	case err == nil:
		return ""
	case apierrors.IsConflict(err):
		return " (conflict)"
	}
	return " (error)"
}

// describeStatus names a status write by the object's phase and Ready
// reason.
func describeStatus(sub string, obj client.Object) string {
	o, ok := obj.(engine.Object)
	if !ok {
		return sub + ": " + kindOf(obj)
	}
	return fmt.Sprintf("%s: %s/%s", sub, o.GetPaymentStatus().Phase, readyReason(o))
}

// describePatch names a patch by what it changes against the stored object:
// the job's finalizer and finished label, the provider's in-use finalizer.
func (w *world) describePatch(ctx context.Context, obj client.Object) string {
	old := obj.DeepCopyObject().(client.Object)
	if err := w.store.Get(ctx, client.ObjectKeyFromObject(obj), old); err != nil {
		return "patch: " + kindOf(obj) + " that is not there"
	}
	prefix, finalizer, name := "patch:", paymentsv1alpha1.Finalizer, "finalizer"
	if _, ok := obj.(*paymentsv1alpha1.PaymentProvider); ok {
		prefix, finalizer, name = "provider:", paymentsv1alpha1.ProviderFinalizer, "in-use"
	}
	var changes []string
	switch had, has := controllerutil.ContainsFinalizer(old, finalizer), controllerutil.ContainsFinalizer(obj, finalizer); {
	case !had && has:
		changes = append(changes, "+"+name)
	case had && !has:
		changes = append(changes, "-"+name)
	}
	if old.GetLabels()[paymentsv1alpha1.LabelFinished] != "true" && obj.GetLabels()[paymentsv1alpha1.LabelFinished] == "true" {
		changes = append(changes, "+finished")
	}
	if len(changes) == 0 {
		changes = append(changes, "other")
	}
	return prefix + " " + strings.Join(changes, " ")
}

func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *paymentsv1alpha1.PaymentJob:
		return "PaymentJob"
	case *paymentsv1alpha1.PaymentRefund:
		return "PaymentRefund"
	case *paymentsv1alpha1.PaymentProvider:
		return "PaymentProvider"
	}
	return fmt.Sprintf("%T", obj)
}

func readyReason(obj engine.Object) string {
	if c := meta.FindStatusCondition(obj.GetPaymentStatus().Conditions, paymentsv1alpha1.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

// Changes of other writers, for a step's before or a fault's meanwhile.
// They go to the store directly, so they are not the reconciler's effects.

// job reads the stored job.
func (w *world) job() *paymentsv1alpha1.PaymentJob {
	job := &paymentsv1alpha1.PaymentJob{}
	if err := w.store.Get(context.Background(), jobKey, job); err != nil {
		panic(fmt.Sprintf("cannot read the job: %v", err))
	}
	return job
}

// subject reads the stored object the world reconciles.
func (w *world) subject() engine.Object {
	obj := w.kind.New()
	if err := w.store.Get(context.Background(), w.key, obj); err != nil {
		panic(fmt.Sprintf("cannot read the %s: %v", w.kind.Name(), err))
	}
	return obj
}

// must panics on a failed write of the world's own: a broken harness, not
// a finding.
func must(err error) {
	if err != nil {
		panic(err)
	}
}

// claimedBy is another replica's claim write, made now.
func claimedBy(holder, reason string) func(w *world) {
	return func(w *world) {
		job := w.job()
		if job.Status.Provider == nil {
			job.Status.Provider = sentTo()
		}
		paymentjob.ClaimStatus(job, paymentjob.ChargeOf(job), holder, w.clock.Now(), lease, reason)
		must(w.store.Status().Update(context.Background(), job))
	}
}

// labelledByGitOps is a GitOps tool adding a label of its own.
func labelledByGitOps(w *world) {
	job := w.job()
	if job.Labels == nil {
		job.Labels = map[string]string{}
	}
	job.Labels["app.kubernetes.io/managed-by"] = "flux"
	must(w.store.Update(context.Background(), job))
}

// unsuspended is a person setting spec.suspend to false.
func unsuspended(w *world) {
	job := w.job()
	job.Spec.Suspend = ptr.To(false)
	must(w.store.Update(context.Background(), job))
}

// resolvedAs is a person setting the resolve annotation (and the admission
// policy recording who did).
func resolvedAs(value string) func(w *world) {
	return func(w *world) {
		obj := w.subject()
		obj.SetAnnotations(map[string]string{
			paymentsv1alpha1.AnnotationResolve:    value,
			paymentsv1alpha1.AnnotationResolvedBy: "alice@example.com",
		})
		must(w.store.Update(context.Background(), obj))
	}
}

// providerCreated is a person creating the PaymentProvider, Ready at once.
func providerCreated(w *world) {
	must(w.store.Create(context.Background(), newProvider(providerReady)))
}

// providerGone is the PaymentProvider deleted for good (its finalizer
// taken off by force).
func providerGone(w *world) {
	ctx := context.Background()
	pp := &paymentsv1alpha1.PaymentProvider{}
	must(w.store.Get(ctx, types.NamespacedName{Namespace: namespace, Name: providerName}, pp))
	pp.Finalizers = nil
	must(w.store.Update(ctx, pp))
	must(w.store.Delete(ctx, pp))
}

// call is one request to the provider: a charge, a refund, a settle, or a
// look at a charge's refunds (refund.Charge names the charge).
type call struct {
	what   string
	key    string
	req    payment.ChargeRequest
	refund payment.RefundRequest
	err    error
}

// fakeProvider is a payment.Provider that answers from a script: the n-th
// Charge gets answers[n], the last answer repeats. It is never a
// payment.Looker; lookingProvider is.
type fakeProvider struct {
	answers []answer
	settle  answer
	settles []answer
	note    func(string)

	mu    sync.Mutex
	calls []call
}

// Charge answers from the script.
func (p *fakeProvider) Charge(_ context.Context, key string, req payment.ChargeRequest) (payment.Outcome, error) {
	return p.play(call{what: "charge", key: key, req: req}, p.answers)
}

// play answers c with script: the n-th call named c.what gets script[n],
// the last answer repeats. It records c and its answer, and notes it.
func (p *fakeProvider) play(c call, script []answer) (payment.Outcome, error) {
	p.mu.Lock()
	o, err := nth(script, len(p.named(c.what)), noAnswer)()
	c.err = err
	p.calls = append(p.calls, c)
	p.mu.Unlock()
	p.note(c.what)
	return o, err
}

// noAnswer is the answer of a call the row did not script.
func noAnswer() (payment.Outcome, error) {
	return payment.Outcome{}, errors.New("the row scripts no answer")
}

// nth is the n-th entry of script, the last one repeating, or none when
// the script is empty.
func nth[T any](script []T, n int, none T) T {
	switch {
	case n < len(script):
		return script[n]
	case len(script) > 0:
		return script[len(script)-1]
	}
	return none
}

// callsNamed are the provider's calls named one of what, in order.
func (p *fakeProvider) callsNamed(what ...string) []call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.named(what...)
}

// named is callsNamed; the caller holds the lock.
func (p *fakeProvider) named(what ...string) []call {
	var named []call
	for _, c := range p.calls {
		if slices.Contains(what, c.what) {
			named = append(named, c)
		}
	}
	return named
}

// lastCall is the provider's last call, and whether there was one.
func (p *fakeProvider) lastCall() (call, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.calls) == 0 {
		return call{}, false
	}
	return p.calls[len(p.calls)-1], true
}

// lookingProvider is fakeProvider that can also read charges: a
// payment.Looker whose Settle answers from the script and whose Lookup
// finds nothing.
type lookingProvider struct{ *fakeProvider }

// Lookup finds nothing; no row reaches it.
func (p lookingProvider) Lookup(context.Context, []string) (map[string][]payment.Found, error) {
	p.note("lookup")
	return nil, nil
}

// Settle answers from the script.
func (p lookingProvider) Settle(_ context.Context, key, _ string) (payment.Outcome, error) {
	if len(p.settles) > 0 {
		return p.play(call{what: "settle", key: key}, p.settles)
	}
	return p.play(call{what: "settle", key: key}, []answer{p.settle})
}

// fakeLedger is a engine.OutcomeLedger in memory.
type fakeLedger struct {
	state ledgerState
	note  func(string)

	mu sync.Mutex
}

// Find returns the entry of key.
func (l *fakeLedger) Find(_ context.Context, key string) (ledger.Entry, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state.findErr != nil {
		return ledger.Entry{}, false, l.state.findErr
	}
	for _, e := range l.state.entries {
		if e.Key == key {
			return e, true, nil
		}
	}
	return ledger.Entry{}, false, nil
}

// OutsideEtcd says whether the ledger is kept outside etcd.
func (l *fakeLedger) OutsideEtcd() bool { return l.state.outside }

// Has reports whether key has an entry.
func (l *fakeLedger) Has(ctx context.Context, key string) (bool, error) {
	_, found, err := l.Find(ctx, key)
	return found, err
}

// Record stores e, or fails with the next scripted error.
func (l *fakeLedger) Record(_ context.Context, e ledger.Entry) error {
	l.mu.Lock()
	var err error
	switch held := l.state.recordedMeanwhile; {
	case len(l.state.recordErrs) > 0:
		err, l.state.recordErrs = l.state.recordErrs[0], l.state.recordErrs[1:]
	case held != nil && held.Key == e.Key:
		err = ledger.CheckRecorded(e, *held)
	default:
		l.state.entries = append(l.state.entries, e)
	}
	l.mu.Unlock()
	what := "ledger: " + string(e.Outcome)
	if err != nil {
		what += " (error)"
	}
	l.note(what)
	return err
}

// ledgerBack is the ledger answering again.
func ledgerBack(w *world) {
	l := w.r.Ledger.(*fakeLedger)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.state.findErr = nil
}

// ledgerEntry is the ledger's record of the world's job, paid a day ago,
// for a request with fingerprint (the job's own when empty).
func ledgerEntry(fingerprint string) ledger.Entry {
	c := paymentjob.ChargeOf(newJob())
	if fingerprint == "" {
		fingerprint = c.Fingerprint
	}
	return ledger.Entry{Key: c.Key, Fingerprint: fingerprint, Provider: *sentTo(), Charge: "pi_0",
		Outcome: paymentsv1alpha1.LedgerCompleted, At: start.Add(-24 * time.Hour)}
}

// refusedLedgerEntry is another job's refusal under the world's job's key,
// for another request.
func refusedLedgerEntry() *ledger.Entry {
	e := ledgerEntry("sha256:0000")
	e.Charge, e.Outcome, e.Reason = "", paymentsv1alpha1.LedgerFailed, paymentsv1alpha1.ReasonCardDeclined
	return &e
}

// movedLedgerEntry is ledgerEntry for a payment made where the job's
// provider no longer charges: another endpoint.
func movedLedgerEntry() ledger.Entry {
	e := ledgerEntry("")
	e.Provider.Endpoint = "https://payments.example.com/old/charges"
	return e
}
