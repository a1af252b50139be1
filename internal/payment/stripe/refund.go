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

package stripe

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	stripego "github.com/stripe/stripe-go/v85"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

const (
	// refundListLimit is the number of refunds one list request reads,
	// Stripe's maximum.
	refundListLimit = 100
	// maxRefundPages is the most list requests one ListRefunds sends;
	// more refunds of one payment intent than fit in them is an error.
	maxRefundPages = 10
	// refundAmountParam is the parameter of the refund's amount, which
	// Stripe names in its refusal of an amount beyond what is left.
	refundAmountParam = "amount"
)

var (
	_ payment.Refunder     = (*Provider)(nil)
	_ payment.RefundLister = (*Provider)(nil)
)

// Refund refunds req.Amount of the PaymentIntent req.Charge under key with
// one request, POST /v1/refunds, polls the refund with GET /v1/refunds/{id}
// while it is pending or requires_action, until it is final or ctx is done,
// and maps the answer as the package documentation describes. Nothing is
// sent for an invalid key or charge id (a payment.Invalid refusal) or a
// context that is already done.
func (p *Provider) Refund(ctx context.Context, key string, req payment.RefundRequest) (payment.Outcome, error) {
	switch {
	case !payment.ValidKey(key):
		return payment.Outcome{}, payment.Invalid("the idempotency key must be 1 to 255 visible ASCII characters")
	case !validID(req.Charge):
		return payment.Outcome{}, payment.Invalid("the refund must name the payment intent to refund")
	}
	if err := ctx.Err(); err != nil {
		return payment.Outcome{}, payment.Transient(fmt.Errorf("cannot create the refund: %w", err), 0)
	}
	refund, err := p.client.V1Refunds.Create(ctx, refundParams(key, req))
	if err != nil {
		return payment.Outcome{}, p.classifyRefund(err)
	}
	return p.settleRefund(ctx, refund, replayedAnswer(refund.LastResponse))
}

// refundParams are the parameters of the refund request for req under key:
// the payment intent, the amount (always), the reason when there is one, and
// payment.RefundMetadata. They depend on key and req only, and stripe-go
// encodes metadata with its keys sorted, so a retry sends the same bytes.
func refundParams(key string, req payment.RefundRequest) *stripego.RefundCreateParams {
	params := &stripego.RefundCreateParams{
		PaymentIntent: stripego.String(req.Charge),
		Amount:        stripego.Int64(req.Amount),
		Metadata:      payment.RefundMetadata(key, req),
	}
	if req.Reason != "" {
		params.Reason = stripego.String(req.Reason)
	}
	params.SetIdempotencyKey(key)
	return params
}

// classifyRefund maps an error of the refund request: Stripe's codes that
// say the refund cannot be made (refundReason) are payment.Declined with
// their reason; everything else is classified as for a charge.
func (p *Provider) classifyRefund(err error) error {
	var se *stripego.Error
	if errors.As(err, &se) && se.Type == stripego.ErrorTypeInvalidRequest {
		if reason := refundReason(se); reason != "" {
			return payment.Declined(reason, p.clean(withCode(se)))
		}
	}
	return p.classify("cannot create the refund", err)
}

