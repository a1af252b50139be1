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
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/stripe/stripe-go/v85"

	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// sandboxAPIKey is the test API key the tests send.
const sandboxAPIKey = "sk_test_sandbox4242"

// noAuth, as the Authorization of an apiRequest, sends no Authorization.
const noAuth = "-"

// startSandbox serves e on a loopback httptest server closed with the test.
func startSandbox(t *testing.T, e *sandbox.Engine, opts sandbox.ServerOptions) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(sandbox.NewServer(e, opts))
	t.Cleanup(srv.Close)
	return srv
}

// apiRequest is a request to the sandbox server.
type apiRequest struct {
	method string
	path   string
	// body is form-encoded unless contentType says otherwise.
	body        string
	contentType string
	// authorization defaults to a Bearer test key; noAuth leaves it out.
	authorization  string
	idempotencyKey string
}

// apiResponse is the sandbox server's answer.
type apiResponse struct {
	status int
	header http.Header
	body   []byte
}

// apiError is the "error" object of a Stripe error body.
type apiError struct {
	Type          string         `json:"type"`
	Code          string         `json:"code"`
	DeclineCode   string         `json:"decline_code"`
	Message       string         `json:"message"`
	Param         string         `json:"param"`
	DocURL        string         `json:"doc_url"`
	PaymentIntent map[string]any `json:"payment_intent"`
}

// errorOf decodes the Stripe error body of the response.
func (r apiResponse) errorOf(g *WithT) apiError {
	var body struct {
		Error *apiError `json:"error"`
	}
	g.ExpectWithOffset(1, json.Unmarshal(r.body, &body)).To(Succeed(), string(r.body))
	g.ExpectWithOffset(1, body.Error).NotTo(BeNil(), string(r.body))
	return *body.Error
}

// intentOf decodes the PaymentIntent body of the response.
func (r apiResponse) intentOf(g *WithT) map[string]any {
	var body map[string]any
	g.ExpectWithOffset(1, json.Unmarshal(r.body, &body)).To(Succeed(), string(r.body))
	return body
}

// send sends the request to srv.
func send(g *WithT, srv *httptest.Server, r apiRequest) apiResponse {
	req, err := http.NewRequest(r.method, srv.URL+r.path, strings.NewReader(r.body))
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	switch r.authorization {
	case "":
		req.Header.Set("Authorization", "Bearer "+sandboxAPIKey)
	case noAuth:
	default:
		req.Header.Set("Authorization", r.authorization)
	}
	if r.body != "" {
		ct := r.contentType
		if ct == "" {
			ct = "application/x-www-form-urlencoded"
		}
		req.Header.Set("Content-Type", ct)
	}
	if r.idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", r.idempotencyKey)
	}
	res, err := srv.Client().Do(req)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return apiResponse{status: res.StatusCode, header: res.Header, body: body}
}

// paymentForm is a create request as stripe-go encodes it, with parameters
// the sandbox ignores, changed by the edits.
func paymentForm(amount, paymentMethod string, edits ...func(url.Values)) string {
	form := url.Values{
		"amount":                             {amount},
		"currency":                           {"eur"},
		"customer":                           {"cus_123"},
		"payment_method":                     {paymentMethod},
		"description":                        {"order 42"},
		"metadata[paymentjob]":               {"default/order-42"},
		"confirm":                            {"true"},
		"expand[0]":                          {"latest_charge"},
		"payment_method_types[0]":            {"card"},
		"automatic_payment_methods[enabled]": {"true"},
		"return_url":                         {"https://example.com/done"},
	}
	for _, edit := range edits {
		edit(form)
	}
	return form.Encode()
}

// intentRequest creates a PaymentIntent from a payment form under the key.
func intentRequest(key, form string) apiRequest {
	return apiRequest{method: http.MethodPost, path: "/v1/payment_intents", body: form, idempotencyKey: key}
}

// createIntent posts a payment form under the key.
func createIntent(g *WithT, srv *httptest.Server, key, form string) apiResponse {
	return send(g, srv, intentRequest(key, form))
}

// searchPath is the search route with the query.
func searchPath(query string) string {
	return "/v1/payment_intents/search?" + url.Values{"query": {query}}.Encode()
}

// sendControl sends a request to a /_sandbox route: without an API key, and
// with a JSON body, if any.
func sendControl(g *WithT, srv *httptest.Server, method, path, body string) apiResponse {
	return send(g, srv, apiRequest{method: method, path: path, body: body, contentType: "application/json",
		authorization: noAuth})
}

func TestServerCreatesAndReplaysPaymentIntent(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	created := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	e := sandbox.NewEngine(sandbox.WithClock(func() time.Time { return created }))
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	const key = "default/order-42/8d9c"

	first := createIntent(g, srv, key, paymentForm("1999", sandbox.PaymentMethodVisa))
	g.Expect(first.status).To(Equal(http.StatusOK), string(first.body))
	saved, ok := e.LookupByKey(key)
	g.Expect(ok).To(BeTrue())
	g.Expect(saved.ID).To(MatchRegexp(`^pi_[0-9A-Za-z]{24}$`))
	g.Expect(first.body).To(MatchJSON(fmt.Sprintf(`{
		"id": %q, "object": "payment_intent", "amount": 1999, "amount_received": 1999,
		"currency": "eur", "customer": "cus_123", "payment_method": "pm_card_visa",
		"description": "order 42", "metadata": {"paymentjob": "default/order-42"},
		"status": "succeeded", "created": %d, "livemode": false,
		"confirmation_method": "automatic", "capture_method": "automatic", "payment_method_types": ["card"],
		"cancellation_reason": null, "last_payment_error": null,
		"latest_charge": {"id": %q, "object": "charge", "amount": 1999, "amount_captured": 1999,
			"amount_refunded": 0, "captured": true, "paid": true, "refunded": false, "currency": "eur",
			"metadata": {"paymentjob": "default/order-42"}, "payment_intent": %q, "status": "succeeded",
			"created": %d}}`,
		saved.ID, created.Unix(), "ch_"+strings.TrimPrefix(saved.ID, "pi_"), saved.ID, created.Unix())))
	g.Expect(first.header.Get("Content-Type")).To(Equal("application/json"))
	g.Expect(first.header.Get("Request-Id")).To(MatchRegexp(`^req_\w+$`))
	g.Expect(first.header.Get("Idempotency-Key")).To(Equal(key))
	g.Expect(first.header.Values("Idempotent-Replayed")).To(BeEmpty())

	again := createIntent(g, srv, key, paymentForm("1999", sandbox.PaymentMethodVisa))
	g.Expect(again.status).To(Equal(http.StatusOK), string(again.body))
	g.Expect(again.body).To(MatchJSON(first.body))
	g.Expect(again.header.Get("Idempotent-Replayed")).To(Equal("true"))
	g.Expect(again.header.Get("Request-Id")).NotTo(Equal(first.header.Get("Request-Id")))

	other := createIntent(g, srv, key, paymentForm("2000", sandbox.PaymentMethodVisa))
	g.Expect(other.status).To(Equal(http.StatusBadRequest))
	g.Expect(other.errorOf(g).Type).To(Equal(sandbox.ErrorTypeIdempotency))

	s := e.Stats()
	g.Expect(s.Charges).To(BeEquivalentTo(1))
	g.Expect(s.Replays).To(BeEquivalentTo(1))
	g.Expect(s.KeyReusedErrors).To(BeEquivalentTo(1))
	g.Expect(s.ChargesByKey).To(Equal(map[string]int{key: 1}))
}

