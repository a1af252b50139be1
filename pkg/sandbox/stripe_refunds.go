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
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The Stripe refund routes, /v1/refunds: create, list and retrieve, and the
// charge a PaymentIntent's latest_charge expands to.

// Refunds per page of a list when the limit parameter is left out, and at
// most, as at Stripe.
const (
	defaultListLimit = 10
	maxListLimit     = 100
)

// createRefund creates a refund of a PaymentIntent (Engine.CreateRefund).
func (s *server) createRefund(w http.ResponseWriter, r *http.Request) {
	form, key, ok := readCreate(w, r)
	if !ok {
		return
	}
	params, se := refundParams(form)
	if se != nil {
		writeStripeError(w, se)
		return
	}
	refund, replayed, err := s.engine.CreateRefund(key, params)
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	if err != nil {
		writeEngineError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, refundBodyOf(refund))
}

// refundParams reads the parameters of a refund. Unknown parameters are
// ignored; the Engine validates the values it knows.
func refundParams(form url.Values) (RefundParams, *StripeError) {
	if form.Has("charge") && !form.Has("payment_intent") {
		return RefundParams{}, invalidRequest(CodeParameterInvalid, "charge",
			"The sandbox refunds PaymentIntents only: send payment_intent.")
	}
	var amount int64
	if form.Has("amount") {
		n, err := strconv.ParseInt(form.Get("amount"), 10, 64)
		if err != nil || n <= 0 {
			return RefundParams{}, invalidRequest(CodeParameterInvalidInteger, "amount", "Invalid positive integer.")
		}
		amount = n
	}
	metadata, se := metadataParams(form)
	if se != nil {
		return RefundParams{}, se
	}
	return RefundParams{
		PaymentIntent: form.Get("payment_intent"),
		Amount:        amount,
		Currency:      form.Get("currency"),
		Reason:        form.Get("reason"),
		Metadata:      metadata,
	}, nil
}

// getRefund answers the refund with the ID of the path.
func (s *server) getRefund(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	refund, ok := s.engine.GetRefund(id)
	if !ok {
		se := invalidRequest(CodeResourceMissing, "id", fmt.Sprintf("No such refund: '%s'", id))
		se.HTTPStatus = http.StatusNotFound
		writeStripeError(w, se)
		return
	}
	writeJSON(w, http.StatusOK, refundBodyOf(refund))
}

// listRefunds answers the refunds of payment_intent, or all of them, newest
// first, a page of limit at a time after starting_after or before
// ending_before.
func (s *server) listRefunds(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := defaultListLimit
	if q.Has("limit") {
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil || n < 1 || n > maxListLimit {
			writeStripeError(w, invalidRequest(CodeParameterInvalid, "limit",
				fmt.Sprintf("Invalid limit: must be an integer between 1 and %d.", maxListLimit)))
			return
		}
		limit = n
	}
	after, before := q.Get("starting_after"), q.Get("ending_before")
	if after != "" && before != "" {
		writeStripeError(w, invalidRequest(CodeParameterInvalid, "ending_before",
			"You may only specify one of these parameters: starting_after, ending_before."))
		return
	}
	intent := q.Get("payment_intent")
	if intent != "" && !s.engine.hasIntent(intent) {
		writeStripeError(w, noSuchPaymentIntentError(intent))
		return
	}

	refunds := s.engine.ListRefunds(intent)
	var hasMore bool
	if cursor := after + before; cursor == "" {
		hasMore = len(refunds) > limit
		refunds = refunds[:min(limit, len(refunds))]
	} else {
		i := slices.IndexFunc(refunds, func(r Refund) bool { return r.ID == cursor })
		if i < 0 {
			param := "starting_after"
			if before != "" {
				param = "ending_before"
			}
			se := invalidRequest(CodeResourceMissing, param, fmt.Sprintf("No such refund: '%s'", cursor))
			se.HTTPStatus = http.StatusNotFound
			writeStripeError(w, se)
			return
		}
		if after != "" {
			refunds = refunds[i+1:]
			hasMore = len(refunds) > limit
			refunds = refunds[:min(limit, len(refunds))]
		} else {
			refunds = refunds[:i]
			hasMore = len(refunds) > limit
			refunds = refunds[max(0, len(refunds)-limit):]
		}
	}
	body := listBody{Object: "list", URL: "/v1/refunds", HasMore: hasMore, Data: make([]refundBody, 0, len(refunds))}
	for _, refund := range refunds {
		body.Data = append(body.Data, refundBodyOf(refund))
	}
	writeJSON(w, http.StatusOK, body)
}