// refundReason is the refusal reason of an invalid_request_error that
// Stripe answers a refund it will not make, or "" for any other:
//
//   - amount_too_large (the amount is more than what is left unrefunded),
//     an error on the amount parameter without a code (Stripe's "Refund
//     amount (...) is greater than unrefunded amount on charge (...)",
//     for which Stripe documents no code) and charge_already_refunded:
//     payment.ReasonRefundExceedsCharge. Another code on the amount (a
//     malformed amount, parameter_invalid_integer) is the request's fault
//     and stays an invalid request;
//   - resource_missing on the payment_intent (or charge) parameter:
//     payment.ReasonChargeNotFound;
//   - charge_disputed, refund_disputed_payment, charge_not_refundable and
//     payment_intent_unexpected_state (the intent has not succeeded):
//     payment.ReasonChargeNotRefundable.
func refundReason(e *stripego.Error) string {
	switch e.Code {
	case stripego.ErrorCodeAmountTooLarge, stripego.ErrorCodeChargeAlreadyRefunded:
		return payment.ReasonRefundExceedsCharge
	case "":
		if e.Param == refundAmountParam {
			return payment.ReasonRefundExceedsCharge
		}
	case stripego.ErrorCodeResourceMissing:
		if e.Param == "payment_intent" || e.Param == "charge" {
			return payment.ReasonChargeNotFound
		}
	case stripego.ErrorCodeChargeDisputed, stripego.ErrorCodeRefundDisputedPayment,
		stripego.ErrorCodeChargeNotRefundable, stripego.ErrorCodePaymentIntentUnexpectedState:
		return payment.ReasonChargeNotRefundable
	}
	return ""
}

// settleRefund turns a refund into an outcome or an error, reading it again
// with GET /v1/refunds/{id} while it is pending or requires_action, with a
// wait that doubles from the poll interval to the maximum, until it is
// final or ctx is done; a refund still pending then, or whose read failed,
// is a payment.TransientError that wraps payment.ErrInFlight. It never
// creates a refund, and never cancels one.
func (p *Provider) settleRefund(ctx context.Context, refund *stripego.Refund, replayed bool) (payment.Outcome, error) {
	wait := p.pollInterval
	for {
		if refund.ID == "" {
			return payment.Outcome{}, payment.Transient(fmt.Errorf("the refund from Stripe in status %q has no id", p.clean(string(refund.Status))), 0)
		}
		switch refund.Status {
		case stripego.RefundStatusSucceeded:
			return refundOutcome(refund, replayed), nil
		case stripego.RefundStatusFailed, stripego.RefundStatusCanceled:
			return payment.Outcome{}, p.failedRefund(refund)
		case stripego.RefundStatusPending, stripego.RefundStatusRequiresAction:
		default:
			return payment.Outcome{}, payment.Transient(fmt.Errorf("refund %s has the unexpected status %q",
				p.clean(refund.ID), p.clean(string(refund.Status))), 0)
		}

		if err := p.pause(ctx, &wait); err != nil {
			return payment.Outcome{}, payment.Transient(fmt.Errorf("refund %s is still %s: %w: %w",
				p.clean(refund.ID), refund.Status, payment.ErrInFlight, err), 0)
		}
		next, err := p.client.V1Refunds.Retrieve(ctx, refund.ID, nil)
		if err != nil {
			// Still pending as far as anyone knows.
			rerr := p.readError("refund", refund.ID, string(refund.Status), err)
			return payment.Outcome{}, payment.Transient(fmt.Errorf("%w: %w", payment.ErrInFlight, errors.Unwrap(rerr)), payment.RetryAfter(rerr))
		}
		if next.ID != refund.ID {
			return payment.Outcome{}, payment.Transient(fmt.Errorf("reading refund %s answered another one, %q",
				p.clean(refund.ID), p.clean(next.ID)), 0)
		}
		refund = next
	}
}

// failedRefund is the refusal of a refund that failed or was canceled: no
// money went back.
func (p *Provider) failedRefund(refund *stripego.Refund) error {
	msg := fmt.Sprintf("refund %s %s", refund.ID, refund.Status)
	if refund.FailureReason != "" {
		msg += fmt.Sprintf(" (failure_reason %s)", refund.FailureReason)
	}
	return payment.Declined(payment.ReasonRefundFailed, p.clean(msg+": no money went back"))
}

// refundOutcome is the outcome of a refund.
func refundOutcome(refund *stripego.Refund, replayed bool) payment.Outcome {
	return payment.Outcome{
		ID:       refund.ID,
		Status:   string(refund.Status),
		Amount:   refund.Amount,
		Currency: string(refund.Currency),
		Created:  unixTime(refund.Created),
		Replayed: replayed,
	}
}

