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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	stripego "github.com/stripe/stripe-go/v85"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
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

// chargeRequest is a request with every field set.
func chargeRequest() payment.ChargeRequest {
	return payment.ChargeRequest{
		Amount:        2000,
		Currency:      "usd",
		Customer:      "cus_123",
		PaymentMethod: "pm_card_visa",
		Description:   "March invoice",
		Metadata:      map[string]string{"invoice": "42"},
	}
}

const testKey = "billing/invoice-42"

func TestNew(t *testing.T) {
	tests := []struct {
		name        string
		cfg         Config
		wantErr     string
		wantBase    string
		wantPoll    time.Duration
		wantMaxPoll time.Duration
	}{
		{
			name:        "defaults",
			cfg:         Config{APIKey: testAPIKey},
			wantBase:    DefaultAPIBase,
			wantPoll:    DefaultPollInterval,
			wantMaxPoll: DefaultMaxPollInterval,
		},
		{
			name:        "custom base and intervals, key with a trailing newline",
			cfg:         Config{APIKey: testAPIKey + "\n", APIBase: "http://127.0.0.1:12111/", PollInterval: time.Second, MaxPollInterval: 3 * time.Second},
			wantBase:    "http://127.0.0.1:12111",
			wantPoll:    time.Second,
			wantMaxPoll: 3 * time.Second,
		},
		{
			name:        "long poll interval raises the default maximum",
			cfg:         Config{APIKey: testAPIKey, PollInterval: 10 * time.Second},
			wantBase:    DefaultAPIBase,
			wantPoll:    10 * time.Second,
			wantMaxPoll: 10 * time.Second,
		},
		{name: "missing key", cfg: Config{}, wantErr: "API key: it is empty"},
		{name: "key with a space", cfg: Config{APIKey: "sk_test_abc def"}, wantErr: "not allowed in an HTTP header"},
		{name: "relative base", cfg: Config{APIKey: testAPIKey, APIBase: "api.stripe.com"}, wantErr: "scheme must be http or https"},
		{name: "ftp base", cfg: Config{APIKey: testAPIKey, APIBase: "ftp://api.stripe.com"}, wantErr: "scheme must be http or https"},
		{name: "base with credentials", cfg: Config{APIKey: testAPIKey, APIBase: "https://user:" + testAPIKey + "@api.stripe.com"}, wantErr: "user information"},
		{name: "base without host", cfg: Config{APIKey: testAPIKey, APIBase: "https:///v1"}, wantErr: "with a host"},
		{name: "base with query", cfg: Config{APIKey: testAPIKey, APIBase: "https://api.stripe.com?x=1"}, wantErr: "query"},
		{name: "unparsable base", cfg: Config{APIKey: testAPIKey, APIBase: "http://[::1"}, wantErr: "not a valid URL"},
		{name: "negative poll interval", cfg: Config{APIKey: testAPIKey, PollInterval: -time.Second}, wantErr: "negative"},
		{name: "maximum shorter than interval", cfg: Config{APIKey: testAPIKey, PollInterval: 2 * time.Second, MaxPollInterval: time.Second}, wantErr: "shorter than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			p, err := New(tt.cfg)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(err.Error()).NotTo(ContainSubstring(testAPIKey))
				g.Expect(err.Error()).NotTo(ContainSubstring("sk_test_abc"))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.apiKey).To(Equal(testAPIKey))
			g.Expect(p.pollInterval).To(Equal(tt.wantPoll))
			g.Expect(p.maxPollInterval).To(Equal(tt.wantMaxPoll))
			base, err := apiBase(tt.cfg.APIBase)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(base).To(Equal(tt.wantBase))
		})
	}
}

