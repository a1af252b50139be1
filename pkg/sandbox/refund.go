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

package sandbox

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// Creating a refund: the same path as a charge (process: admit, wait,
// commit), so that idempotency keys, faults, latency and the write rate
// limit apply alike, with a commit of its own that never refunds more than
// what is left of the payment.

// Refund statuses, as at Stripe for card refunds.
const (
	// RefundStatusPending is a refund whose money is on its way back; it
	// counts against what is left of the payment.
	RefundStatusPending = "pending"
	// RefundStatusSucceeded is a refund whose money went back.
	RefundStatusSucceeded = "succeeded"
	// RefundStatusFailed is a refund that failed after it was created
	// (FailRefund): its money stayed with the account, and the payment
	// may be refunded by that much again.
	RefundStatusFailed = "failed"
)

// Refund reasons a client may send, as at Stripe.
const (
	RefundReasonDuplicate           = "duplicate"
	RefundReasonFraudulent          = "fraudulent"
	RefundReasonRequestedByCustomer = "requested_by_customer"
)

// refundReasons are the reasons CreateRefund accepts.
var refundReasons = []string{RefundReasonDuplicate, RefundReasonFraudulent, RefundReasonRequestedByCustomer}

// Failure reasons of a failed refund, as at Stripe.
const (
	RefundFailureExpiredOrCanceledCard = "expired_or_canceled_card"
	RefundFailureLostOrStolenCard      = "lost_or_stolen_card"
	RefundFailureUnknown               = "unknown"
)

// refundFailures are the failure reasons FailRefund accepts.
var refundFailures = []string{RefundFailureExpiredOrCanceledCard, RefundFailureLostOrStolenCard, RefundFailureUnknown}

// Refund is a refund of (part of) a succeeded PaymentIntent.
type Refund struct {
	// ID is "re_" followed by 24 letters and digits.
	ID string
	// PaymentIntent is the ID of the refunded PaymentIntent.
	PaymentIntent string
	// Charge is the ID of the PaymentIntent's charge: "ch_" followed by
	// the PaymentIntent's ID without its "pi_".
	Charge string
	// Amount refunded, in the currency's minor unit.
	Amount int64
	// Currency is the PaymentIntent's.
	Currency string
	// Reason is one of the RefundReason constants, or empty.
	Reason string
	// Metadata is the metadata sent, if any.
	Metadata map[string]string
	// Status is one of the RefundStatus constants.
	Status string
	// FailureReason is one of the RefundFailure constants for a failed
	// refund, empty otherwise.
	FailureReason string
	// Created is when the Engine committed the refund, by its clock.
	Created time.Time
	// IdempotencyKey is the key the refund was created with.
	IdempotencyKey string
}

// clone returns a copy that shares no map with r.
func (r Refund) clone() Refund {
	r.Metadata = maps.Clone(r.Metadata)
	return r
}

// RefundParams are the parameters of a refund to create with CreateRefund.
// A retry under the same idempotency key sends the same parameters; other
// ones are refused as a key reused.
type RefundParams struct {
	// PaymentIntent is the ID of the PaymentIntent to refund; required.
	PaymentIntent string
	// Amount to refund, in the currency's minor unit. Zero refunds what is
	// left of the payment, as leaving the amount out does at Stripe; a
	// negative amount is refused.
	Amount int64
	// Currency is optional; when set, it must be the PaymentIntent's.
	Currency string
	// Reason is empty or one of the RefundReason constants.
	Reason string
	// Metadata is kept on the refund.
	Metadata map[string]string
}

// request is p as the operator's refund request, whose fingerprint and
// metadata the sandbox uses, as PaymentIntentParams does for charges.
func (p RefundParams) request() payment.RefundRequest {
	return payment.RefundRequest{
		Charge:   p.PaymentIntent,
		Amount:   p.Amount,
		Currency: p.Currency,
		Reason:   p.Reason,
		Metadata: p.Metadata,
	}
}

// fingerprint tells a retry under a key from a reuse of the key with other
// parameters; it never equals a PaymentIntent's, so a key used for one is
// reused when sent for the other, as in Stripe's single key space.
func (p RefundParams) fingerprint() string {
	return payment.RefundHash("", p.request())
}

// TaggedRefund returns a copy of p whose metadata also holds key and the
// refund's fingerprint under the entries the operator's adapters send
// (payment.RefundMetadata), so that a lookup tells the operator's refunds
// from others. p's map is not changed.
func TaggedRefund(key string, p RefundParams) RefundParams {
	p.Metadata = payment.RefundMetadata(key, p.request())
	return p
}

