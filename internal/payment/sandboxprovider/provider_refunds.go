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

package sandboxprovider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

var _ payment.Refunder = (*Provider)(nil)

// Refund refunds req at the Engine under key, with the metadata of
// TaggedRefund, and maps the answer like the Stripe adapter does: a pending
// refund is settled within ctx, a failed one is a Declined refusal
// (RefundFailed), and the Engine's refusals of what cannot be refunded are
// refusals with the payment package's refund reasons. Like Charge, a
// context that ends while the Engine works returns a transient error, and
// the Engine still finishes the request.
func (p *Provider) Refund(ctx context.Context, key string, req payment.RefundRequest) (payment.Outcome, error) {
	p.calls.Add(1)
	if err := ctx.Err(); err != nil {
		return payment.Outcome{}, payment.Transient(fmt.Errorf("cannot send refund: %w", err), 0)
	}
	params := sandbox.TaggedRefund(key, sandbox.RefundParams{PaymentIntent: req.Charge, Amount: req.Amount, Currency: req.Currency,
		Reason: req.Reason, Metadata: req.Metadata})
	type result struct {
		refund   sandbox.Refund
		replayed bool
		err      error
	}
	// Buffered, so that the request finishes after the caller gave up.
	done := make(chan result, 1)
	go func() {
		r, replayed, err := p.engine.CreateRefund(key, params)
		done <- result{refund: r, replayed: replayed, err: err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return payment.Outcome{}, mapRefundError(r.err)
		}
		if r.refund.Status == sandbox.RefundStatusPending {
			o, err := p.SettleRefund(ctx, key, r.refund.ID)
			o.Replayed = r.replayed
			return o, err
		}
		return refundOutcome(r.refund, r.replayed)
	case <-ctx.Done():
		return payment.Outcome{}, payment.Transient(fmt.Errorf("refund response not received: %w", ctx.Err()), 0)
	}
}

// LookupRefunds lists the refunds of the PaymentIntent charge, exactly (no
// search lag), under the keys their metadata carries; Refunded is what the
// Engine holds refunded on it, succeeded and pending. A charge the Engine
// does not hold is refused with payment.ReasonChargeNotFound: the Engine is
// one account, and it knows every charge it made.
func (p *Provider) LookupRefunds(ctx context.Context, charge string) (payment.RefundBook, error) {
	p.lookups.Add(1)
	if err := ctx.Err(); err != nil {
		return payment.RefundBook{}, payment.Transient(fmt.Errorf("cannot list refunds: %w", err), 0)
	}
	in, ok := p.engine.GetPaymentIntent(charge)
	if !ok {
		return payment.RefundBook{}, payment.Declined(payment.ReasonChargeNotFound,
			fmt.Sprintf("cannot list the refunds of %s: no such payment intent", charge))
	}
	book := payment.RefundBook{
		Charge: payment.Found{Key: in.Metadata[payment.MetadataKeyIdempotencyKey], Outcome: outcome(in, false),
			State: chargeState(in.Status), Fingerprint: in.Metadata[payment.MetadataKeyFingerprint]},
		Refunds:  map[string][]payment.Found{},
		Refunded: p.engine.Refunded(charge),
		Complete: true,
	}
	for _, r := range p.engine.ListRefunds(charge) {
		key, ok := r.Metadata[payment.MetadataKeyIdempotencyKey]
		if !ok {
			continue
		}
		book.Refunds[key] = append(book.Refunds[key], payment.Found{Key: key, Outcome: refundFound(r),
			State: refundState(r.Status), Fingerprint: r.Metadata[payment.MetadataKeyFingerprint]})
	}
	return book, nil
}

// SettleRefund reads the refund with id, every settle interval, until it is
// final or ctx is done.
func (p *Provider) SettleRefund(ctx context.Context, key, id string) (payment.Outcome, error) {
	p.settles.Add(1)
	tick := time.NewTicker(p.settleInterval)
	defer tick.Stop()
	for {
		r, ok := p.engine.GetRefund(id)
		switch {
		case !ok:
			return payment.Outcome{}, payment.Transient(fmt.Errorf("cannot settle refund %s: no such refund", id), 0)
		case r.Metadata[payment.MetadataKeyIdempotencyKey] != key:
			return payment.Outcome{}, payment.Transient(fmt.Errorf("cannot settle refund %s: it carries another idempotency key", id), 0)
		case r.Status != sandbox.RefundStatusPending:
			return refundOutcome(r, false)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return payment.Outcome{}, payment.InFlight(sandbox.InFlightRetryAfter)
		}
	}
}

// refundOutcome is the outcome of a final refund: succeeded, or a Declined
// refusal.
func refundOutcome(r sandbox.Refund, replayed bool) (payment.Outcome, error) {
	if r.Status != sandbox.RefundStatusSucceeded {
		return payment.Outcome{}, payment.Declined(payment.ReasonRefundFailed,
			fmt.Sprintf("refund %s %s (%s)", r.ID, r.Status, r.FailureReason))
	}
	o := refundFound(r)
	o.Replayed = replayed
	return o, nil
}

// refundFound is a refund as an outcome.
func refundFound(r sandbox.Refund) payment.Outcome {
	return payment.Outcome{ID: r.ID, Status: r.Status, Amount: r.Amount, Currency: r.Currency, Created: r.Created}
}

// refundState classifies a refund status as the payment package does.
func refundState(status string) payment.ChargeState {
	switch status {
	case sandbox.RefundStatusSucceeded:
		return payment.StateSucceeded
	case sandbox.RefundStatusPending:
		return payment.StatePending
	default:
		return payment.StateNotCharged
	}
}

// chargePendingRetryAfter is when to send again a refund of a payment that
// has not settled yet.
const chargePendingRetryAfter = 5 * time.Second

// mapRefundError maps the Engine's refusals of a refund to the payment
// package's refund reasons; the rest as mapError does.
func mapRefundError(err error) error {
	se, ok := errors.AsType[*sandbox.StripeError](err)
	if !ok {
		return mapError(err)
	}
	refusal := func(reason string) error {
		return payment.Declined(reason, se.Message)
	}
	switch {
	case se.Refusal() == sandbox.ReasonChargePending:
		// The payment is a bank debit not settled yet: nothing was
		// refunded, and the same refund goes through once it settled.
		return payment.Transient(fmt.Errorf("cannot refund yet: %w", se), chargePendingRetryAfter)
	case se.Refusal() == payment.ReasonRefundExceedsCharge:
		// With or without its code (SetAmountTooLargeCode).
		return refusal(payment.ReasonRefundExceedsCharge)
	case se.Code == sandbox.CodeResourceMissing:
		return refusal(payment.ReasonChargeNotFound)
	case se.Type == sandbox.ErrorTypeInvalidRequest && se.Param == "payment_intent":
		return refusal(payment.ReasonChargeNotRefundable)
	}
	return mapError(err)
}
