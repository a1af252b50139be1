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
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// Payments that settle later. A provider that accepts a payment and has
// not settled it (a bank debit: processing for days) answers a
// payment.SettlingError. That is a state, not an uncertainty: the object
// stays Processing with Ready=False AwaitingSettlement, its claim's
// attempt is not counted again, nothing is sent again under its key, and
// no alert fires. The engine reads the payment by its id (Client.Settle),
// without a claim (a read moves no money), at a rate that falls with the
// payment's age (payment.SettleReadInterval), sooner when a signed provider event
// names it (Wake), and always through the provider's rate limit. It ends
// Completed or Failed when the provider decides, and is Stalled
// (SettlementOverdue) past its deadline, still read.

// settling reports whether obj waits for its provider to settle a payment
// it accepted.
func settling(obj Object) bool {
	st := obj.GetPaymentStatus()
	return st.Phase == paymentsv1alpha1.PhaseProcessing && st.Settlement != nil && st.Settlement.SettledAt == nil &&
		st.ProviderResponse != nil && st.ProviderResponse.ID != ""
}

// settlementDeadline is how long a payment paid with method may settle: the
// PaymentProvider's spec.settlement.deadlineSeconds, or the method's
// documented time.
func settlementDeadline(pp *paymentsv1alpha1.PaymentProvider, method string) time.Duration {
	if pp != nil && pp.Spec.Settlement != nil && pp.Spec.Settlement.DeadlineSeconds != nil {
		return time.Duration(*pp.Spec.Settlement.DeadlineSeconds) * time.Second
	}
	return payment.SettlementTimeOf(method).Deadline
}

// eventsOn reports whether the provider pp sends signed events.
func eventsOn(pp *paymentsv1alpha1.PaymentProvider) bool {
	return pp != nil && pp.Spec.Events != nil
}

// paymentProviderOf is obj's PaymentProvider as the cache holds it, or nil.
func (r *Reconciler) paymentProviderOf(ctx context.Context, obj Object) *paymentsv1alpha1.PaymentProvider {
	var pp paymentsv1alpha1.PaymentProvider
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: r.terms(obj).Provider}, &pp); err != nil {
		return nil
	}
	return &pp
}

// settlingProgress is the conditions' input of a settling object at now:
// AwaitingSettlement, or SettlementOverdue (Stalled) past its deadline.
func (r *Reconciler) settlingProgress(obj Object, now time.Time) Progress {
	st := obj.GetPaymentStatus()
	s := st.Settlement
	method := s.Method
	if method == "" {
		method = "payment"
	}
	took := payment.SettlementTimeOf(s.Method).Typical
	if now.After(s.Deadline.Time) {
		return Progress{Reason: paymentsv1alpha1.ReasonSettlementOverdue, Stalled: true, Message: payment.CleanMessage(fmt.Sprintf(
			"The provider accepted %s %s at %s and has not settled it by its deadline (%s); such payments take %s. "+
				"The operator goes on reading it; check it at the provider", method, st.ProviderResponse.ID,
			s.Since.UTC().Format(time.RFC3339), s.Deadline.UTC().Format(time.RFC3339), took), MaxMessageLength)}
	}
	return Progress{Reason: paymentsv1alpha1.ReasonAwaitingSettlement, Message: payment.CleanMessage(fmt.Sprintf(
		"Waiting for the provider to settle %s %s (%s); such payments take %s. Nothing is sent again; stalled after %s",
		method, st.ProviderResponse.ID, st.ProviderResponse.Status, took, s.Deadline.UTC().Format(time.RFC3339)), MaxMessageLength)}
}

