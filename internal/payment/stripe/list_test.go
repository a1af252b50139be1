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
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/paymenttest"
)

// listFrom and listTo are the window of the list tests.
var (
	listFrom = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	listTo   = time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
)

// listPage is the JSON of one page of a Stripe list.
func listPage(hasMore bool, data ...map[string]any) map[string]any {
	return map[string]any{"object": "list", "url": "/v1/things", "has_more": hasMore, "data": append([]map[string]any{}, data...)}
}

// listRequest is a request for the first page of kind in the test window,
// or for the page after after.
func listRequest(kind payment.ListKind, after string) payment.ListRequest {
	return payment.ListRequest{Kind: kind, From: listFrom, To: listTo, After: after}
}

func TestListSendsOneGETOfTheWindow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind     payment.ListKind
		after    string
		wantPath string
	}{
		{kind: payment.KindCharges, wantPath: "/v1/payment_intents"},
		{kind: payment.KindCharges, after: "pi_9", wantPath: "/v1/payment_intents"},
		{kind: payment.KindRefunds, after: "re_9", wantPath: "/v1/refunds"},
		{kind: payment.KindDisputes, wantPath: "/v1/disputes"},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind)+"/"+tt.after, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			f := newFakeAnswering(t, listPage(false))

			page, err := f.provider(t).List(context.Background(), listRequest(tt.kind, tt.after))

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(page).To(Equal(payment.ListPage{Objects: []payment.Listed{}}))
			r := f.single(g, http.MethodGet, tt.wantPath)
			want := map[string][]string{
				"created[gte]": {"1772323200"},
				"created[lt]":  {"1775001600"},
				"limit":        {"100"},
			}
			if tt.after != "" {
				want["starting_after"] = []string{tt.after}
			}
			g.Expect(map[string][]string(r.Query)).To(Equal(want))
			g.Expect(r.Body).To(BeEmpty())
			g.Expect(r.Header.Values("Idempotency-Key")).To(BeEmpty(), "a list is a read: no Idempotency-Key")
		})
	}
}