func TestServerWritesNullForEmptyOptionalStrings(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	srv := startSandbox(t, e, sandbox.ServerOptions{})

	res := createIntent(g, srv, "key", url.Values{
		"amount": {"500"}, "currency": {"usd"}, "payment_method": {sandbox.PaymentMethodMastercard}, "confirm": {"true"},
	}.Encode())
	g.Expect(res.status).To(Equal(http.StatusOK), string(res.body))
	in := res.intentOf(g)
	g.Expect(in).To(HaveKeyWithValue("customer", BeNil()))
	g.Expect(in).To(HaveKeyWithValue("description", BeNil()))
	g.Expect(in).To(HaveKeyWithValue("metadata", BeEmpty()))
	g.Expect(in).To(HaveKeyWithValue("metadata", Not(BeNil())))
}

func TestServerCreatesANewPaymentForEachRequestWithoutKey(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	srv := startSandbox(t, e, sandbox.ServerOptions{})

	first := createIntent(g, srv, "", paymentForm("100", sandbox.PaymentMethodVisa))
	second := createIntent(g, srv, "", paymentForm("100", sandbox.PaymentMethodVisa))
	g.Expect(first.status).To(Equal(http.StatusOK), string(first.body))
	g.Expect(second.status).To(Equal(http.StatusOK), string(second.body))
	g.Expect(first.intentOf(g)["id"]).NotTo(Equal(second.intentOf(g)["id"]))
	g.Expect(second.header.Values("Idempotent-Replayed")).To(BeEmpty())
	g.Expect(first.header.Values("Idempotency-Key")).To(BeEmpty())
	g.Expect(e.Stats().Charges).To(BeEquivalentTo(2))
}

