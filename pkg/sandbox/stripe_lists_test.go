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

package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/stripe/stripe-go/v85"

	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// stripeList is a list body as Stripe writes it.
type stripeList struct {
	Object  string           `json:"object"`
	URL     string           `json:"url"`
	HasMore bool             `json:"has_more"`
	Data    []map[string]any `json:"data"`
}

// getList sends a GET of path with the query to srv and decodes the list it
// answers.
func getList(g *WithT, srv *httptest.Server, path string, q url.Values) stripeList {
	res := send(g, srv, apiRequest{method: http.MethodGet, path: path + "?" + q.Encode()})
	g.ExpectWithOffset(1, res.status).To(Equal(http.StatusOK), string(res.body))
	var body stripeList
	g.ExpectWithOffset(1, json.Unmarshal(res.body, &body)).To(Succeed())
	g.ExpectWithOffset(1, body.Object).To(Equal("list"))
	g.ExpectWithOffset(1, body.URL).To(Equal(path))
	return body
}

func TestServerListsPaymentIntentsAPageAtATime(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	want := putIntents(g, e, 1050)

	seen := map[string]bool{}
	var order []string
	q := url.Values{"limit": {"100"}}
	for pages := 1; ; pages++ {
		g.Expect(pages).To(BeNumerically("<=", 11))
		body := getList(g, srv, "/v1/payment_intents", q)
		for _, in := range body.Data {
			id := in["id"].(string)
			g.Expect(seen).NotTo(HaveKey(id))
			seen[id] = true
			order = append(order, id)
			g.Expect(in).To(HaveKeyWithValue("object", "payment_intent"))
			g.Expect(in).To(HaveKeyWithValue("amount", BeEquivalentTo(1000)))
			g.Expect(in).To(HaveKeyWithValue("status", "succeeded"))
			g.Expect(in).To(HaveKey("metadata"))
			g.Expect(in).To(HaveKey("created"))
		}
		if !body.HasMore {
			break
		}
		q.Set("starting_after", order[len(order)-1])
	}
	g.Expect(order).To(Equal(ids(want)))

	// The window: created[gte] inclusive, created[lt] exclusive, in Unix
	// seconds; gt and lte are the same shifted by one.
	from, to := listStart.Add(10*time.Second).Unix(), listStart.Add(20*time.Second).Unix()
	var inWindow []string
	for _, in := range want {
		if s := in.Created.Unix(); s >= from && s < to {
			inWindow = append(inWindow, in.ID)
		}
	}
	g.Expect(inWindow).To(HaveLen(30))
	for _, window := range []url.Values{
		{"created[gte]": {fmt.Sprint(from)}, "created[lt]": {fmt.Sprint(to)}},
		{"created[gt]": {fmt.Sprint(from - 1)}, "created[lte]": {fmt.Sprint(to - 1)}},
	} {
		window.Set("limit", "100")
		body := getList(g, srv, "/v1/payment_intents", window)
		g.Expect(body.HasMore).To(BeFalse())
		got := make([]string, 0, len(body.Data))
		for _, in := range body.Data {
			got = append(got, in["id"].(string))
		}
		g.Expect(got).To(Equal(inWindow), window.Encode())
	}
}

func TestServerRefusesBadListParameters(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	in := e.PutIntent(sandbox.Intent{Amount: 100, Currency: "eur"})
	tests := []struct {
		path, query string
		wantParam   string
	}{
		{"/v1/payment_intents", "limit=0", "limit"},
		{"/v1/payment_intents", "limit=101", "limit"},
		{"/v1/payment_intents", "limit=ten", "limit"},
		{"/v1/payment_intents", "created[gte]=yesterday", "created[gte]"},
		{"/v1/payment_intents", "created[lt]=-5", "created[lt]"},
		{"/v1/payment_intents", "created[lte]=1.5", "created[lte]"},
		{"/v1/payment_intents", "starting_after=pi_missing", "starting_after"},
		{"/v1/payment_intents", "ending_before=pi_missing", "ending_before"},
		{"/v1/payment_intents", "starting_after=" + in.ID + "&ending_before=" + in.ID, "ending_before"},
		{"/v1/disputes", "starting_after=dp_missing", "starting_after"},
		{"/v1/disputes", "created[gt]=x", "created[gt]"},
		{"/v1/refunds", "starting_after=" + in.ID, "starting_after"},
		{"/v1/refunds", "created=soon", "created"},
	}
	for _, tt := range tests {
		res := send(g, srv, apiRequest{method: http.MethodGet, path: tt.path + "?" + tt.query})
		g.Expect(res.status).To(Equal(http.StatusBadRequest), tt.path+"?"+tt.query)
		se := res.errorOf(g)
		g.Expect(se.Type).To(Equal(sandbox.ErrorTypeInvalidRequest))
		g.Expect(se.Param).To(Equal(tt.wantParam), tt.path+"?"+tt.query)
	}
}