// hasIntent reports whether the Engine holds a PaymentIntent with the ID,
// without counting a retrieve.
func (e *Engine) hasIntent(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.intents[id]
	return ok
}

// refundBody is a Refund as Stripe writes it.
type refundBody struct {
	ID            string            `json:"id"`
	Object        string            `json:"object"`
	Amount        int64             `json:"amount"`
	Charge        string            `json:"charge"`
	Created       int64             `json:"created"`
	Currency      string            `json:"currency"`
	Metadata      map[string]string `json:"metadata"`
	PaymentIntent string            `json:"payment_intent"`
	Reason        *string           `json:"reason"`
	Status        string            `json:"status"`
	FailureReason string            `json:"failure_reason,omitempty"`
}

// refundBodyOf is the Refund body of an Engine refund.
func refundBodyOf(r Refund) refundBody {
	metadata := r.Metadata
	if metadata == nil {
		metadata = map[string]string{}
	}
	return refundBody{
		ID:            r.ID,
		Object:        "refund",
		Amount:        r.Amount,
		Charge:        r.Charge,
		Created:       r.Created.Unix(),
		Currency:      r.Currency,
		Metadata:      metadata,
		PaymentIntent: r.PaymentIntent,
		Reason:        nullable(r.Reason),
		Status:        r.Status,
		FailureReason: r.FailureReason,
	}
}

// listBody is a page of a list as Stripe writes it.
type listBody struct {
	Object  string       `json:"object"`
	URL     string       `json:"url"`
	HasMore bool         `json:"has_more"`
	Data    []refundBody `json:"data"`
}

// chargeBody is a Charge as Stripe writes it, reduced to its amounts and
// status: what latest_charge expands to.
type chargeBody struct {
	ID             string            `json:"id"`
	Object         string            `json:"object"`
	Amount         int64             `json:"amount"`
	AmountCaptured int64             `json:"amount_captured"`
	AmountRefunded int64             `json:"amount_refunded"`
	Captured       bool              `json:"captured"`
	Paid           bool              `json:"paid"`
	Refunded       bool              `json:"refunded"`
	Currency       string            `json:"currency"`
	Metadata       map[string]string `json:"metadata"`
	PaymentIntent  string            `json:"payment_intent"`
	Status         string            `json:"status"`
	Created        int64             `json:"created"`
}

// expandCharge replaces the latest_charge ID of b with the charge, with
// what the Engine refunded of it, when the request's expand parameters ask
// for latest_charge.
func (s *server) expandCharge(b paymentIntentBody, in Intent, params url.Values) paymentIntentBody {
	if b.LatestCharge == nil || !expands(params, "latest_charge") {
		return b
	}
	refunded := s.engine.Refunded(in.ID)
	metadata := b.Metadata
	b.LatestCharge = chargeBody{
		ID:             chargeID(in.ID),
		Object:         "charge",
		Amount:         in.Amount,
		AmountCaptured: in.Amount,
		AmountRefunded: refunded,
		Captured:       true,
		Paid:           true,
		Refunded:       refunded >= in.Amount,
		Currency:       in.Currency,
		Metadata:       metadata,
		PaymentIntent:  in.ID,
		Status:         StatusSucceeded,
		Created:        in.Created.Unix(),
	}
	return b
}

// expands reports whether the expand parameters (expand[]=F, expand[0]=F)
// name field.
func expands(params url.Values, field string) bool {
	for name, values := range params {
		if (name == "expand" || strings.HasPrefix(name, "expand[")) && slices.Contains(values, field) {
			return true
		}
	}
	return false
}