func TestChargeSendsOneCreateRequest(t *testing.T) {
	// form is the create request every case sends, plus extra.
	form := func(req payment.ChargeRequest, extra url.Values) url.Values {
		v := url.Values{
			"amount":                               {fmt.Sprint(req.Amount)},
			"currency":                             {req.Currency},
			"metadata[paymentjob_idempotency_key]": {testKey},
			"metadata[paymentjob_request_fingerprint]": {payment.RequestHash(testKey, req)},
			"confirm":                                    {"true"},
			"automatic_payment_methods[enabled]":         {"true"},
			"automatic_payment_methods[allow_redirects]": {"never"},
		}
		for k, vs := range extra {
			v[k] = vs
		}
		return v
	}
	forged := payment.ChargeRequest{Amount: 150, Currency: "eur", Metadata: map[string]string{
		payment.MetadataKeyIdempotencyKey: "forged",
		payment.MetadataKeyFingerprint:    "sha256:forged",
		"team":                            "billing",
	}}
	tests := []struct {
		name     string
		req      payment.ChargeRequest
		wantForm url.Values
	}{
		{
			name: "every field",
			req:  chargeRequest(),
			wantForm: form(chargeRequest(), url.Values{
				"customer":          {"cus_123"},
				"payment_method":    {"pm_card_visa"},
				"description":       {"March invoice"},
				"metadata[invoice]": {"42"},
			}),
		},
		{
			name:     "required fields only",
			req:      payment.ChargeRequest{Amount: 150, Currency: "eur"},
			wantForm: form(payment.ChargeRequest{Amount: 150, Currency: "eur"}, nil),
		},
		{
			name:     "the key's and the fingerprint's metadata entries win over the request's",
			req:      forged,
			wantForm: form(forged, url.Values{"metadata[team]": {"billing"}}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeStripe(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, http.StatusOK, succeeded("pi_1"))
			})
			_, err := f.provider(t).Charge(context.Background(), testKey, tt.req)
			g.Expect(err).NotTo(HaveOccurred())

			reqs := f.received()
			g.Expect(reqs).To(HaveLen(1))
			r := reqs[0]
			g.Expect(r.Method).To(Equal(http.MethodPost))
			g.Expect(r.Path).To(Equal("/v1/payment_intents"))
			g.Expect(r.Form).To(Equal(tt.wantForm))
			g.Expect(r.Form.Get("metadata[paymentjob_request_fingerprint]")).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
			g.Expect(r.Header.Get("Idempotency-Key")).To(Equal(testKey))
			g.Expect(r.Header.Get("Authorization")).To(Equal("Bearer " + testAPIKey))
			g.Expect(r.Header.Get("Content-Type")).To(Equal("application/x-www-form-urlencoded"))
			g.Expect(r.Header.Get("Stripe-Version")).NotTo(BeEmpty())
		})
	}
}

func TestChargeRetriesSendTheSameBytes(t *testing.T) {
	g := NewWithT(t)
	f := newFakeStripe(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		writeJSON(w, http.StatusInternalServerError, stripeError("api_error", "", "", "try again"))
	})
	// Equal requests whose metadata maps were built in other orders, sent
	// by two providers, as after a restart of the operator.
	request := func(names ...string) payment.ChargeRequest {
		req := chargeRequest()
		req.Metadata = map[string]string{}
		for _, n := range names {
			req.Metadata[n] = "value of " + n
		}
		return req
	}
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h", payment.MetadataKeyFingerprint}
	reversed := slices.Clone(names)
	slices.Reverse(reversed)
	for _, req := range []payment.ChargeRequest{request(names...), request(reversed...), request(names...)} {
		_, err := f.provider(t).Charge(context.Background(), testKey, req)
		_, refusal := payment.IsRefusal(err)
		g.Expect(refusal).To(BeFalse())
	}

	reqs := f.received()
	g.Expect(reqs).To(HaveLen(3))
	g.Expect(reqs[0].Body).To(ContainSubstring("paymentjob_request_fingerprint"))
	for _, r := range reqs[1:] {
		g.Expect(r.Body).To(Equal(reqs[0].Body))
		g.Expect(r.Header.Get("Idempotency-Key")).To(Equal(reqs[0].Header.Get("Idempotency-Key")))
	}
}

