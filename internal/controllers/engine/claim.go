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

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/teeth"
)

// The side effect of a pass: the claim write and, only after it succeeded,
// the one provider call it guards (a charge, or the settle of a charge the
// provider already holds), and the mapping of the provider's answer to the
// outcome written. Every call here is preceded by its own claim write.

// claimAndAct writes a claim on the resourceVersion the decision was made on
// and, only if that write succeeds, acts on the verdict: charges (after a
// token from the provider's rate limit), settles the charge the provider
// holds, or records the charge a lookup found.
func (r *Reconciler) claimAndAct(ctx context.Context, obj Object, t *Target, reason string, verdict payment.Verdict) (ctrl.Result, error) {
	if verdict.Action == payment.ActionCharge {
		// An object waiting for a token does not hold a worker, nor a claim.
		if wait, err := r.waitForToken(ctx, obj, t); wait > 0 || err != nil {
			return ctrl.Result{RequeueAfter: wait}, err
		}
	}
	unclaimed := obj.GetPaymentStatus().DeepCopy()
	switch {
	case unclaimed.Phase != paymentsv1alpha1.PhaseProcessing:
		// The first claim: the payment is tied to where it sends it, key
		// scope included.
		id := t.ID
		obj.GetPaymentStatus().Provider = &id
	case obj.GetPaymentStatus().Provider == nil:
		// Claimed by a version that did not record where: recorded now,
		// under the scope of the key that version sent, whatever the
		// provider's scope is today.
		id := t.ID
		id.KeyScope = claimedScope(obj)
		obj.GetPaymentStatus().Provider = &id
	}
	c := r.requestOf(obj)
	if obj.GetPaymentStatus().RequestHash != "" && obj.GetPaymentStatus().RequestHash != c.Fingerprint {
		// The provider would refuse another request under this key, or worse,
		// a changed key would charge again. Never charge; ask for attention.
		return ctrl.Result{}, r.stall(ctx, obj, Progress{
			Reason:  paymentsv1alpha1.ReasonRequestChanged,
			Message: fmt.Sprintf("The request no longer matches the one recorded at the first claim; not %s again", r.Kind.Words().Doing),
		})
	}

	if verdict.Action == payment.ActionSettle && obj.GetPaymentStatus().ProviderResponse == nil {
		// Remembered, so that every later attempt settles this charge too.
		obj.GetPaymentStatus().ProviderResponse = responseOf(verdict.Charge.Outcome)
	}
	note := ClaimStatus(obj, c, r.Holder, r.Clock.Now(), r.ClaimLease, reason)
	if teeth.On(teeth.UnguardedClaim) {
		obj.SetResourceVersion(r.storedVersion(ctx, obj))
	}
	if err := r.writeClaim(ctx, obj); err != nil {
		return ctrl.Result{}, err
	}
	if unclaimed.Phase != paymentsv1alpha1.PhaseProcessing {
		if why := r.providerWithdrawn(ctx, t); why != "" {
			// Deleted between the look at it and the claim: nothing was
			// sent, so the claim is taken back and nothing is charged.
			*obj.GetPaymentStatus() = *unclaimed
			return ctrl.Result{RequeueAfter: Jitter(r.Backoff.Max)}, r.setPending(ctx, obj, Progress{
				Reason: paymentsv1alpha1.ReasonProviderDeleted, Message: fmt.Sprintf(
					"PaymentProvider %q %s; a %s that was not %s is never %s through it", r.terms(obj).Provider, why,
					r.Kind.Words().Object, r.Kind.Words().done(), r.Kind.Words().done())})
		}
	}
	if reason == paymentsv1alpha1.ReasonClaimTakenOver || obj.GetPaymentStatus().Attempts > 1 {
		// A first claim is announced by the outcome's event a few
		// milliseconds later: one event per object in the happy path. Retries
		// and takeovers get an event of their own.
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, reason, "Claim", "%s", note)
	}

	switch verdict.Action {
	case payment.ActionRecord:
		// Charged before this object existed (or before this cluster did):
		// the provider is the memory.
		o := verdict.Charge.Outcome
		o.Replayed = true
		log.FromContext(ctx).Info("Found the payment by its idempotency key before sending", "id", o.ID)
		return r.recordOutcome(ctx, obj, o, true, nil)
	case payment.ActionSettle:
		return r.settle(ctx, obj, t, c.Key, verdict.Charge.ID)
	}
	return r.send(ctx, obj, t, c)
}

