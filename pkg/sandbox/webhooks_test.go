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
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// webhookSecret is the endpoint secret of these tests.
const webhookSecret = "whsec_test_0123456789abcdef"

// received is one webhook request as the receiver got it.
type received struct {
	header http.Header
	body   []byte
	at     time.Time
}

// receiver is a webhook endpoint that records every request and answers
// with the status of answer (200 when nil).
type receiver struct {
	mu     sync.Mutex
	got    []received
	answer func(n int) int
	srv    *httptest.Server
}

// startReceiver starts a receiver on the loopback, stopped with the test.
func startReceiver(t *testing.T, answer func(n int) int) *receiver {
	t.Helper()
	r := &receiver{answer: answer}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{header: req.Header.Clone(), body: body, at: time.Now()})
		n := len(r.got)
		r.mu.Unlock()
		status := http.StatusOK
		if r.answer != nil {
			status = r.answer(n)
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// requests returns a copy of what was received.
func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// types returns the event types received, in order, verified or not.
func (r *receiver) types() []string {
	reqs := r.requests()
	types := make([]string, 0, len(reqs))
	for _, req := range reqs {
		var ev struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(req.body, &ev)
		types = append(types, ev.Type)
	}
	return types
}

// newWebhookEngine returns an Engine that sends webhooks to r, closed with
// the test.
func newWebhookEngine(t *testing.T, r *receiver, format sandbox.WebhookFormat, faults sandbox.WebhookFaults) *sandbox.Engine {
	t.Helper()
	e := sandbox.NewEngine(sandbox.WithAccount("acct_hooks"), sandbox.WithDebitSettleDelay(settleDelay),
		sandbox.WithWebhooks(sandbox.WebhookConfig{URL: r.srv.URL, Secret: webhookSecret, Format: format,
			Faults: faults, Seed: 42}))
	t.Cleanup(e.Close)
	return e
}

// debit charges a SEPA debit of 1000 cents under key.
func debit(g *WithT, e *sandbox.Engine, key, method string) sandbox.Intent {
	in, _, err := e.CreatePaymentIntent(key, sandbox.TaggedRequest(key, sandbox.PaymentIntentParams{
		Amount: 1000, Currency: "eur", PaymentMethod: method}))
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return in
}

// verifyHTTP checks a Paymentjob-Signature header as a receiver of the
// HTTP contract does, with its own HMAC code.
func verifyHTTP(header string, body []byte, secret string) bool {
	var ts, sig string
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(t, 0)).Abs() > 5*time.Minute {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "." + string(body)))
	want := hex.EncodeToString(mac.Sum(nil))
	return hmac.Equal([]byte(want), []byte(sig))
}

