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
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/paymenttest"
)

func TestLookupSendsOneSearchForAllKeys(t *testing.T) {
	g := NewWithT(t)
	keys := []string{"billing/invoice-1", "billing/o'brien", "billing/invoice-3"}
	f := newFakeStripe(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		writeJSON(w, http.StatusOK, searchPage(false, "",
			charged("pi_1a", "succeeded", keys[0], "sha256:a", 1767225600),
			charged("pi_3", "processing", keys[2], "sha256:c", 1767225600),
			charged("pi_1b", "canceled", keys[0], "sha256:a", 1767229200),
			// Another key's intent, should the index return one, is not
			// reported.
			charged("pi_other", "succeeded", "billing/invoice-4", "sha256:d", 1767225600),
		))
	})

	found, err := f.provider(t).Lookup(context.Background(), keys)
	g.Expect(err).NotTo(HaveOccurred())

	r := f.single(g, http.MethodGet, "/v1/payment_intents/search")
	g.Expect(r.Query.Get("query")).To(Equal(
		`metadata['paymentjob_idempotency_key']:'billing/invoice-1'` +
			` OR metadata['paymentjob_idempotency_key']:'billing/o\'brien'` +
			` OR metadata['paymentjob_idempotency_key']:'billing/invoice-3'`))
	g.Expect(r.Query.Get("limit")).To(Equal("100"))
	g.Expect(r.Query.Has("page")).To(BeFalse())

	g.Expect(found).To(HaveLen(2))
	g.Expect(found).NotTo(HaveKey(keys[1]))
	// Newest first.
	g.Expect(ids(found[keys[0]])).To(Equal([]string{"pi_1b", "pi_1a"}))
	g.Expect(ids(found[keys[2]])).To(Equal([]string{"pi_3"}))
	for key, charges := range found {
		for _, c := range charges {
			g.Expect(c.Key).To(Equal(key))
		}
	}
}

func TestLookupReportsEveryStatus(t *testing.T) {
	created := time.Unix(1767225600, 0).UTC()
	tests := []struct {
		status      string
		received    int64
		fingerprint string
		wantState   payment.ChargeState
		wantAmount  int64
	}{
		{status: "succeeded", received: 1500, fingerprint: "sha256:f1", wantState: payment.StateSucceeded, wantAmount: 1500},
		{status: "requires_capture", fingerprint: "sha256:f2", wantState: payment.StateSucceeded, wantAmount: 2000},
		{status: "processing", fingerprint: "sha256:f3", wantState: payment.StatePending, wantAmount: 2000},
		{status: "requires_action", wantState: payment.StatePending, wantAmount: 2000},
		{status: "requires_confirmation", wantState: payment.StatePending, wantAmount: 2000},
		{status: "requires_payment_method", fingerprint: "sha256:f6", wantState: payment.StateNotCharged, wantAmount: 2000},
		{status: "canceled", wantState: payment.StateNotCharged, wantAmount: 2000},
		{status: "a_status_stripe_adds_later", wantState: payment.StatePending, wantAmount: 2000},
	}
	for _, tt := range tests {
		t.Run(tt.status, func(t *testing.T) {
			g := NewWithT(t)
			in := charged("pi_1", tt.status, testKey, tt.fingerprint, created.Unix())
			in["amount_received"] = tt.received
			f := newFakeAnswering(t, searchPage(false, "", in))
			found, err := f.provider(t).Lookup(context.Background(), []string{testKey})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(found).To(Equal(map[string][]payment.Found{testKey: {{
				Key: testKey,
				Outcome: payment.Outcome{
					ID:       "pi_1",
					Status:   tt.status,
					Amount:   tt.wantAmount,
					Currency: "usd",
					Created:  created,
				},
				State:       tt.wantState,
				Fingerprint: tt.fingerprint,
			}}}))
		})
	}
}

