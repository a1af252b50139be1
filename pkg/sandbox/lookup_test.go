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
	"net/http"
	"net/url"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/stripe/stripe-go/v85"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/httpprovider"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/sandboxprovider"
	stripeadapter "github.com/idempotency-dev/paymentjob-operator/internal/payment/stripe"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

func TestEngineLookupOff(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	e := sandbox.NewEngine()
	p := sandboxprovider.NewProvider(e)
	req := payment.ChargeRequest{Amount: 100, Currency: "eur", PaymentMethod: sandbox.PaymentMethodVisa}
	first, err := p.Charge(ctx, "ns/a", req)
	g.Expect(err).NotTo(HaveOccurred())
	query := `metadata['` + payment.MetadataKeyIdempotencyKey + `']:'ns/a'`
	g.Expect(e.LookupEnabled()).To(BeTrue(), "on by default")

	e.SetLookupEnabled(false)
	g.Expect(e.LookupEnabled()).To(BeFalse())
	searches := e.Stats().Searches
	found, err := e.SearchPaymentIntents(query)
	g.Expect(found).To(BeEmpty())
	se := stripeError(g, err)
	g.Expect(se.HTTPStatus).To(Equal(http.StatusNotFound))
	g.Expect(se.Type).To(Equal(sandbox.ErrorTypeInvalidRequest))
	// The in-process provider cannot tell whether it charged: an error, not
	// an empty answer.
	byKey, err := p.Lookup(ctx, []string{"ns/a"})
	g.Expect(err).To(HaveOccurred())
	g.Expect(byKey).To(BeNil())
	g.Expect(e.Stats().Searches-searches).To(BeEquivalentTo(2), "refused searches count")

	// Creates, retrieves and the key memory are not affected.
	again, err := p.Charge(ctx, "ns/a", req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.ID).To(Equal(first.ID))
	g.Expect(again.Replayed).To(BeTrue())
	_, ok := e.GetPaymentIntent(first.ID)
	g.Expect(ok).To(BeTrue())
	g.Expect(e.Stats().ChargesByKey).To(Equal(map[string]int{"ns/a": 1}))

	e.SetLookupEnabled(true)
	found, err = e.SearchPaymentIntents(query)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ids(found)).To(Equal([]string{first.ID}))
}

func TestServerTurnsLookupOff(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine(sandbox.WithAccount("acct_lookup"))
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	created := createIntent(g, srv, "k1", paymentForm("100", sandbox.PaymentMethodVisa)).intentOf(g)
	search := searchPath(`metadata['paymentjob']:'default/order-42'`)
	lookupPath := "/http/charges/lookup?" + url.Values{"key": {"k1"}}.Encode()
	control := func(method, body string) apiResponse {
		return sendControl(g, srv, method, "/_sandbox/lookup", body)
	}

	res := control(http.MethodGet, "")
	g.Expect(res.status).To(Equal(http.StatusOK))
	g.Expect(res.body).To(MatchJSON(`{"enabled": true}`))
	g.Expect(send(g, srv, apiRequest{method: http.MethodGet, path: search}).status).To(Equal(http.StatusOK))

	res = control(http.MethodPut, `{"enabled": false}`)
	g.Expect(res.status).To(Equal(http.StatusOK), string(res.body))
	g.Expect(res.body).To(MatchJSON(`{"enabled": false}`))
	g.Expect(e.LookupEnabled()).To(BeFalse())
	g.Expect(control(http.MethodGet, "").body).To(MatchJSON(`{"enabled": false}`))
	searches := e.Stats().Searches

	// Every search and lookup is answered as by a route that does not
	// exist, whatever its parameters; probes of the lookup endpoint too.
	for _, path := range []string{search, "/v1/payment_intents/search"} {
		res := send(g, srv, apiRequest{method: http.MethodGet, path: path})
		g.Expect(res.status).To(Equal(http.StatusNotFound), string(res.body))
		g.Expect(res.errorOf(g).Type).To(Equal(sandbox.ErrorTypeInvalidRequest))
		g.Expect(res.errorOf(g).Message).To(ContainSubstring("Unrecognized request URL"))
	}
	for _, path := range []string{lookupPath, "/http/charges/lookup"} {
		res := send(g, srv, apiRequest{method: http.MethodGet, path: path, authorization: noAuth})
		g.Expect(res.status).To(Equal(http.StatusNotFound), string(res.body))
		g.Expect(contractBody(g, res)).To(HaveKeyWithValue("reason", "NotFound"))
	}
	// stripe-go sees Stripe's 404.
	ctx := context.Background()
	params := &stripe.PaymentIntentSearchParams{}
	params.Query = `metadata['paymentjob']:'default/order-42'`
	var searchErrors int
	for _, err := range newStripeClient(srv).V1PaymentIntents.Search(ctx, params).All(ctx) {
		searchErrors++
		g.Expect(asStripeError(g, err).HTTPStatusCode).To(Equal(http.StatusNotFound))
	}
	g.Expect(searchErrors).To(Equal(1))
	g.Expect(e.Stats().Searches-searches).To(BeEquivalentTo(5), "refused searches count")

	// Charges, replays and retrieves still work.
	replay := createIntent(g, srv, "k1", paymentForm("100", sandbox.PaymentMethodVisa))
	g.Expect(replay.status).To(Equal(http.StatusOK))
	g.Expect(replay.header.Get("Idempotent-Replayed")).To(Equal("true"))
	g.Expect(send(g, srv, apiRequest{method: http.MethodGet, path: "/v1/payment_intents/" + created["id"].(string)}).status).
		To(Equal(http.StatusOK))
	g.Expect(e.Stats().ChargesByKey).To(Equal(map[string]int{"k1": 1}))

	res = control(http.MethodPut, `{"enabled": true}`)
	g.Expect(res.status).To(Equal(http.StatusOK), string(res.body))
	g.Expect(res.body).To(MatchJSON(`{"enabled": true}`))
	res = send(g, srv, apiRequest{method: http.MethodGet, path: search})
	g.Expect(res.status).To(Equal(http.StatusOK), string(res.body))
	g.Expect(res.intentOf(g)["data"]).To(ConsistOf(HaveKeyWithValue("id", created["id"])))
	g.Expect(control(http.MethodPost, "").status).To(Equal(http.StatusMethodNotAllowed))
}