// WithRefundSettleDelay sets the refund settle delay; see
// SetRefundSettleDelay.
func WithRefundSettleDelay(d time.Duration) Option {
	return func(e *Engine) { e.refundDelay = max(d, 0) }
}

// SetRefundSettleDelay makes the refunds created from now on pending, as
// refunds of some payment methods are at Stripe, until d has passed by the
// Engine's clock: they then succeed by themselves. A pending refund counts
// against what is left of its payment. Zero, the default, or a negative d
// makes refunds succeed at once.
func (e *Engine) SetRefundSettleDelay(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.refundDelay = max(d, 0)
}

// RefundSettleDelay returns the refund settle delay in force.
func (e *Engine) RefundSettleDelay() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.refundDelay
}

// WithoutAmountTooLargeCode makes the Engine refuse a refund beyond what is
// left without a code; see SetAmountTooLargeCode.
func WithoutAmountTooLargeCode() Option {
	return func(e *Engine) { e.noAmountTooLargeCode = true }
}

// SetAmountTooLargeCode says how the Engine refuses, from now on, a refund
// of more than what is left of its payment: with the code amount_too_large
// (send true, the default), or as Stripe answers it in the wild (send
// false): a 400 invalid_request_error with param amount and the message
// "Refund amount (...) is greater than unrefunded amount on charge (...)",
// and no code, since Stripe documents none for it. A refusal already saved
// under a key is replayed as it was. The HTTP contract's answer (402
// RefundExceedsCharge) and the in-process Provider's do not change.
func (e *Engine) SetAmountTooLargeCode(send bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.noAmountTooLargeCode = !send
}

// AmountTooLargeCode reports whether a refund beyond what is left is
// refused with the code amount_too_large.
func (e *Engine) AmountTooLargeCode() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !e.noAmountTooLargeCode
}

// CreateRefund refunds p.Amount of a succeeded PaymentIntent under the
// idempotency key, as POST /v1/refunds does at Stripe, with the idempotency
// semantics, faults and rate limit of CreatePaymentIntent: a new key is held
// in flight for the latency and then refunded or refused, a saved key with
// the same parameters replays its first answer (replayed is true), the key
// with other parameters, or a key used for a PaymentIntent, is a 400
// idempotency_error. With idempotency off every request is a new refund.
//
// The Engine never refunds more than what is left of the payment: its
// amount less its succeeded and pending refunds. Nothing left is a 400
// charge_already_refunded, an amount beyond what is left a 400
// amount_too_large on param amount (without the code after
// SetAmountTooLargeCode(false)), and a PaymentIntent that did not succeed a 400
// invalid_request_error with param payment_intent; these refusals are saved
// under the key and replayed. A PaymentIntent still processing (a bank
// debit) is refused the same way, with a message that says its charge is
// pending, but the refusal is not saved: the same key refunds once the
// payment succeeded. An unknown PaymentIntent is a 404
// resource_missing, and malformed parameters a 400; neither is saved. A new
// refund succeeds at once, or is pending while SetRefundSettleDelay says
// so. Errors are always *StripeError.
func (e *Engine) CreateRefund(key string, p RefundParams) (Refund, bool, error) {
	return e.createRefund(key, p, p.fingerprint())
}

// createRefund is CreateRefund with the fingerprint that tells a retry from
// a reuse of the key with another request.
func (e *Engine) createRefund(key string, p RefundParams, fp string) (Refund, bool, error) {
	a := e.process(key, fp, &e.stats.RefundRequests, func(t *ticket) (answer, bool) {
		return e.commitRefund(key, p, t)
	})
	if a.err != nil {
		return Refund{}, a.replayed, a.err
	}
	return a.refund, a.replayed, nil
}

