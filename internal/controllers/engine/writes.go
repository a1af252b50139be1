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
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// Every API write of the engine, of every kind, and the finalizer it puts on
// a PaymentProvider: nothing else in the engine, and nothing in a kind,
// writes. The rule, once: each write carries the resourceVersion the
// decision was made on (Status().Update with the object as read, finalizer
// and label changes as merge patches with MergeFromWithOptimisticLock), so
// a stale cache or another replica gets a 409 Conflict and the pass ends
// quietly. The two writes that guard money are the claim (writeClaim),
// written before the one provider call it allows, and the outcome
// (writeOutcome after a provider call; writeFound for an outcome found in
// the ledger or given by a person; refuseUnsent; FailAfterSuccess). The
// only write that retries a conflict is the outcome of a provider call, and
// only while the claim is still this attempt's.

// writeClaim writes the claim set on obj (ClaimStatus) on the
// resourceVersion the pass decided on; only if it succeeds may the
// provider be called.
func (r *Reconciler) writeClaim(ctx context.Context, obj Object) error {
	if err := r.Client.Status().Update(ctx, obj); err != nil {
		if apierrors.IsConflict(err) {
			claimConflictsTotal.WithLabelValues(r.Kind.Name()).Inc()
		}
		return fmt.Errorf("cannot claim %s %s: %w", r.Kind.Name(), obj.GetName(), err)
	}
	r.wrote(ctx)
	return nil
}

// writeFound writes a final outcome set on obj that no provider call of
// this pass answered (what: found in the ledger, a person's resolution),
// on the resourceVersion the pass decided on: a conflict ends the pass, and
// the next one looks again.
func (r *Reconciler) writeFound(ctx context.Context, obj Object, what string) error {
	if err := r.Client.Status().Update(ctx, obj); err != nil {
		return fmt.Errorf("cannot record %s of %s %s: %w", what, r.Kind.Name(), obj.GetName(), err)
	}
	r.wrote(ctx)
	return nil
}

// guardProvider makes sure the object's PaymentProvider carries
// ProviderFinalizer before the object's first claim, so the provider cannot
// disappear while the charge may be in flight. A provider being deleted
// takes no new claims (ResolveProvider), and no new finalizer.
func (r *Reconciler) guardProvider(ctx context.Context, t *Target) error {
	pp := t.PaymentProvider
	if pp == nil || controllerutil.ContainsFinalizer(pp, paymentsv1alpha1.ProviderFinalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(pp.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(pp, paymentsv1alpha1.ProviderFinalizer)
	if err := r.Client.Patch(ctx, pp, patch); err != nil {
		return fmt.Errorf("cannot add the finalizer to PaymentProvider %q: %w", pp.Name, err)
	}
	return nil
}

// recordSuccess writes Completed with the provider's response, then removes
// the finalizer. found marks a charge found at the provider (by a lookup or
// a settle) rather than answered to this pass's charge request.
func (r *Reconciler) recordSuccess(ctx context.Context, obj Object, o payment.Outcome, found bool) error {
	now := r.Clock.Now()
	var eventReason, msg string
	err := r.writeOutcome(ctx, obj, func(j Object) {
		eventReason, msg = CompletedStatus(j, r.Kind.Words(), o, found, now)
	})
	if err != nil {
		return fmt.Errorf("cannot record the %s outcome: %w", r.Kind.Words().Noun, err)
	}
	r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, eventReason, r.Kind.Words().Action, "%s", msg)
	log.FromContext(ctx).Info("Payment completed", "charge", o.ID, "replayed", o.Replayed, "attempts", obj.GetPaymentStatus().Attempts)
	return r.recordAndFinish(ctx, obj)
}

// recordRefusal writes Failed: the provider definitively did not move the
// money. The condition and the event speak of the kind's request (Words):
// "The provider refused the payment; nothing was charged", "... the
// refund; no money went back".
func (r *Reconciler) recordRefusal(ctx context.Context, obj Object, refusal *payment.Refusal) error {
	now := metav1.NewTime(r.Clock.Now())
	msg := payment.CleanMessage(refusal.Message, MaxMessageLength)
	reason := refusalReason(refusal)
	words := r.Kind.Words()
	err := r.writeOutcome(ctx, obj, func(j Object) {
		j.GetPaymentStatus().Phase = paymentsv1alpha1.PhaseFailed
		j.GetPaymentStatus().Failure = &paymentsv1alpha1.Failure{Reason: reason, Message: msg}
		j.GetPaymentStatus().Claim = nil
		j.GetPaymentStatus().CompletedAt = &now
		SetConditions(j, Progress{Reason: reason,
			Message: fmt.Sprintf("The provider refused the %s; %s: %s", words.Request, words.Unmoved, msg)})
	})
	if err != nil {
		return fmt.Errorf("cannot record the refusal: %w", err)
	}
	r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, words.Action, "The provider refused the %s: %s", words.Request, msg)
	log.FromContext(ctx).Info("Payment refused by the provider", "reason", refusal.Reason)
	return r.recordAndFinish(ctx, obj)
}

