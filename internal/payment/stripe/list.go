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
	"strings"
	"time"

	stripego "github.com/stripe/stripe-go/v85"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

var _ payment.Lister = (*Provider)(nil)

// List sends one request for one page of the objects of req.Kind that
// Stripe created in the window [req.From, req.To), to the second, newest
// first:
//
//	charges   GET /v1/payment_intents?limit=100&created[gte]=<From>&created[lt]=<To>[&starting_after=<After>]
//	refunds   GET /v1/refunds?...      (Listed.Charge is the refund's payment_intent)
//	disputes  GET /v1/disputes?...     (Listed.Charge is the dispute's payment_intent)
//
// with From and To in Unix seconds. Next is the id of the page's last
// object while Stripe has more, "" on the last page. Listed.Key is the
// object's metadata entry payment.MetadataKeyIdempotencyKey; State is the
// intent's or the refund's as Lookup and LookupRefunds classify them, and a
// dispute's StateNotCharged once it was won (won, warning_closed),
// StateSucceeded otherwise: the money is taken, or may be. Listed.Charge is
// empty for a refund or a dispute of a charge made without a PaymentIntent.
//
// A request payment.CheckListRequest refuses, or a context that is done,
// sends nothing. A GET carries no Idempotency-Key, and List never writes.
// Every error of a request is a payment.TransientError, with Stripe's
// Retry-After when it sent one (a 429): the caller decides when to send it
// again, under its own rate budget.
func (p *Provider) List(ctx context.Context, req payment.ListRequest) (payment.ListPage, error) {
	if err := payment.CheckListRequest(req); err != nil {
		return payment.ListPage{}, err
	}
	op := "cannot list Stripe's " + string(req.Kind)
	if err := ctx.Err(); err != nil {
		return payment.ListPage{}, payment.Transient(fmt.Errorf("%s: %w", op, err), 0)
	}
	var (
		objects []payment.Listed
		hasMore bool
		err     error
	)
	switch req.Kind {
	case payment.KindCharges:
		list := p.client.V1PaymentIntents.List(ctx, &stripego.PaymentIntentListParams{
			ListParams: listParams(req), CreatedRange: createdRange(req)})
		objects, hasMore, err = listed(list, intentListed)
	case payment.KindRefunds:
		list := p.client.V1Refunds.List(ctx, &stripego.RefundListParams{
			ListParams: listParams(req), CreatedRange: createdRange(req)})
		objects, hasMore, err = listed(list, refundListed)
	default:
		list := p.client.V1Disputes.List(ctx, &stripego.DisputeListParams{
			ListParams: listParams(req), CreatedRange: createdRange(req)})
		objects, hasMore, err = listed(list, disputeListed)
	}
	if err != nil {
		return payment.ListPage{}, p.listError(op, err)
	}
	page := payment.ListPage{Objects: objects}
	switch {
	case len(objects) > payment.MaxListPage:
		return payment.ListPage{}, payment.Transient(fmt.Errorf("%s: Stripe listed %d on one page, more than the %d asked for",
			op, len(objects), payment.MaxListPage), 0)
	case hasMore && len(objects) == 0:
		return payment.ListPage{}, payment.Transient(fmt.Errorf("%s: Stripe has more but listed none on this page", op), 0)
	case hasMore:
		page.Next = objects[len(objects)-1].ID
	}
	return page, nil
}

// listParams are the paging parameters of req: one page of
// payment.MaxListPage, after req.After when it is set.
func listParams(req payment.ListRequest) stripego.ListParams {
	params := stripego.ListParams{Limit: stripego.Int64(payment.MaxListPage), Single: true}
	if req.After != "" {
		params.StartingAfter = stripego.String(req.After)
	}
	return params
}

// createdRange is req's window: created[gte]=From and created[lt]=To, Unix
// seconds.
func createdRange(req payment.ListRequest) *stripego.RangeQueryParams {
	return &stripego.RangeQueryParams{GreaterThanOrEqual: req.From.Unix(), LesserThan: req.To.Unix()}
}

// errNoID is the error of an object Stripe listed without an id.
var errNoID = errors.New("the page lists an object without an id")

// listed maps the one page list read with toListed, and reports whether
// Stripe has more. An object without an id is an error: the page cannot be
// continued after it.
func listed[T any](list *stripego.V1List[*T], toListed func(*T) payment.Listed) ([]payment.Listed, bool, error) {
	if err := list.Err(); err != nil {
		return nil, false, err
	}
	data := list.Data()
	objects := make([]payment.Listed, 0, len(data))
	for _, o := range data {
		if o == nil {
			continue
		}
		l := toListed(o)
		if l.ID == "" {
			return nil, false, errNoID
		}
		objects = append(objects, l)
	}
	return objects, list.Meta().HasMore, nil
}

// listError classifies err of a list request like a lookup's: every error
// is a payment.TransientError.
func (p *Provider) listError(op string, err error) error {
	if errors.Is(err, errNoID) {
		return payment.Transient(fmt.Errorf("%s: %w", op, err), 0)
	}
	return p.uncertain(op, err)
}

// intentListed is a PaymentIntent as a listed charge.
func intentListed(intent *stripego.PaymentIntent) payment.Listed {
	out := outcome(intent, false)
	return listedObject(intent.ID, intent.Metadata, string(intent.Status), stateOf(intent.Status), out.Amount, intent.Currency, out.Created, nil)
}

// refundListed is a refund as a listed refund of its PaymentIntent.
func refundListed(refund *stripego.Refund) payment.Listed {
	return listedObject(refund.ID, refund.Metadata, string(refund.Status), refundState(refund.Status), refund.Amount, refund.Currency,
		unixTime(refund.Created), refund.PaymentIntent)
}

// disputeListed is a dispute as a listed dispute of its PaymentIntent.
func disputeListed(dispute *stripego.Dispute) payment.Listed {
	return listedObject(dispute.ID, dispute.Metadata, string(dispute.Status), disputeState(dispute.Status), dispute.Amount, dispute.Currency,
		unixTime(dispute.Created), dispute.PaymentIntent)
}

// listedObject is a listed object of Stripe's fields: its key is the
// metadata's idempotency key, its currency lower case, and its Charge the
// PaymentIntent it belongs to, if Stripe named one (a refund's, a
// dispute's).
func listedObject(id string, metadata map[string]string, status string, state payment.ChargeState, amount int64,
	currency stripego.Currency, created time.Time, charge *stripego.PaymentIntent) payment.Listed {
	l := payment.Listed{
		ID:       id,
		Key:      metadata[payment.MetadataKeyIdempotencyKey],
		Status:   status,
		State:    state,
		Amount:   amount,
		Currency: strings.ToLower(string(currency)),
		Created:  created,
	}
	if charge != nil {
		l.Charge = charge.ID
	}
	return l
}

// disputeState classifies a dispute status: won and warning_closed (an
// inquiry closed without a dispute) gave the money back or never took it;
// every other status, lost and the ones Stripe adds later included, has
// taken the money or may.
func disputeState(status stripego.DisputeStatus) payment.ChargeState {
	switch status {
	case stripego.DisputeStatusWon, stripego.DisputeStatusWarningClosed:
		return payment.StateNotCharged
	default:
		return payment.StateSucceeded
	}
}