func TestLookupFollowsPages(t *testing.T) {
	g := NewWithT(t)
	f := newFakeStripe(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		switch r.URL.Query().Get("page") {
		case "":
			writeJSON(w, http.StatusOK, searchPage(true, "page_2", charged("pi_1", "canceled", testKey, "sha256:a", 1767225600)))
		case "page_2":
			// pi_1 again: a page may overlap the previous one.
			writeJSON(w, http.StatusOK, searchPage(true, "page_3",
				charged("pi_1", "canceled", testKey, "sha256:a", 1767225600),
				charged("pi_2", "processing", testKey, "sha256:a", 1767229200)))
		default:
			writeJSON(w, http.StatusOK, searchPage(false, "", charged("pi_3", "succeeded", testKey, "sha256:a", 1767232800)))
		}
	})

	found, err := f.provider(t).Lookup(context.Background(), []string{testKey})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ids(found[testKey])).To(Equal([]string{"pi_3", "pi_2", "pi_1"}))

	reqs := f.received()
	g.Expect(reqs).To(HaveLen(3))
	for i, page := range []string{"", "page_2", "page_3"} {
		g.Expect(reqs[i].Path).To(Equal("/v1/payment_intents/search"))
		g.Expect(reqs[i].Query.Get("page")).To(Equal(page))
		g.Expect(reqs[i].Query.Get("query")).To(Equal(searchQuery([]string{testKey})))
		g.Expect(reqs[i].Query.Get("limit")).To(Equal("100"))
	}
}

func TestLookupPagesAreBounded(t *testing.T) {
	tests := []struct {
		name      string
		answer    func(w http.ResponseWriter, n int)
		wantCalls int
		contains  string
	}{
		{
			name: "more pages than it reads",
			answer: func(w http.ResponseWriter, n int) {
				writeJSON(w, http.StatusOK, searchPage(true, fmt.Sprintf("page_%d", n+2),
					charged(fmt.Sprintf("pi_%d", n), "canceled", testKey, "", 1767225600)))
			},
			wantCalls: maxSearchPages,
			contains:  "more than 1000",
		},
		{
			name: "more results without a next page",
			answer: func(w http.ResponseWriter, _ int) {
				writeJSON(w, http.StatusOK, searchPage(true, ""))
			},
			wantCalls: 1,
			contains:  "no next page",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeStripe(t, func(w http.ResponseWriter, _ *http.Request, n int) { tt.answer(w, n) })
			found, err := f.provider(t).Lookup(context.Background(), []string{testKey})
			g.Expect(paymenttest.CheckTransient(err)).To(Succeed())
			g.Expect(err.Error()).To(ContainSubstring(tt.contains))
			g.Expect(found).To(BeNil())
			g.Expect(f.received()).To(HaveLen(tt.wantCalls))
		})
	}
}

func TestLookupRefusesKeysWithoutSending(t *testing.T) {
	type lookupCase struct {
		keys     []string
		contains string
	}
	tests := map[string]lookupCase{
		"more than MaxLookupKeys": {keys: paymenttest.Keys(payment.MaxLookupKeys + 1), contains: "at most 10"},
	}
	for name, key := range paymenttest.InvalidKeys() {
		tests["a key "+name] = lookupCase{keys: []string{testKey, key}, contains: "visible ASCII"}
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeAnswering(t, searchPage(false, ""))
			found, err := f.provider(t).Lookup(context.Background(), tt.keys)
			g.Expect(paymenttest.CheckTransient(err)).To(Succeed())
			g.Expect(err.Error()).To(ContainSubstring(tt.contains))
			g.Expect(found).To(BeNil())
			g.Expect(f.received()).To(BeEmpty())
		})
	}
}