func TestServerAnswersStripeErrors(t *testing.T) {
	t.Parallel()
	longKey := strings.Repeat("k", sandbox.MaxIdempotencyKeyLength+1)
	tests := []struct {
		name        string
		setup       func(*sandbox.Engine) error
		req         apiRequest
		wantStatus  int
		wantError   apiError // Message is a substring
		wantHeaders map[string]string
	}{
		{
			name:       "card declined",
			req:        intentRequest("k", paymentForm("1999", sandbox.PaymentMethodChargeDeclined)),
			wantStatus: http.StatusPaymentRequired,
			wantError: apiError{Type: "card_error", Code: "card_declined", DeclineCode: "generic_decline",
				Param: "payment_method", Message: "Your card was declined.",
				DocURL: "https://docs.stripe.com/error-codes/card-declined"},
		},
		{
			name:       "insufficient funds",
			req:        intentRequest("k", paymentForm("1999", sandbox.PaymentMethodInsufficientFunds)),
			wantStatus: http.StatusPaymentRequired,
			wantError: apiError{Type: "card_error", Code: "card_declined", DeclineCode: "insufficient_funds",
				Param: "payment_method", DocURL: "https://docs.stripe.com/error-codes/card-declined"},
		},
		{
			name:       "amount not an integer",
			req:        intentRequest("k", paymentForm("19.99", sandbox.PaymentMethodVisa)),
			wantStatus: http.StatusBadRequest,
			wantError: apiError{Type: "invalid_request_error", Code: "parameter_invalid_integer", Param: "amount",
				DocURL: "https://docs.stripe.com/error-codes/parameter-invalid-integer"},
		},
		{
			name:       "amount missing",
			req:        intentRequest("k", paymentForm("1", sandbox.PaymentMethodVisa, func(f url.Values) { f.Del("amount") })),
			wantStatus: http.StatusBadRequest,
			wantError: apiError{Type: "invalid_request_error", Code: "parameter_missing", Param: "amount",
				DocURL: "https://docs.stripe.com/error-codes/parameter-missing"},
		},
		{
			name:       "amount zero",
			req:        intentRequest("k", paymentForm("0", sandbox.PaymentMethodVisa)),
			wantStatus: http.StatusBadRequest,
			wantError: apiError{Type: "invalid_request_error", Code: "amount_too_small", Param: "amount",
				DocURL: "https://docs.stripe.com/error-codes/amount-too-small"},
		},
		{
			name:       "not confirmed",
			req:        intentRequest("k", paymentForm("1", sandbox.PaymentMethodVisa, func(f url.Values) { f.Del("confirm") })),
			wantStatus: http.StatusBadRequest,
			wantError: apiError{Type: "invalid_request_error", Code: "parameter_invalid", Param: "confirm",
				Message: "confirm=true", DocURL: "https://docs.stripe.com/error-codes/parameter-invalid"},
		},
		{
			name: "manual capture",
			req: intentRequest("k", paymentForm("1", sandbox.PaymentMethodVisa, func(f url.Values) {
				f.Set("capture_method", "manual")
			})),
			wantStatus: http.StatusBadRequest,
			wantError: apiError{Type: "invalid_request_error", Code: "parameter_invalid", Param: "capture_method",
				DocURL: "https://docs.stripe.com/error-codes/parameter-invalid"},
		},
		{
			name: "metadata key too long",
			req: intentRequest("k", paymentForm("1", sandbox.PaymentMethodVisa, func(f url.Values) {
				f.Set("metadata["+strings.Repeat("m", 41)+"]", "v")
			})),
			wantStatus: http.StatusBadRequest,
			wantError: apiError{Type: "invalid_request_error", Code: "parameter_invalid", Param: "metadata",
				DocURL: "https://docs.stripe.com/error-codes/parameter-invalid"},
		},
		{
			name:       "unknown payment method",
			req:        intentRequest("k", paymentForm("1", "pm_card_nope")),
			wantStatus: http.StatusBadRequest,
			wantError: apiError{Type: "invalid_request_error", Code: "resource_missing", Param: "payment_method",
				Message: "No such PaymentMethod", DocURL: "https://docs.stripe.com/error-codes/resource-missing"},
		},
		{
			name:       "idempotency key too long",
			req:        intentRequest(longKey, paymentForm("1", sandbox.PaymentMethodVisa)),
			wantStatus: http.StatusBadRequest,
			wantError:  apiError{Type: "invalid_request_error", Message: "at most 255"},
		},
		{
			name: "JSON body",
			req: apiRequest{method: http.MethodPost, path: "/v1/payment_intents", idempotencyKey: "k",
				body: `{"amount": 1}`, contentType: "application/json"},
			wantStatus: http.StatusBadRequest,
			wantError:  apiError{Type: "invalid_request_error", Message: "x-www-form-urlencoded"},
		},
		{
			name: "body over the limit",
			req: intentRequest("k", paymentForm("1", sandbox.PaymentMethodVisa, func(f url.Values) {
				f.Set("description", strings.Repeat("d", sandbox.MaxRequestBodyBytes))
			})),
			wantStatus: http.StatusRequestEntityTooLarge,
			wantError:  apiError{Type: "invalid_request_error", Message: "larger than"},
		},
		{
			name: "rate limit",
			setup: func(e *sandbox.Engine) error {
				e.FailNext(sandbox.FaultRateLimit, 1)
				return e.SetFaults(sandbox.Faults{RetryAfter: 1500 * time.Millisecond})
			},
			req:        intentRequest("k", paymentForm("1", sandbox.PaymentMethodVisa)),
			wantStatus: http.StatusTooManyRequests,
			wantError: apiError{Type: "invalid_request_error", Code: "rate_limit",
				DocURL: "https://docs.stripe.com/error-codes/rate-limit"},
			wantHeaders: map[string]string{"Retry-After": "2"},
		},
		{
			name: "error before commit",
			setup: func(e *sandbox.Engine) error {
				e.FailNext(sandbox.FaultBeforeCommit, 1)
				return nil
			},
			req:        intentRequest("k", paymentForm("1", sandbox.PaymentMethodVisa)),
			wantStatus: http.StatusInternalServerError,
			wantError:  apiError{Type: "api_error", Message: "injected fault before-commit"},
		},
		{
			name:       "unknown payment intent",
			req:        apiRequest{method: http.MethodGet, path: "/v1/payment_intents/pi_unknown"},
			wantStatus: http.StatusNotFound,
			wantError: apiError{Type: "invalid_request_error", Code: "resource_missing", Param: "id",
				Message: "No such payment_intent: 'pi_unknown'", DocURL: "https://docs.stripe.com/error-codes/resource-missing"},
		},
		{
			name:       "unsupported search query",
			req:        apiRequest{method: http.MethodGet, path: searchPath("status:'succeeded'")},
			wantStatus: http.StatusBadRequest,
			wantError: apiError{Type: "invalid_request_error", Code: "parameter_invalid", Param: "query",
				Message: "metadata['key']:'value'", DocURL: "https://docs.stripe.com/error-codes/parameter-invalid"},
		},
		{
			name:       "search without query",
			req:        apiRequest{method: http.MethodGet, path: "/v1/payment_intents/search"},
			wantStatus: http.StatusBadRequest,
			wantError: apiError{Type: "invalid_request_error", Code: "parameter_missing", Param: "query",
				DocURL: "https://docs.stripe.com/error-codes/parameter-missing"},
		},
		{
			name:       "search limit out of range",
			req:        apiRequest{method: http.MethodGet, path: searchPath("metadata['a']:'b'") + "&limit=101"},
			wantStatus: http.StatusBadRequest,
			wantError: apiError{Type: "invalid_request_error", Code: "parameter_invalid", Param: "limit",
				DocURL: "https://docs.stripe.com/error-codes/parameter-invalid"},
		},
		{
			name:       "unknown search page",
			req:        apiRequest{method: http.MethodGet, path: searchPath("metadata['a']:'b'") + "&page=pi_nope"},
			wantStatus: http.StatusBadRequest,
			wantError: apiError{Type: "invalid_request_error", Code: "parameter_invalid", Param: "page",
				DocURL: "https://docs.stripe.com/error-codes/parameter-invalid"},
		},
		{
			name:       "unknown API route",
			req:        apiRequest{method: http.MethodGet, path: "/v1/charges"},
			wantStatus: http.StatusNotFound,
			wantError:  apiError{Type: "invalid_request_error", Message: "Unrecognized request URL (GET: /v1/charges)"},
		},
		{
			name:       "unknown route outside the API",
			req:        apiRequest{method: http.MethodGet, path: "/nope", authorization: noAuth},
			wantStatus: http.StatusNotFound,
			wantError:  apiError{Type: "invalid_request_error", Message: "Unrecognized request URL"},
		},
		{
			name:        "wrong method",
			req:         apiRequest{method: http.MethodDelete, path: "/v1/payment_intents"},
			wantStatus:  http.StatusMethodNotAllowed,
			wantError:   apiError{Type: "invalid_request_error", Message: "Unrecognized request method DELETE"},
			wantHeaders: map[string]string{"Allow": "GET, POST"},
		},
		{
			name:        "wrong method on an intent",
			req:         apiRequest{method: http.MethodPost, path: "/v1/payment_intents/pi_123", body: "description=x"},
			wantStatus:  http.StatusMethodNotAllowed,
			wantError:   apiError{Type: "invalid_request_error"},
			wantHeaders: map[string]string{"Allow": "GET"},
		},
		{
			name:        "wrong method on faults",
			req:         apiRequest{method: http.MethodPost, path: "/_sandbox/faults", authorization: noAuth},
			wantStatus:  http.StatusMethodNotAllowed,
			wantError:   apiError{Type: "invalid_request_error"},
			wantHeaders: map[string]string{"Allow": "GET, PUT"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			e := sandbox.NewEngine()
			if tt.setup != nil {
				g.Expect(tt.setup(e)).To(Succeed())
			}
			srv := startSandbox(t, e, sandbox.ServerOptions{})

			res := send(g, srv, tt.req)
			g.Expect(res.status).To(Equal(tt.wantStatus), string(res.body))
			g.Expect(res.header.Get("Content-Type")).To(Equal("application/json"))
			g.Expect(res.header.Get("Request-Id")).To(HavePrefix("req_"))
			got := res.errorOf(g)
			g.Expect(got.Message).To(ContainSubstring(tt.wantError.Message))
			got.Message = tt.wantError.Message
			g.Expect(got).To(Equal(tt.wantError))
			for name, value := range tt.wantHeaders {
				g.Expect(res.header.Get(name)).To(Equal(value), name)
			}
			g.Expect(e.Stats().Charges).To(BeZero())
		})
	}
}

