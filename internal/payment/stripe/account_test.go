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
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/testing/paymenttest"
)

func TestAccount(t *testing.T) {
	g := NewWithT(t)
	f := newFakeAnswering(t, map[string]any{"id": "acct_1Test", "object": "account", "country": "US"})
	id, err := f.provider(t).Account(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(id).To(Equal("acct_1Test"))

	f.single(g, http.MethodGet, "/v1/account")
}

func TestAccountErrorsAreUncertain(t *testing.T) {
	quoteKey := func(status int) func(w http.ResponseWriter, r *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			writeJSON(w, status, stripeError("invalid_request_error", "", "", "Invalid API Key provided: "+key))
		}
	}
	tests := []struct {
		name       string
		answer     func(w http.ResponseWriter, r *http.Request)
		retryAfter time.Duration
		contains   []string
	}{
		{
			name:     "invalid API key",
			answer:   quoteKey(http.StatusUnauthorized),
			contains: []string{"HTTP 401", "check the secret referenced by the PaymentProvider"},
		},
		{
			name:     "permission error",
			answer:   jsonAnswer(http.StatusForbidden, stripeError("permission_error", "", "", "The provided key does not have access")),
			contains: []string{"HTTP 403"},
		},
		{
			name:     "not found",
			answer:   quoteKey(http.StatusNotFound),
			contains: []string{"cannot read the Stripe account"},
		},
		{
			name:       "rate limited",
			answer:     jsonAnswer(http.StatusTooManyRequests, stripeError("invalid_request_error", "rate_limit", "", "slow down"), "Retry-After", "5"),
			retryAfter: 5 * time.Second,
		},
		{name: "server error", answer: rawAnswer(http.StatusBadGateway, "text/html", "<html>502</html>")},
		{name: "no id", answer: jsonAnswer(http.StatusOK, map[string]any{"object": "account"}), contains: []string{"no id"}},
		{name: "connection closed", answer: hangUp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeStripe(t, func(w http.ResponseWriter, r *http.Request, _ int) { tt.answer(w, r) })
			id, err := f.provider(t).Account(context.Background())
			g.Expect(paymenttest.CheckTransient(err)).To(Succeed())
			g.Expect(id).To(BeEmpty())
			g.Expect(err.Error()).NotTo(ContainSubstring(testAPIKey))
			for _, s := range tt.contains {
				g.Expect(err.Error()).To(ContainSubstring(s))
			}
			g.Expect(f.received()).To(HaveLen(1))
		})
	}
}

func TestAccountWithDoneContextSendsNothing(t *testing.T) {
	g := NewWithT(t)
	f := newFakeAnswering(t, map[string]any{"id": "acct_1Test", "object": "account"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.provider(t).Account(ctx)
	g.Expect(paymenttest.CheckTransient(err)).To(Succeed())
	g.Expect(errors.Is(err, context.Canceled)).To(BeTrue())
	g.Expect(f.received()).To(BeEmpty())
}