func TestServerListsWhatWasChargedWithAnyMetadata(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	sc := newStripeClient(srv)
	ctx := context.Background()

	// A charge made behind the operator's back: no key, other metadata.
	behind, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{
		Amount: stripe.Int64(4200), Currency: stripe.String("usd"), PaymentMethod: stripe.String(sandbox.PaymentMethodVisa),
		Confirm: stripe.Bool(true), Metadata: map[string]string{"source": "dashboard", "note": "refund later?"},
	})
	g.Expect(err).NotTo(HaveOccurred())
	ours, err := sc.V1PaymentIntents.Create(ctx, stripeParams("default/order-1", 2000, sandbox.PaymentMethodVisa,
		map[string]string{"paymentjob_idempotency_key": "default/order-1"}))
	g.Expect(err).NotTo(HaveOccurred())

	// stripe-go pages through the list with starting_after.
	params := &stripe.PaymentIntentListParams{CreatedRange: &stripe.RangeQueryParams{
		GreaterThanOrEqual: time.Now().Add(-time.Hour).Unix(), LesserThan: time.Now().Add(time.Hour).Unix()}}
	params.Limit = stripe.Int64(1)
	listed := map[string]*stripe.PaymentIntent{}
	for pi, err := range sc.V1PaymentIntents.List(ctx, params).All(ctx) {
		g.Expect(err).NotTo(HaveOccurred())
		listed[pi.ID] = pi
	}
	g.Expect(listed).To(HaveLen(2))
	g.Expect(listed[behind.ID].Metadata).To(Equal(map[string]string{"source": "dashboard", "note": "refund later?"}))
	g.Expect(listed[behind.ID].Amount).To(BeEquivalentTo(4200))
	g.Expect(listed[ours.ID].Metadata).To(HaveKeyWithValue("paymentjob_idempotency_key", "default/order-1"))
	g.Expect(e.Stats().Lists).To(BeEquivalentTo(2))
}

func TestServerListsAndRetrievesDisputes(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now))
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	sc := newStripeClient(srv)
	ctx := context.Background()

	var opened []sandbox.Dispute
	for i := range 5 {
		in := charged(g, e, fmt.Sprint("order-", i), int64(1000+i))
		d, err := e.OpenDispute(in.ID, sandbox.DisputeReasonFraudulent)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(d.ID).To(MatchRegexp(`^dp_[0-9A-Za-z]{24}$`))
		g.Expect(d.Amount).To(Equal(in.Amount))
		g.Expect(d.Status).To(Equal(sandbox.DisputeStatusNeedsResponse))
		opened = append([]sandbox.Dispute{d}, opened...)
		clock.Add(time.Second)
	}
	won, err := e.SetDisputeStatus(opened[0].ID, sandbox.DisputeStatusWon)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(won.Status).To(Equal(sandbox.DisputeStatusWon))

	res := send(g, srv, apiRequest{method: http.MethodGet, path: "/v1/disputes/" + opened[1].ID})
	g.Expect(res.status).To(Equal(http.StatusOK))
	g.Expect(res.body).To(MatchJSON(fmt.Sprintf(`{"id": %q, "object": "dispute", "amount": 1003, "currency": "eur",
		"charge": %q, "payment_intent": %q, "status": "needs_response", "reason": "fraudulent", "created": %d,
		"metadata": {}, "livemode": false}`, opened[1].ID, opened[1].Charge, opened[1].PaymentIntent, opened[1].Created.Unix())))
	g.Expect(send(g, srv, apiRequest{method: http.MethodGet, path: "/v1/disputes/dp_missing"}).status).
		To(Equal(http.StatusNotFound))

	params := &stripe.DisputeListParams{}
	params.Limit = stripe.Int64(2)
	var got []string
	for d, err := range sc.V1Disputes.List(ctx, params).All(ctx) {
		g.Expect(err).NotTo(HaveOccurred())
		got = append(got, d.ID)
		if d.ID == won.ID {
			g.Expect(d.Status).To(Equal(stripe.DisputeStatusWon))
		}
		g.Expect(d.Reason).To(Equal(stripe.DisputeReasonFraudulent))
	}
	want := make([]string, 0, len(opened))
	for _, d := range opened {
		want = append(want, d.ID)
	}
	g.Expect(got).To(Equal(want))

	one := getList(g, srv, "/v1/disputes",
		url.Values{"payment_intent": {opened[2].PaymentIntent}})
	g.Expect(one.Data).To(HaveLen(1))
	g.Expect(one.Data[0]).To(HaveKeyWithValue("id", opened[2].ID))
	one = getList(g, srv, "/v1/disputes", url.Values{"charge": {opened[3].Charge}})
	g.Expect(one.Data).To(HaveLen(1))
	g.Expect(one.Data[0]).To(HaveKeyWithValue("id", opened[3].ID))
}