func TestLookupOfNoKeysSendsNothing(t *testing.T) {
	g := NewWithT(t)
	f := newFakeAnswering(t, searchPage(false, ""))
	found, err := f.provider(t).Lookup(context.Background(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeEmpty())
	g.Expect(f.received()).To(BeEmpty())
}

func TestLookupOfTenKeysSendsOneRequest(t *testing.T) {
	g := NewWithT(t)
	f := newFakeAnswering(t, searchPage(false, ""))
	keys := paymenttest.Keys(payment.MaxLookupKeys)
	// A key given twice is searched once.
	keys[9] = keys[0]
	_, err := f.provider(t).Lookup(context.Background(), keys)
	g.Expect(err).NotTo(HaveOccurred())
	r := f.single(g, http.MethodGet, "/v1/payment_intents/search")
	g.Expect(strings.Count(r.Query.Get("query"), " OR ")).To(Equal(8))
}

func TestLookupWithDoneContextSendsNothing(t *testing.T) {
	g := NewWithT(t)
	f := newFakeAnswering(t, searchPage(false, ""))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.provider(t).Lookup(ctx, []string{testKey})
	g.Expect(paymenttest.CheckTransient(err)).To(Succeed())
	g.Expect(errors.Is(err, context.Canceled)).To(BeTrue())
	g.Expect(f.received()).To(BeEmpty())
}

func TestLookupErrorsAreUncertain(t *testing.T) {
	tests := []struct {
		name       string
		answer     func(w http.ResponseWriter, r *http.Request, n int)
		class      error
		retryAfter time.Duration
		wantCalls  int
	}{
		{
			name:      "malformed query",
			answer:    first(jsonAnswer(http.StatusBadRequest, stripeError("invalid_request_error", "", "", "Invalid search query"))),
			class:     payment.ErrInvalid,
			wantCalls: 1,
		},
		{
			name:       "rate limited",
			answer:     first(jsonAnswer(http.StatusTooManyRequests, stripeError("invalid_request_error", "rate_limit", "", "slow down"), "Retry-After", "4")),
			retryAfter: 4 * time.Second,
			wantCalls:  1,
		},
		{name: "server error", answer: first(rawAnswer(http.StatusInternalServerError, "text/html", "<html>oops</html>")), wantCalls: 1},
		{name: "api error", answer: first(jsonAnswer(http.StatusInternalServerError, stripeError("api_error", "", "", "oops"))), wantCalls: 1},
		{name: "invalid API key", answer: first(jsonAnswer(http.StatusUnauthorized, stripeError("invalid_request_error", "", "", "Invalid API Key provided"))), wantCalls: 1},
		{name: "malformed JSON", answer: first(rawAnswer(http.StatusOK, "application/json", `{"data": [`)), wantCalls: 1},
		{name: "connection closed", answer: first(hangUp), wantCalls: 1},
		{
			name: "intent without an id",
			answer: first(jsonAnswer(http.StatusOK, searchPage(false, "",
				withField(charged("", "succeeded", testKey, "", 1767225600), "id", "")))),
			wantCalls: 1,
		},
		{
			name: "second page fails",
			answer: func(w http.ResponseWriter, r *http.Request, n int) {
				if n == 0 {
					writeJSON(w, http.StatusOK, searchPage(true, "page_2", succeeded("pi_1")))
					return
				}
				writeJSON(w, http.StatusServiceUnavailable, stripeError("api_error", "", "", "unavailable"), "Retry-After", "9")
			},
			retryAfter: 9 * time.Second,
			wantCalls:  2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeStripe(t, tt.answer)
			found, err := f.provider(t).Lookup(context.Background(), []string{testKey, "billing/invoice-43"})
			g.Expect(paymenttest.CheckTransient(err)).To(Succeed())
			g.Expect(found).To(BeNil(), "nothing is known about any key")
			if tt.class != nil {
				g.Expect(errors.Is(err, tt.class)).To(BeTrue())
			}
			g.Expect(payment.RetryAfter(err)).To(Equal(tt.retryAfter))
			g.Expect(f.received()).To(HaveLen(tt.wantCalls))
		})
	}
}

func TestSearchQuery(t *testing.T) {
	tests := []struct {
		name string
		keys []string
		want string
	}{
		{name: "one key", keys: []string{"billing/invoice-42"}, want: `metadata['paymentjob_idempotency_key']:'billing/invoice-42'`},
		{name: "a quote", keys: []string{"o'brien"}, want: `metadata['paymentjob_idempotency_key']:'o\'brien'`},
		{name: "a backslash and a quote", keys: []string{`back\slash'`}, want: `metadata['paymentjob_idempotency_key']:'back\\slash\''`},
		{
			name: "two keys, one twice",
			keys: []string{"a/1", "b/2", "a/1"},
			want: `metadata['paymentjob_idempotency_key']:'a/1' OR metadata['paymentjob_idempotency_key']:'b/2'`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(searchQuery(tt.keys)).To(Equal(tt.want))
		})
	}
}

