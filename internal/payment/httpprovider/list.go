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
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// The query parameters of a list request, in the order they are sent.
const (
	kindParameter  = "kind"
	fromParameter  = "createdFrom"
	toParameter    = "createdTo"
	limitParameter = "limit"
	afterParameter = "after"
)

// disputedStatus is the Status of a dispute the list endpoint answers on a
// charge.
const disputedStatus = "disputed"

var _ payment.Lister = (*Provider)(nil)

// listResponse is the JSON body of a 200 answer of the list endpoint.
type listResponse struct {
	Account string `json:"account"`
	// Data is nil when the body has no data array.
	Data *[]listItem `json:"data"`
	Next string      `json:"next"`
}

// listItem is one charge or refund of a list answer.
type listItem struct {
	answerItem
	// Charge is the charge a refund refunds.
	Charge string `json:"charge"`
	// Dispute is the id of a dispute on a charge.
	Dispute string `json:"dispute"`
}

// listEndpointURL validates the list url; nil for none. The url must not
// carry the parameters the operator adds.
func listEndpointURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, nil
	}
	u, err := endpoint("list url", raw)
	if err != nil {
		return nil, err
	}
	for _, param := range []string{kindParameter, fromParameter, toParameter, limitParameter, afterParameter} {
		if u.Query().Has(param) {
			return nil, fmt.Errorf("cannot use the payment service list url: it must not have a %q parameter; the operator adds it", param)
		}
	}
	return u, nil
}

// List sends one GET to the list endpoint for one page of the charges or
// refunds created in the window [req.From, req.To), to the second:
//
//	GET {listURL}?kind=charges|refunds&createdFrom=<unix>&createdTo=<unix>&limit=100[&after=<cursor>]
//
// after any parameters the url has, with the lookup's headers, and maps the
// 200 answer {"account", "data": [...], "next"}: each item's status to a
// State as a lookup does (succeeded, paid, completed: StateSucceeded;
// failed, declined, canceled, cancelled, rejected: StateNotCharged;
// anything else StatePending), a refund's "charge" to Listed.Charge, and
// "next" to ListPage.Next ("" or absent on the last page).
//
// The contract has no disputes of its own: a charge that is disputed
// carries the dispute's id in "dispute". So List of payment.KindDisputes
// sends the list of charges (kind=charges) and answers, for each charge
// with a dispute, Listed{ID: the dispute, Charge: the charge, Status:
// "disputed", State: payment.StateSucceeded, and the charge's Amount,
// Currency and Created}; its window is the charges' creation, not the
// disputes', and its Next the charges' cursor.
//
// Without Config.ListURL, List sends nothing and returns
// payment.ErrListUnsupported. A request payment.CheckListRequest refuses
// sends nothing. Any other error is a payment.TransientError, with the
// answer's Retry-After: a status code other than 200 (401, 403 and 404
// naming spec.http.listURL), a body that is not that JSON object, has no
// data array, more than 100 items, or is larger than
// Config.MaxResponseBytes; an item without an id, an amount or a currency,
// or with a malformed created time; a next cursor that is the one sent, or
// one that cannot be sent back.
func (p *Provider) List(ctx context.Context, req payment.ListRequest) (payment.ListPage, error) {
	if p.listURL == nil {
		return payment.ListPage{}, payment.ErrListUnsupported
	}
	if err := payment.CheckListRequest(req); err != nil {
		return payment.ListPage{}, err
	}
	kind := req.Kind
	if kind == payment.KindDisputes {
		kind = payment.KindCharges
	}
	var body listResponse
	if err := p.getJSON(ctx, listEndpoint, withQuery(p.listURL, listQuery(kind, req)), &body); err != nil {
		return payment.ListPage{}, err
	}
	prefix := "payment service's list endpoint answered"
	switch {
	case body.Data == nil:
		return payment.ListPage{}, payment.Transient(fmt.Errorf("%s 200 OK without a data array", prefix), 0)
	case len(*body.Data) > payment.MaxListPage:
		return payment.ListPage{}, payment.Transient(fmt.Errorf("%s %d %s on one page, more than the limit of %d",
			prefix, len(*body.Data), kind, payment.MaxListPage), 0)
	case body.Next != "" && body.Next == req.After:
		return payment.ListPage{}, payment.Transient(fmt.Errorf("%s the cursor it was sent as the next one, so the list would never end", prefix), 0)
	case body.Next != "":
		next := req
		next.After = body.Next
		if err := payment.CheckListRequest(next); err != nil {
			return payment.ListPage{}, payment.Transient(fmt.Errorf("%s a next cursor that cannot be sent back: %w", prefix, err), 0)
		}
	}

	page := payment.ListPage{Objects: make([]payment.Listed, 0, len(*body.Data)), Next: body.Next}
	for _, item := range *body.Data {
		l, err := p.listed(item, kind)
		if err != nil {
			return payment.ListPage{}, err
		}
		if req.Kind == payment.KindDisputes {
			if item.Dispute == "" {
				continue
			}
			l = payment.Listed{ID: item.Dispute, Charge: l.ID, Status: disputedStatus, State: payment.StateSucceeded,
				Amount: l.Amount, Currency: l.Currency, Created: l.Created}
		}
		page.Objects = append(page.Objects, l)
	}
	return page, nil
}

// listQuery is the encoded query of a list request for kind in req's
// window, in the contract's order.
func listQuery(kind payment.ListKind, req payment.ListRequest) string {
	q := kindParameter + "=" + url.QueryEscape(string(kind)) +
		"&" + fromParameter + "=" + strconv.FormatInt(req.From.Unix(), 10) +
		"&" + toParameter + "=" + strconv.FormatInt(req.To.Unix(), 10) +
		"&" + limitParameter + "=" + strconv.Itoa(payment.MaxListPage)
	if req.After != "" {
		q += "&" + afterParameter + "=" + url.QueryEscape(req.After)
	}
	return q
}

// listed maps an item of a list of kind. One without an id, an amount or a
// currency, or with a malformed created time, is a transient error.
func (p *Provider) listed(item listItem, kind payment.ListKind) (payment.Listed, error) {
	prefix := fmt.Sprintf("payment service's list endpoint answered an item of %s", kind)
	created, err := item.check(strings.TrimSpace(item.Currency), errors.New(prefix+" without an id"),
		func(id string) string { return fmt.Sprintf("%s, %s,", prefix, p.clean(id)) })
	if err != nil {
		return payment.Listed{}, err
	}
	l := payment.Listed{
		ID:       item.ID,
		Key:      item.IdempotencyKey,
		Status:   item.Status,
		State:    chargeState(item.Status),
		Amount:   *item.Amount,
		Currency: strings.ToLower(strings.TrimSpace(item.Currency)),
		Created:  created,
	}
	if kind == payment.KindRefunds {
		l.Charge = item.Charge
	}
	return l, nil
}