// refundState classifies a refund status. A status this package does not
// know is pending: it might still move money, so it counts as refunded.
func refundState(status stripego.RefundStatus) payment.ChargeState {
	switch status {
	case stripego.RefundStatusSucceeded:
		return payment.StateSucceeded
	case stripego.RefundStatusFailed, stripego.RefundStatusCanceled:
		return payment.StateNotCharged
	default:
		return payment.StatePending
	}
}

// LookupRefunds reads the PaymentIntent charge, GET
// /v1/payment_intents/{charge}, and lists its refunds as ListRefunds does,
// both at once (a refund waits for one provider round trip, not two): the
// book's Charge is the intent as it is now. An intent the account does not
// hold (404 resource_missing) is a Declined refusal with
// payment.ReasonChargeNotFound, whatever the list answered; every other
// error is a payment.TransientError.
func (p *Provider) LookupRefunds(ctx context.Context, charge string) (payment.RefundBook, error) {
	if err := p.beforeRefundRead(ctx, charge); err != nil {
		return payment.RefundBook{}, err
	}
	type listed struct {
		book payment.RefundBook
		err  error
	}
	list := make(chan listed, 1)
	go func() {
		book, err := p.ListRefunds(ctx, charge)
		list <- listed{book, err}
	}()
	intent, err := p.retrieve(ctx, charge)
	refunds := <-list
	if err != nil {
		if intentMissing(err) {
			return payment.RefundBook{}, payment.Declined(payment.ReasonChargeNotFound, fmt.Sprintf(
				"the account holds no payment intent %s", p.clean(charge)))
		}
		return payment.RefundBook{}, p.uncertain(fmt.Sprintf("cannot read payment intent %s", p.clean(charge)), err)
	}
	if intent.ID != charge {
		return payment.RefundBook{}, payment.Transient(fmt.Errorf("reading payment intent %s answered another one, %q",
			p.clean(charge), p.clean(intent.ID)), 0)
	}
	if refunds.err != nil {
		return payment.RefundBook{}, refunds.err
	}
	book := refunds.book
	book.Charge = intentFound(intent)
	return book, nil
}

// intentMissing reports whether err is Stripe's answer to the read of an
// intent the account does not hold: 404 resource_missing.
func intentMissing(err error) bool {
	var se *stripego.Error
	return errors.As(err, &se) && se.HTTPStatusCode == http.StatusNotFound && se.Code == stripego.ErrorCodeResourceMissing
}

// ListRefunds lists every refund of the PaymentIntent charge, GET
// /v1/refunds?payment_intent={charge}&limit=100 followed by its next pages
// (at most maxRefundPages requests; more refunds than that is an error),
// without reading the intent: the book's Charge is the zero payment.Found.
// Refunds are grouped by their metadata entry
// payment.MetadataKeyIdempotencyKey, newest first; a refund without one
// counts only in Refunded, the sum of the refunds that succeeded or are
// pending. The book is always Complete. Every error is a
// payment.TransientError.
func (p *Provider) ListRefunds(ctx context.Context, charge string) (payment.RefundBook, error) {
	if err := p.beforeRefundRead(ctx, charge); err != nil {
		return payment.RefundBook{}, err
	}
	refunds, err := p.listRefunds(ctx, charge)
	if err != nil {
		return payment.RefundBook{}, err
	}

	book := payment.RefundBook{Refunds: make(map[string][]payment.Found), Complete: true}
	for _, refund := range refunds {
		f := payment.Found{
			Key:         refund.Metadata[payment.MetadataKeyIdempotencyKey],
			Outcome:     refundOutcome(refund, false),
			State:       refundState(refund.Status),
			Fingerprint: refund.Metadata[payment.MetadataKeyFingerprint],
		}
		if f.State != payment.StateNotCharged {
			book.Refunded += f.Amount
		}
		if f.Key != "" {
			book.Refunds[f.Key] = append(book.Refunds[f.Key], f)
		}
	}
	for _, found := range book.Refunds {
		newestFirst(found)
	}
	return book, nil
}