func TestSettlePollsUntilFinal(t *testing.T) {
	tests := []pollCase{
		{name: "processing until succeeded", first: "processing", pending: 2, final: succeeded("pi_1"), check: succeededAs("succeeded")},
		{name: "already succeeded", final: intent("pi_1", "requires_capture"), check: succeededAs("requires_capture")},
		{name: "processing until the attempt failed", first: "processing", pending: 1, final: attemptFailed(), check: declinedWith(payment.ReasonCardDeclined, "do_not_honor")},
		{name: "canceled", final: intent("pi_1", "canceled"), check: declinedWith(ReasonPaymentCanceled, "canceled")},
		{name: "an unknown status is not final", final: intent("pi_1", "requires_review"), check: func(g Gomega, _ payment.Outcome, err error) {
			g.Expect(paymenttest.CheckTransient(err)).To(Succeed())
			g.Expect(err.Error()).To(ContainSubstring("requires_review"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeStripe(t, tt.answer)
			out, err := f.provider(t).Settle(context.Background(), testKey, "pi_1")
			tt.check(g, out, err)

			g.Expect(f.count(http.MethodPost)).To(Equal(0), "settling never creates an intent")
			tt.expectReads(g, f.received())
		})
	}
}

func TestSettleRefusesAnotherIntent(t *testing.T) {
	tests := []struct {
		name     string
		intent   map[string]any
		contains string
	}{
		{
			name:     "another key",
			intent:   charged("pi_1", "processing", "billing/invoice-4", "sha256:a", 1767225600),
			contains: "carries another idempotency key",
		},
		{
			name:     "no key",
			intent:   withField(succeeded("pi_1"), "metadata", map[string]string{}),
			contains: "carries no idempotency key",
		},
		{
			name:     "another intent",
			intent:   succeeded("pi_2"),
			contains: "pi_2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeAnswering(t, tt.intent)
			// Bounded, should the intent be polled although it is not
			// the one looked for.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			out, err := f.provider(t).Settle(ctx, testKey, "pi_1")
			g.Expect(paymenttest.CheckTransient(err)).To(Succeed())
			g.Expect(err.Error()).To(ContainSubstring(tt.contains))
			g.Expect(err.Error()).To(ContainSubstring("pi_1"))
			g.Expect(out).To(Equal(payment.Outcome{}))
			g.Expect(f.received()).To(HaveLen(1), "another intent is not polled")
		})
	}
}

func TestSettleErrorsAreUncertain(t *testing.T) {
	for _, s := range settlers {
		for _, tt := range readErrors {
			t.Run(s.name+"/"+tt.name, func(t *testing.T) {
				g := NewWithT(t)
				f := newFakeStripe(t, first(tt.answer))
				_, err := s.call(f.provider(t), context.Background(), testKey, s.id)
				tt.expectAbout(g, err, s.id)
				g.Expect(f.received()).To(HaveLen(1))
			})
		}
	}
}

func TestSettleRefusesBadInputWithoutSending(t *testing.T) {
	type settleCase struct{ key, id string }
	for _, s := range settlers {
		tests := map[string]settleCase{
			"empty id":          {key: testKey, id: ""},
			"id with a newline": {key: testKey, id: s.id + "\n"},
		}
		for name, key := range paymenttest.InvalidKeys() {
			tests["key "+name] = settleCase{key: key, id: s.id}
		}
		for name, tt := range tests {
			t.Run(s.name+"/"+name, func(t *testing.T) {
				g := NewWithT(t)
				f := newFakeAnswering(t, succeeded("pi_1"))
				_, err := s.call(f.provider(t), context.Background(), tt.key, tt.id)
				g.Expect(paymenttest.CheckTransient(err)).To(Succeed())
				g.Expect(f.received()).To(BeEmpty())
			})
		}
	}
}