func TestChargeOutcome(t *testing.T) {
	tests := []struct {
		name    string
		body    map[string]any
		headers []string
		want    payment.Outcome
	}{
		{
			name: "succeeded",
			body: succeeded("pi_1"),
			want: payment.Outcome{ID: "pi_1", Status: "succeeded", Amount: 2000, Currency: "usd", Created: time.Unix(1767225600, 0).UTC()},
		},
		{
			name:    "replayed by Stripe",
			body:    succeeded("pi_1"),
			headers: []string{"Idempotent-Replayed", "true"},
			want:    payment.Outcome{ID: "pi_1", Status: "succeeded", Amount: 2000, Currency: "usd", Created: time.Unix(1767225600, 0).UTC(), Replayed: true},
		},
		{
			name:    "not replayed when the header says false",
			body:    succeeded("pi_1"),
			headers: []string{"Idempotent-Replayed", "false"},
			want:    payment.Outcome{ID: "pi_1", Status: "succeeded", Amount: 2000, Currency: "usd", Created: time.Unix(1767225600, 0).UTC()},
		},
		{
			name: "requires_capture reports the amount",
			body: intent("pi_2", "requires_capture"),
			want: payment.Outcome{ID: "pi_2", Status: "requires_capture", Amount: 2000, Currency: "usd", Created: time.Unix(1767225600, 0).UTC()},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeStripe(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, http.StatusOK, tt.body, tt.headers...)
			})
			got, err := f.provider(t).Charge(context.Background(), testKey, chargeRequest())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
			g.Expect(f.count(http.MethodPost)).To(Equal(1))
			g.Expect(f.count(http.MethodGet)).To(Equal(0))
		})
	}
}

// errorCase is a Stripe answer that is not a success, and what Charge must
// make of it.
type errorCase struct {
	name string
	// answer writes the response; nil hijacks the connection and closes it.
	answer func(w http.ResponseWriter, r *http.Request)
	// class is the error class errors.Is must find, or nil.
	class error
	// refusal is whether the error is a definitive refusal.
	refusal bool
	// reason is the refusal's reason, when refusal is true.
	reason string
	// retryAfter is the hint payment.RetryAfter must return.
	retryAfter time.Duration
	// contains are substrings of the error message.
	contains []string
	// excludes are never in the error message: the body of an answer that
	// is not Stripe's JSON.
	excludes []string
}

func jsonAnswer(status int, body any, headers ...string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, status, body, headers...) }
}

