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

package providertest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// cannedSession is a session against a service that answers every request
// with status, headers h and body, "{key}" in body replaced by the first
// key asked.
func cannedSession(t *testing.T, status int, h map[string]string, body string) *session {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range h {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(strings.ReplaceAll(body, "{key}", r.URL.Query().Get("key"))))
	}))
	t.Cleanup(srv.Close)
	s, err := newSession(Options{URL: srv.URL + "/charges", LookupURL: srv.URL + "/charges/lookup",
		RefundURL: srv.URL + "/refunds", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// operatorSettings are what the operator's own messages point at, which a
// service's author cannot change.
const operatorSettings = `spec\.|PaymentProvider|PaymentJob|secretKeyRef`

func TestChargeAnswersSayWhatTheServiceMustChange(t *testing.T) {
	t.Parallel()
	jsonType := map[string]string{"Content-Type": "application/json"}
	tests := []struct {
		name   string
		status int
		header map[string]string
		body   string
		want   []string
	}{
		{"a status the contract does not name", 201, jsonType, `{"id":"ch_1","status":"ok"}`,
			[]string{`201 with status "ok"`, `"succeeded" (or "paid", "completed")`, `"failed" (or "declined"`, `"processing" or "pending"`}},
		{"a charge without an id", 201, jsonType, `{"status":"succeeded"}`,
			[]string{`without a charge "id"`, `must answer every charge with its "id"`}},
		{"a body that is not JSON", 200, nil, `charged!`,
			[]string{"not a JSON object", `"charged!"`, `with its "id" and "status"`}},
		{"accepted without a status", 202, jsonType, `{"id":"ch_1"}`,
			[]string{"202 without a status", "must then answer the final outcome"}},
		{"pending", 200, jsonType, `{"id":"ch_1","status":"pending"}`,
			[]string{`status "pending": not final`, "must then answer the final outcome"}},
		{"not found", 404, jsonType, `{"reason":"NotFound","message":"no route"}`,
			[]string{"404 (no charge endpoint at this url; the service said: no route)", "Options.URL"}},
		{"unauthorized", 401, nil, ``,
			[]string{"401 (the credentials were refused)", "Options.Token"}},
		{"a redirect", 308, map[string]string{"Location": "https://elsewhere/charges"}, ``,
			[]string{`a redirect to "https://elsewhere/charges"`, "must answer at its own url"}},
		{"a status code the contract does not use", 418, jsonType, `{"message":"teapot"}`,
			[]string{"418 (a status code the contract does not use for a charge; the service said: teapot)",
				"a decline with 402", "a reused key with 422"}},
		{"unavailable", 503, jsonType, `{"message":"down for maintenance"}`,
			[]string{"503 (the operator retries it with the same key; the service said: down for maintenance)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			s := cannedSession(t, tt.status, tt.header, tt.body)

			a := s.charge(context.Background(), s.key("advice"), s.succeeding(), nil)

			g.Expect(a.charged()).To(BeFalse())
			for _, want := range tt.want {
				g.Expect(a.String()).To(ContainSubstring(want))
			}
			g.Expect(a.String()).NotTo(MatchRegexp(operatorSettings))
		})
	}
}

func TestLookupAnswersSayWhatTheServiceMustChange(t *testing.T) {
	t.Parallel()
	jsonType := map[string]string{"Content-Type": "application/json"}
	tests := []struct {
		name   string
		status int
		body   string
		want   []string
	}{
		{"404 for a key without charges", 404, `{"reason":"NotFound","message":"no such charge"}`,
			[]string{"was answered 404 Not Found; the service said: no such charge",
				`the service must answer 200 with an empty charges array ({"charges": []})`}},
		{"forbidden", 403, ``, []string{"was answered 403", "for lookups too"}},
		{"a server error", 500, ``, []string{"was answered 500", "must answer every lookup with 200"}},
		{"no charges array", 200, `{"account":"acct_1"}`,
			[]string{"was answered 200 that the operator cannot read", `{"charges": [...]}`}},
		{"a charge without an amount", 200, `{"charges":[{"idempotencyKey":"{key}","id":"ch_1","currency":"eur"}]}`,
			[]string{"was answered 200 that the operator cannot read", `"amount"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			s := cannedSession(t, tt.status, jsonType, tt.body)
			key := s.key("advice")

			_, failure := s.lookup(context.Background(), []string{key})

			g.Expect(failure).To(HavePrefix("the lookup of key %q ", key))
			for _, want := range tt.want {
				g.Expect(failure).To(ContainSubstring(want))
			}
			g.Expect(failure).NotTo(MatchRegexp(operatorSettings))
			if tt.status != http.StatusOK {
				g.Expect(s.account(context.Background())).To(HavePrefix("the lookup without keys (the account probe) was answered %d", tt.status))
			}
		})
	}
}

func TestFoundAdviceNamesTheContractsStatuses(t *testing.T) {
	g := NewWithT(t)
	g.Expect(foundAdvice("Succeeded")).To(BeEmpty(), "statuses are compared without regard to case")
	g.Expect(foundAdvice(" pending ")).To(BeEmpty())
	g.Expect(foundAdvice("settled")).To(ContainSubstring(`status "settled" is not one the contract names`))
	g.Expect(foundAdvice("settled")).To(ContainSubstring(statusAdvice))
}

func TestRefundAnswersSayWhatTheServiceMustChange(t *testing.T) {
	t.Parallel()
	jsonType := map[string]string{"Content-Type": "application/json"}
	tests := []struct {
		name   string
		status int
		body   string
		want   []string
	}{
		{"no refund endpoint", 404, `{"reason":"NotFound","message":"no route"}`,
			[]string{"404 (no refund endpoint at this url; the service said: no route)", "Options.RefundURL (--refund-url)"}},
		{"a refund without an id", 201, `{"status":"succeeded"}`,
			[]string{`without a refund "id"`, "whether it refunded", `must answer every refund with its "id"`}},
		{"a status the contract does not name", 201, `{"id":"re_1","status":"ok"}`,
			[]string{`201 with status "ok"`, `a refund that gave money back as "succeeded"`}},
		{"a status code the contract does not use", 418, `{"message":"teapot"}`,
			[]string{"418 (a status code the contract does not use for a refund; the service said: teapot)", "a refusal with 402"}},
		{"a redirect", 308, ``,
			[]string{"could send the refund elsewhere", "the refund endpoint must answer at its own url", "Options.RefundURL, --refund-url"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			s := cannedSession(t, tt.status, jsonType, tt.body)

			a := s.refund(context.Background(), s.key("advice"), s.refundRequest("ch_1", 100), nil)

			g.Expect(a.charged()).To(BeFalse())
			for _, want := range tt.want {
				g.Expect(a.String()).To(ContainSubstring(want))
			}
			g.Expect(a.String()).NotTo(MatchRegexp(operatorSettings))
		})
	}
}

func TestRefundLookupAnswersSayWhatTheServiceMustChange(t *testing.T) {
	t.Parallel()
	jsonType := map[string]string{"Content-Type": "application/json"}
	tests := []struct {
		name   string
		status int
		body   string
		// want are in the failure of the lookup of a charge's refunds,
		// byKey in that of a refund's key.
		want, byKey []string
	}{
		{"no refunds array", 200, `{"account":"acct_1","charges":[]}`,
			[]string{`answered 200 without a "refunds" array`, "refunds nothing on the strength of it"},
			[]string{`answered 200 without a "refunds" array`}},
		{"404 for a charge without refunds", 404, `{"reason":"NotFound","message":"no such charge"}`,
			[]string{`was answered 404 Not Found; the service said: no such charge`, `{"charges": [], "refunds": []}`, "never 404"},
			[]string{"never 404"}},
		{"a refund without an amount", 200, `{"charges":[],"refunds":[{"idempotencyKey":"{key}","id":"re_1","currency":"eur","status":"succeeded"}]}`,
			[]string{"answered 200 that the operator cannot read", `"amount"`},
			[]string{"answered 200 that the operator cannot read", `"amount"`}},
		{"the refund not under its key", 200, `{"charges":[],"refunds":[]}`,
			nil,
			[]string{`holds no refund "re_1" under the key right after it was answered`, "exactly as sent in the Idempotency-Key header"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			s := cannedSession(t, tt.status, jsonType, tt.body)

			_, failure := s.refundBook(context.Background(), "ch_1")
			_, byKey := s.refundByKey(context.Background(), s.key("advice"), "re_1")

			if tt.want == nil {
				g.Expect(failure).To(BeEmpty())
			} else {
				g.Expect(failure).To(HavePrefix(`the lookup of the refunds of charge "ch_1" (?charge=) `))
			}
			for _, want := range tt.want {
				g.Expect(failure).To(ContainSubstring(want))
			}
			g.Expect(byKey).To(HavePrefix("the lookup of key "))
			for _, want := range tt.byKey {
				g.Expect(byKey).To(ContainSubstring(want))
			}
			g.Expect(failure + byKey).NotTo(MatchRegexp(operatorSettings))
		})
	}
}
