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
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/pkg/providertest"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// contractFingerprint is the fingerprint the contract's charges send.
const contractFingerprint = "sha256:0123abcd"

// chargeJSON is a charge body of the HTTP contract paid with
// PaymentMethodVisa, changed by the edits.
func chargeJSON(g *WithT, key string, amount int64, edits ...func(map[string]any)) string {
	body := map[string]any{
		"amount":         amount,
		"currency":       "eur",
		"customer":       "cus_123",
		"paymentMethod":  sandbox.PaymentMethodVisa,
		"description":    "order 42",
		"metadata":       map[string]string{"paymentjob": "default/order-42"},
		"idempotencyKey": key,
		"fingerprint":    contractFingerprint,
	}
	for _, edit := range edits {
		edit(body)
	}
	b, err := json.Marshal(body)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return string(b)
}

// postCharge posts a charge body of the contract under key, without an API
// key.
func postCharge(g *WithT, srv *httptest.Server, key, body string) apiResponse {
	return send(g, srv, apiRequest{method: http.MethodPost, path: "/http/charges", body: body,
		contentType: "application/json", idempotencyKey: key, authorization: noAuth})
}

// contractBody decodes a JSON body of the contract.
func contractBody(g *WithT, res apiResponse) map[string]any {
	var body map[string]any
	g.ExpectWithOffset(1, json.Unmarshal(res.body, &body)).To(Succeed(), string(res.body))
	return body
}

// TestContractConformance runs the contract's conformance suite against the
// sandbox's /http routes, with its fault switches keeping a charge in flight
// and losing an answer after its commit. The tests below check what the
// suite cannot see from outside: reasons, messages, metadata and counters.
func TestContractConformance(t *testing.T) {
	t.Parallel()
	e := sandbox.NewEngine()
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	providertest.Run(t, providertest.Options{
		URL:       srv.URL + "/http/charges",
		LookupURL: srv.URL + "/http/charges/lookup",
		RefundURL: srv.URL + "/http/refunds",
		ListURL:   srv.URL + "/http/list",
		Timeout:   timeout,
		InFlight: &providertest.InFlight{Hold: func() (<-chan string, func()) {
			g := e.Hold()
			return g.Entered(), g.Release
		}},
		LoseResponse: func() { e.FailNext(sandbox.FaultAfterCommit, 1) },
	})
	// Every key the suite sent was charged, or refunded, once at most.
	for key, n := range e.Stats().ChargesByKey {
		if n != 1 {
			t.Errorf("key %q was charged %d times", key, n)
		}
	}
	for key, n := range e.Stats().RefundsByKey {
		if n != 1 {
			t.Errorf("key %q was refunded %d times", key, n)
		}
	}
}

func TestContractChargesAndReplays(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now))
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	const key = "billing/invoice-2026-0042"
	body := chargeJSON(g, key, 1999)

	first := postCharge(g, srv, key, body)
	g.Expect(first.status).To(Equal(http.StatusCreated), string(first.body))
	g.Expect(first.header.Get("Idempotent-Replayed")).To(BeEmpty())
	charge := contractBody(g, first)
	id, _ := charge["id"].(string)
	g.Expect(id).To(HavePrefix("pi_"))
	g.Expect(first.body).To(MatchJSON(fmt.Sprintf(`{"id": %q, "status": "succeeded", "amount": 1999,
		"currency": "eur", "created": %d, "replayed": false, "method": "card"}`, id, clock.Now().Unix())))

	// Any bearer token is accepted.
	replay := send(g, srv, apiRequest{method: http.MethodPost, path: "/http/charges", body: body,
		contentType: "application/json", idempotencyKey: key, authorization: "Bearer anything"})
	g.Expect(replay.status).To(Equal(http.StatusOK), string(replay.body))
	g.Expect(replay.header.Get("Idempotent-Replayed")).To(Equal("true"))
	g.Expect(contractBody(g, replay)).To(And(HaveKeyWithValue("id", id), HaveKeyWithValue("replayed", true)))

	// The same Engine: the intent carries the key and fingerprint, and
	// counts with the Stripe routes' charges.
	in, ok := e.GetPaymentIntent(id)
	g.Expect(ok).To(BeTrue())
	g.Expect(in.Metadata).To(Equal(map[string]string{
		"paymentjob":                      "default/order-42",
		payment.MetadataKeyIdempotencyKey: key,
		payment.MetadataKeyFingerprint:    contractFingerprint,
	}))
	g.Expect(in.PaymentMethod).To(Equal(sandbox.PaymentMethodVisa))
	s := e.Stats()
	g.Expect(s.Charges).To(BeEquivalentTo(1))
	g.Expect(s.Replays).To(BeEquivalentTo(1))
	g.Expect(s.ChargesByKey).To(Equal(map[string]int{key: 1}))
}