func rawAnswer(status int, contentType, body string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

func hangUp(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

var errorCases = []errorCase{
	{
		name:     "card declined",
		answer:   jsonAnswer(http.StatusPaymentRequired, stripeError("card_error", "card_declined", "insufficient_funds", "Your card has insufficient funds.")),
		class:    payment.ErrDeclined,
		refusal:  true,
		reason:   payment.ReasonCardDeclined,
		contains: []string{"card_declined (insufficient_funds): Your card has insufficient funds."},
	},
	{
		name:     "card expired",
		answer:   jsonAnswer(http.StatusPaymentRequired, stripeError("card_error", "expired_card", "", "Your card has expired.")),
		class:    payment.ErrDeclined,
		refusal:  true,
		reason:   payment.ReasonCardDeclined,
		contains: []string{"expired_card: Your card has expired."},
	},
	{
		name:     "key reused with other parameters",
		answer:   jsonAnswer(http.StatusBadRequest, stripeError("idempotency_error", "", "", "Keys for idempotent requests can only be used with the same parameters they were first used with.")),
		class:    payment.ErrKeyReused,
		refusal:  true,
		reason:   payment.ReasonKeyReused,
		contains: []string{"same parameters"},
	},
	{
		name:       "key in use, with Retry-After",
		answer:     jsonAnswer(http.StatusConflict, stripeError("invalid_request_error", "idempotency_key_in_use", "", "There is currently another in-progress request using this Idempotent Key."), "Retry-After", "3"),
		class:      payment.ErrInFlight,
		retryAfter: 3 * time.Second,
	},
	{
		name:       "key in use, code only",
		answer:     jsonAnswer(http.StatusBadRequest, stripeError("invalid_request_error", "idempotency_key_in_use", "", "in progress")),
		class:      payment.ErrInFlight,
		retryAfter: time.Second,
	},
	{
		name:       "409 without a code",
		answer:     jsonAnswer(http.StatusConflict, stripeError("invalid_request_error", "", "", "conflict")),
		class:      payment.ErrInFlight,
		retryAfter: time.Second,
	},
	{
		name:       "rate limited",
		answer:     jsonAnswer(http.StatusTooManyRequests, stripeError("invalid_request_error", "rate_limit", "", "Too many requests hit the API too quickly."), "Retry-After", "7"),
		retryAfter: 7 * time.Second,
		contains:   []string{"HTTP 429", "rate_limit", "Too many requests"},
	},
	{
		name:       "rate limited, Retry-After capped at ten minutes",
		answer:     jsonAnswer(http.StatusTooManyRequests, stripeError("rate_limit_error", "", "", "slow down"), "Retry-After", "86400"),
		retryAfter: 10 * time.Minute,
	},
	{
		name:     "invalid parameter",
		answer:   jsonAnswer(http.StatusBadRequest, map[string]any{"error": map[string]any{"type": "invalid_request_error", "code": "parameter_invalid_integer", "param": "amount", "message": "Invalid integer: abc"}}),
		class:    payment.ErrInvalid,
		refusal:  true,
		reason:   payment.ReasonInvalidRequest,
		contains: []string{"parameter_invalid_integer (parameter amount): Invalid integer: abc"},
	},
	{
		name:     "no such customer",
		answer:   jsonAnswer(http.StatusNotFound, stripeError("invalid_request_error", "resource_missing", "", "No such customer: 'cus_123'")),
		class:    payment.ErrInvalid,
		refusal:  true,
		reason:   payment.ReasonInvalidRequest,
		contains: []string{"No such customer"},
	},
	{
		name:     "invalid API key",
		answer:   jsonAnswer(http.StatusUnauthorized, stripeError("invalid_request_error", "", "", "Invalid API Key provided: "+testAPIKey)),
		contains: []string{"check the secret referenced by the PaymentProvider", "HTTP 401"},
	},
	{
		name:     "authentication error",
		answer:   jsonAnswer(http.StatusUnauthorized, stripeError("authentication_error", "api_key_expired", "", "Expired API Key provided")),
		contains: []string{"check the secret referenced by the PaymentProvider", "api_key_expired"},
	},
	{
		name:     "permission error",
		answer:   jsonAnswer(http.StatusForbidden, stripeError("permission_error", "", "", "The provided key does not have access")),
		contains: []string{"check the secret referenced by the PaymentProvider", "HTTP 403"},
	},
	{
		name:     "api error",
		answer:   jsonAnswer(http.StatusInternalServerError, stripeError("api_error", "", "", "Something went wrong on Stripe's end.")),
		contains: []string{"HTTP 500", "api_error", "request req_test"},
	},
	{
		name:       "503 with Retry-After",
		answer:     jsonAnswer(http.StatusServiceUnavailable, stripeError("api_error", "", "", "unavailable"), "Retry-After", "30"),
		retryAfter: 30 * time.Second,
	},
	{
		name:     "invalid_request_error with another status",
		answer:   jsonAnswer(http.StatusPaymentRequired, stripeError("invalid_request_error", "", "", "odd")),
		contains: []string{"HTTP 402"},
	},
	{
		name:     "5xx HTML body",
		answer:   rawAnswer(http.StatusBadGateway, "text/html", "<html><body><h1>502 Bad Gateway</h1></body></html>"),
		contains: []string{"the answer (HTTP 502) is not the Stripe API's JSON, so its body is not shown", "spec.stripe.apiBase"},
		excludes: []string{"<h1>", "Bad Gateway"},
	},
	{
		name:     "4xx text body",
		answer:   rawAnswer(http.StatusNotFound, "text/plain", "404: no route to internal-admin.svc.cluster.local"),
		contains: []string{"HTTP 404"},
		excludes: []string{"internal-admin"},
	},
	{
		name:     "malformed JSON",
		answer:   rawAnswer(http.StatusOK, "application/json", `{"id": "pi_1", "status": `),
		contains: []string{"HTTP 200"},
		excludes: []string{"pi_1"},
	},
	{
		name:     "JSON that is not an intent",
		answer:   rawAnswer(http.StatusOK, "application/json", `[1, 2, 3]`),
		excludes: []string{"[1, 2, 3]"},
	},
	{
		name:     "error status without an error object",
		answer:   rawAnswer(http.StatusBadRequest, "application/json", `{"detail": "nope"}`),
		contains: []string{"the answer is not the Stripe API's JSON"},
		excludes: []string{"nope"},
	},
	{
		name:     "empty success body",
		answer:   rawAnswer(http.StatusOK, "application/json", `{}`),
		contains: []string{"unexpected status"},
	},
	{
		name:     "unexpected status",
		answer:   jsonAnswer(http.StatusOK, intent("pi_1", "requires_confirmation")),
		contains: []string{"pi_1", "requires_confirmation"},
	},
	{
		name:     "requires_payment_method after confirm",
		answer:   jsonAnswer(http.StatusOK, withLastPaymentError(intent("pi_1", "requires_payment_method"), "card_declined", "generic_decline", "Your card was declined.")),
		class:    payment.ErrDeclined,
		refusal:  true,
		reason:   payment.ReasonCardDeclined,
		contains: []string{"card_declined (generic_decline): Your card was declined.", "pi_1"},
	},
	{
		name:     "requires_payment_method without an error",
		answer:   jsonAnswer(http.StatusOK, intent("pi_1", "requires_payment_method")),
		class:    payment.ErrDeclined,
		refusal:  true,
		reason:   payment.ReasonCardDeclined,
		contains: []string{"pi_1"},
	},
	{
		name:     "canceled",
		answer:   jsonAnswer(http.StatusOK, withField(intent("pi_1", "canceled"), "cancellation_reason", "fraudulent")),
		class:    payment.ErrDeclined,
		refusal:  true,
		reason:   ReasonPaymentCanceled,
		contains: []string{"pi_1", "fraudulent"},
	},
	{
		name:   "connection closed",
		answer: hangUp,
	},
}

func withLastPaymentError(in map[string]any, code, declineCode, message string) map[string]any {
	in["last_payment_error"] = map[string]any{"type": "card_error", "code": code, "decline_code": declineCode, "message": message}
	return in
}

func withField(in map[string]any, key string, value any) map[string]any {
	in[key] = value
	return in
}

func TestChargeErrors(t *testing.T) {
	for _, tt := range errorCases {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeStripe(t, func(w http.ResponseWriter, r *http.Request, _ int) { tt.answer(w, r) })

			_, err := f.provider(t).Charge(context.Background(), testKey, chargeRequest())
			g.Expect(err).To(HaveOccurred())
			if tt.class != nil {
				g.Expect(errors.Is(err, tt.class)).To(BeTrue(), "error %q is not %v", err, tt.class)
			}
			r, refusal := payment.IsRefusal(err)
			g.Expect(refusal).To(Equal(tt.refusal), "error %q", err)
			if tt.refusal {
				g.Expect(r.Reason).To(Equal(tt.reason))
			} else {
				var te *payment.TransientError
				g.Expect(errors.As(err, &te)).To(BeTrue(), "error %q is not transient", err)
			}
			g.Expect(payment.RetryAfter(err)).To(Equal(tt.retryAfter))
			for _, s := range tt.contains {
				g.Expect(err.Error()).To(ContainSubstring(s))
			}
			for _, s := range tt.excludes {
				g.Expect(err.Error()).NotTo(ContainSubstring(s))
			}
			g.Expect(err.Error()).NotTo(ContainSubstring(testAPIKey))
			g.Expect(err.Error()).NotTo(ContainSubstring("_secret_"), "client secrets stay out of messages")
			// stripe-go's retries are off: one request, whatever the answer.
			g.Expect(f.count(http.MethodPost)).To(Equal(1))
			g.Expect(f.count(http.MethodGet)).To(Equal(0))
		})
	}
}