func TestOpenDisputeRefuses(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	paid := charged(g, e, "paid", 1000)
	processing := e.PutIntent(sandbox.Intent{Amount: 100, Currency: "eur", Status: sandbox.StatusProcessing})
	_, err := e.OpenDispute(paid.ID, "")
	g.Expect(err).NotTo(HaveOccurred())
	for _, tt := range []struct {
		id, reason, want string
	}{
		{paid.ID, "", "already disputed"},
		{processing.ID, "", "its status is processing"},
		{"pi_missing", "", "no such payment intent"},
		{paid.ID, "because", "unknown reason"},
	} {
		_, err := e.OpenDispute(tt.id, tt.reason)
		g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
	}
	_, err = e.SetDisputeStatus("dp_missing", sandbox.DisputeStatusLost)
	g.Expect(err).To(MatchError(ContainSubstring("no such dispute")))
	_, err = e.SetDisputeStatus("dp_missing", "settled")
	g.Expect(err).To(MatchError(ContainSubstring("unknown status")))
}

func TestReadRateLimit(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now), sandbox.WithRateLimits(sandbox.RateLimits{Reads: 2}))
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	in := charged(g, e, "order", 1000)
	get := func(path string) apiResponse {
		return send(g, srv, apiRequest{method: http.MethodGet, path: path})
	}

	g.Expect(get("/v1/payment_intents").status).To(Equal(http.StatusOK))
	g.Expect(get("/v1/payment_intents/" + in.ID).status).To(Equal(http.StatusOK))
	for _, path := range []string{"/v1/payment_intents", "/v1/refunds", "/v1/disputes", "/v1/account",
		"/v1/payment_intents/" + in.ID, "/http/list?kind=charges"} {
		res := get(path)
		g.Expect(res.status).To(Equal(http.StatusTooManyRequests), path)
		g.Expect(res.header.Get("Retry-After")).To(Equal("1"), path)
	}
	g.Expect(get("/v1/refunds").errorOf(g).Code).To(Equal(sandbox.CodeRateLimit))
	// Search keeps its own bucket, and writes theirs.
	g.Expect(get(searchPath("metadata['paymentjob']:'default/order-42'")).status).To(Equal(http.StatusOK))
	g.Expect(chargedOver(g, srv, "another", "500")).NotTo(BeEmpty())

	clock.Add(time.Second / 2)
	g.Expect(get("/v1/payment_intents").status).To(Equal(http.StatusOK))
	g.Expect(get("/v1/payment_intents").status).To(Equal(http.StatusTooManyRequests))

	s := e.Stats()
	g.Expect(s.RateLimited).To(BeEquivalentTo(8))
	g.Expect(s.Reads).To(BeEquivalentTo(11))
	g.Expect(s.Lists).To(BeEquivalentTo(2))
	g.Expect(s.Searches).To(BeEquivalentTo(1))
	stats := contractBody(g, sendControl(g, srv, http.MethodGet, "/_sandbox/stats", ""))
	g.Expect(stats).To(HaveKeyWithValue("reads", 11.0))
	g.Expect(stats).To(HaveKeyWithValue("lists", 2.0))
}