// recordSettling writes, under the claim of the call that answered s, that
// the provider accepted the payment and has not settled it: Processing,
// AwaitingSettlement, the provider's id, and the settlement's start and
// deadline. It schedules the first read.
func (r *Reconciler) recordSettling(ctx context.Context, obj Object, s *payment.SettlingError) (ctrl.Result, error) {
	r.Kind.counters().Calls.WithLabelValues(outcomeSettling).Inc()
	now := r.Clock.Now()
	t := r.paymentProviderOf(ctx, obj)
	var p Progress
	entered := obj.GetPaymentStatus().Settlement == nil
	err := r.writeOutcome(ctx, obj, func(o Object) {
		markSettling(o, t, s, now)
		p = r.settlingProgress(o, now)
		SetConditions(o, p)
	})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("cannot record that the %s settles later: %w", r.Kind.Words().Noun, err)
	}
	if entered {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, p.Reason, r.Kind.Words().Action, "%s", p.Message)
		log.FromContext(ctx).Info("Accepted by the provider, settling later", "id", s.ID, "method", s.Method)
	}
	return ctrl.Result{RequeueAfter: r.scheduleSettleRead(obj, eventsOn(t), now, false)}, nil
}

// markSettling records s on obj's status, once: the id, the provider's
// status, and when the settlement started and is overdue. A method learnt
// later (a read that says more than the create did) is recorded with the
// deadline it brings.
func markSettling(obj Object, pp *paymentsv1alpha1.PaymentProvider, s *payment.SettlingError, now time.Time) {
	st := obj.GetPaymentStatus()
	if st.ProviderResponse == nil {
		st.ProviderResponse = &paymentsv1alpha1.ProviderResponse{}
	}
	st.ProviderResponse.ID = payment.Bound(s.ID, maxIDLength)
	st.ProviderResponse.Status = payment.Bound(s.Status, MaxShortLength)
	if st.Settlement == nil {
		st.Settlement = &paymentsv1alpha1.Settlement{Since: metav1.NewTime(now)}
	}
	if st.Settlement.Method == "" || st.Settlement.Deadline.IsZero() {
		st.Settlement.Method = payment.Bound(s.Method, 64)
		st.Settlement.Deadline = metav1.NewTime(st.Settlement.Since.Add(settlementDeadline(pp, s.Method)))
	}
}

// scheduleSettleRead remembers when obj is next read and returns how long
// until then. A payment this process has not read yet (after a restart)
// is read at a random point of its interval, so that a restart does not
// read every settling payment at once.
func (r *Reconciler) scheduleSettleRead(obj Object, events bool, now time.Time, spread bool) time.Duration {
	age := now.Sub(obj.GetPaymentStatus().Settlement.Since.Time)
	d := payment.SettleReadInterval(age, events)
	if spread {
		d = time.Duration(rand.Int64N(int64(d)) + 1)
	} else {
		d = Jitter(d)
	}
	r.settleReads.set(obj, now.Add(d))
	return d
}

