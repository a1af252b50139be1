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

package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// Reconciler moves the payments of one Kind (a charge, a refund) through
// the exactly-once protocol. Every write that guards a provider call carries
// the resourceVersion it was decided on; a call is only made right after
// this process wrote a claim.
type Reconciler struct {
	// Kind is what the payments are (paymentjob.Kind, paymentrefund.Kind);
	// required.
	Kind AnyKind
	// Client reads from the cache and writes to the API server.
	Client client.Client
	// Recorder emits the events users see in kubectl describe.
	Recorder events.EventRecorder
	// Providers resolves an object's PaymentProvider into a payment.Provider.
	Providers ProviderResolver
	// Clock is the time source of claims, deadlines and backoff.
	Clock clock.PassiveClock
	// Holder identifies this process in claims: pod name and a per-process id.
	Holder string
	// ClaimLease is how long a claim is held before another process may take
	// it over. It must be longer than ProviderTimeout.
	ClaimLease time.Duration
	// ProviderTimeout bounds one provider call unless the PaymentProvider
	// sets timeoutSeconds; a call is always kept shorter than ClaimLease.
	ProviderTimeout time.Duration
	// Backoff paces retries after uncertain outcomes.
	Backoff Backoff
	// KeyRetention is how long providers are trusted to remember an
	// idempotency key. An object Processing for longer is looked up by its key
	// (payment.Looker) before it is charged again; zero never looks up.
	KeyRetention time.Duration
	// MaxConcurrentReconciles is the number of objects worked on at once.
	MaxConcurrentReconciles int
	// Ledger records every final outcome before the object's finalizer comes
	// off, and finishes re-created objects from it; nil turns it off.
	Ledger OutcomeLedger
	// Collector deletes finished objects after their TTL; nil keeps them.
	Collector Scheduler
	// APIReader reads what the cache leaves out: who wrote a resolve
	// annotation (managedFields). Optional.
	APIReader client.Reader
	// Attribution says whether the resolve-attribution admission policy is
	// enforced; without it (nil, or not enforced) a resolution is recorded
	// as unattributed, never as the resolved-by annotation says.
	Attribution AttributionPolicy

	// wakeups brings back objects whose lookup was answered.
	wakeups chan event.GenericEvent
	// refused remembers the resolutions refused, announced once each.
	refused refusedResolutions
	// written remembers the resourceVersion of this process's latest write
	// of each object, so that older cached copies are skipped.
	written writtenVersions
	// stranded counts the objects stalled behind a deleted provider.
	stranded countedJobs
	// conflicts counts the finished objects stalled on a ledger conflict.
	conflicts countedJobs
	// rateWaits dates since when objects wait for their provider's rate limit:
	// every requeue cancels its reservation, so only the sum of the waits
	// says an object is held back.
	rateWaits jobMemory[time.Time]
	// retries dates the next attempt of objects put off beyond their backoff.
	retries jobMemory[time.Time]
	// settleReads dates the next read of settling objects.
	settleReads jobMemory[time.Time]
	// woken marks the objects a provider event named since their last pass.
	woken jobMemory[bool]
	// settlingObjects counts the objects waiting for a settlement.
	settlingObjects countedJobs
}

// terms reads the spec fields of obj the engine needs.
func (r *Reconciler) terms(obj Object) Terms { return r.Kind.Terms(obj) }

