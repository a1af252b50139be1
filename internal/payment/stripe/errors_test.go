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

// How answers that are not a success are classified, and how messages from
// Stripe are cleaned: the tests of errors.go.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	stripego "github.com/stripe/stripe-go/v85"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/paymenttest"
)

// errorCase is a Stripe answer that is not a success, and what Charge must
// make of it.
type errorCase struct {
	name string
	// answer writes the response; nil hijacks the connection and closes it.
	answer func(w http.ResponseWriter, r *http.Request)
	// class is the error class errors.Is must find, or nil.
	class error
	// reason is the reason of a definitive refusal; empty when the error is
	// uncertain.
	reason string
	// retryAfter is the hint payment.RetryAfter must return.
	retryAfter time.Duration
	// contains are substrings of the error message.
	contains []string
	// excludes are never in the error message: the body of an answer that
	// is not Stripe's JSON.
	excludes []string
}

var errorCases = []errorCase{
	// Refusals: nothing was charged.
	{
		name: "card declined", answer: jsonAnswer(http.StatusPaymentRequired, stripeError("card_error", "card_declined", "insufficient_funds", "Your card has insufficient funds.")),
		class: payment.ErrDeclined, reason: payment.ReasonCardDeclined, contains: []string{"card_declined (insufficient_funds): Your card has insufficient funds."},
	},
	{
		name: "card expired", answer: jsonAnswer(http.StatusPaymentRequired, stripeError("card_error", "expired_card", "", "Your card has expired.")),
		class: payment.ErrDeclined, reason: payment.ReasonCardDeclined, contains: []string{"expired_card: Your card has expired."},
	},
	{
		name: "authentication required off-session", answer: jsonAnswer(http.StatusPaymentRequired, stripeError("card_error", "authentication_required", "authentication_required", "Your card was declined. This transaction requires authentication.")),
		class: payment.ErrDeclined, reason: ReasonAuthenticationRequired, contains: []string{"authentication_required (authentication_required): Your card was declined."},
	},
	{
		name:   "invalid parameter",
		answer: jsonAnswer(http.StatusBadRequest, map[string]any{"error": map[string]any{"type": "invalid_request_error", "code": "parameter_invalid_integer", "param": "amount", "message": "Invalid integer: abc"}}),
		class:  payment.ErrInvalid, reason: payment.ReasonInvalidRequest, contains: []string{"parameter_invalid_integer (parameter amount): Invalid integer: abc"},
	},
	{
		name: "no such customer", answer: jsonAnswer(http.StatusNotFound, stripeError("invalid_request_error", "resource_missing", "", "No such customer: 'cus_123'")),
		class: payment.ErrInvalid, reason: payment.ReasonInvalidRequest, contains: []string{"No such customer"},
	},
	{
		name:     "requires_payment_method after confirm",
		answer:   jsonAnswer(http.StatusOK, withLastPaymentError(intent("pi_1", "requires_payment_method"), "card_declined", "generic_decline", "Your card was declined.")),
		class:    payment.ErrDeclined,
		reason:   payment.ReasonCardDeclined,
		contains: []string{"card_declined (generic_decline): Your card was declined.", "pi_1"},
	},
	{
		name: "requires_payment_method without an error", answer: jsonAnswer(http.StatusOK, intent("pi_1", "requires_payment_method")),
		class: payment.ErrDeclined, reason: payment.ReasonCardDeclined, contains: []string{"pi_1"},
	},
	{
		name: "canceled", answer: jsonAnswer(http.StatusOK, withField(intent("pi_1", "canceled"), "cancellation_reason", "fraudulent")),
		class: payment.ErrDeclined, reason: ReasonPaymentCanceled, contains: []string{"pi_1", "fraudulent"},
	},

	// In flight: retried later under the same key.
	{
		name:   "key in use, with Retry-After",
		answer: jsonAnswer(http.StatusConflict, stripeError("invalid_request_error", "idempotency_key_in_use", "", "There is currently another in-progress request using this Idempotent Key."), "Retry-After", "3"),
		class:  payment.ErrInFlight, retryAfter: 3 * time.Second,
	},
	{
		name: "key in use, code only", answer: jsonAnswer(http.StatusBadRequest, stripeError("invalid_request_error", "idempotency_key_in_use", "", "in progress")),
		class: payment.ErrInFlight, retryAfter: time.Second,
	},
	{
		name: "409 without a code", answer: jsonAnswer(http.StatusConflict, stripeError("invalid_request_error", "", "", "conflict")),
		class: payment.ErrInFlight, retryAfter: time.Second,
	},

	// Uncertain outcomes and configuration problems.
	{
		name:       "rate limited",
		answer:     jsonAnswer(http.StatusTooManyRequests, stripeError("invalid_request_error", "rate_limit", "", "Too many requests hit the API too quickly."), "Retry-After", "7"),
		retryAfter: 7 * time.Second, contains: []string{"HTTP 429", "rate_limit", "Too many requests"},
	},
	{
		name:       "rate limited, Retry-After capped at ten minutes",
		answer:     jsonAnswer(http.StatusTooManyRequests, stripeError("rate_limit_error", "", "", "slow down"), "Retry-After", "86400"),
		retryAfter: 10 * time.Minute,
	},
	{
		name:     "invalid API key",
		answer:   jsonAnswer(http.StatusUnauthorized, stripeError("invalid_request_error", "", "", "Invalid API Key provided: "+testAPIKey)),
		contains: []string{"check the secret referenced by the PaymentProvider", "HTTP 401"},
	},
	{
		name: "authentication error", answer: jsonAnswer(http.StatusUnauthorized, stripeError("authentication_error", "api_key_expired", "", "Expired API Key provided")),
		contains: []string{"check the secret referenced by the PaymentProvider", "api_key_expired"},
	},
	{
		name: "permission error", answer: jsonAnswer(http.StatusForbidden, stripeError("permission_error", "", "", "The provided key does not have access")),
		contains: []string{"check the secret referenced by the PaymentProvider", "HTTP 403"},
	},
	{
		name: "api error", answer: jsonAnswer(http.StatusInternalServerError, stripeError("api_error", "", "", "Something went wrong on Stripe's end.")),
		contains: []string{"HTTP 500", "api_error", "request req_test"},
	},
	{
		name: "503 with Retry-After", answer: jsonAnswer(http.StatusServiceUnavailable, stripeError("api_error", "", "", "unavailable"), "Retry-After", "30"),
		retryAfter: 30 * time.Second,
	},
	{
		name: "invalid_request_error with another status", answer: jsonAnswer(http.StatusPaymentRequired, stripeError("invalid_request_error", "", "", "odd")),
		contains: []string{"HTTP 402"},
	},
	{name: "unexpected status", answer: jsonAnswer(http.StatusOK, intent("pi_1", "requires_review")), contains: []string{"pi_1", "requires_review"}},
	{name: "connection closed", answer: hangUp},

	// Answers that are not Stripe's JSON: their bodies never reach the message.
	{
		name:     "5xx HTML body",
		answer:   rawAnswer(http.StatusBadGateway, "text/html", "<html><body><h1>502 Bad Gateway</h1></body></html>"),
		contains: []string{"the answer (HTTP 502) is not the Stripe API's JSON, so its body is not shown", "spec.stripe.apiBase"},
		excludes: []string{"<h1>", "Bad Gateway"},
	},
	{
		name: "4xx text body", answer: rawAnswer(http.StatusNotFound, "text/plain", "404: no route to internal-admin.svc.cluster.local"),
		contains: []string{"HTTP 404"}, excludes: []string{"internal-admin"},
	},
	{
		name: "malformed JSON", answer: rawAnswer(http.StatusOK, "application/json", `{"id": "pi_1", "status": `),
		contains: []string{"HTTP 200"}, excludes: []string{"pi_1"},
	},
	{name: "JSON that is not an intent", answer: rawAnswer(http.StatusOK, "application/json", `[1, 2, 3]`), excludes: []string{"[1, 2, 3]"}},
	{
		name: "error status without an error object", answer: rawAnswer(http.StatusBadRequest, "application/json", `{"detail": "nope"}`),
		contains: []string{"the answer is not the Stripe API's JSON"}, excludes: []string{"nope"},
	},
	{name: "empty success body", answer: rawAnswer(http.StatusOK, "application/json", `{}`), contains: []string{"unexpected status"}},
}