// beforeRefundRead refuses to read the refunds of an invalid id, or once
// ctx is done, without sending anything.
func (p *Provider) beforeRefundRead(ctx context.Context, charge string) error {
	if !validID(charge) {
		return payment.Transient(errors.New("cannot look up the refunds of a payment intent without a valid id"), 0)
	}
	if err := ctx.Err(); err != nil {
		return payment.Transient(fmt.Errorf("cannot read payment intent %s: %w", p.clean(charge), err), 0)
	}
	return nil
}

// listRefunds lists every refund of the PaymentIntent charge, one page of
// refundListLimit after the other, at most maxRefundPages. A refund of
// another intent, or without an id, is an error: the answer is not the list
// asked for.
func (p *Provider) listRefunds(ctx context.Context, charge string) ([]*stripego.Refund, error) {
	op := fmt.Sprintf("cannot list the refunds of payment intent %s", p.clean(charge))
	var refunds []*stripego.Refund
	seen := make(map[string]bool)
	var after string
	for page := 0; ; page++ {
		if page == maxRefundPages {
			return nil, payment.Transient(fmt.Errorf("%s: it has more than %d", op, maxRefundPages*refundListLimit), 0)
		}
		params := &stripego.RefundListParams{
			ListParams:    stripego.ListParams{Limit: stripego.Int64(refundListLimit), Single: true},
			PaymentIntent: stripego.String(charge),
		}
		if after != "" {
			params.StartingAfter = stripego.String(after)
		}
		list := p.client.V1Refunds.List(ctx, params)
		if err := list.Err(); err != nil {
			return nil, p.uncertain(op, err)
		}
		for _, refund := range list.Data() {
			switch {
			case refund == nil:
				continue
			case refund.ID == "":
				return nil, payment.Transient(fmt.Errorf("%s: Stripe listed a refund without an id", op), 0)
			case refund.PaymentIntent != nil && refund.PaymentIntent.ID != "" && refund.PaymentIntent.ID != charge:
				return nil, payment.Transient(fmt.Errorf("%s: Stripe listed refund %s of another payment intent", op, p.clean(refund.ID)), 0)
			}
			after = refund.ID
			if !seen[refund.ID] {
				seen[refund.ID] = true
				refunds = append(refunds, refund)
			}
		}
		if !list.Meta().HasMore {
			return refunds, nil
		}
		if len(list.Data()) == 0 {
			return nil, payment.Transient(fmt.Errorf("%s: Stripe has more refunds but listed none on this page", op), 0)
		}
	}
}

// SettleRefund reads the refund with id, which LookupRefunds found under
// key, with GET /v1/refunds/{id}, and polls it like Refund until it is final
// or ctx is done. It never creates a refund. A succeeded refund is an
// outcome (Replayed false); failed and canceled are payment.Declined with
// payment.ReasonRefundFailed. Every other error is a
// payment.TransientError, including a refund whose metadata does not carry
// key.
func (p *Provider) SettleRefund(ctx context.Context, key, id string) (payment.Outcome, error) {
	if err := p.beforeRead(ctx, "refund", key, id); err != nil {
		return payment.Outcome{}, err
	}
	refund, err := p.client.V1Refunds.Retrieve(ctx, id, nil)
	if err != nil {
		return payment.Outcome{}, p.uncertain(fmt.Sprintf("cannot read refund %s", p.clean(id)), err)
	}
	if err := p.madeUnder("refund", id, refund.ID, key, refund.Metadata); err != nil {
		return payment.Outcome{}, err
	}
	return p.settleRefund(ctx, refund, false)
}