func TestServerReplaysDeclines(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	srv := startSandbox(t, e, sandbox.ServerOptions{})

	first := createIntent(g, srv, "declined", paymentForm("1999", sandbox.PaymentMethodChargeDeclined))
	again := createIntent(g, srv, "declined", paymentForm("1999", sandbox.PaymentMethodChargeDeclined))
	g.Expect(first.status).To(Equal(http.StatusPaymentRequired))
	g.Expect(first.header.Values("Idempotent-Replayed")).To(BeEmpty())
	g.Expect(again.status).To(Equal(http.StatusPaymentRequired))
	g.Expect(again.header.Get("Idempotent-Replayed")).To(Equal("true"))
	g.Expect(again.errorOf(g)).To(Equal(first.errorOf(g)))
	// The engine keeps no intent for a decline, so none is reported.
	g.Expect(first.errorOf(g).PaymentIntent).To(BeNil())
	g.Expect(e.Stats().Declines).To(BeEquivalentTo(1))
}

func TestServerAuthenticates(t *testing.T) {
	t.Parallel()
	basic := func(user string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"))
	}
	tests := []struct {
		name          string
		authorization string
		wantStatus    int
		wantMessage   string
	}{
		{name: "bearer test key", authorization: "Bearer " + sandboxAPIKey, wantStatus: http.StatusOK},
		{name: "bearer in lower case", authorization: "bearer " + sandboxAPIKey, wantStatus: http.StatusOK},
		{name: "basic with the key as user", authorization: basic(sandboxAPIKey), wantStatus: http.StatusOK},
		{name: "no authorization", authorization: noAuth, wantStatus: http.StatusUnauthorized,
			wantMessage: "You did not provide an API key"},
		{name: "empty bearer", authorization: "Bearer ", wantStatus: http.StatusUnauthorized,
			wantMessage: "You did not provide an API key"},
		{name: "live key", authorization: "Bearer sk_live_4242", wantStatus: http.StatusUnauthorized,
			wantMessage: "Invalid API Key provided"},
		{name: "bare prefix", authorization: "Bearer sk_test_", wantStatus: http.StatusUnauthorized,
			wantMessage: "Invalid API Key provided"},
		{name: "publishable key", authorization: "Bearer pk_test_4242", wantStatus: http.StatusUnauthorized,
			wantMessage: "Invalid API Key provided"},
		{name: "basic with another user", authorization: basic("admin"), wantStatus: http.StatusUnauthorized,
			wantMessage: "Invalid API Key provided"},
		{name: "other scheme", authorization: "Token " + sandboxAPIKey, wantStatus: http.StatusUnauthorized,
			wantMessage: "You did not provide an API key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			e := sandbox.NewEngine()
			srv := startSandbox(t, e, sandbox.ServerOptions{})

			for _, req := range []apiRequest{
				intentRequest("k", paymentForm("1", sandbox.PaymentMethodVisa)),
				{method: http.MethodGet, path: searchPath("metadata['a']:'b'")},
			} {
				req.authorization = tt.authorization
				res := send(g, srv, req)
				g.Expect(res.status).To(Equal(tt.wantStatus), string(res.body))
				g.Expect(string(res.body)).NotTo(ContainSubstring("4242"))
				if tt.wantStatus == http.StatusUnauthorized {
					g.Expect(res.errorOf(g)).To(Equal(apiError{Type: "invalid_request_error", Message: res.errorOf(g).Message}))
					g.Expect(res.errorOf(g).Message).To(HavePrefix(tt.wantMessage))
				}
			}
			wantCharges := 0
			if tt.wantStatus == http.StatusOK {
				wantCharges = 1
			}
			g.Expect(e.Stats().Charges).To(BeEquivalentTo(wantCharges))

			// Unknown API routes are behind auth too; the sandbox's own are not.
			wantUnknown := http.StatusUnauthorized
			if tt.wantStatus == http.StatusOK {
				wantUnknown = http.StatusNotFound
			}
			g.Expect(send(g, srv, apiRequest{method: http.MethodGet, path: "/v1/nope", authorization: tt.authorization}).status).
				To(Equal(wantUnknown))
			g.Expect(send(g, srv, apiRequest{method: http.MethodGet, path: "/_sandbox/stats", authorization: tt.authorization}).status).
				To(Equal(http.StatusOK))
		})
	}
}

func TestServerRetrievesPaymentIntent(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	srv := startSandbox(t, e, sandbox.ServerOptions{})

	created := createIntent(g, srv, "key", paymentForm("1999", sandbox.PaymentMethodVisa))
	g.Expect(created.status).To(Equal(http.StatusOK), string(created.body))
	id := created.intentOf(g)["id"].(string)

	// The create expanded latest_charge, as stripe-go asks; so does this read.
	got := send(g, srv, apiRequest{method: http.MethodGet, path: "/v1/payment_intents/" + id + "?expand[0]=latest_charge"})
	g.Expect(got.status).To(Equal(http.StatusOK), string(got.body))
	g.Expect(got.body).To(MatchJSON(created.body))
	plain := send(g, srv, apiRequest{method: http.MethodGet, path: "/v1/payment_intents/" + id})
	g.Expect(plain.status).To(Equal(http.StatusOK), string(plain.body))
	g.Expect(plain.intentOf(g)).To(HaveKeyWithValue("latest_charge", "ch_"+strings.TrimPrefix(id, "pi_")))

	head := send(g, srv, apiRequest{method: http.MethodHead, path: "/v1/payment_intents/" + id})
	g.Expect(head.status).To(Equal(http.StatusOK))
	g.Expect(head.body).To(BeEmpty())
}

func TestServerReplaysAfterLostResponse(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	e.FailNext(sandbox.FaultAfterCommit, 1)
	const key = "default/order-42/lost"

	lost := createIntent(g, srv, key, paymentForm("1999", sandbox.PaymentMethodVisa))
	g.Expect(lost.status).To(Equal(http.StatusInternalServerError), string(lost.body))
	g.Expect(lost.errorOf(g).Type).To(Equal("api_error"))
	g.Expect(e.Stats().Charges).To(BeEquivalentTo(1))

	retry := createIntent(g, srv, key, paymentForm("1999", sandbox.PaymentMethodVisa))
	g.Expect(retry.status).To(Equal(http.StatusOK), string(retry.body))
	g.Expect(retry.header.Get("Idempotent-Replayed")).To(Equal("true"))
	saved, ok := e.LookupByKey(key)
	g.Expect(ok).To(BeTrue())
	g.Expect(retry.intentOf(g)["id"]).To(Equal(saved.ID))

	s := e.Stats()
	g.Expect(s.Charges).To(BeEquivalentTo(1))
	g.Expect(s.ChargesByKey).To(Equal(map[string]int{key: 1}))
	g.Expect(s.Faults).To(BeEquivalentTo(1))
}