// send calls the provider under the claim just written and records what it
// answered.
func (r *Reconciler) send(ctx context.Context, obj Object, t *Target, c Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	logger.V(1).Info("Calling the provider", "action", r.Kind.Words().Action, "attempt", obj.GetPaymentStatus().Attempts,
		"amount", c.Amount, "currency", c.Currency)
	callCtx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	outcome, found, err := r.chargeOrFind(callCtx, obj, t, c)
	return r.recordOutcome(ctx, obj, outcome, found, err)
}

// settle reads the charge the provider holds for this object until it is
// final, under the claim just written; it never creates another.
func (r *Reconciler) settle(ctx context.Context, obj Object, t *Target, key, id string) (ctrl.Result, error) {
	calls, err := r.connect(ctx, obj, t)
	if err != nil {
		return ctrl.Result{}, err
	}
	log.FromContext(ctx).V(1).Info("Settling payment", "attempt", obj.GetPaymentStatus().Attempts, "id", id)
	callCtx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	o, err := calls.Settle(callCtx, key, id)
	if errors.Is(err, ErrCannotFind) {
		return r.recordUncertain(ctx, obj, fmt.Errorf("%s %s is not final and PaymentProvider %q cannot read it",
			r.Kind.Words().Noun, id, r.terms(obj).Provider))
	}
	if err == nil {
		o.Replayed = true
	}
	return r.recordOutcome(ctx, obj, o, true, err)
}

// recordOutcome records what a provider call answered: Completed on
// success, Failed on a definitive refusal, and otherwise Processing with a
// retry. found marks an outcome that no charge of this pass produced.
func (r *Reconciler) recordOutcome(ctx context.Context, obj Object, outcome payment.Outcome, found bool, err error) (ctrl.Result, error) {
	if errors.Is(err, errChargeMismatch) {
		return ctrl.Result{}, r.stall(ctx, obj, Progress{Reason: paymentsv1alpha1.ReasonChargeMismatch, Message: payment.CleanMessage(r.Kind.Words().not()+": "+err.Error(), MaxMessageLength)})
	}
	if s, ok := payment.IsSettling(err); ok {
		return r.recordSettling(ctx, obj, s)
	}
	if err == nil {
		counters := r.Kind.counters()
		counters.Calls.WithLabelValues(outcomeSucceeded).Inc()
		if outcome.Replayed {
			counters.Replays.Inc()
		}
		return ctrl.Result{}, r.recordSuccess(ctx, obj, outcome, found)
	}
	if refusal, ok := payment.IsRefusal(err); ok {
		r.Kind.counters().Calls.WithLabelValues(refusalOutcome(refusal)).Inc()
		if obj.GetPaymentStatus().Attempts > 1 && !errors.Is(refusal, payment.ErrDeclined) {
			// An earlier attempt had no answer and may have moved the
			// money; this refusal speaks for this request only. Never
			// write Failed.
			words := r.Kind.Words()
			return r.retryIn(obj, Jitter(r.Backoff.Max)), r.stall(ctx, obj, Progress{
				Reason: paymentsv1alpha1.ReasonUncertainRefusal, Message: payment.CleanMessage(fmt.Sprintf(
					"The provider refused attempt %d (%s: %s), but an earlier attempt had no answer and may have %s; "+
						"not failing the %s. Check it at the provider", obj.GetPaymentStatus().Attempts, refusal.Reason, refusal.Message,
					strings.ToLower(words.Done), words.Request), MaxMessageLength)})
		}
		return ctrl.Result{}, r.recordRefusal(ctx, obj, refusal)
	}
	r.Kind.counters().Calls.WithLabelValues(outcomeTransient).Inc()
	return r.recordUncertain(ctx, obj, err)
}

// errChargeMismatch says the provider holds a charge under the key that was
// made for another request.
var errChargeMismatch = errors.New("charge made for another request")

// chargeOrFind calls Charge; but when the object has been Processing for longer
// than the provider remembers keys, it first looks the key up, so a provider
// that forgot the key is not asked to charge a second time. found is true
// when the outcome comes from the lookup.
func (r *Reconciler) chargeOrFind(ctx context.Context, obj Object, t *Target, c Request) (payment.Outcome, bool, error) {
	started := obj.GetPaymentStatus().StartedAt
	calls, err := r.connect(ctx, obj, t)
	if err != nil {
		return payment.Outcome{}, false, err
	}
	if r.KeyRetention > 0 && started != nil && r.Clock.Since(started.Time) > r.KeyRetention {
		if o, found, looked, err := r.findBeforeSending(ctx, calls, c); looked {
			return o, found, err
		}
	}
	o, err := calls.Send(ctx, c.Key)
	return o, false, err
}