// awaitSettlement handles a settling object: when its read is due (or an
// event woke it), it reads the payment once, by its id, and writes the
// outcome when the provider decided, or keeps waiting. It takes no claim:
// a read moves no money, and every write carries the resourceVersion the
// pass read.
func (r *Reconciler) awaitSettlement(ctx context.Context, obj Object) (ctrl.Result, error) {
	now := r.Clock.Now()
	target, waiting, err := r.ResolveProvider(ctx, obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	if waiting != nil {
		// Money may still move: wait for the provider, as any Processing
		// object does.
		if waiting.Stalled {
			return ctrl.Result{RequeueAfter: Jitter(r.Backoff.Max)}, r.stall(ctx, obj, *waiting)
		}
		return ctrl.Result{RequeueAfter: Jitter(r.Backoff.Max)}, r.writeProgress(ctx, obj, *waiting)
	}
	if moved := r.providerMoved(obj, target); moved != nil {
		return ctrl.Result{}, r.stall(ctx, obj, *moved)
	}
	events := eventsOn(target.PaymentProvider)
	if _, woken := r.woken.take(obj); woken {
		wakesTotal.WithLabelValues(r.Kind.Name()).Inc()
	} else {
		due, known := r.settleReads.get(obj)
		if !known {
			return ctrl.Result{RequeueAfter: r.scheduleSettleRead(obj, events, now, true)}, r.noteSettling(ctx, obj, now)
		}
		if now.Before(due) {
			return ctrl.Result{RequeueAfter: due.Sub(now)}, r.noteSettling(ctx, obj, now)
		}
	}
	if wait := r.takeToken(target, now); wait > 0 {
		// Reads share the provider's rate limit with the charges, so a
		// flood of settling payments or of events never goes past it.
		return ctrl.Result{RequeueAfter: Jitter(wait)}, nil
	}
	settleReadsTotal.WithLabelValues(r.Kind.Name()).Inc()
	o, err := r.readSettling(ctx, obj, target)
	if errors.Is(err, ErrCannotFind) {
		// A provider that cannot read payments by id (an HTTP service
		// without a lookup endpoint) is asked with the same request under
		// the same key, which it answers with the payment it holds: a
		// send, so under a claim, as every send is.
		reason, notBefore := r.nextClaim(obj)
		if now.Before(notBefore) {
			return ctrl.Result{RequeueAfter: notBefore.Sub(now)}, nil
		}
		return r.claimAndAct(ctx, obj, target, reason, payment.Verdict{Action: payment.ActionCharge})
	}
	if s, ok := payment.IsSettling(err); ok {
		d := r.scheduleSettleRead(obj, events, now, false)
		obj.GetPaymentStatus().ProviderResponse.Status = payment.Bound(s.Status, MaxShortLength)
		if s.Method != "" && obj.GetPaymentStatus().Settlement.Method == "" {
			// The read says what the create did not: its deadline too.
			obj.GetPaymentStatus().Settlement.Method = ""
			markSettling(obj, target.PaymentProvider, s, now)
		}
		return ctrl.Result{RequeueAfter: d}, r.noteSettling(ctx, obj, now)
	}
	if refusal, refused := payment.IsRefusal(err); err != nil && (!refused || !errors.Is(refusal, payment.ErrDeclined)) {
		// The read failed, or was refused as a read (not the bank's
		// answer): the payment is where it was, accepted. Nothing was
		// sent, so nothing is counted, and it is never Failed on a
		// read's error: read again later.
		log.FromContext(ctx).Info("Cannot read a settling payment, will read again", "id", obj.GetPaymentStatus().ProviderResponse.ID, "error", err.Error())
		return ctrl.Result{RequeueAfter: r.scheduleSettleRead(obj, events, now, false)}, r.noteSettling(ctx, obj, now)
	}
	// Decided: settled, or refused by the bank.
	settled := metav1.NewTime(now)
	obj.GetPaymentStatus().Settlement.SettledAt = &settled
	r.settleReads.forget(client.ObjectKeyFromObject(obj))
	return r.recordOutcome(ctx, obj, o, false, err)
}

// readSettling reads the settling payment of obj once, by its id; a
// provider that cannot read payments answers ErrCannotFind.
func (r *Reconciler) readSettling(ctx context.Context, obj Object, t *Target) (payment.Outcome, error) {
	calls, err := r.connect(ctx, obj, t)
	if err != nil {
		return payment.Outcome{}, err
	}
	callCtx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	st := obj.GetPaymentStatus()
	return calls.Settle(callCtx, st.IdempotencyKey, st.ProviderResponse.ID)
}

// noteSettling sets the settling object's conditions for the pass's write.
// Their message carries no clock, so they change (and are written) only
// when the deadline passes or a read says more; the Warning event of an
// overdue payment follows that write.
func (r *Reconciler) noteSettling(ctx context.Context, obj Object, now time.Time) error {
	p := r.settlingProgress(obj, now)
	var then func()
	if p.Stalled && readyReason(obj) != p.Reason {
		stalledTotal.WithLabelValues(r.Kind.Name(), p.Reason).Inc()
		then = func() {
			r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, p.Reason, r.Kind.Words().Action, "%s", p.Message)
		}
	}
	return r.noteStatus(ctx, obj, p, then)
}
