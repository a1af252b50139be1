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

// Helpers of the adapter's tests: fakeStripe, a loopback server that
// imitates Stripe's answers and records every request, and the answers it
// gives.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/paymenttest"
)

// testAPIKey is the secret key the tests configure; no error may show it.
const testAPIKey = "sk_test_51SecretKeyThatMustNeverLeak0123456789"

// recorded is one request received by fakeStripe.
type recorded struct {
	Method string
	Path   string
	Query  url.Values
	Form   url.Values
	// Body is the request body as sent.
	Body   string
	Header http.Header
}

// fakeStripe is an httptest server on loopback that imitates Stripe's
// answers with handle and records every request.
type fakeStripe struct {
	srv      *httptest.Server
	mu       sync.Mutex
	requests []recorded
}

// newFakeStripe starts a fakeStripe that the test closes. handle receives
// the request and how many requests with the same method came before it.
func newFakeStripe(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, n int)) *fakeStripe {
	t.Helper()
	f := &fakeStripe{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		n := 0
		for _, prev := range f.requests {
			if prev.Method == r.Method {
				n++
			}
		}
		f.requests = append(f.requests, recorded{
			Method: r.Method,
			Path:   r.URL.Path,
			Query:  r.URL.Query(),
			Form:   r.PostForm,
			Body:   string(body),
			Header: r.Header.Clone(),
		})
		f.mu.Unlock()
		handle(w, r, n)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// newFakeAnswering starts a fakeStripe that answers every request with 200,
// body as JSON and the headers given as name, value pairs.
func newFakeAnswering(t *testing.T, body any, headers ...string) *fakeStripe {
	t.Helper()
	return newFakeStripe(t, first(jsonAnswer(http.StatusOK, body, headers...)))
}

// provider is a Provider that talks to f and polls every millisecond.
func (f *fakeStripe) provider(t *testing.T) *Provider {
	t.Helper()
	p, err := New(Config{
		APIKey:          testAPIKey,
		APIBase:         f.srv.URL,
		HTTPClient:      f.srv.Client(),
		PollInterval:    time.Millisecond,
		MaxPollInterval: 2 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("cannot create provider: %v", err)
	}
	return p
}

// count is the number of requests received with method.
func (f *fakeStripe) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.requests {
		if r.Method == method {
			n++
		}
	}
	return n
}

// single asserts that f received one request, to method and path with the
// API key, and returns it.
func (f *fakeStripe) single(g Gomega, method, path string) recorded {
	reqs := f.received()
	g.Expect(reqs).To(HaveLen(1))
	r := reqs[0]
	g.Expect(r.Method).To(Equal(method))
	g.Expect(r.Path).To(Equal(path))
	g.Expect(r.Header.Get("Authorization")).To(Equal("Bearer " + testAPIKey))
	return r
}

// received returns a copy of the requests received so far.
func (f *fakeStripe) received() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.requests...)
}

// intent is the JSON of a PaymentIntent as Stripe returns it.
func intent(id, status string) map[string]any {
	return map[string]any{
		"id":              id,
		"object":          "payment_intent",
		"amount":          2000,
		"amount_received": 0,
		"currency":        "usd",
		"created":         1767225600,
		"status":          status,
		"client_secret":   id + "_secret_abc",
		"metadata":        map[string]string{payment.MetadataKeyIdempotencyKey: testKey},
	}
}

// succeeded is a succeeded intent that received the whole amount.
func succeeded(id string) map[string]any {
	in := intent(id, "succeeded")
	in["amount_received"] = 2000
	return in
}

// writeJSON answers with status, the headers given as name, value pairs,
// and body encoded as JSON.
func writeJSON(w http.ResponseWriter, status int, body any, headers ...string) {
	for i := 0; i+1 < len(headers); i += 2 {
		w.Header().Set(headers[i], headers[i+1])
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_test")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// stripeError is the JSON body of a Stripe error.
func stripeError(typ, code, declineCode, message string) map[string]any {
	e := map[string]any{"type": typ, "message": message}
	if code != "" {
		e["code"] = code
	}
	if declineCode != "" {
		e["decline_code"] = declineCode
	}
	return map[string]any{"error": e}
}

const testKey = "billing/invoice-42"

// jsonAnswer is an answer of status with body as JSON and the headers given
// as name, value pairs.
func jsonAnswer(status int, body any, headers ...string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, status, body, headers...) }
}