func TestListMapsEachKind(t *testing.T) {
	t.Parallel()
	created := time.Unix(1772368200, 0).UTC()
	pending := withField(charged("pi_2", "processing", "", "", 1772368100), "metadata", map[string]string{})
	refund := map[string]any{"id": "re_1", "object": "refund", "amount": 500, "currency": "EUR", "created": 1772368200,
		"status": "succeeded", "payment_intent": "pi_1", "metadata": map[string]string{payment.MetadataKeyIdempotencyKey: "refund/1"}}
	legacy := map[string]any{"id": "re_2", "object": "refund", "amount": 100, "currency": "eur", "created": 1772368100,
		"status": "failed", "payment_intent": nil}
	dispute := func(id, status string) map[string]any {
		return map[string]any{"id": id, "object": "dispute", "amount": 2000, "currency": "usd", "created": 1772368200,
			"status": status, "payment_intent": "pi_1", "charge": "ch_1"}
	}
	tests := []struct {
		name     string
		kind     payment.ListKind
		page     map[string]any
		want     []payment.Listed
		wantNext string
	}{
		{
			name: "charges, more to come",
			kind: payment.KindCharges,
			page: listPage(true, withField(charged("pi_1", "succeeded", testKey, "", 1772368200), "amount_received", 2000), pending),
			want: []payment.Listed{
				{ID: "pi_1", Key: testKey, Status: "succeeded", State: payment.StateSucceeded, Amount: 2000, Currency: "usd", Created: created},
				{ID: "pi_2", Status: "processing", State: payment.StatePending, Amount: 2000, Currency: "usd", Created: created.Add(-100 * time.Second)},
			},
			wantNext: "pi_2",
		},
		{
			name: "refunds, the last page",
			kind: payment.KindRefunds,
			page: listPage(false, refund, legacy),
			want: []payment.Listed{
				{ID: "re_1", Key: "refund/1", Status: "succeeded", State: payment.StateSucceeded, Amount: 500, Currency: "eur",
					Created: created, Charge: "pi_1"},
				{ID: "re_2", Status: "failed", State: payment.StateNotCharged, Amount: 100, Currency: "eur", Created: created.Add(-100 * time.Second)},
			},
		},
		{
			name: "disputes: won and warning_closed took nothing, every other status took the money or may",
			kind: payment.KindDisputes,
			page: listPage(false, dispute("dp_1", "won"), dispute("dp_2", "warning_closed"), dispute("dp_3", "lost"),
				dispute("dp_4", "needs_response"), dispute("dp_5", "under_review"), dispute("dp_6", "a_status_added_later")),
			want: []payment.Listed{
				{ID: "dp_1", Status: "won", State: payment.StateNotCharged, Amount: 2000, Currency: "usd", Created: created, Charge: "pi_1"},
				{ID: "dp_2", Status: "warning_closed", State: payment.StateNotCharged, Amount: 2000, Currency: "usd", Created: created, Charge: "pi_1"},
				{ID: "dp_3", Status: "lost", State: payment.StateSucceeded, Amount: 2000, Currency: "usd", Created: created, Charge: "pi_1"},
				{ID: "dp_4", Status: "needs_response", State: payment.StateSucceeded, Amount: 2000, Currency: "usd", Created: created, Charge: "pi_1"},
				{ID: "dp_5", Status: "under_review", State: payment.StateSucceeded, Amount: 2000, Currency: "usd", Created: created, Charge: "pi_1"},
				{ID: "dp_6", Status: "a_status_added_later", State: payment.StateSucceeded, Amount: 2000, Currency: "usd", Created: created, Charge: "pi_1"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			f := newFakeAnswering(t, tt.page)

			page, err := f.provider(t).List(context.Background(), listRequest(tt.kind, ""))

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(page.Objects).To(Equal(tt.want))
			g.Expect(page.Next).To(Equal(tt.wantNext))
		})
	}
}

func TestListErrorsAreUncertain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		answer         func(w http.ResponseWriter, r *http.Request)
		wantRetryAfter time.Duration
		wantMessage    string
	}{
		{
			name: "rate limited",
			answer: jsonAnswer(http.StatusTooManyRequests, stripeError("invalid_request_error", "rate_limit", "", "Too many requests"),
				"Retry-After", "7"),
			wantRetryAfter: 7 * time.Second,
			wantMessage:    "cannot list Stripe's charges",
		},
		{
			name:        "API key refused",
			answer:      jsonAnswer(http.StatusUnauthorized, stripeError("invalid_request_error", "", "", "Invalid API Key provided: "+testAPIKey)),
			wantMessage: "refused the API key",
		},
		{
			name:        "invalid request",
			answer:      jsonAnswer(http.StatusBadRequest, stripeError("invalid_request_error", "parameter_invalid_integer", "", "Invalid integer")),
			wantMessage: "Invalid integer",
		},
		{name: "server error", answer: jsonAnswer(http.StatusInternalServerError, stripeError("api_error", "", "", "boom")), wantMessage: "HTTP 500"},
		{name: "not Stripe's JSON", answer: rawAnswer(http.StatusOK, "text/html", "<html>proxy</html>"), wantMessage: "not the Stripe API's JSON"},
		{name: "more without any object", answer: jsonAnswer(http.StatusOK, listPage(true)), wantMessage: "has more but listed none"},
		{name: "an object without an id", answer: jsonAnswer(http.StatusOK, listPage(false, withField(succeeded("pi_1"), "id", ""))),
			wantMessage: "without an id"},
		{name: "connection closed", answer: hangUp, wantMessage: "cannot list Stripe's charges"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			f := newFakeStripe(t, first(tt.answer))

			page, err := f.provider(t).List(context.Background(), listRequest(payment.KindCharges, ""))

			g.Expect(page).To(BeZero())
			g.Expect(paymenttest.CheckTransient(err)).To(Succeed())
			g.Expect(payment.RetryAfter(err)).To(Equal(tt.wantRetryAfter))
			g.Expect(err.Error()).To(ContainSubstring(tt.wantMessage))
			g.Expect(err.Error()).NotTo(ContainSubstring(testAPIKey))
			g.Expect(err.Error()).NotTo(ContainSubstring("<html>"))
			g.Expect(f.count(http.MethodGet)).To(Equal(1), "one request per List: the caller owns the retries")
		})
	}
}

func TestListSendsNothingForARequestItCannotSend(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  payment.ListRequest
		ctx  func() context.Context
	}{
		{name: "unknown kind", req: payment.ListRequest{Kind: "payouts", From: listFrom, To: listTo}},
		{name: "no start", req: payment.ListRequest{Kind: payment.KindCharges, To: listTo}},
		{name: "ends before it starts", req: payment.ListRequest{Kind: payment.KindCharges, From: listTo, To: listFrom}},
		{name: "empty window", req: payment.ListRequest{Kind: payment.KindCharges, From: listFrom, To: listFrom.Add(time.Millisecond)}},
		{name: "cursor with a space", req: listRequest(payment.KindCharges, "pi 1")},
		{name: "context done", req: listRequest(payment.KindCharges, ""), ctx: func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			f := newFakeAnswering(t, listPage(false))
			ctx := context.Background()
			if tt.ctx != nil {
				ctx = tt.ctx()
			}

			_, err := f.provider(t).List(ctx, tt.req)

			g.Expect(err).To(HaveOccurred())
			g.Expect(f.received()).To(BeEmpty())
		})
	}
}