func TestServerRefusesInvalidLookupSwitch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		body        string
		wantMessage string
	}{
		{name: "enabled left out", body: `{}`, wantMessage: "enabled is required"},
		{name: "enabled null", body: `{"enabled": null}`, wantMessage: "enabled is required"},
		{name: "enabled as a string", body: `{"enabled": "false"}`, wantMessage: "Invalid lookup"},
		{name: "unknown field", body: `{"enabled": false, "search": false}`, wantMessage: `unknown field "search"`},
		{name: "two values", body: `{"enabled": false} {}`, wantMessage: "more than one JSON value"},
		{name: "not JSON", body: `enabled=false`, wantMessage: "Invalid lookup"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			e := sandbox.NewEngine()
			srv := startSandbox(t, e, sandbox.ServerOptions{})
			res := sendControl(g, srv, http.MethodPut, "/_sandbox/lookup", tt.body)
			g.Expect(res.status).To(Equal(http.StatusBadRequest), string(res.body))
			g.Expect(res.errorOf(g).Type).To(Equal(sandbox.ErrorTypeInvalidRequest))
			g.Expect(res.errorOf(g).Message).To(ContainSubstring(tt.wantMessage))
			g.Expect(e.LookupEnabled()).To(BeTrue())
		})
	}
}

// TestOperatorAdaptersCannotLookUpWhenOff checks what the operator's
// adapters make of a sandbox with lookups off: a failed lookup (the
// operator cannot tell whether a key was charged), never an empty answer
// that would read as "not charged"; charges still go through.
func TestOperatorAdaptersCannotLookUpWhenOff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	req := payment.ChargeRequest{Amount: 100, Currency: "eur", PaymentMethod: sandbox.PaymentMethodVisa}
	tests := []struct {
		name string
		new  func(base string) (payment.Provider, error)
	}{
		{name: "stripe", new: func(base string) (payment.Provider, error) {
			return stripeadapter.New(stripeadapter.Config{APIKey: sandboxAPIKey, APIBase: base})
		}},
		{name: "http", new: func(base string) (payment.Provider, error) {
			return httpprovider.New(httpprovider.Config{URL: base + "/http/charges", LookupURL: base + "/http/charges/lookup"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			e := sandbox.NewEngine()
			srv := startSandbox(t, e, sandbox.ServerOptions{})
			p, err := tt.new(srv.URL)
			g.Expect(err).NotTo(HaveOccurred())
			looker, ok := p.(payment.Looker)
			g.Expect(ok).To(BeTrue(), "%T looks keys up", p)
			charged, err := p.Charge(ctx, "ns/a", req)
			g.Expect(err).NotTo(HaveOccurred())
			byKey, err := looker.Lookup(ctx, []string{"ns/a"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(byKey["ns/a"]).To(ConsistOf(HaveField("Outcome.ID", charged.ID)))

			e.SetLookupEnabled(false)
			byKey, err = looker.Lookup(ctx, []string{"ns/a"})
			g.Expect(err).To(HaveOccurred())
			g.Expect(byKey).To(BeEmpty())
			_, err = p.Charge(ctx, "ns/b", req)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(e.Stats().ChargesByKey).To(Equal(map[string]int{"ns/a": 1, "ns/b": 1}))
		})
	}
}