func TestChargeRefusesBadKeysWithoutSending(t *testing.T) {
	tests := []struct {
		name string
		key  string
	}{
		{name: "empty", key: ""},
		{name: "too long", key: strings.Repeat("k", payment.MaxKeyLength+1)},
		{name: "with a space", key: "billing/invoice 42"},
		{name: "with a newline", key: "billing/invoice-42\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeStripe(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, http.StatusOK, succeeded("pi_1"))
			})
			_, err := f.provider(t).Charge(context.Background(), tt.key, chargeRequest())
			g.Expect(errors.Is(err, payment.ErrInvalid)).To(BeTrue())
			g.Expect(f.received()).To(BeEmpty())
		})
	}
}

func TestChargeWithDoneContextSendsNothing(t *testing.T) {
	g := NewWithT(t)
	f := newFakeStripe(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		writeJSON(w, http.StatusOK, succeeded("pi_1"))
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.provider(t).Charge(ctx, testKey, chargeRequest())
	g.Expect(errors.Is(err, context.Canceled)).To(BeTrue())
	_, refusal := payment.IsRefusal(err)
	g.Expect(refusal).To(BeFalse())
	g.Expect(f.received()).To(BeEmpty())
}

func TestChargePollsUntilFinal(t *testing.T) {
	tests := []struct {
		name string
		// first is the status the create answers with.
		first string
		// pending is how many GETs still answer first.
		pending int
		// final is the intent the next GET answers with.
		final    map[string]any
		replayed bool
		check    func(g Gomega, out payment.Outcome, err error)
	}{
		{
			name:    "processing until succeeded",
			first:   "processing",
			pending: 2,
			final:   succeeded("pi_1"),
			check: func(g Gomega, out payment.Outcome, err error) {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(out.ID).To(Equal("pi_1"))
				g.Expect(out.Status).To(Equal("succeeded"))
				g.Expect(out.Amount).To(BeEquivalentTo(2000))
				g.Expect(out.Replayed).To(BeFalse())
			},
		},
		{
			name:     "replayed processing until succeeded stays replayed",
			first:    "processing",
			pending:  0,
			final:    succeeded("pi_1"),
			replayed: true,
			check: func(g Gomega, out payment.Outcome, err error) {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(out.Replayed).To(BeTrue())
			},
		},
		{
			name:    "requires_action until succeeded",
			first:   "requires_action",
			pending: 1,
			final:   succeeded("pi_1"),
			check: func(g Gomega, out payment.Outcome, err error) {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(out.Status).To(Equal("succeeded"))
			},
		},
		{
			name:    "processing until the attempt failed",
			first:   "processing",
			pending: 1,
			final:   withLastPaymentError(intent("pi_1", "requires_payment_method"), "card_declined", "do_not_honor", "Your card was declined."),
			check: func(g Gomega, _ payment.Outcome, err error) {
				g.Expect(errors.Is(err, payment.ErrDeclined)).To(BeTrue())
				g.Expect(err.Error()).To(ContainSubstring("do_not_honor"))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeStripe(t, func(w http.ResponseWriter, r *http.Request, n int) {
				switch {
				case r.Method == http.MethodPost && tt.replayed:
					writeJSON(w, http.StatusOK, intent("pi_1", tt.first), "Idempotent-Replayed", "true")
				case r.Method == http.MethodPost:
					writeJSON(w, http.StatusOK, intent("pi_1", tt.first))
				case n < tt.pending:
					writeJSON(w, http.StatusOK, intent("pi_1", tt.first))
				default:
					writeJSON(w, http.StatusOK, tt.final)
				}
			})
			out, err := f.provider(t).Charge(context.Background(), testKey, chargeRequest())
			tt.check(g, out, err)

			g.Expect(f.count(http.MethodPost)).To(Equal(1), "polling must never create again")
			g.Expect(f.count(http.MethodGet)).To(Equal(tt.pending + 1))
			for _, r := range f.received()[1:] {
				g.Expect(r.Method).To(Equal(http.MethodGet))
				g.Expect(r.Path).To(Equal("/v1/payment_intents/pi_1"))
				g.Expect(r.Header.Get("Authorization")).To(Equal("Bearer " + testAPIKey))
			}
		})
	}
}

func TestChargeProcessingForeverIsTransient(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const reads = 3
	f := newFakeStripe(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.Method == http.MethodGet && n == reads-1 {
			// The operator's deadline passes while the intent is
			// still processing.
			cancel()
		}
		writeJSON(w, http.StatusOK, intent("pi_1", "processing"))
	})

	_, err := f.provider(t).Charge(ctx, testKey, chargeRequest())
	g.Expect(err).To(HaveOccurred())
	_, refusal := payment.IsRefusal(err)
	g.Expect(refusal).To(BeFalse())
	var te *payment.TransientError
	g.Expect(errors.As(err, &te)).To(BeTrue())
	g.Expect(errors.Is(err, context.Canceled)).To(BeTrue())
	g.Expect(err.Error()).To(ContainSubstring("pi_1"))
	g.Expect(err.Error()).To(ContainSubstring("processing"))
	g.Expect(f.count(http.MethodPost)).To(Equal(1))
	g.Expect(f.count(http.MethodGet)).To(Equal(reads))
}

