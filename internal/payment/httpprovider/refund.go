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

package httpprovider

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

var (
	_ payment.Refunder = (*Provider)(nil)
	_ payment.Refunder = (*LookupProvider)(nil)
)

// refundBody is the JSON body of a refund request: the request's fields, as
// payment.RefundRequest encodes them, then the key and the fingerprint.
type refundBody struct {
	payment.RefundRequest
	IdempotencyKey string `json:"idempotencyKey"`
	Fingerprint    string `json:"fingerprint"`
}

// Refund sends req to the refund endpoint under key, with the headers of a
// charge, and maps the answer like a charge's, as the package documentation
// describes: a refund that is not final yet is a payment.TransientError
// wrapping payment.ErrInFlight, and a refusal without a reason is
// payment.ReasonRefundFailed. Without Config.RefundURL nothing is sent and
// the error is a payment.TransientError saying that refunds need
// spec.http.refundURL: the refund waits until the PaymentProvider has one.
func (p *Provider) Refund(ctx context.Context, key string, req payment.RefundRequest) (payment.Outcome, error) {
	if p.refundURL == "" {
		return payment.Outcome{}, payment.Transient(errors.New(
			"cannot refund: the PaymentProvider names no refund endpoint; refunds need spec.http.refundURL"), 0)
	}
	body := refundBody{RefundRequest: req, IdempotencyKey: key, Fingerprint: payment.RefundHash(key, req)}
	return p.create(ctx, refundOp, p.refundURL, key, body, payment.Outcome{Amount: req.Amount, Currency: req.Currency})
}

// errNoLookup is the cause of the errors of the refund lookups of a
// Provider without a lookup endpoint.
var errNoLookup = errors.New("the PaymentProvider names no lookup endpoint; refunds need spec.http.lookupURL too, " +
	"since a refund is looked up before its first attempt")

// LookupRefunds sends nothing and returns a payment.TransientError: without
// a lookup endpoint nothing can be known of a charge's refunds.
func (p *Provider) LookupRefunds(_ context.Context, charge string) (payment.RefundBook, error) {
	return payment.RefundBook{}, payment.Transient(fmt.Errorf("cannot look up the refunds of charge %s: %w", p.clean(charge), errNoLookup), 0)
}

// SettleRefund sends nothing and returns a payment.TransientError: without
// a lookup endpoint a refund cannot be read.
func (p *Provider) SettleRefund(_ context.Context, _, id string) (payment.Outcome, error) {
	return payment.Outcome{}, payment.Transient(fmt.Errorf("cannot settle refund %s: %w", p.clean(id), errNoLookup), 0)
}

// LookupRefunds sends one GET to the lookup endpoint with the charge
// parameter and returns what the answer holds on charge: the charge from
// "charges" (the one with that id; without one, Charge is the zero Found
// with ID charge and no State), and every refund of "refunds", grouped by
// idempotencyKey (a refund without one counts only in Refunded), newest
// first. Refunds that name another charge are ignored. Refunded is the sum
// of the refunds that succeeded or may still succeed; the book is Complete,
// since the service answers every refund of the charge. An answer without a
// refunds array is an error, like any other that is not the contract's: a
// payment.TransientError.
func (p *LookupProvider) LookupRefunds(ctx context.Context, charge string) (payment.RefundBook, error) {
	if charge == "" || !payment.VisibleASCII(charge) {
		return payment.RefundBook{}, payment.Transient(errors.New("cannot look up the refunds of a charge without a valid id"), 0)
	}
	body, err := p.get(ctx, url.Values{chargeParameter: {charge}})
	if err != nil {
		return payment.RefundBook{}, err
	}
	if body.Refunds == nil {
		return payment.RefundBook{}, payment.Transient(fmt.Errorf(
			"the lookup endpoint does not answer refunds (charge=%s): its answer has no refunds array", p.clean(charge)), 0)
	}

	book := payment.RefundBook{
		Charge:   payment.Found{Outcome: payment.Outcome{ID: charge}},
		Refunds:  make(map[string][]payment.Found),
		Complete: true,
	}
	if body.Charges != nil {
		for _, c := range *body.Charges {
			if c.ID != charge {
				continue
			}
			if book.Charge, err = p.found(c, chargeOp); err != nil {
				return payment.RefundBook{}, err
			}
		}
	}
	for _, r := range *body.Refunds {
		if r.Charge != "" && r.Charge != charge {
			continue
		}
		f, err := p.found(r.lookupCharge, refundOp)
		if err != nil {
			return payment.RefundBook{}, err
		}
		if err := p.count(&book, f); err != nil {
			return payment.RefundBook{}, err
		}
	}
	for _, refunds := range book.Refunds {
		slices.SortStableFunc(refunds, func(a, b payment.Found) int {
			return cmp.Or(b.Created.Compare(a.Created), cmp.Compare(a.ID, b.ID))
		})
	}
	return book, nil
}

// count adds the refund f to book: under its key, and to Refunded when it
// succeeded or may still. A negative amount, or one that would overflow the
// sum, is an error: a sum that is too small would let a refund go beyond
// the charge.
func (p *LookupProvider) count(book *payment.RefundBook, f payment.Found) error {
	if f.State != payment.StateNotCharged {
		if f.Amount < 0 || f.Amount > math.MaxInt64-book.Refunded {
			return payment.Transient(fmt.Errorf(
				"payment service's lookup endpoint answered a refund %s with an amount that is negative or too large", p.clean(f.ID)), 0)
		}
		book.Refunded += f.Amount
	}
	if f.Key != "" {
		book.Refunds[f.Key] = append(book.Refunds[f.Key], f)
	}
	return nil
}

// SettleRefund looks key up, GET {lookupURL}?key=K, until the refund with
// id under key in the answer's refunds is final, waiting as Settle does: a
// refund that succeeded is its outcome, one that failed a payment.Declined
// refusal (reason from the refund, default payment.ReasonRefundFailed); an
// answer without a refunds array, a refund the answer does not hold, a
// failed lookup or a refund still pending when ctx is done is a
// payment.TransientError, the last one wrapping payment.ErrInFlight. It
// never sends a refund.
func (p *LookupProvider) SettleRefund(ctx context.Context, key, id string) (payment.Outcome, error) {
	return p.settle(ctx, refundOp, key, id, func() (*lookupCharge, error) {
		body, err := p.get(ctx, keyQuery([]string{key}))
		if err != nil {
			return nil, err
		}
		if body.Refunds == nil {
			return nil, payment.Transient(errors.New(
				"the lookup endpoint does not answer refunds under the asked key: its answer has no refunds array"), 0)
		}
		var refund *lookupCharge
		for i, r := range *body.Refunds {
			if r.ID == id && r.IdempotencyKey == key {
				refund = &(*body.Refunds)[i].lookupCharge
			}
		}
		return refund, nil
	})
}
