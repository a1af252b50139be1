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
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The Stripe list routes, GET /v1/payment_intents, /v1/refunds and
// /v1/disputes, with the parameters Stripe's lists take: created[gte],
// created[gt], created[lte], created[lt] (or created) in Unix seconds,
// limit, starting_after and ending_before. Every read route but search is
// under RateLimits.Reads.

// maxUnixSeconds is the latest created[...] accepted: 9999-12-31T23:59:59Z.
const maxUnixSeconds = 253402300799

// read admits h's requests under RateLimits.Reads (Engine.admitRead),
// answering a Stripe 429 beyond it.
func (s *server) read(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := s.engine.admitRead(); err != nil {
			writeEngineError(w, err)
			return
		}
		h(w, r)
	}
}

// listBody is a page of a list as Stripe writes it.
type listBody[T any] struct {
	Object  string `json:"object"`
	URL     string `json:"url"`
	HasMore bool   `json:"has_more"`
	Data    []T    `json:"data"`
}

// newListBody is the list body of path holding the page, each written by
// body.
func newListBody[O, T any](path string, page []O, hasMore bool, body func(O) T) listBody[T] {
	b := listBody[T]{Object: "list", URL: path, HasMore: hasMore, Data: make([]T, 0, len(page))}
	for _, o := range page {
		b.Data = append(b.Data, body(o))
	}
	return b
}

// listQueryOf reads the parameters of a list request. The Engine checks
// the limit's range and the cursors.
func listQueryOf(params url.Values) (ListQuery, *StripeError) {
	q := ListQuery{
		StartingAfter: params.Get("starting_after"),
		EndingBefore:  params.Get("ending_before"),
	}
	if params.Has("limit") {
		n, err := strconv.Atoi(params.Get("limit"))
		if err != nil || n < 1 || n > MaxListLimit {
			return ListQuery{}, invalidRequest(CodeParameterInvalid, "limit",
				fmt.Sprintf("Invalid limit: must be an integer between 1 and %d.", MaxListLimit))
		}
		q.Limit = n
	}
	// The window in Unix seconds, [from, to); each bound narrows it.
	from, to := int64(math.MinInt64), int64(math.MaxInt64)
	for _, b := range []struct {
		param string
		// lower: the bound is a from, at the value plus shift; a to
		// otherwise.
		lower bool
		shift int64
	}{
		{"created", true, 0}, {"created", false, 1},
		{"created[gte]", true, 0}, {"created[gt]", true, 1},
		{"created[lt]", false, 0}, {"created[lte]", false, 1},
	} {
		if !params.Has(b.param) {
			continue
		}
		v, err := strconv.ParseInt(params.Get(b.param), 10, 64)
		if err != nil || v < 0 || v > maxUnixSeconds {
			return ListQuery{}, invalidRequest(CodeParameterInvalid, b.param,
				fmt.Sprintf("Invalid %s: must be a Unix timestamp in seconds.", b.param))
		}
		if b.lower {
			from = max(from, v+b.shift)
		} else {
			to = min(to, v+b.shift)
		}
	}
	if from != math.MinInt64 {
		q.From = time.Unix(from, 0)
	}
	if to != math.MaxInt64 {
		q.To = time.Unix(to, 0)
	}
	return q, nil
}

// listPaymentIntents answers a page of the PaymentIntents of the window,
// newest first (Engine.ListIntents).
func (s *server) listPaymentIntents(w http.ResponseWriter, r *http.Request) {
	q, se := listQueryOf(r.URL.Query())
	if se != nil {
		writeStripeError(w, se)
		return
	}
	page, more, err := s.engine.ListIntents(q)
	if err != nil {
		writeEngineError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, newListBody("/v1/payment_intents", page, more, intentBody))
}

// listDisputes answers a page of the disputes of the window, of every
// PaymentIntent or of payment_intent (or charge), newest first
// (Engine.ListDisputes).
func (s *server) listDisputes(w http.ResponseWriter, r *http.Request) {
	q, se := listQueryOf(r.URL.Query())
	if se != nil {
		writeStripeError(w, se)
		return
	}
	q.PaymentIntent = r.URL.Query().Get("payment_intent")
	if charge, ok := strings.CutPrefix(r.URL.Query().Get("charge"), "ch_"); ok && q.PaymentIntent == "" {
		// A charge's ID is its PaymentIntent's (chargeID).
		q.PaymentIntent = "pi_" + charge
	}
	page, more, err := s.engine.ListDisputes(q)
	if err != nil {
		writeEngineError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, newListBody("/v1/disputes", page, more, disputeBodyOf))
}

// getDispute answers the dispute with the ID of the path.
func (s *server) getDispute(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	d, ok := s.engine.GetDispute(id)
	if !ok {
		se := invalidRequest(CodeResourceMissing, "id", fmt.Sprintf("No such dispute: '%s'", id))
		se.HTTPStatus = http.StatusNotFound
		writeStripeError(w, se)
		return
	}
	writeJSON(w, http.StatusOK, disputeBodyOf(d))
}

// disputeBody is a Dispute as Stripe writes it, reduced to the fields the
// sandbox keeps.
type disputeBody struct {
	ID            string            `json:"id"`
	Object        string            `json:"object"`
	Amount        int64             `json:"amount"`
	Charge        string            `json:"charge"`
	Currency      string            `json:"currency"`
	Metadata      map[string]string `json:"metadata"`
	PaymentIntent string            `json:"payment_intent"`
	Reason        string            `json:"reason"`
	Status        string            `json:"status"`
	Created       int64             `json:"created"`
	Livemode      bool              `json:"livemode"`
}

// disputeBodyOf is the Dispute body of an Engine dispute.
func disputeBodyOf(d Dispute) disputeBody {
	return disputeBody{
		ID:            d.ID,
		Object:        "dispute",
		Amount:        d.Amount,
		Charge:        d.Charge,
		Currency:      d.Currency,
		Metadata:      map[string]string{},
		PaymentIntent: d.PaymentIntent,
		Reason:        d.Reason,
		Status:        d.Status,
		Created:       d.Created.Unix(),
	}
}