// Reconcile moves one object of the kind one step through the exactly-once
// protocol.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	start := time.Now()
	ctx = withStatusPass(ctx)
	obj := r.Kind.New()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.written.stale(obj, r.Clock.Now()) {
		// The cache has not caught up with this process's own last write;
		// the watch event of that write brings the object back. Acting on the
		// older copy would only cost a refused write. The requeue is a
		// backstop for resourceVersions that went backwards (an etcd
		// restore): by then the entry has expired.
		staleSkipsTotal.WithLabelValues(r.Kind.Name()).Inc()
		return ctrl.Result{RequeueAfter: writtenVersionTTL + time.Second}, nil
	}
	seen := obj.GetResourceVersion()
	defer func() {
		if obj.GetResourceVersion() != seen {
			r.written.record(obj, r.Clock.Now())
		}
	}()
	phase := obj.GetPaymentStatus().Phase
	defer func() {
		reconcileDuration.WithLabelValues(r.Kind.Name(), PhaseLabel(phase)).Observe(time.Since(start).Seconds())
	}()

	var res ctrl.Result
	var err error
	switch phase {
	case paymentsv1alpha1.PhaseCompleted, paymentsv1alpha1.PhaseFailed:
		skippedTerminalTotal.WithLabelValues(r.Kind.Name()).Inc()
		err = r.finishTerminal(ctx, obj)
	case paymentsv1alpha1.PhaseProcessing:
		res, err = r.resume(ctx, obj)
	default:
		res, err = r.admit(ctx, obj)
	}
	if !errors.Is(err, errClaimLost) && !apierrors.IsConflict(err) {
		// The pass's status changes, written once. One that loses to a
		// newer write is looked at again when the pass said to come back
		// (the newer write's event may bring it sooner).
		flushErr := r.flushStatus(ctx, obj)
		switch {
		case flushErr == nil || err != nil:
		case apierrors.IsConflict(flushErr) && res.RequeueAfter > 0:
			writeConflictsTotal.WithLabelValues(r.Kind.Name()).Inc()
		default:
			err = flushErr
		}
	}
	switch {
	case errors.Is(err, errClaimLost), apierrors.IsConflict(err):
		// A stale cache or another replica moved the object first (or took the
		// claim over during the provider call: its call replays the outcome,
		// which it writes). Nothing was charged on the strength of the stale
		// copy; look again.
		writeConflictsTotal.WithLabelValues(r.Kind.Name()).Inc()
		log.FromContext(ctx).V(1).Info("Write conflict, requeueing", "phase", phase, "claimLost", errors.Is(err, errClaimLost))
		return ctrl.Result{RequeueAfter: Jitter(conflictRequeue)}, nil
	}
	return res, err
}