func TestChargeErrors(t *testing.T) {
	for _, tt := range errorCases {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeStripe(t, func(w http.ResponseWriter, r *http.Request, _ int) { tt.answer(w, r) })

			_, err := f.provider(t).Charge(context.Background(), testKey, paymenttest.FullRequest())
			tt.expect(g, err)
			// stripe-go's retries are off: one request, whatever the answer.
			g.Expect(f.count(http.MethodPost)).To(Equal(1))
			g.Expect(f.count(http.MethodGet)).To(Equal(0))
		})
	}
}

// expect asserts that err is what the answer must be made into.
func (tt errorCase) expect(g Gomega, err error) {
	g.Expect(err).To(HaveOccurred())
	if tt.class != nil {
		g.Expect(errors.Is(err, tt.class)).To(BeTrue(), "error %q is not %v", err, tt.class)
	}
	if r, refusal := payment.IsRefusal(err); tt.reason != "" {
		g.Expect(refusal).To(BeTrue(), "error %q is not a refusal", err)
		g.Expect(r.Reason).To(Equal(tt.reason))
	} else {
		g.Expect(paymenttest.CheckTransient(err)).To(Succeed())
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
			_, err := p.Charge(context.Background(), testKey, paymenttest.FullRequest())
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
		{name: "Refund", call: func(p *Provider) error {
			_, err := p.Refund(context.Background(), testRefundKey, fullRefund())
			return err
		}},
		{name: "LookupRefunds", call: func(p *Provider) error {
			_, err := p.LookupRefunds(context.Background(), "pi_1")
			return err
		}},
		{name: "SettleRefund", call: func(p *Provider) error {
			_, err := p.SettleRefund(context.Background(), testRefundKey, "re_1")
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

// TestCleanCutsLongMessages checks what the adapter gives
// payment.CleanMessage, whose rule TestCleanMessage covers: the API key, and
// a limit of maxMessageLength bytes.
func TestCleanCutsLongMessages(t *testing.T) {
	g := NewWithT(t)
	p := &Provider{apiKey: testAPIKey}
	long := strings.Repeat("é", 400) + "\n" + testAPIKey
	got := p.clean(long)
	g.Expect(got).To(Equal(strings.Repeat("é", maxMessageLength/2) + "..."))
	g.Expect(p.clean("two\nlines\r\n  here")).To(Equal("two lines here"))
	g.Expect(p.clean("key " + testAPIKey + " end")).To(Equal("key [redacted] end"))
}