// FailAfterSuccess records that obj, Completed, failed at the provider
// after it succeeded (f: a refund the customer's bank returned): Failed with
// reason and message, the provider's status, Stalled, a Warning event and
// the kind's FailedAfterSuccess count. The object is finished already (out
// of the cache, no finalizer): only its status changes. The outcome ledger
// keeps the first outcome, Completed: it is the record of what the provider
// answered under the key, and the key is spent there (sending it again
// replays the failed refund, never moves money); the money reconciliation
// reports such an entry as RefundFailedAfterSuccess against the provider's
// list, as it reports the object.
func (r *Reconciler) FailAfterSuccess(ctx context.Context, obj Object, f payment.Found, reason, message string) error {
	now := metav1.NewTime(r.Clock.Now())
	st := obj.GetPaymentStatus()
	st.Phase = paymentsv1alpha1.PhaseFailed
	st.Failure = &paymentsv1alpha1.Failure{Reason: reason, Message: message}
	if st.ProviderResponse != nil {
		st.ProviderResponse.Status = payment.Bound(f.Status, MaxShortLength)
	}
	st.CompletedAt = &now
	SetConditions(obj, Progress{Reason: reason, Message: message, Stalled: true})
	if err := r.Client.Status().Update(ctx, obj); err != nil {
		return fmt.Errorf("cannot record that %s %s failed: %w", r.Kind.Words().Noun, f.ID, err)
	}
	if c := r.Kind.counters().FailedAfterSuccess; c != nil {
		c.Inc()
	}
	r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, r.Kind.Words().Action, "%s", message)
	log.FromContext(ctx).Info("Failed at the provider after it succeeded", "kind", r.Kind.Name(), "id", f.ID)
	return nil
}

// ReportMovedOutside sets MovedOutsideOperator (True, reason, message) on
// obj, finished, and emits a Warning event of reason: the provider reports
// money moved outside the operator since. Its outcome stands; the same
// report is not made twice.
func (r *Reconciler) ReportMovedOutside(ctx context.Context, obj Object, reason, message string) error {
	if c := meta.FindStatusCondition(obj.GetPaymentStatus().Conditions, paymentsv1alpha1.ConditionMovedOutsideOperator); c != nil &&
		c.Status == metav1.ConditionTrue && c.Reason == reason && c.Message == message {
		return nil
	}
	meta.SetStatusCondition(&obj.GetPaymentStatus().Conditions, metav1.Condition{Type: paymentsv1alpha1.ConditionMovedOutsideOperator,
		Status: metav1.ConditionTrue, Reason: reason, Message: message, ObservedGeneration: obj.GetGeneration()})
	if err := r.Client.Status().Update(ctx, obj); err != nil {
		return fmt.Errorf("cannot report money moved outside the operator on %s %s: %w", r.Kind.Name(), obj.GetName(), err)
	}
	r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, r.Kind.Words().Action, "%s", message)
	log.FromContext(ctx).Info("The provider reports money moved outside the operator", "kind", r.Kind.Name(), "reason", reason)
	return nil
}

// refuseUnsent fails an object that was never claimed because its kind
// refuses the request before any provider call (a refund beyond what is
// left of its charge). Nothing was sent, so nothing is recorded in the
// ledger: an object created again under the key is looked at anew. t and
// c, when known, record where and what it would have sent.
func (r *Reconciler) refuseUnsent(ctx context.Context, obj Object, t *Target, c Request, refusal *payment.Refusal) error {
	st := obj.GetPaymentStatus()
	if t != nil {
		id := t.ID
		st.Provider = &id
		st.IdempotencyKey = c.Key
		st.RequestHash = c.Fingerprint
	}
	now := metav1.NewTime(r.Clock.Now())
	msg := payment.CleanMessage(refusal.Message, MaxMessageLength)
	reason := refusalReason(refusal)
	st.Phase = paymentsv1alpha1.PhaseFailed
	st.Failure = &paymentsv1alpha1.Failure{Reason: reason, Message: msg}
	st.CompletedAt = &now
	SetConditions(obj, Progress{Reason: reason, Message: "Not sent to the provider: " + msg})
	if err := r.Client.Status().Update(ctx, obj); err != nil {
		return fmt.Errorf("cannot record the refusal: %w", err)
	}
	r.wrote(ctx)
	r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, r.Kind.Words().Action, "Not sent to the provider: %s", msg)
	log.FromContext(ctx).Info("Refused before any provider call", "reason", reason)
	return r.finish(ctx, obj)
}