func TestChargePollingErrorsAreTransient(t *testing.T) {
	tests := []struct {
		name       string
		answer     func(w http.ResponseWriter, r *http.Request)
		class      error
		retryAfter time.Duration
	}{
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
		{
			name:   "server error",
			answer: rawAnswer(http.StatusInternalServerError, "text/html", "<html>oops</html>"),
		},
		{
			name:   "connection closed",
			answer: hangUp,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeStripe(t, func(w http.ResponseWriter, r *http.Request, _ int) {
				if r.Method == http.MethodPost {
					// A fresh connection for the GET: net/http itself
					// resends a GET once when a reused connection is
					// closed before the answer.
					writeJSON(w, http.StatusOK, intent("pi_1", "processing"), "Connection", "close")
					return
				}
				tt.answer(w, r)
			})
			_, err := f.provider(t).Charge(context.Background(), testKey, chargeRequest())
			g.Expect(err).To(HaveOccurred())
			_, refusal := payment.IsRefusal(err)
			g.Expect(refusal).To(BeFalse(), "an accepted intent may still succeed: %q", err)
			if tt.class != nil {
				g.Expect(errors.Is(err, tt.class)).To(BeTrue())
			}
			g.Expect(payment.RetryAfter(err)).To(Equal(tt.retryAfter))
			g.Expect(err.Error()).To(ContainSubstring("pi_1"))
			g.Expect(err.Error()).To(ContainSubstring("last seen processing"))
			g.Expect(f.count(http.MethodPost)).To(Equal(1))
			g.Expect(f.count(http.MethodGet)).To(Equal(1))
		})
	}
}