// admit handles an object that has not been claimed: new or Pending. It waits
// while the object is suspended, past its deadline or its provider is not ready,
// and, where the provider can, while its key is looked up; then it claims
// the object and charges, or records the charge the lookup found.
func (r *Reconciler) admit(ctx context.Context, obj Object) (ctrl.Result, error) {
	if !obj.GetDeletionTimestamp().IsZero() {
		// Never claimed, so nothing is in flight: let it go.
		return ctrl.Result{}, r.removeFinalizer(ctx, obj)
	}
	res, done, searched, err := r.ledgerThenPrepare(ctx, obj)
	if done || err != nil {
		return res, err
	}
	if err := r.ensureFinalizer(ctx, obj); err != nil {
		return ctrl.Result{}, err
	}
	if _, ok := obj.GetAnnotations()[paymentsv1alpha1.AnnotationResolve]; ok {
		w := r.Kind.Words()
		r.refuseResolution(ctx, obj, fmt.Sprintf("the %s has not been claimed, so nothing was sent to the provider; "+
			"set spec.suspend to true, or delete the %s, to keep it from being %s", w.Object, w.Object, w.done()))
	}

	now := r.Clock.Now()
	wait, held := heldBack(obj, r.terms(obj), r.Kind.Words(), now)
	if held != nil {
		if held.Stalled {
			// Past its deadline: it will never be charged.
			return ctrl.Result{}, r.setPending(ctx, obj, *held)
		}
		return ctrl.Result{RequeueAfter: wait}, r.setPending(ctx, obj, *held)
	}
	if stall := r.checkRecordedKey(obj); stall != nil {
		return ctrl.Result{}, r.stall(ctx, obj, *stall)
	}
	target, waiting, err := r.ResolveProvider(ctx, obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	if waiting != nil {
		// The PaymentProvider watch brings the object back when it changes;
		// the requeue does even if no event comes.
		return ctrl.Result{RequeueAfter: r.pendingRecheck(obj, waiting.Reason, wait)}, r.setPending(ctx, obj, *waiting)
	}
	if !searched.covers(target) {
		// The provider appeared, or its key scope changed, since the
		// ledger was asked: ask again under the scope the claim sends.
		return ctrl.Result{RequeueAfter: Jitter(conflictRequeue)}, nil
	}
	if err := r.guardProvider(ctx, target); err != nil {
		return ctrl.Result{}, err
	}
	return r.admitAfterLookup(ctx, obj, target)
}

// ledgerThenPrepare asks the ledger about an unclaimed object, then runs
// its kind's checks: a re-created object is finished from its own ledger
// entry before anything else, even where its kind's checks would wait (a
// refund whose PaymentJob is gone). An entry that says too little to be
// compared before the checks is compared after them. done reports that the
// pass ends here.
func (r *Reconciler) ledgerThenPrepare(ctx context.Context, obj Object) (res ctrl.Result, done bool, searched ledgerSearch, err error) {
	res, done, searched, err = r.finishFromLedger(ctx, obj, false)
	if done || err != nil {
		return res, true, searched, err
	}
	if res, done, err := r.prepare(ctx, obj); done || err != nil {
		return res, true, searched, err
	}
	if searched.unprepared {
		return r.finishFromLedger(ctx, obj, true)
	}
	return ctrl.Result{}, false, searched, nil
}

// prepare runs the kind's checks before an unclaimed object's ledger
// lookup and claim; done reports that the pass ends here (waiting,
// stalled, or failed without a provider call).
func (r *Reconciler) prepare(ctx context.Context, obj Object) (res ctrl.Result, done bool, err error) {
	decided, err := r.Kind.prepare(ctx, obj, func(ctx context.Context) (*Target, *Progress, error) {
		return r.ResolveProvider(ctx, obj)
	})
	if err != nil {
		return ctrl.Result{}, true, err
	}
	return r.unsent(ctx, obj, nil, Request{}, decided)
}

// resume handles a Processing object: the charge may already have happened. It
// waits for another holder's claim to expire and for the backoff after a
// failed attempt, checks that the object would reach the provider account its
// key was first sent to, then claims again and charges with the same key
// (the provider replays an earlier success instead of charging twice), or
// settles the charge the provider already holds.
func (r *Reconciler) resume(ctx context.Context, obj Object) (ctrl.Result, error) {
	if obj.GetDeletionTimestamp().IsZero() {
		if err := r.ensureFinalizer(ctx, obj); err != nil {
			return ctrl.Result{}, err
		}
	}
	if _, ok := obj.GetAnnotations()[paymentsv1alpha1.AnnotationResolve]; ok {
		// A person's answer to an uncertain outcome, honoured only on a
		// Stalled object and never followed by a charge.
		if res, handled, err := r.resolve(ctx, obj); handled || err != nil {
			return res, err
		}
	} else {
		// A value set again after it was removed is checked again.
		r.refused.forget(obj.GetUID())
	}
	r.settlingObjects.set(client.ObjectKeyFromObject(obj), settling(obj), settlingGauge.WithLabelValues(r.Kind.Name()))
	if settling(obj) {
		// Accepted by the provider, not settled yet: read, never sent again.
		return r.awaitSettlement(ctx, obj)
	}
	reason, notBefore := r.nextClaim(obj)
	if now := r.Clock.Now(); now.Before(notBefore) {
		return ctrl.Result{RequeueAfter: notBefore.Sub(now)}, nil
	}
	if stall := r.checkRecordedKey(obj); stall != nil {
		return ctrl.Result{}, r.stall(ctx, obj, *stall)
	}

	target, waiting, err := r.ResolveProvider(ctx, obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	r.stranded.set(client.ObjectKeyFromObject(obj), waiting != nil && waiting.Reason == paymentsv1alpha1.ReasonProviderDeleted, strandedJobsGauge.WithLabelValues(r.Kind.Name()))
	if waiting != nil {
		// Money may have moved: stay Processing and come back.
		delay := r.retryDelay(obj)
		if waiting.Stalled {
			return r.retryIn(obj, Jitter(r.Backoff.Max)), r.stall(ctx, obj, *waiting)
		}
		// Not remembered: the provider's watch event may bring it back sooner.
		return ctrl.Result{RequeueAfter: Jitter(delay)}, r.writeProgress(ctx, obj, *waiting)
	}
	if moved := r.providerMoved(obj, target); moved != nil {
		// The same key at another account is a new charge there.
		return ctrl.Result{}, r.stall(ctx, obj, *moved)
	}
	verdict := payment.Verdict{Action: payment.ActionCharge}
	if resp := obj.GetPaymentStatus().ProviderResponse; resp != nil && resp.ID != "" {
		// The provider already holds this object's charge, not final yet:
		// settle it, never charge around it.
		verdict = payment.Verdict{Action: payment.ActionSettle, Charge: payment.Found{Outcome: payment.Outcome{ID: resp.ID}}}
	} else if res, done, err := r.resumeFromLedger(ctx, obj, target); done || err != nil {
		// Restored from an older snapshot, or older than the provider's
		// key memory: finished already, as the ledger recorded it.
		return res, err
	}
	return r.claimAndAct(ctx, obj, target, reason, verdict)
}

// finishTerminal touches a Completed or Failed object only to finish what a
// crash interrupted (the finalizer, the finished label) or to acknowledge a
// new generation. It never calls the provider.
func (r *Reconciler) finishTerminal(ctx context.Context, obj Object) error {
	if v, ok := obj.GetAnnotations()[paymentsv1alpha1.AnnotationResolve]; ok && (obj.GetPaymentStatus().Resolution == nil || obj.GetPaymentStatus().Resolution.Value != v) {
		r.refuseResolution(ctx, obj, fmt.Sprintf("the %s is already %s; its outcome is final", r.Kind.Words().Object, obj.GetPaymentStatus().Phase))
	}
	if obj.GetPaymentStatus().ObservedGeneration != obj.GetGeneration() {
		// Only spec.suspend can change after the outcome (and only until the
		// object is finished); it no longer matters, but kstatus reads a stale
		// observedGeneration as "in progress". Written before the label,
		// which takes the object out of the cache.
		ready := meta.FindStatusCondition(obj.GetPaymentStatus().Conditions, paymentsv1alpha1.ConditionReady)
		p := Progress{Reason: paymentsv1alpha1.ReasonSucceeded}
		if ready != nil {
			p = Progress{Reason: ready.Reason, Message: ready.Message}
		}
		if err := r.writeProgress(ctx, obj, p); err != nil {
			return err
		}
	}
	// A crash may have come between the outcome and its ledger record.
	return r.recordAndFinish(ctx, obj)
}

// SetupWithManager registers the reconciler; IndexFields must have run. It
// refuses the settings checkSettings refuses.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := r.checkSettings(); err != nil {
		return err
	}
	r.wakeups = make(chan event.GenericEvent, wakeupBuffer)
	k := r.Kind
	b := ctrl.NewControllerManagedBy(mgr).
		For(k.New()).
		WatchesRawSource(source.Channel(r.wakeups, &handler.EnqueueRequestForObject{})).
		Watches(&paymentsv1alpha1.PaymentProvider{}, handler.EnqueueRequestsFromMapFunc(r.waitingFor))
	return k.watch(b).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, r.MaxConcurrentReconciles)}).
		Named(strings.ToLower(k.Name())).
		Complete(r)
}
