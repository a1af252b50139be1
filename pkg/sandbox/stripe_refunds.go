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

// listRefunds answers the refunds of payment_intent, or all of them, of the
// window, newest first, a page of limit at a time after starting_after or
// before ending_before (Engine.ListRefundsPage). An unknown payment_intent
// is a 404, as at Stripe.
func (s *server) listRefunds(w http.ResponseWriter, r *http.Request) {
	q, se := listQueryOf(r.URL.Query())
	if se != nil {
		writeStripeError(w, se)
		return
	}
	q.PaymentIntent = r.URL.Query().Get("payment_intent")
	if q.PaymentIntent != "" && !s.engine.hasIntent(q.PaymentIntent) {
		writeStripeError(w, noSuchPaymentIntentError(q.PaymentIntent))
		return
	}
	page, more, err := s.engine.ListRefundsPage(q)
	if err != nil {
		writeEngineError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, newListBody("/v1/refunds", page, more, refundBodyOf))
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