func TestErrorsNeverContainAPIKey(t *testing.T) {
	echo := func(status int, contentType string) func(w http.ResponseWriter, r *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			rawAnswer(status, contentType, "<html>proxy saw "+r.Header.Get("Authorization")+"</html>")(w, r)
		}
	}
	quote := func(status int, typ, code string) func(w http.ResponseWriter, r *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			writeJSON(w, status, stripeError(typ, code, "", fmt.Sprintf("key %s was used; key=%q", key, key)))
		}
	}
	tests := []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request)
	}{
		{name: "502 HTML echoing the Authorization header", answer: echo(http.StatusBadGateway, "text/html")},
		{name: "200 HTML echoing the Authorization header", answer: echo(http.StatusOK, "text/html")},
		{name: "400 invalid request quoting the key", answer: quote(http.StatusBadRequest, "invalid_request_error", "parameter_unknown")},
		{name: "401 quoting the key", answer: quote(http.StatusUnauthorized, "invalid_request_error", "")},
		{name: "402 card error quoting the key", answer: quote(http.StatusPaymentRequired, "card_error", "card_declined")},
		{name: "400 idempotency error quoting the key", answer: quote(http.StatusBadRequest, "idempotency_error", "")},
		{name: "429 quoting the key", answer: quote(http.StatusTooManyRequests, "invalid_request_error", "rate_limit")},
		{name: "500 quoting the key", answer: quote(http.StatusInternalServerError, "api_error", "")},
		{name: "error without an error object", answer: func(w http.ResponseWriter, r *http.Request) {
			rawAnswer(http.StatusBadRequest, "application/json", `{"auth": "`+r.Header.Get("Authorization")+`"}`)(w, r)
		}},
	}
	calls := []struct {
		name string
		call func(p *Provider) error
	}{
		{name: "Charge", call: func(p *Provider) error {
			_, err := p.Charge(context.Background(), testKey, chargeRequest())
			return err
		}},
		{name: "Lookup", call: func(p *Provider) error {
			_, err := p.Lookup(context.Background(), []string{testKey})
			return err
		}},
		{name: "Settle", call: func(p *Provider) error {
			_, err := p.Settle(context.Background(), testKey, "pi_1")
			return err
		}},
		{name: "Account", call: func(p *Provider) error {
			_, err := p.Account(context.Background())
			return err
		}},
		{name: "polling", call: func(p *Provider) error {
			_, err := p.settle(context.Background(), &stripego.PaymentIntent{ID: "pi_1", Status: stripego.PaymentIntentStatusProcessing}, false)
			return err
		}},
	}
	for _, c := range calls {
		for _, tt := range tests {
			t.Run(c.name+"/"+tt.name, func(t *testing.T) {
				g := NewWithT(t)
				f := newFakeStripe(t, func(w http.ResponseWriter, r *http.Request, _ int) { tt.answer(w, r) })
				err := c.call(f.provider(t))
				g.Expect(err).To(HaveOccurred())
				g.Expect(err.Error()).NotTo(ContainSubstring(testAPIKey))
				g.Expect(fmt.Sprintf("%+v", err)).NotTo(ContainSubstring(testAPIKey))
			})
		}
	}
}

func TestCleanCutsLongMessages(t *testing.T) {
	g := NewWithT(t)
	p := &Provider{apiKey: testAPIKey}
	long := strings.Repeat("é", 400) + "\n" + testAPIKey
	got := p.clean(long)
	g.Expect(len(got)).To(BeNumerically("<=", maxMessageLength+len(" ...")))
	g.Expect(got).To(HaveSuffix(" ..."))
	g.Expect(strings.ToValidUTF8(got, "?")).To(Equal(got))
	g.Expect(p.clean("two\nlines\r\n  here")).To(Equal("two lines here"))
	g.Expect(p.clean("key " + testAPIKey + " end")).To(Equal("key [REDACTED] end"))
}