// commitRefund decides a refund whose key is in flight, as commit does for
// a charge.
func (e *Engine) commitRefund(key string, p RefundParams, t *ticket) (a answer, lost bool) {
	e.lockSettled()
	defer e.mu.Unlock()
	if t.failBeforeCommit {
		e.release(key, t)
		e.stats.Faults++
		return answer{err: apiError(FaultBeforeCommit)}, false
	}
	in, err := e.validateRefundLocked(p)
	if err != nil {
		e.release(key, t)
		e.stats.InvalidRequests++
		return answer{err: err}, false
	}
	if in.Status == StatusProcessing {
		// Not saved under the key: the same refund is sent again once
		// the payment succeeded.
		e.release(key, t)
		e.stats.RefundRefusals++
		return answer{err: notSettledError(in)}, false
	}

	lost = e.take(e.failNext, FaultAfterCommit) || e.chance(e.faults.ErrorAfterCommit)
	s := &keyState{fingerprint: t.fingerprint}
	if t.remember {
		e.keys[key] = s
	}
	amount, err := e.refundableLocked(in, p.Amount)
	if err != nil {
		s.err = err
		e.stats.RefundRefusals++
		return answer{err: err.clone()}, lost
	}

	r := Refund{
		ID:             e.newRefundID(),
		PaymentIntent:  in.ID,
		Charge:         chargeID(in.ID),
		Amount:         amount,
		Currency:       in.Currency,
		Reason:         p.Reason,
		Metadata:       p.Metadata,
		Status:         RefundStatusSucceeded,
		Created:        e.now(),
		IdempotencyKey: key,
	}.clone()
	if e.refundDelay > 0 {
		r.Status = RefundStatusPending
		e.settles[r.ID] = r.Created.Add(e.refundDelay)
	}
	e.refunds[r.ID] = r
	e.refundIndex.insert(keyOf(r.Created, r.ID))
	e.refundOrder = append(e.refundOrder, r.ID)
	e.refundsOf[r.PaymentIntent] = append(e.refundsOf[r.PaymentIntent], r.ID)
	e.refundEventLocked(r, true)
	saved := r.clone()
	s.savedRefund = &saved
	e.stats.Refunds++
	e.stats.RefundsByKey[key]++
	return answer{refund: r.clone()}, lost
}

// validateRefundLocked returns the PaymentIntent p refunds, or the error
// Stripe answers for malformed parameters or an unknown PaymentIntent. The
// caller holds the lock.
func (e *Engine) validateRefundLocked(p RefundParams) (Intent, *StripeError) {
	switch {
	case p.PaymentIntent == "":
		return Intent{}, invalidRequest(CodeParameterMissing, "payment_intent",
			"Missing required param: payment_intent.")
	case p.Amount < 0:
		return Intent{}, invalidRequest(CodeParameterInvalidInteger, "amount", "Invalid positive integer.")
	case p.Reason != "" && !slices.Contains(refundReasons, p.Reason):
		return Intent{}, invalidRequest(CodeParameterInvalid, "reason",
			fmt.Sprintf("Invalid reason: must be one of %s.", strings.Join(refundReasons, ", ")))
	case p.Currency != "" && !isCurrency(p.Currency):
		return Intent{}, invalidRequest(CodeParameterInvalid, "currency",
			fmt.Sprintf("Invalid currency: %q. Use a lower-case three-letter ISO code.", p.Currency))
	}
	in, ok := e.intents[p.PaymentIntent]
	if !ok {
		return Intent{}, noSuchPaymentIntentError(p.PaymentIntent)
	}
	if p.Currency != "" && p.Currency != in.Currency {
		return Intent{}, invalidRequest(CodeParameterInvalid, "currency",
			fmt.Sprintf("Invalid currency: %s; the payment is in %s.", p.Currency, in.Currency))
	}
	return in, nil
}

// refundableLocked returns the amount to refund of in, requested or, for
// zero, what is left of it; or the refusal Stripe answers when the payment
// did not succeed or the amount is beyond what is left. The caller holds
// the lock.
func (e *Engine) refundableLocked(in Intent, requested int64) (int64, *StripeError) {
	if in.Status != StatusSucceeded {
		return 0, notRefundableError(in.ID)
	}
	left := in.Amount - e.refundedLocked(in.ID)
	if left <= 0 {
		return 0, alreadyRefundedError(chargeID(in.ID))
	}
	if requested == 0 {
		return left, nil
	}
	if requested > left {
		se := amountTooLargeError(requested, left, in.Currency)
		if e.noAmountTooLargeCode {
			se.Code = ""
		}
		return 0, se
	}
	return requested, nil
}

// refundedLocked sums the amounts of in's succeeded and pending refunds.
// The caller holds the lock.
func (e *Engine) refundedLocked(intentID string) int64 {
	var sum int64
	for _, id := range e.refundsOf[intentID] {
		if r := e.refunds[id]; r.Status != RefundStatusFailed {
			sum += r.Amount
		}
	}
	return sum
}

// newRefundID returns an unused refund ID. The caller holds the lock.
func (e *Engine) newRefundID() string {
	for {
		id := "re_" + e.randomText(24)
		if _, taken := e.refunds[id]; !taken {
			return id
		}
	}
}

// chargeID is the ID of the charge of the PaymentIntent with id: the
// sandbox keeps no charges apart from their PaymentIntents, so it derives
// one ID from the other.
func chargeID(intentID string) string {
	return "ch_" + strings.TrimPrefix(intentID, "pi_")
}