func TestStripeWebhooksVerifyWithStripeGo(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	r := startReceiver(t, nil)
	e := newWebhookEngine(t, r, sandbox.WebhookFormatStripe, sandbox.WebhookFaults{})
	in := debit(g, e, "ns/debit", sandbox.PaymentMethodSEPADebit)

	// Nobody reads the Engine: the webhook goroutine settles the debit.
	g.Eventually(r.types).WithTimeout(timeout).Should(Equal([]string{"payment_intent.processing", "payment_intent.succeeded"}))
	refund, _, err := e.CreateRefund("ns/refund", sandbox.RefundParams{PaymentIntent: in.ID, Amount: 400})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(r.types).WithTimeout(timeout).Should(HaveLen(4))
	g.Expect(r.types()[2:]).To(Equal([]string{"refund.created", "charge.refunded"}))
	_, err = e.FailRefund(refund.ID, "")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = e.OpenDispute(in.ID, "")
	g.Expect(err).NotTo(HaveOccurred())
	card := debit(g, e, "ns/3ds", sandbox.PaymentMethodAuthenticationRequired)
	_, _, err = e.CancelPaymentIntent("ns/cancel", card.ID, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(r.types).WithTimeout(timeout).Should(HaveLen(8))
	g.Expect(r.types()[4:]).To(Equal([]string{"refund.updated", "charge.dispute.created",
		"payment_intent.requires_action", "payment_intent.canceled"}))

	for i, req := range r.requests() {
		g.Expect(req.header.Get("Content-Type")).To(HavePrefix("application/json"))
		ev, err := webhook.ConstructEventWithOptions(req.body, req.header.Get("Stripe-Signature"), webhookSecret,
			webhook.ConstructEventOptions{})
		g.Expect(err).NotTo(HaveOccurred(), "event %d", i)
		g.Expect(ev.ID).To(MatchRegexp(`^evt_[0-9A-Za-z]{24}$`))
		g.Expect(ev.Livemode).To(BeFalse())
		g.Expect(ev.APIVersion).To(Equal(stripe.APIVersion))
		g.Expect(webhook.ValidatePayload(req.body, req.header.Get("Stripe-Signature"), "whsec_other")).NotTo(Succeed())
		switch ev.Type {
		case "payment_intent.processing", "payment_intent.succeeded":
			var pi stripe.PaymentIntent
			g.Expect(json.Unmarshal(ev.Data.Raw, &pi)).To(Succeed())
			g.Expect(pi.ID).To(Equal(in.ID))
			g.Expect(pi.PaymentMethodTypes).To(Equal([]string{"sepa_debit"}))
			g.Expect(string(pi.Status)).To(Equal(strings.TrimPrefix(string(ev.Type), "payment_intent.")))
			g.Expect(pi.Metadata).To(HaveKeyWithValue("paymentjob_idempotency_key", "ns/debit"))
		case "refund.created":
			var re stripe.Refund
			g.Expect(json.Unmarshal(ev.Data.Raw, &re)).To(Succeed())
			g.Expect(re.PaymentIntent.ID).To(Equal(in.ID))
			g.Expect(re.Amount).To(BeEquivalentTo(400))
		case "charge.refunded":
			var ch stripe.Charge
			g.Expect(json.Unmarshal(ev.Data.Raw, &ch)).To(Succeed())
			g.Expect(ch.PaymentIntent.ID).To(Equal(in.ID))
			g.Expect(ch.AmountRefunded).To(BeEquivalentTo(400))
		}
	}
	st := e.WebhookStats()
	g.Expect(st.Events).To(BeEquivalentTo(8))
	g.Expect(st.Delivered).To(BeEquivalentTo(8))
	g.Expect(st.Failed).To(BeZero())
}

func TestReorderedEventWithoutANextOneIsSentAfterASecond(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	r := startReceiver(t, nil)
	e := newWebhookEngine(t, r, sandbox.WebhookFormatHTTP, sandbox.WebhookFaults{Reorder: 1})
	start := time.Now()
	debit(g, e, "ns/card", sandbox.PaymentMethodVisa)
	g.Eventually(r.types).WithTimeout(timeout).Should(Equal([]string{"payment.succeeded"}))
	g.Expect(r.requests()[0].at.Sub(start)).To(BeNumerically(">=", time.Second))
	g.Expect(e.WebhookStats().Reordered).To(BeEquivalentTo(1))
}

func TestHTTPWebhooksCarryTheContractsEvents(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	r := startReceiver(t, nil)
	e := newWebhookEngine(t, r, sandbox.WebhookFormatHTTP, sandbox.WebhookFaults{})
	in := debit(g, e, "ns/debit", sandbox.PaymentMethodSEPADebitInsufficientFunds)
	card := debit(g, e, "ns/card", sandbox.PaymentMethodVisa)
	refund, _, err := e.CreateRefund("ns/refund", sandbox.TaggedRefund("ns/refund",
		sandbox.RefundParams{PaymentIntent: card.ID, Amount: 100}))
	g.Expect(err).NotTo(HaveOccurred())
	dispute, err := e.OpenDispute(card.ID, "")
	g.Expect(err).NotTo(HaveOccurred())

	g.Eventually(r.types).WithTimeout(timeout).Should(Equal([]string{"payment.processing", "payment.succeeded",
		"refund.succeeded", "payment.refunded", "payment.disputed", "payment.failed"}))
	_, err = e.FailRefund(refund.ID, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(r.types).WithTimeout(timeout).Should(HaveLen(7))
	g.Expect(r.types()[6]).To(Equal("refund.failed"))
	reqs := r.requests()
	bodies := make([]map[string]any, 0, len(reqs))
	for _, req := range reqs {
		g.Expect(req.header.Get("Stripe-Signature")).To(BeEmpty())
		g.Expect(verifyHTTP(req.header.Get("Paymentjob-Signature"), req.body, webhookSecret)).To(BeTrue(), string(req.body))
		g.Expect(verifyHTTP(req.header.Get("Paymentjob-Signature"), req.body, "another secret")).To(BeFalse())
		var body map[string]any
		g.Expect(json.Unmarshal(req.body, &body)).To(Succeed())
		g.Expect(body).To(And(HaveKeyWithValue("id", MatchRegexp(`^evt_`)), HaveKeyWithValue("account", "acct_hooks"),
			HaveKeyWithValue("created", BeNumerically(">", 0))))
		bodies = append(bodies, body["data"].(map[string]any))
	}
	g.Expect(bodies).To(Equal([]map[string]any{
		{"id": in.ID, "idempotencyKey": "ns/debit"},
		{"id": card.ID, "idempotencyKey": "ns/card"},
		{"id": refund.ID, "idempotencyKey": "ns/refund", "payment": card.ID},
		{"id": card.ID, "idempotencyKey": "ns/card", "payment": card.ID},
		{"id": dispute.ID, "idempotencyKey": "ns/card", "payment": card.ID},
		{"id": in.ID, "idempotencyKey": "ns/debit"},
		{"id": refund.ID, "idempotencyKey": "ns/refund", "payment": card.ID},
	}))
}

func TestWebhookFaultsHappen(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		faults sandbox.WebhookFaults
		// check asserts on the types received (in order), the counters and
		// the requests.
		check func(g *WithT, r *receiver, st sandbox.WebhookStats)
	}{
		{name: "drop", faults: sandbox.WebhookFaults{Drop: 1}, check: func(g *WithT, r *receiver, st sandbox.WebhookStats) {
			g.Expect(st.Dropped).To(BeEquivalentTo(2))
			g.Consistently(r.requests).WithTimeout(3 * webhookTickForTests).Should(BeEmpty())
		}},
		{name: "duplicate", faults: sandbox.WebhookFaults{Duplicate: 1}, check: func(g *WithT, r *receiver, st sandbox.WebhookStats) {
			g.Eventually(r.types).WithTimeout(timeout).Should(Equal([]string{"payment_intent.processing",
				"payment_intent.processing", "payment_intent.succeeded", "payment_intent.succeeded"}))
			reqs := r.requests()
			g.Expect(reqs[0].body).To(Equal(reqs[1].body))
			g.Expect(st.Duplicated).To(BeEquivalentTo(2))
		}},
		{name: "reorder", faults: sandbox.WebhookFaults{Reorder: 1}, check: func(g *WithT, r *receiver, st sandbox.WebhookStats) {
			// The first is held until the second is sent.
			g.Eventually(r.types).WithTimeout(timeout).Should(Equal([]string{"payment_intent.succeeded",
				"payment_intent.processing"}))
			g.Expect(st.Reordered).To(BeNumerically(">=", 1))
		}},
		{name: "delay", faults: sandbox.WebhookFaults{Delay: 500 * time.Millisecond}, check: func(g *WithT, r *receiver, st sandbox.WebhookStats) {
			g.Eventually(r.types).WithTimeout(timeout).Should(HaveLen(2))
			g.Expect(st.Delayed).To(BeEquivalentTo(2))
		}},
		{name: "bad signature", faults: sandbox.WebhookFaults{BadSignature: 1}, check: func(g *WithT, r *receiver, st sandbox.WebhookStats) {
			g.Eventually(r.requests).WithTimeout(timeout).Should(HaveLen(2 * sandbox.WebhookMaxAttempts))
			for _, req := range r.requests() {
				_, err := webhook.ConstructEventWithOptions(req.body, req.header.Get("Stripe-Signature"), webhookSecret,
					webhook.ConstructEventOptions{})
				g.Expect(err).To(MatchError(webhook.ErrNoValidSignature))
			}
			g.Expect(st.BadSignatures).To(BeEquivalentTo(2))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			// Like a receiver that verifies: a bad signature is a 400.
			var r *receiver
			r = startReceiver(t, func(n int) int {
				req := r.requests()[n-1]
				if webhook.ValidatePayload(req.body, req.header.Get("Stripe-Signature"), webhookSecret) != nil {
					return http.StatusBadRequest
				}
				return http.StatusOK
			})
			e := newWebhookEngine(t, r, sandbox.WebhookFormatStripe, tt.faults)
			start := time.Now()
			in := debit(g, e, "ns/debit", sandbox.PaymentMethodSEPADebit)
			g.Eventually(func() string {
				got, _ := e.GetPaymentIntent(in.ID)
				return got.Status
			}).WithTimeout(timeout).Should(Equal(sandbox.StatusSucceeded))
			g.Eventually(func() int64 { return e.WebhookStats().Events }).WithTimeout(timeout).Should(BeEquivalentTo(2))
			// Every event delivered, dropped or given up.
			g.Eventually(func() int64 {
				st := e.WebhookStats()
				return st.Delivered - st.Duplicated + st.Dropped + st.GaveUp
			}).WithTimeout(timeout).Should(BeEquivalentTo(2))
			tt.check(g, r, e.WebhookStats())
			if tt.faults.Delay > 0 {
				g.Expect(r.requests()[0].at.Sub(start)).To(BeNumerically(">=", tt.faults.Delay))
			}
		})
	}
}

// webhookTickForTests is long enough for the webhook goroutine to look at
// its queue a few times.
const webhookTickForTests = 100 * time.Millisecond

func TestWebhookFaultsAreReproducibleWithASeed(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	run := func() (sandbox.WebhookStats, []string) {
		r := startReceiver(t, nil)
		e := newWebhookEngine(t, r, sandbox.WebhookFormatHTTP, sandbox.WebhookFaults{Drop: 0.2, Duplicate: 0.3})
		for i := range 20 {
			debit(g, e, "ns/card-"+strconv.Itoa(i), sandbox.PaymentMethodVisa)
		}
		var st sandbox.WebhookStats
		g.Eventually(func() int64 {
			st = e.WebhookStats()
			return st.Delivered + st.Dropped - st.Duplicated
		}).WithTimeout(timeout).Should(BeEquivalentTo(20))
		got := make([]string, 0, len(r.requests()))
		for _, req := range r.requests() {
			var ev struct {
				Data struct {
					IdempotencyKey string `json:"idempotencyKey"`
				} `json:"data"`
			}
			g.Expect(json.Unmarshal(req.body, &ev)).To(Succeed())
			got = append(got, ev.Data.IdempotencyKey)
		}
		return st, got
	}
	first, firstKeys := run()
	second, secondKeys := run()
	// About 20 % dropped and 30 % duplicated, the same ones each time.
	g.Expect(first.Dropped).To(And(BeNumerically(">=", 1), BeNumerically("<=", 10)))
	g.Expect(first.Duplicated).To(And(BeNumerically(">=", 1), BeNumerically("<=", 12)))
	g.Expect(second.Dropped).To(Equal(first.Dropped))
	g.Expect(second.Duplicated).To(Equal(first.Duplicated))
	g.Expect(secondKeys).To(Equal(firstKeys))
	g.Expect(firstKeys).To(HaveLen(int(20 - first.Dropped + first.Duplicated)))
}

func TestWebhooksAreRetriedUntilAnswered(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	r := startReceiver(t, func(n int) int {
		if n <= 2 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	e := newWebhookEngine(t, r, sandbox.WebhookFormatHTTP, sandbox.WebhookFaults{})
	in := debit(g, e, "ns/card", sandbox.PaymentMethodVisa)
	g.Eventually(func() int64 { return e.WebhookStats().Delivered }).WithTimeout(timeout).Should(BeEquivalentTo(1))
	st := e.WebhookStats()
	g.Expect(st).To(Equal(sandbox.WebhookStats{Events: 1, Attempts: 3, Delivered: 1, Failed: 2, Retries: 2}))
	reqs := r.requests()
	g.Expect(reqs).To(HaveLen(3))
	g.Expect(reqs[2].body).To(Equal(reqs[0].body))
	g.Expect(string(reqs[2].body)).To(ContainSubstring(in.ID))
	// The backoff: 100 ms, then 200 ms.
	g.Expect(reqs[2].at.Sub(reqs[0].at)).To(BeNumerically(">=", 3*sandbox.WebhookRetryBackoff))
}

func TestWebhookControlNeverAnswersTheSecret(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	r := startReceiver(t, nil)
	var logs bytes.Buffer
	e := sandbox.NewEngine(sandbox.WithDebitSettleDelay(settleDelay))
	t.Cleanup(e.Close)
	srv := startSandbox(t, e, sandbox.ServerOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	control := func(method, body string) apiResponse {
		return send(g, srv, apiRequest{method: method, path: "/_sandbox/webhooks", body: body,
			contentType: "application/json", authorization: noAuth})
	}

	res := control(http.MethodPut, `{"url": "`+r.srv.URL+`", "secret": "`+webhookSecret+`", "format": "http",
		"seed": 7, "faults": {"duplicate": 1, "delay": "10ms"}}`)
	g.Expect(res.status).To(Equal(http.StatusOK), string(res.body))
	debit(g, e, "ns/card", sandbox.PaymentMethodVisa)
	g.Eventually(r.requests).WithTimeout(timeout).Should(HaveLen(2))
	g.Eventually(func() []byte { return control(http.MethodGet, "").body }).WithTimeout(timeout).Should(MatchJSON(`{
		"url": "` + r.srv.URL + `", "format": "http", "hasSecret": true, "seed": 7,
		"faults": {"duplicate": 1, "reorder": 0, "drop": 0, "badSignature": 0, "delay": "10ms"},
		"stats": {"events": 1, "attempts": 2, "delivered": 2, "failed": 0, "retries": 0, "gaveUp": 0,
			"dropped": 0, "duplicated": 1, "reordered": 0, "delayed": 1, "badSignatures": 0}}`))

	// A field left out keeps its value, the secret too.
	res = control(http.MethodPut, `{"faults": {}}`)
	g.Expect(res.status).To(Equal(http.StatusOK), string(res.body))
	g.Expect(verifyHTTP(r.requests()[0].header.Get("Paymentjob-Signature"), r.requests()[0].body, webhookSecret)).To(BeTrue())
	for _, bad := range []string{`{"url": "ftp://x"}`, `{"format": "xml"}`, `{"faults": {"drop": 2}}`,
		`{"faults": {"delay": "later"}}`, `{"secret": ""}`} {
		g.Expect(control(http.MethodPut, bad).status).To(Equal(http.StatusBadRequest), bad)
	}
	g.Expect(control(http.MethodPut, `{"url": ""}`).status).To(Equal(http.StatusOK))

	g.Expect(logs.String()).To(ContainSubstring("/_sandbox/webhooks"))
	g.Expect(logs.String()).NotTo(ContainSubstring(webhookSecret))
	for _, req := range r.requests() {
		g.Expect(string(req.body)).NotTo(ContainSubstring(webhookSecret))
	}
	g.Expect(string(control(http.MethodGet, "").body)).NotTo(ContainSubstring(webhookSecret))
}