// TestContractLeavesTheFingerprintOutOfTheComparison: the same request with
// another fingerprint, or none (a job charged by an operator that sent
// none, retried by one that does), is a retry: replayed, not refused as a
// reuse of the key; another amount still is.
func TestContractLeavesTheFingerprintOutOfTheComparison(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	const key = "billing/invoice-2026-0043"
	first := postCharge(g, srv, key, chargeJSON(g, key, 1999, func(b map[string]any) { delete(b, "fingerprint") }))
	g.Expect(first.status).To(Equal(http.StatusCreated), string(first.body))
	id := contractBody(g, first)["id"]
	for _, fp := range []string{contractFingerprint, "sha256:ffff"} {
		again := postCharge(g, srv, key, chargeJSON(g, key, 1999, func(b map[string]any) { b["fingerprint"] = fp }))
		g.Expect(again.status).To(Equal(http.StatusOK), "fingerprint %s: %s", fp, again.body)
		g.Expect(contractBody(g, again)).To(HaveKeyWithValue("id", id))
	}
	other := postCharge(g, srv, key, chargeJSON(g, key, 2000))
	g.Expect(other.status).To(Equal(http.StatusUnprocessableEntity), string(other.body))
	g.Expect(e.Stats().ChargesByKey).To(Equal(map[string]int{key: 1}))
}

func TestContractAnswersErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// setup runs before the request, on the Engine and the server.
		setup          func(t *testing.T, g *WithT, e *sandbox.Engine, srv func(apiRequest) apiResponse)
		body           string
		contentType    string
		key            string
		wantStatus     int
		wantReason     string
		wantMessage    string
		wantRetryAfter string
	}{
		{name: "declined", key: "k", body: `{"amount": 500, "currency": "eur", "paymentMethod": "pm_card_chargeDeclined"}`,
			wantStatus: http.StatusPaymentRequired, wantReason: "CardDeclined", wantMessage: "generic_decline"},
		{name: "insufficient funds", key: "k",
			body:       `{"amount": 500, "currency": "eur", "paymentMethod": "pm_card_insufficientFunds"}`,
			wantStatus: http.StatusPaymentRequired, wantReason: "CardDeclined", wantMessage: "insufficient_funds"},
		{name: "key reused with another body", key: "k",
			setup: func(_ *testing.T, g *WithT, _ *sandbox.Engine, srv func(apiRequest) apiResponse) {
				res := srv(apiRequest{method: http.MethodPost, path: "/http/charges", idempotencyKey: "k",
					body: `{"amount": 500, "currency": "eur", "paymentMethod": "pm_card_visa"}`})
				g.Expect(res.status).To(Equal(http.StatusCreated))
			},
			body:       `{"amount": 501, "currency": "eur", "paymentMethod": "pm_card_visa"}`,
			wantStatus: http.StatusUnprocessableEntity, wantReason: "IdempotencyKeyReused"},
		{name: "no key", body: `{"amount": 500, "currency": "eur", "paymentMethod": "pm_card_visa"}`,
			wantStatus: http.StatusBadRequest, wantReason: "InvalidRequest", wantMessage: "Idempotency-Key"},
		{name: "key in the body only", body: `{"amount": 500, "currency": "eur", "paymentMethod": "pm_card_visa",
			"idempotencyKey": "k"}`, wantStatus: http.StatusCreated},
		{name: "keys differ", key: "k", body: `{"amount": 500, "currency": "eur", "paymentMethod": "pm_card_visa",
			"idempotencyKey": "other"}`, wantStatus: http.StatusBadRequest, wantReason: "InvalidRequest", wantMessage: "differ"},
		{name: "amount zero", key: "k", body: `{"amount": 0, "currency": "eur", "paymentMethod": "pm_card_visa"}`,
			wantStatus: http.StatusBadRequest, wantReason: "InvalidRequest", wantMessage: "greater than zero"},
		{name: "amount not an integer", key: "k", body: `{"amount": 5.5, "currency": "eur"}`,
			wantStatus: http.StatusBadRequest, wantReason: "InvalidRequest"},
		{name: "not JSON", key: "k", body: `amount=500`, wantStatus: http.StatusBadRequest, wantReason: "InvalidRequest"},
		{name: "form content type", key: "k", contentType: "application/x-www-form-urlencoded",
			body:       `{"amount": 500, "currency": "eur", "paymentMethod": "pm_card_visa"}`,
			wantStatus: http.StatusBadRequest, wantReason: "InvalidRequest", wantMessage: "application/json"},
		{name: "in flight", key: "k", body: `{"amount": 500, "currency": "eur", "paymentMethod": "pm_card_visa"}`,
			setup: func(t *testing.T, g *WithT, e *sandbox.Engine, _ func(apiRequest) apiResponse) {
				gate := e.Hold()
				t.Cleanup(gate.Release)
				go func() {
					_, _, _ = e.CreatePaymentIntent("k", request(500, sandbox.PaymentMethodVisa))
				}()
				g.Eventually(gate.Entered()).WithTimeout(timeout).Should(Receive(Equal("k")))
			},
			wantStatus: http.StatusConflict, wantReason: "IdempotencyKeyInUse", wantRetryAfter: "1"},
		{name: "rate limit fault", key: "k", body: `{"amount": 500, "currency": "eur", "paymentMethod": "pm_card_visa"}`,
			setup: func(_ *testing.T, g *WithT, e *sandbox.Engine, _ func(apiRequest) apiResponse) {
				e.FailNext(sandbox.FaultRateLimit, 1)
				g.Expect(e.SetFaults(sandbox.Faults{RetryAfter: 3 * time.Second})).To(Succeed())
			},
			wantStatus: http.StatusTooManyRequests, wantReason: "RateLimited", wantRetryAfter: "3"},
		{name: "write rate limit", key: "k", body: `{"amount": 500, "currency": "eur", "paymentMethod": "pm_card_visa"}`,
			setup: func(_ *testing.T, g *WithT, e *sandbox.Engine, _ func(apiRequest) apiResponse) {
				g.Expect(e.SetRateLimits(sandbox.RateLimits{Writes: 1})).To(Succeed())
				_, _, err := e.CreatePaymentIntent("first", request(500, sandbox.PaymentMethodVisa))
				g.Expect(err).NotTo(HaveOccurred())
			},
			wantStatus: http.StatusTooManyRequests, wantReason: "RateLimited", wantRetryAfter: "1"},
		{name: "fault before commit", key: "k", body: `{"amount": 500, "currency": "eur", "paymentMethod": "pm_card_visa"}`,
			setup: func(_ *testing.T, _ *WithT, e *sandbox.Engine, _ func(apiRequest) apiResponse) {
				e.FailNext(sandbox.FaultBeforeCommit, 1)
			},
			wantStatus: http.StatusInternalServerError, wantReason: "ServerError", wantMessage: "injected fault"},
		{name: "fault after commit", key: "k", body: `{"amount": 500, "currency": "eur", "paymentMethod": "pm_card_visa"}`,
			setup: func(_ *testing.T, _ *WithT, e *sandbox.Engine, _ func(apiRequest) apiResponse) {
				e.FailNext(sandbox.FaultAfterCommit, 1)
			},
			wantStatus: http.StatusInternalServerError, wantReason: "ServerError", wantMessage: "injected fault"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			clock := newFakeClock()
			e := sandbox.NewEngine(sandbox.WithClock(clock.Now))
			srv := startSandbox(t, e, sandbox.ServerOptions{})
			do := func(r apiRequest) apiResponse {
				r.authorization = noAuth
				if r.contentType == "" {
					r.contentType = "application/json"
				}
				return send(g, srv, r)
			}
			if tt.setup != nil {
				tt.setup(t, g, e, do)
			}

			res := do(apiRequest{method: http.MethodPost, path: "/http/charges", body: tt.body,
				contentType: tt.contentType, idempotencyKey: tt.key})
			g.Expect(res.status).To(Equal(tt.wantStatus), string(res.body))
			g.Expect(res.header.Get("Retry-After")).To(Equal(tt.wantRetryAfter))
			if tt.wantReason == "" {
				return
			}
			body := contractBody(g, res)
			g.Expect(body).To(HaveKeyWithValue("reason", tt.wantReason))
			g.Expect(body).To(HaveKeyWithValue("message", ContainSubstring(tt.wantMessage)))

			// A decline is saved and replayed; nothing else charged.
			if tt.wantStatus == http.StatusPaymentRequired {
				again := do(apiRequest{method: http.MethodPost, path: "/http/charges", body: tt.body, idempotencyKey: tt.key})
				g.Expect(again.status).To(Equal(http.StatusPaymentRequired))
				g.Expect(again.header.Get("Idempotent-Replayed")).To(Equal("true"))
				g.Expect(e.Stats().Charges).To(BeZero())
			}
		})
	}
}