func TestServerSearchesByMetadata(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	var tick atomic.Int64
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	e := sandbox.NewEngine(sandbox.WithClock(func() time.Time {
		return start.Add(time.Duration(tick.Add(1)) * time.Second)
	}))
	srv := startSandbox(t, e, sandbox.ServerOptions{})

	ids := map[string]string{}
	for _, c := range []struct{ key, job, tenant string }{
		{"k1", "default/a", "acme"},
		{"k2", "default/b", "acme"},
		{"k3", "other/it's", "globex"},
	} {
		res := createIntent(g, srv, c.key, paymentForm("100", sandbox.PaymentMethodVisa, func(f url.Values) {
			f.Set("metadata[paymentjob]", c.job)
			f.Set("metadata[tenant]", c.tenant)
		}))
		g.Expect(res.status).To(Equal(http.StatusOK), string(res.body))
		ids[c.key] = res.intentOf(g)["id"].(string)
	}

	tests := []struct {
		name    string
		query   string
		wantIDs []string // newest first
	}{
		{name: "single quotes", query: `metadata['paymentjob']:'default/a'`, wantIDs: []string{ids["k1"]}},
		{name: "double quotes", query: `metadata["paymentjob"]:"default/b"`, wantIDs: []string{ids["k2"]}},
		{name: "escaped quote", query: `metadata['paymentjob']:'other/it\'s'`, wantIDs: []string{ids["k3"]}},
		{name: "newest first", query: `metadata['tenant']:'acme'`, wantIDs: []string{ids["k2"], ids["k1"]}},
		{name: "AND", query: `metadata['tenant']:'acme' AND metadata["paymentjob"]:'default/a'`, wantIDs: []string{ids["k1"]}},
		{name: "AND with extra spaces", query: `  metadata['tenant']:'acme'   and  metadata['paymentjob']:'default/b' `, wantIDs: []string{ids["k2"]}},
		{name: "no match", query: `metadata['paymentjob']:'default/c'`, wantIDs: []string{}},
		{name: "values are case-sensitive", query: `metadata['tenant']:'ACME'`, wantIDs: []string{}},
		{name: "contradiction", query: `metadata['tenant']:'acme' AND metadata['tenant']:'globex'`, wantIDs: []string{}},
		{name: "OR", query: `metadata['tenant']:'globex' OR metadata['paymentjob']:'default/a'`,
			wantIDs: []string{ids["k3"], ids["k1"]}},
		{name: "or in lower case", query: `metadata['paymentjob']:'default/b' or metadata['paymentjob']:'nope'`,
			wantIDs: []string{ids["k2"]}},
		{name: "OR of one key twice", query: `metadata['tenant']:'acme' OR metadata['tenant']:'acme'`,
			wantIDs: []string{ids["k2"], ids["k1"]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			res := send(g, srv, apiRequest{method: http.MethodGet, path: searchPath(tt.query)})
			g.Expect(res.status).To(Equal(http.StatusOK), string(res.body))
			var body struct {
				Object   string           `json:"object"`
				URL      string           `json:"url"`
				HasMore  bool             `json:"has_more"`
				NextPage *string          `json:"next_page"`
				Data     []map[string]any `json:"data"`
			}
			g.Expect(json.Unmarshal(res.body, &body)).To(Succeed())
			g.Expect(body.Object).To(Equal("search_result"))
			g.Expect(body.URL).To(Equal("/v1/payment_intents/search"))
			g.Expect(body.HasMore).To(BeFalse())
			g.Expect(body.NextPage).To(BeNil())
			g.Expect(body.Data).NotTo(BeNil())
			got := make([]string, 0, len(body.Data))
			for _, in := range body.Data {
				g.Expect(in).To(HaveKeyWithValue("object", "payment_intent"))
				got = append(got, in["id"].(string))
			}
			g.Expect(got).To(Equal(tt.wantIDs))
		})
	}

	unsupported := []string{
		``,
		`status:'succeeded'`,
		`metadata['tenant']:'acme' OR metadata['tenant']:'globex' AND metadata['paymentjob']:'default/a'`,
		`metadata['tenant']:'acme' AND metadata['tenant']:'globex' OR metadata['paymentjob']:'default/a'`,
		`metadata['tenant']:'acme' XOR metadata['tenant']:'globex'`,
		`metadata['tenant']:'acme'OR metadata['paymentjob']:'default/a'`,
		`-metadata['tenant']:'acme'`,
		`metadata['tenant']~'ac'`,
		`metadata[tenant]:'acme'`,
		`metadata['tenant']:acme`,
		`metadata['tenant']:'acme`,
		`metadata['']:'acme'`,
		`metadata['tenant']:'acme'AND metadata['paymentjob']:'default/a'`,
		`metadata['tenant']:'acme' AND`,
	}
	for _, query := range unsupported {
		res := send(g, srv, apiRequest{method: http.MethodGet, path: searchPath(query)})
		g.Expect(res.status).To(Equal(http.StatusBadRequest), query)
		g.Expect(res.errorOf(g).Param).To(Equal("query"), query)
	}
}

func TestServerServesStatsAndFaults(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine(sandbox.WithAccount("acct_stats"))
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	g.Expect(createIntent(g, srv, "k1", paymentForm("100", sandbox.PaymentMethodVisa)).status).To(Equal(http.StatusOK))
	g.Expect(createIntent(g, srv, "k1", paymentForm("100", sandbox.PaymentMethodVisa)).status).To(Equal(http.StatusOK))
	g.Expect(createIntent(g, srv, "k2", paymentForm("100", sandbox.PaymentMethodChargeDeclined)).status).
		To(Equal(http.StatusPaymentRequired))

	stats := sendControl(g, srv, http.MethodGet, "/_sandbox/stats", "")
	g.Expect(stats.status).To(Equal(http.StatusOK))
	g.Expect(stats.body).To(MatchJSON(`{"account": "acct_stats", "requests": 3, "charges": 1, "replays": 1,
		"inFlightConflicts": 0, "declines": 1, "requiresAction": 0, "cancels": 0, "keyReusedErrors": 0,
		"invalidRequests": 0, "faults": 0, "rateLimited": 0, "searches": 0, "retrieves": 0, "reads": 0, "lists": 0, "keysForgotten": 0,
		"chargesByKey": {"k1": 1}, "refundRequests": 0, "refunds": 0, "refundsFailed": 0, "refundRefusals": 0,
		"refundsByKey": {}, "debits": 0, "debitsSettled": 0, "debitsFailed": 0}`))

	faults := sendControl(g, srv, http.MethodGet, "/_sandbox/faults", "")
	g.Expect(faults.status).To(Equal(http.StatusOK))
	g.Expect(faults.body).To(MatchJSON(`{"errorBeforeCommit": 0, "errorAfterCommit": 0, "rateLimit": 0,
		"retryAfter": "0s", "latencyMin": "0s", "latencyMax": "0s"}`))

	const want = `{"errorBeforeCommit": 0.1, "errorAfterCommit": 0.2, "rateLimit": 0.05,
		"retryAfter": "1s", "latencyMin": "5ms", "latencyMax": "100ms"}`
	put := sendControl(g, srv, http.MethodPut, "/_sandbox/faults", want)
	g.Expect(put.status).To(Equal(http.StatusOK), string(put.body))
	g.Expect(put.body).To(MatchJSON(want))
	g.Expect(e.Faults()).To(Equal(sandbox.Faults{
		ErrorBeforeCommit: 0.1, ErrorAfterCommit: 0.2, RateLimit: 0.05,
		RetryAfter: time.Second, LatencyMin: 5 * time.Millisecond, LatencyMax: 100 * time.Millisecond,
	}))
	got := sendControl(g, srv, http.MethodGet, "/_sandbox/faults", "")
	g.Expect(got.body).To(MatchJSON(want))

	// The GET body is a valid PUT body; fields left out are zero.
	put = sendControl(g, srv, http.MethodPut, "/_sandbox/faults", `{"rateLimit": 0.5}`)
	g.Expect(put.status).To(Equal(http.StatusOK), string(put.body))
	g.Expect(e.Faults()).To(Equal(sandbox.Faults{RateLimit: 0.5}))
}

func TestServerRefusesInvalidFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		body        string
		wantStatus  int
		wantMessage string
	}{
		{name: "probability above 1", body: `{"rateLimit": 1.5}`, wantStatus: http.StatusBadRequest,
			wantMessage: "probability rateLimit must be between 0 and 1"},
		{name: "negative probability", body: `{"errorAfterCommit": -0.1}`, wantStatus: http.StatusBadRequest,
			wantMessage: "errorAfterCommit"},
		{name: "bad duration", body: `{"latencyMax": "soon"}`, wantStatus: http.StatusBadRequest,
			wantMessage: "invalid latencyMax"},
		{name: "duration as a number", body: `{"retryAfter": 1}`, wantStatus: http.StatusBadRequest,
			wantMessage: "retryAfter"},
		{name: "min above max", body: `{"latencyMin": "1s", "latencyMax": "1ms"}`, wantStatus: http.StatusBadRequest,
			wantMessage: "latencyMax 1ms is less than latencyMin 1s"},
		{name: "unknown field", body: `{"rate_limit": 0.5}`, wantStatus: http.StatusBadRequest,
			wantMessage: `unknown field "rate_limit"`},
		{name: "two values", body: `{} {}`, wantStatus: http.StatusBadRequest,
			wantMessage: "more than one JSON value"},
		{name: "not JSON", body: `rateLimit=0.5`, wantStatus: http.StatusBadRequest, wantMessage: "Invalid faults"},
		{name: "over the limit", body: `{"retryAfter": "` + strings.Repeat("1", sandbox.MaxRequestBodyBytes) + `s"}`,
			wantStatus: http.StatusRequestEntityTooLarge, wantMessage: "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			e := sandbox.NewEngine()
			g.Expect(e.SetFaults(sandbox.Faults{RateLimit: 0.25})).To(Succeed())
			srv := startSandbox(t, e, sandbox.ServerOptions{})

			res := sendControl(g, srv, http.MethodPut, "/_sandbox/faults", tt.body)
			g.Expect(res.status).To(Equal(tt.wantStatus), string(res.body))
			g.Expect(res.errorOf(g).Type).To(Equal("invalid_request_error"))
			g.Expect(res.errorOf(g).Message).To(ContainSubstring(tt.wantMessage))
			g.Expect(e.Faults()).To(Equal(sandbox.Faults{RateLimit: 0.25}))
		})
	}
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestServerLogsOneLinePerRequestWithoutSecrets(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	var logs syncBuffer
	e := sandbox.NewEngine()
	srv := startSandbox(t, e, sandbox.ServerOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	const key = "secret-idempotency-key"

	g.Expect(createIntent(g, srv, key, paymentForm("100", sandbox.PaymentMethodVisa)).status).To(Equal(http.StatusOK))
	g.Expect(createIntent(g, srv, key, paymentForm("100", sandbox.PaymentMethodVisa)).status).To(Equal(http.StatusOK))
	g.Expect(send(g, srv, apiRequest{method: http.MethodGet, path: "/v1/payment_intents/pi_x",
		authorization: "Bearer sk_live_secret"}).status).To(Equal(http.StatusUnauthorized))

	lines := func() []string { return strings.Split(strings.TrimSpace(logs.String()), "\n") }
	g.Eventually(lines).WithTimeout(5 * time.Second).Should(HaveLen(3))
	g.Expect(lines()[0]).To(And(ContainSubstring("method=POST"), ContainSubstring("path=/v1/payment_intents"),
		ContainSubstring("status=200"), ContainSubstring("replayed=false"), ContainSubstring("duration=")))
	g.Expect(lines()[1]).To(And(ContainSubstring("status=200"), ContainSubstring("replayed=true")))
	g.Expect(lines()[2]).To(And(ContainSubstring("method=GET"), ContainSubstring("status=401")))
	for _, secret := range []string{sandboxAPIKey, "sk_live_secret", key} {
		g.Expect(logs.String()).NotTo(ContainSubstring(secret))
	}
}

// newStripeClient returns a stripe-go client of srv that sends each call
// once, as the tests count requests.
func newStripeClient(srv *httptest.Server) *stripe.Client {
	return newRetryingStripeClient(srv, 0)
}

// newRetryingStripeClient returns a stripe-go client of srv that retries a
// call at most retries times, as stripe-go decides.
func newRetryingStripeClient(srv *httptest.Server, retries int64) *stripe.Client {
	backends := stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL:               stripe.String(srv.URL),
		HTTPClient:        srv.Client(),
		MaxNetworkRetries: stripe.Int64(retries),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})
	return stripe.NewClient(sandboxAPIKey, stripe.WithBackends(backends))
}

// stripeParams is what an adapter sends for a charge.
func stripeParams(key string, amount int64, paymentMethod string, metadata map[string]string) *stripe.PaymentIntentCreateParams {
	params := &stripe.PaymentIntentCreateParams{
		Amount:        stripe.Int64(amount),
		Currency:      stripe.String("eur"),
		Customer:      stripe.String("cus_123"),
		PaymentMethod: stripe.String(paymentMethod),
		Description:   stripe.String("order 42"),
		Metadata:      metadata,
		Confirm:       stripe.Bool(true),
		AutomaticPaymentMethods: &stripe.PaymentIntentCreateAutomaticPaymentMethodsParams{
			Enabled:        stripe.Bool(true),
			AllowRedirects: stripe.String("never"),
		},
	}
	params.AddExpand("latest_charge")
	params.SetIdempotencyKey(key)
	return params
}