// findBeforeSending looks c's key up before an object older than the
// provider's key memory is sent again; looked is false when the provider
// holds nothing under it (send), or cannot look (the key is all there is).
func (r *Reconciler) findBeforeSending(ctx context.Context, calls Client, c Request) (o payment.Outcome, found, looked bool, err error) {
	held, err := calls.Find(ctx, c.Key)
	switch {
	case errors.Is(err, ErrCannotFind):
		return payment.Outcome{}, false, false, nil
	case err != nil:
		// Unsure whether it was made: never send on a failed lookup.
		return payment.Outcome{}, false, true, payment.Transient(fmt.Errorf("cannot look the %s up by its key: %w",
			r.Kind.Words().Noun, err), payment.RetryAfter(err))
	}
	{
		verdict := payment.Decide(held, c.Fingerprint, c.match())
		switch verdict.Action {
		case payment.ActionRecord:
			log.FromContext(ctx).Info("Found the payment of an object older than the provider's key memory", "id", verdict.Charge.ID)
			o := verdict.Charge.Outcome
			o.Replayed = true
			return o, true, true, nil
		case payment.ActionSettle:
			o, err := calls.Settle(ctx, c.Key, verdict.Charge.ID)
			o.Replayed = err == nil
			return o, true, true, err
		case payment.ActionStall:
			logChargeMismatch(ctx, "provider", verdict.Charge.ID, verdict.Charge.Amount, verdict.Charge.Currency)
			return payment.Outcome{}, false, true, fmt.Errorf("%w: %s", errChargeMismatch, verdict.Reason)
		}
	}
	return payment.Outcome{}, false, false, nil
}

// nextClaim is the reason of the next claim of a Processing object and the
// earliest time it may be made: after the backoff of the last attempt (or
// the later time a pass of this process put it off to) and,
// when another process holds the claim, after that claim expires (a
// takeover, with the same key).
func (r *Reconciler) nextClaim(obj Object) (reason string, notBefore time.Time) {
	c := obj.GetPaymentStatus().Claim
	if c == nil {
		return paymentsv1alpha1.ReasonClaimed, time.Time{}
	}
	notBefore = c.AcquiredAt.Add(r.retryDelay(obj))
	if at, ok := r.retries.get(obj); ok && at.After(notBefore) {
		// Put off further by the pass that wrote the last outcome.
		notBefore = at
	}
	if c.Holder == r.Holder {
		return paymentsv1alpha1.ReasonClaimed, notBefore
	}
	if c.ExpiresAt.After(notBefore) {
		notBefore = c.ExpiresAt.Time
	}
	return paymentsv1alpha1.ReasonClaimTakenOver, notBefore
}

// takeToken takes a token of t's client-side rate limit at now, or, when
// none is free, takes none and returns how long until one is (counted in
// paymentjob_rate_limited_total): charges and settle reads share it.
func (r *Reconciler) takeToken(t *Target, now time.Time) time.Duration {
	if t.Limiter == nil {
		return 0
	}
	reservation := t.Limiter.ReserveN(now, 1)
	delay := reservation.DelayFrom(now)
	if delay <= 0 {
		return 0
	}
	reservation.CancelAt(now)
	rateLimitedTotal.WithLabelValues(r.Kind.Name()).Inc()
	return delay
}

// waitForToken takes a token of the provider's client-side rate limit for
// a charge, or says how long to wait for one. A long wait is said in the
// object's status, once.
func (r *Reconciler) waitForToken(ctx context.Context, obj Object, t *Target) (time.Duration, error) {
	now := r.Clock.Now()
	delay := r.takeToken(t, now)
	if delay <= 0 {
		r.rateWaits.forget(client.ObjectKeyFromObject(obj))
		return 0, nil
	}
	since, ok := r.rateWaits.get(obj)
	if !ok {
		since = now
		r.rateWaits.set(obj, now)
	}
	waited := now.Sub(since)
	if waited < rateLimitNotice || readyReason(obj) == paymentsv1alpha1.ReasonRateLimited {
		return delay, nil
	}
	p := Progress{Reason: paymentsv1alpha1.ReasonRateLimited, Message: fmt.Sprintf(
		"Waiting for the rate limit of PaymentProvider %q (requestsPerSecond) for %s", r.terms(obj).Provider, waited.Round(time.Second))}
	if obj.GetPaymentStatus().Phase == paymentsv1alpha1.PhaseProcessing {
		return delay, r.writeProgress(ctx, obj, p)
	}
	return delay, r.setPending(ctx, obj, p)
}