// rawAnswer is an answer of status with body as it is.
func rawAnswer(status int, contentType, body string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

// hangUp closes the connection without an answer.
func hangUp(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

// withLastPaymentError sets the last payment error of the intent in.
func withLastPaymentError(in map[string]any, code, declineCode, message string) map[string]any {
	in["last_payment_error"] = map[string]any{"type": "card_error", "code": code, "decline_code": declineCode, "message": message}
	return in
}

// withField sets the field key of the JSON object in.
func withField(in map[string]any, key string, value any) map[string]any {
	in[key] = value
	return in
}

// charged is an intent made by Charge under key for a request with
// fingerprint, created at the Unix time created.
func charged(id, status, key, fingerprint string, created int64) map[string]any {
	in := intent(id, status)
	metadata := map[string]string{payment.MetadataKeyIdempotencyKey: key}
	if fingerprint != "" {
		metadata[payment.MetadataKeyFingerprint] = fingerprint
	}
	in["metadata"] = metadata
	in["created"] = created
	return in
}

// searchPage is the JSON of one page of search results.
func searchPage(hasMore bool, next string, data ...map[string]any) map[string]any {
	page := map[string]any{
		"object":    "search_result",
		"url":       "/v1/payment_intents/search",
		"has_more":  hasMore,
		"next_page": nil,
		"data":      append([]map[string]any{}, data...),
	}
	if next != "" {
		page["next_page"] = next
	}
	return page
}

// ids are the ids of found, in order.
func ids(found []payment.Found) []string {
	out := make([]string, 0, len(found))
	for _, f := range found {
		out = append(out, f.ID)
	}
	return out
}

// first adapts an answer to every request to a fakeStripe handler.
func first(answer func(w http.ResponseWriter, r *http.Request)) func(w http.ResponseWriter, r *http.Request, n int) {
	return func(w http.ResponseWriter, r *http.Request, _ int) { answer(w, r) }
}

// readError is a failed read of intent pi_1, after Stripe accepted it.
type readError struct {
	name   string
	answer func(w http.ResponseWriter, r *http.Request)
	// class is the error class errors.Is must find, or nil.
	class      error
	retryAfter time.Duration
}

// readErrors are the failed reads of an intent that Stripe accepted:
// whatever their class, the intent may still succeed, so each is uncertain.
var readErrors = []readError{
	{
		name:   "intent not found",
		answer: jsonAnswer(http.StatusNotFound, stripeError("invalid_request_error", "resource_missing", "", "No such payment_intent: 'pi_1'")),
		class:  payment.ErrInvalid,
	},
	{
		name:       "rate limited",
		answer:     jsonAnswer(http.StatusTooManyRequests, stripeError("invalid_request_error", "rate_limit", "", "slow down"), "Retry-After", "2"),
		retryAfter: 2 * time.Second,
	},
	{name: "server error", answer: rawAnswer(http.StatusInternalServerError, "text/html", "<html>oops</html>")},
	{name: "invalid API key", answer: jsonAnswer(http.StatusUnauthorized, stripeError("invalid_request_error", "", "", "Invalid API Key provided"))},
	{name: "connection closed", answer: hangUp},
}

// expectAbout asserts that err is the uncertain error of the failed read
// of the object with id.
func (tt readError) expectAbout(g Gomega, err error, id string) {
	g.Expect(paymenttest.CheckTransient(err)).To(Succeed())
	if tt.class != nil {
		g.Expect(errors.Is(err, tt.class)).To(BeTrue(), "error %q is not %v", err, tt.class)
	}
	g.Expect(payment.RetryAfter(err)).To(Equal(tt.retryAfter))
	g.Expect(err.Error()).To(ContainSubstring(id))
	g.Expect(err.Error()).NotTo(ContainSubstring(testAPIKey))
}

// creators are the calls that create an object at Stripe under a key: a
// charge, a refund.
var creators = []struct {
	name string
	call func(p *Provider, ctx context.Context, key string) (payment.Outcome, error)
}{
	{name: "Charge", call: func(p *Provider, ctx context.Context, key string) (payment.Outcome, error) {
		return p.Charge(ctx, key, paymenttest.FullRequest())
	}},
	{name: "Refund", call: func(p *Provider, ctx context.Context, key string) (payment.Outcome, error) {
		return p.Refund(ctx, key, fullRefund())
	}},
}

// settlers are the calls that read an object Stripe accepted by its id
// until it is final, each with the id of the object the tests settle.
var settlers = []struct {
	name, id string
	call     func(p *Provider, ctx context.Context, key, id string) (payment.Outcome, error)
}{
	{name: "Settle", id: "pi_1", call: (*Provider).Settle},
	{name: "SettleRefund", id: "re_1", call: (*Provider).SettleRefund},
}

// pollCase is intent pi_1 read until it is final: the first pending reads
// answer it in status first, the next one answers final.
type pollCase struct {
	name    string
	first   string
	pending int
	final   map[string]any
	// check asserts what the call that polls answered.
	check func(g Gomega, out payment.Outcome, err error)
}

// answer answers the nth read.
func (tt pollCase) answer(w http.ResponseWriter, _ *http.Request, n int) {
	if n < tt.pending {
		writeJSON(w, http.StatusOK, intent("pi_1", tt.first))
		return
	}
	writeJSON(w, http.StatusOK, tt.final)
}

// expectReads asserts that reads are the pending reads and the final one,
// each a GET of pi_1 with the API key.
func (tt pollCase) expectReads(g Gomega, reads []recorded) {
	g.Expect(reads).To(HaveLen(tt.pending + 1))
	for _, r := range reads {
		g.Expect(r.Method).To(Equal(http.MethodGet))
		g.Expect(r.Path).To(Equal("/v1/payment_intents/pi_1"))
		g.Expect(r.Header.Get("Authorization")).To(Equal("Bearer " + testAPIKey))
	}
}

// attemptFailed is pi_1 after its payment attempt was declined.
func attemptFailed() map[string]any {
	return withLastPaymentError(intent("pi_1", "requires_payment_method"), "card_declined", "do_not_honor", "Your card was declined.")
}

// succeededAs checks the outcome of pi_1, not replayed, in status.
func succeededAs(status string) func(g Gomega, out payment.Outcome, err error) {
	return func(g Gomega, out payment.Outcome, err error) {
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(Equal(payment.Outcome{ID: "pi_1", Status: status, Amount: 2000, Currency: "usd", Created: time.Unix(1767225600, 0).UTC()}))
	}
}

// declinedWith checks a Declined refusal with reason whose message holds
// contains.
func declinedWith(reason, contains string) func(g Gomega, out payment.Outcome, err error) {
	return func(g Gomega, out payment.Outcome, err error) {
		r, refusal := payment.IsRefusal(err)
		g.Expect(refusal).To(BeTrue(), "error %q", err)
		g.Expect(err).To(MatchError(payment.ErrDeclined))
		g.Expect(r.Reason).To(Equal(reason))
		g.Expect(err.Error()).To(ContainSubstring(contains))
		g.Expect(out).To(Equal(payment.Outcome{}))
	}
}