// writeOutcome writes a final outcome to the object's status. A conflict means
// somebody else wrote the object during the call: a label from a GitOps tool, a
// deletion. The outcome is then written on a fresh copy, but only while the
// claim is still this attempt's; otherwise the conflict is returned and the
// object is looked at again (a later claim replays the outcome at the provider).
func (r *Reconciler) writeOutcome(ctx context.Context, obj Object, apply func(Object)) error {
	attempt := obj.GetPaymentStatus().Attempts
	current := obj
	first := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			fresh := r.Kind.New()
			if err := r.Client.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
				return err
			}
			st := fresh.GetPaymentStatus()
			c := st.Claim
			if st.Phase != paymentsv1alpha1.PhaseProcessing || c == nil ||
				c.Holder != r.Holder || st.Attempts != attempt {
				return errClaimLost
			}
			current = fresh
		}
		first = false
		apply(current)
		return r.Client.Status().Update(ctx, current)
	})
	if errors.Is(err, errClaimLost) {
		claimLostTotal.WithLabelValues(r.Kind.Name()).Inc()
	}
	if err != nil {
		return err
	}
	r.wrote(ctx)
	// The caller's object is the one written.
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(current).Elem())
	return nil
}

// errClaimLost says the claim moved on while the provider was called.
var errClaimLost = errors.New("the claim was taken over during the provider call")

// recordUncertain keeps the object Processing after an uncertain outcome and
// schedules the next attempt; after backoffLimit retries it reports Stalled
// and keeps retrying at the longest interval. It never writes Failed.
func (r *Reconciler) recordUncertain(ctx context.Context, obj Object, callErr error) (ctrl.Result, error) {
	delay := max(r.retryDelay(obj), payment.RetryAfter(callErr))
	msg := payment.CleanMessage(fmt.Sprintf("Attempt %d had an uncertain outcome (%v); retrying in %s with the same idempotency key",
		obj.GetPaymentStatus().Attempts, callErr, delay.Round(time.Millisecond)), MaxMessageLength)
	p := Progress{Reason: paymentsv1alpha1.ReasonTransientError, Message: msg}
	if r.exhausted(obj) {
		p = Progress{Reason: paymentsv1alpha1.ReasonRetriesExhausted, Message: msg, Stalled: true}
	}
	log.FromContext(ctx).Info("Provider call failed, will retry", "attempt", obj.GetPaymentStatus().Attempts,
		"retryAfter", delay, "error", callErr.Error())
	r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, p.Reason, r.Kind.Words().Action, "%s", msg)
	if err := r.writeProgress(ctx, obj, p); err != nil && !apierrors.IsConflict(err) {
		return ctrl.Result{}, err
	}
	return r.retryIn(obj, Jitter(delay)), nil
}

// The status a pass changes besides its guarded writes (Pending, Stalled,
// the progress of a Processing object) is set in memory and written once:
// when the pass ends (flushStatus, from Reconcile), or right before a write
// that must follow it (the ledger record, the finishing patch), or by a
// guarded write that carries it (wrote). Its events, counts and logs follow
// that write, as Flux's summarize and patch do at the end of a
// reconcile. Outside a pass (a direct call) it is written at once.

// noteStatus sets p's conditions on obj and, when that changes its status,
// notes the change for the pass's write; then runs once it is written.
func (r *Reconciler) noteStatus(ctx context.Context, obj Object, p Progress, then func()) error {
	before := obj.GetPaymentStatus().DeepCopy()
	SetConditions(obj, p)
	if equality.Semantic.DeepEqual(before, obj.GetPaymentStatus()) && before.Phase == obj.GetPaymentStatus().Phase {
		return nil
	}
	pass := statusPassOf(ctx)
	if pass == nil {
		if err := r.Client.Status().Update(ctx, obj); err != nil {
			return fmt.Errorf("cannot update the status of %s %s: %w", r.Kind.Name(), obj.GetName(), err)
		}
		if then != nil {
			then()
		}
		return nil
	}
	pass.dirty = true
	if then != nil {
		pass.then = append(pass.then, then)
	}
	return nil
}

// flushStatus writes what the pass changed on obj's status, once, on the
// resourceVersion the pass holds, and then announces it.
func (r *Reconciler) flushStatus(ctx context.Context, obj Object) error {
	pass := statusPassOf(ctx)
	if pass == nil || !pass.dirty {
		r.wrote(ctx)
		return nil
	}
	if err := r.Client.Status().Update(ctx, obj); err != nil {
		pass.dirty, pass.then = false, nil
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("cannot update the status of %s %s: %w", r.Kind.Name(), obj.GetName(), err)
	}
	r.wrote(ctx)
	return nil
}