func TestContractLookup(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now), sandbox.WithAccount("acct_contract"),
		sandbox.WithSearchLag(time.Minute))
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	lookup := func(keys ...string) apiResponse {
		return send(g, srv, apiRequest{method: http.MethodGet, authorization: noAuth,
			path: "/http/charges/lookup?" + url.Values{"key": keys}.Encode()})
	}

	created := postCharge(g, srv, "ns/a", chargeJSON(g, "ns/a", 1999))
	g.Expect(created.status).To(Equal(http.StatusCreated), string(created.body))
	id := contractBody(g, created)["id"].(string)
	// Made two days ago and still processing, without a fingerprint.
	old := e.PutIntent(sandbox.Intent{Amount: 700, Currency: "usd", Status: sandbox.StatusRequiresAction,
		Created: clock.Now().Add(-48 * time.Hour), Metadata: map[string]string{payment.MetadataKeyIdempotencyKey: "ns/b"}})

	// Lags behind the charge just made.
	res := lookup("ns/a", "ns/b", "ns/none")
	g.Expect(res.status).To(Equal(http.StatusOK), string(res.body))
	g.Expect(res.body).To(MatchJSON(fmt.Sprintf(`{"account": "acct_contract", "charges": [
		{"idempotencyKey": "ns/b", "id": %q, "status": "pending", "amount": 700, "currency": "usd",
		 "created": %d, "fingerprint": "", "method": "card"}], "refunds": []}`, old.ID, old.Created.Unix())))

	clock.Add(time.Minute)
	res = lookup("ns/a", "ns/b")
	g.Expect(res.status).To(Equal(http.StatusOK), string(res.body))
	g.Expect(res.body).To(MatchJSON(fmt.Sprintf(`{"account": "acct_contract", "charges": [
		{"idempotencyKey": "ns/a", "id": %q, "status": "succeeded", "amount": 1999, "currency": "eur",
		 "created": %d, "fingerprint": %q, "method": "card"},
		{"idempotencyKey": "ns/b", "id": %q, "status": "pending", "amount": 700, "currency": "usd",
		 "created": %d, "fingerprint": "", "method": "card"}], "refunds": []}`,
		id, clock.Now().Add(-time.Minute).Unix(), contractFingerprint, old.ID, old.Created.Unix())))

	// Statuses in the contract's words.
	g.Expect(e.SetIntentStatus(old.ID, sandbox.StatusRequiresPaymentMethod)).To(Succeed())
	g.Expect(contractBody(g, lookup("ns/b"))["charges"]).To(ConsistOf(HaveKeyWithValue("status", "failed")))

	// Without keys: the account, and no search.
	searches := e.Stats().Searches
	res = lookup()
	g.Expect(res.status).To(Equal(http.StatusOK))
	g.Expect(res.body).To(MatchJSON(`{"account": "acct_contract", "charges": [], "refunds": []}`))
	g.Expect(e.Stats().Searches).To(Equal(searches))

	eleven := make([]string, payment.MaxLookupKeys+1)
	for i := range eleven {
		eleven[i] = fmt.Sprint("ns/k", i)
	}
	g.Expect(lookup(eleven[:payment.MaxLookupKeys]...).status).To(Equal(http.StatusOK))
	res = lookup(eleven...)
	g.Expect(res.status).To(Equal(http.StatusBadRequest))
	g.Expect(contractBody(g, res)).To(And(HaveKeyWithValue("reason", "InvalidRequest"),
		HaveKeyWithValue("message", ContainSubstring("at most 10"))))
	g.Expect(lookup("").status).To(Equal(http.StatusBadRequest))
	g.Expect(send(g, srv, apiRequest{method: http.MethodPost, path: "/http/charges/lookup", authorization: noAuth}).status).
		To(Equal(http.StatusMethodNotAllowed))

	// Beyond the search rate limit.
	g.Expect(e.SetRateLimits(sandbox.RateLimits{Searches: 1})).To(Succeed())
	g.Expect(lookup("ns/a").status).To(Equal(http.StatusOK))
	res = lookup("ns/a")
	g.Expect(res.status).To(Equal(http.StatusTooManyRequests))
	g.Expect(res.header.Get("Retry-After")).To(Equal("1"))
	g.Expect(contractBody(g, res)).To(HaveKeyWithValue("reason", "RateLimited"))
}