// asStripeError returns err as a *stripe.Error, failing when it is not.
func asStripeError(g *WithT, err error) *stripe.Error {
	var se *stripe.Error
	g.ExpectWithOffset(1, errors.As(err, &se)).To(BeTrue(), "want a *stripe.Error, got %v", err)
	return se
}

func TestStripeGoTalksToServer(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	var tick atomic.Int64
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	e := sandbox.NewEngine(sandbox.WithClock(func() time.Time {
		return start.Add(time.Duration(tick.Add(1)) * time.Second)
	}))
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	sc := newStripeClient(srv)
	metadata := map[string]string{"paymentjob": "default/order-42", "tenant": "acme"}

	// Create, then replay under the same key.
	pi, err := sc.V1PaymentIntents.Create(ctx, stripeParams("key-1", 1999, sandbox.PaymentMethodVisa, metadata))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pi.ID).To(HavePrefix("pi_"))
	g.Expect(pi.Object).To(Equal("payment_intent"))
	g.Expect(pi.Status).To(Equal(stripe.PaymentIntentStatusSucceeded))
	g.Expect(pi.Amount).To(BeEquivalentTo(1999))
	g.Expect(pi.AmountReceived).To(BeEquivalentTo(1999))
	g.Expect(pi.Currency).To(Equal(stripe.Currency("eur")))
	g.Expect(pi.Customer.ID).To(Equal("cus_123"))
	g.Expect(pi.PaymentMethod.ID).To(Equal(sandbox.PaymentMethodVisa))
	g.Expect(pi.Metadata).To(Equal(metadata))
	g.Expect(pi.Created).To(Equal(start.Add(time.Second).Unix()))
	g.Expect(pi.Livemode).To(BeFalse())
	g.Expect(pi.LastResponse.StatusCode).To(Equal(http.StatusOK))
	g.Expect(pi.LastResponse.IdempotencyKey).To(Equal("key-1"))
	g.Expect(pi.LastResponse.RequestID).To(HavePrefix("req_"))
	g.Expect(pi.LastResponse.Header.Get("Idempotent-Replayed")).To(BeEmpty())

	replay, err := sc.V1PaymentIntents.Create(ctx, stripeParams("key-1", 1999, sandbox.PaymentMethodVisa, metadata))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replay.ID).To(Equal(pi.ID))
	g.Expect(replay.LastResponse.Header.Get("Idempotent-Replayed")).To(Equal("true"))

	// Retrieve, and a missing intent.
	got, err := sc.V1PaymentIntents.Retrieve(ctx, pi.ID, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.ID).To(Equal(pi.ID))
	g.Expect(got.Status).To(Equal(stripe.PaymentIntentStatusSucceeded))
	_, err = sc.V1PaymentIntents.Retrieve(ctx, "pi_missing", nil)
	se := asStripeError(g, err)
	g.Expect(se.HTTPStatusCode).To(Equal(http.StatusNotFound))
	g.Expect(se.Type).To(Equal(stripe.ErrorTypeInvalidRequest))
	g.Expect(se.Code).To(Equal(stripe.ErrorCodeResourceMissing))

	// Same key, other amount.
	_, err = sc.V1PaymentIntents.Create(ctx, stripeParams("key-1", 2000, sandbox.PaymentMethodVisa, metadata))
	se = asStripeError(g, err)
	g.Expect(se.Type).To(Equal(stripe.ErrorTypeIdempotency))
	g.Expect(se.HTTPStatusCode).To(Equal(http.StatusBadRequest))

	// A decline.
	_, err = sc.V1PaymentIntents.Create(ctx, stripeParams("key-2", 1999, sandbox.PaymentMethodChargeDeclined, nil))
	se = asStripeError(g, err)
	g.Expect(se.HTTPStatusCode).To(Equal(http.StatusPaymentRequired))
	g.Expect(se.Type).To(Equal(stripe.ErrorTypeCard))
	g.Expect(se.Code).To(Equal(stripe.ErrorCodeCardDeclined))
	g.Expect(se.DeclineCode).To(Equal(stripe.DeclineCodeGenericDecline))
	g.Expect(se.Msg).To(Equal("Your card was declined."))
	var cardErr *stripe.CardError
	g.Expect(errors.As(err, &cardErr)).To(BeTrue())
	g.Expect(cardErr.DeclineCode).To(Equal(stripe.DeclineCodeGenericDecline))

	// A rate limit, with its Retry-After.
	e.FailNext(sandbox.FaultRateLimit, 1)
	g.Expect(e.SetFaults(sandbox.Faults{RetryAfter: 3 * time.Second})).To(Succeed())
	_, err = sc.V1PaymentIntents.Create(ctx, stripeParams("key-3", 500, sandbox.PaymentMethodVisa, metadata))
	se = asStripeError(g, err)
	g.Expect(se.HTTPStatusCode).To(Equal(http.StatusTooManyRequests))
	g.Expect(se.Code).To(Equal(stripe.ErrorCodeRateLimit))
	g.Expect(se.LastResponse.Header.Get("Retry-After")).To(Equal("3"))

	// A lost response, then the retry that replays it.
	e.FailNext(sandbox.FaultAfterCommit, 1)
	_, err = sc.V1PaymentIntents.Create(ctx, stripeParams("key-3", 500, sandbox.PaymentMethodVisa, metadata))
	se = asStripeError(g, err)
	g.Expect(se.HTTPStatusCode).To(Equal(http.StatusInternalServerError))
	g.Expect(se.Type).To(Equal(stripe.ErrorTypeAPI))
	third, err := sc.V1PaymentIntents.Create(ctx, stripeParams("key-3", 500, sandbox.PaymentMethodVisa, metadata))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(third.LastResponse.Header.Get("Idempotent-Replayed")).To(Equal("true"))
	saved, ok := e.LookupByKey("key-3")
	g.Expect(ok).To(BeTrue())
	g.Expect(third.ID).To(Equal(saved.ID))

	// Search, one intent a page, to follow next_page.
	params := &stripe.PaymentIntentSearchParams{}
	params.Query = `metadata['tenant']:'acme' AND metadata['paymentjob']:'default/order-42'`
	params.Limit = stripe.Int64(1)
	var found []string
	for in, err := range sc.V1PaymentIntents.Search(ctx, params).All(ctx) {
		g.Expect(err).NotTo(HaveOccurred())
		found = append(found, in.ID)
	}
	g.Expect(found).To(Equal([]string{third.ID, pi.ID}))

	params = &stripe.PaymentIntentSearchParams{}
	params.Query = `status:'succeeded'`
	var searchErrors int
	for _, err := range sc.V1PaymentIntents.Search(ctx, params).All(ctx) {
		searchErrors++
		se = asStripeError(g, err)
		g.Expect(se.HTTPStatusCode).To(Equal(http.StatusBadRequest))
		g.Expect(se.Param).To(Equal("query"))
	}
	g.Expect(searchErrors).To(Equal(1))

	s := e.Stats()
	g.Expect(s.Charges).To(BeEquivalentTo(2))
	g.Expect(s.ChargesByKey).To(Equal(map[string]int{"key-1": 1, "key-3": 1}))
	// With MaxNetworkRetries 0, each call above is one request.
	g.Expect(s.Requests).To(BeEquivalentTo(7))
}