// wrote says a write carried the pass's status changes: they are
// announced.
func (r *Reconciler) wrote(ctx context.Context) {
	pass := statusPassOf(ctx)
	if pass == nil {
		return
	}
	then := pass.then
	pass.dirty, pass.then = false, nil
	for _, f := range then {
		f()
	}
}

// setPending sets phase Pending with the reason, if that changes anything;
// a new reason is announced with an event.
func (r *Reconciler) setPending(ctx context.Context, obj Object, p Progress) error {
	previous := readyReason(obj)
	obj.GetPaymentStatus().Phase = paymentsv1alpha1.PhasePending
	return r.noteStatus(ctx, obj, p, func() {
		if previous == p.Reason {
			return
		}
		eventType := corev1.EventTypeNormal
		if p.Stalled || p.Reason == paymentsv1alpha1.ReasonProviderNotFound || p.Reason == paymentsv1alpha1.ReasonProviderNotReady || p.Reason == paymentsv1alpha1.ReasonLedgerUnavailable {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(obj, nil, eventType, p.Reason, "Wait", "%s", p.Message)
	})
}

// writeProgress sets the progress of a pass in the conditions.
func (r *Reconciler) writeProgress(ctx context.Context, obj Object, p Progress) error {
	return r.noteStatus(ctx, obj, p, nil)
}

// stall records that the object needs attention: Stalled=True with the reason,
// in its current phase (a new object becomes Pending). The reason is announced
// once with a Warning event.
func (r *Reconciler) stall(ctx context.Context, obj Object, p Progress) error {
	p.Stalled = true
	previous := readyReason(obj)
	if obj.GetPaymentStatus().Phase == "" {
		obj.GetPaymentStatus().Phase = paymentsv1alpha1.PhasePending
	}
	return r.noteStatus(ctx, obj, p, func() {
		if previous == p.Reason {
			return
		}
		stalledTotal.WithLabelValues(r.Kind.Name(), p.Reason).Inc()
		log.FromContext(ctx).Info("Stopping without a provider call", "kind", r.Kind.Name(), "reason", p.Reason, "phase", obj.GetPaymentStatus().Phase)
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, p.Reason, "Stall", "%s", p.Message)
	})
}

// ensureFinalizer adds the outcome guard before the object can be claimed.
// The patch is made on a copy: the object keeps what this pass set on it in
// memory (what the kind's Prepare recorded in its status) for the claim
// write, so Prepare runs once per admission, and takes only the stored
// resourceVersion and finalizers. The patch carries the resourceVersion, so
// nothing else changed in between.
func (r *Reconciler) ensureFinalizer(ctx context.Context, obj Object) error {
	if controllerutil.ContainsFinalizer(obj, paymentsv1alpha1.Finalizer) {
		return nil
	}
	stored := obj.DeepCopyObject().(client.Object)
	patch := client.MergeFromWithOptions(obj.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(stored, paymentsv1alpha1.Finalizer)
	if err := r.Client.Patch(ctx, stored, patch); err != nil {
		return fmt.Errorf("cannot add the finalizer to %s %s: %w", r.Kind.Name(), obj.GetName(), err)
	}
	obj.SetFinalizers(stored.GetFinalizers())
	obj.SetResourceVersion(stored.GetResourceVersion())
	return nil
}

// removeFinalizer releases an object that has no work in flight.
func (r *Reconciler) removeFinalizer(ctx context.Context, obj Object) error {
	if err := r.flushStatus(ctx, obj); err != nil {
		return err
	}
	if !controllerutil.ContainsFinalizer(obj, paymentsv1alpha1.Finalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(obj.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(obj, paymentsv1alpha1.Finalizer)
	if err := r.Client.Patch(ctx, obj, patch); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("cannot remove finalizer: %w", err)
	}
	return nil
}

// finish releases an object with a final outcome: in one write it removes the
// finalizer and sets the finished label, which takes the object out of the
// manager's cache (see CacheOptions). Nothing reads a finished object again.
func (r *Reconciler) finish(ctx context.Context, obj Object) error {
	if err := r.flushStatus(ctx, obj); err != nil {
		return err
	}
	if obj.GetLabels()[paymentsv1alpha1.LabelFinished] == "true" &&
		!controllerutil.ContainsFinalizer(obj, paymentsv1alpha1.Finalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(obj.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
	MarkFinished(obj)
	if err := r.Client.Patch(ctx, obj, patch); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("cannot mark %s %s finished: %w", r.Kind.Name(), obj.GetName(), err)
	}
	if r.Collector != nil {
		r.Collector.Schedule(r.Kind, obj)
	}
	return nil
}