func TestStripeGoRetriesOnlyTransportErrors(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	sc := newRetryingStripeClient(srv, 2)

	// stripe-go v85 does not retry a Stripe error body, not even a 500: the
	// caller retries with the same key.
	e.FailNext(sandbox.FaultAfterCommit, 1)
	_, err := sc.V1PaymentIntents.Create(context.Background(), stripeParams("key", 500, sandbox.PaymentMethodVisa, nil))
	g.Expect(asStripeError(g, err).HTTPStatusCode).To(Equal(http.StatusInternalServerError))
	g.Expect(e.Stats().Requests).To(BeEquivalentTo(1))
}

func TestServerServesAccount(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine(sandbox.WithAccount("acct_1Nv0FGQ9RKHgCVdK"))
	srv := startSandbox(t, e, sandbox.ServerOptions{})

	res := send(g, srv, apiRequest{method: http.MethodGet, path: "/v1/account"})
	g.Expect(res.status).To(Equal(http.StatusOK), string(res.body))
	g.Expect(res.intentOf(g)).To(And(HaveKeyWithValue("id", "acct_1Nv0FGQ9RKHgCVdK"), HaveKeyWithValue("object", "account")))
	g.Expect(send(g, srv, apiRequest{method: http.MethodGet, path: "/v1/account", authorization: noAuth}).status).
		To(Equal(http.StatusUnauthorized))

	account, err := newStripeClient(srv).V1Accounts.Retrieve(context.Background(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(account.ID).To(Equal("acct_1Nv0FGQ9RKHgCVdK"))
	g.Expect(account.ChargesEnabled).To(BeTrue())
}

func TestServerForgetsKeys(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	form := paymentForm("100", sandbox.PaymentMethodVisa)
	first := createIntent(g, srv, "k1", form)
	g.Expect(first.status).To(Equal(http.StatusOK))
	g.Expect(createIntent(g, srv, "k1", form).header.Get("Idempotent-Replayed")).To(Equal("true"))

	res := sendControl(g, srv, http.MethodPost, "/_sandbox/forget-keys", "")
	g.Expect(res.status).To(Equal(http.StatusOK), string(res.body))
	g.Expect(res.body).To(MatchJSON(`{"forgotten": 1}`))
	g.Expect(sendControl(g, srv, http.MethodGet, "/_sandbox/forget-keys", "").status).To(Equal(http.StatusMethodNotAllowed))

	second := createIntent(g, srv, "k1", form)
	g.Expect(second.status).To(Equal(http.StatusOK))
	g.Expect(second.header.Get("Idempotent-Replayed")).To(BeEmpty())
	g.Expect(second.intentOf(g)["id"]).NotTo(Equal(first.intentOf(g)["id"]))

	stats := sendControl(g, srv, http.MethodGet, "/_sandbox/stats", "").intentOf(g)
	g.Expect(stats).To(HaveKeyWithValue("keysForgotten", BeEquivalentTo(1)))
	g.Expect(stats).To(HaveKeyWithValue("chargesByKey", HaveKeyWithValue("k1", BeEquivalentTo(2))))
}

func TestServerChargesEveryRequestWithIdempotencyOff(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine(sandbox.WithIdempotency(false))
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	for _, amount := range []string{"100", "100", "200"} {
		res := createIntent(g, srv, "k1", paymentForm(amount, sandbox.PaymentMethodVisa))
		g.Expect(res.status).To(Equal(http.StatusOK), string(res.body))
		g.Expect(res.header.Get("Idempotent-Replayed")).To(BeEmpty())
	}
	g.Expect(e.Stats().ChargesByKey).To(Equal(map[string]int{"k1": 3}))
}

func TestServerAnswersRateLimits(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now), sandbox.WithRateLimits(sandbox.RateLimits{Writes: 1, Searches: 1}))
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	search := apiRequest{method: http.MethodGet, path: searchPath(`metadata['paymentjob']:'default/order-42'`)}

	g.Expect(createIntent(g, srv, "k1", paymentForm("100", sandbox.PaymentMethodVisa)).status).To(Equal(http.StatusOK))
	g.Expect(send(g, srv, search).status).To(Equal(http.StatusOK))

	for _, res := range []apiResponse{
		createIntent(g, srv, "k2", paymentForm("100", sandbox.PaymentMethodVisa)),
		send(g, srv, search),
	} {
		g.Expect(res.status).To(Equal(http.StatusTooManyRequests), string(res.body))
		g.Expect(res.header.Get("Retry-After")).To(Equal("1"))
		apiErr := res.errorOf(g)
		g.Expect(apiErr.Type).To(Equal(sandbox.ErrorTypeInvalidRequest))
		g.Expect(apiErr.Code).To(Equal(sandbox.CodeRateLimit))
	}

	clock.Add(time.Second)
	g.Expect(createIntent(g, srv, "k2", paymentForm("100", sandbox.PaymentMethodVisa)).status).To(Equal(http.StatusOK))
	s := e.Stats()
	g.Expect(s.RateLimited).To(BeEquivalentTo(2))
	g.Expect(s.Searches).To(BeEquivalentTo(2))
	g.Expect(s.Faults).To(BeZero())
}

func TestServerSearchLagsBehindWrites(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now), sandbox.WithSearchLag(30*time.Second))
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	created := createIntent(g, srv, "k1", paymentForm("100", sandbox.PaymentMethodVisa)).intentOf(g)
	search := func() []any {
		res := send(g, srv, apiRequest{method: http.MethodGet, path: searchPath(`metadata['paymentjob']:'default/order-42'`)})
		g.ExpectWithOffset(1, res.status).To(Equal(http.StatusOK), string(res.body))
		return res.intentOf(g)["data"].([]any)
	}

	g.Expect(search()).To(BeEmpty())
	retrieved := send(g, srv, apiRequest{method: http.MethodGet, path: "/v1/payment_intents/" + created["id"].(string)})
	g.Expect(retrieved.status).To(Equal(http.StatusOK))
	clock.Add(30 * time.Second)
	g.Expect(search()).To(ConsistOf(HaveKeyWithValue("id", created["id"])))
}
