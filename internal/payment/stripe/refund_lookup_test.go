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

// The tests of LookupRefunds.

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/paymenttest"
)

// refundList is the JSON of one page of a refund list.
func refundList(hasMore bool, data ...map[string]any) map[string]any {
	return map[string]any{
		"object":   "list",
		"url":      "/v1/refunds",
		"has_more": hasMore,
		"data":     append([]map[string]any{}, data...),
	}
}

// bookOf answers the read of pi_1 with the intent charged under testKey,
// and the nth list of its refunds with pages[n].
func bookOf(pages ...map[string]any) func(w http.ResponseWriter, r *http.Request, n int) {
	return func(w http.ResponseWriter, r *http.Request, _ int) {
		if r.URL.Path == "/v1/payment_intents/pi_1" {
			writeJSON(w, http.StatusOK, charged("pi_1", "succeeded", testKey, "sha256:charge", 1767225600))
			return
		}
		n := 0
		if r.URL.Query().Has("starting_after") {
			n = 1
		}
		writeJSON(w, http.StatusOK, pages[min(n, len(pages)-1)])
	}
}

func TestLookupRefundsReadsTheIntentAndEveryRefund(t *testing.T) {
	g := NewWithT(t)
	const otherKey = "billing.refund/invoice-42-b"
	f := newFakeStripe(t, bookOf(
		refundList(true,
			refundJSON("re_3", "pending", otherKey, 300, 1767229300),
			refundJSON("re_2", "failed", testRefundKey, 500, 1767229200),
			refundJSON("re_x", "succeeded", "", 100, 1767229150),
		),
		refundList(false,
			refundJSON("re_1", "succeeded", testRefundKey, 500, 1767229100),
			refundJSON("re_0", "canceled", "", 900, 1767229000),
		),
	))

	book, err := f.provider(t).LookupRefunds(context.Background(), "pi_1")
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(book.Charge).To(Equal(payment.Found{
		Key:         testKey,
		Outcome:     payment.Outcome{ID: "pi_1", Status: "succeeded", Amount: 2000, Currency: "usd", Created: time.Unix(1767225600, 0).UTC()},
		State:       payment.StateSucceeded,
		Fingerprint: "sha256:charge",
	}))
	g.Expect(book.Complete).To(BeTrue())
	// re_3, re_x (no key) and re_1; not the failed re_2 nor the canceled re_0.
	g.Expect(book.Refunded).To(Equal(int64(300 + 100 + 500)))
	g.Expect(book.Refunds).To(HaveLen(2))
	g.Expect(ids(book.Refunds[testRefundKey])).To(Equal([]string{"re_2", "re_1"}), "newest first")
	g.Expect(book.Refunds[testRefundKey][0]).To(Equal(payment.Found{
		Key:         testRefundKey,
		Outcome:     payment.Outcome{ID: "re_2", Status: "failed", Amount: 500, Currency: "usd", Created: time.Unix(1767229200, 0).UTC()},
		State:       payment.StateNotCharged,
		Fingerprint: "sha256:re_2",
	}))
	g.Expect(book.Refunds[otherKey]).To(HaveLen(1))
	g.Expect(book.Refunds[otherKey][0].State).To(Equal(payment.StatePending))

	// The intent and the refunds are read at once: one read of the intent,
	// and the refund list's pages in order.
	var reqs []recorded
	intentReads := 0
	for _, r := range f.received() {
		if r.Path == "/v1/payment_intents/pi_1" {
			intentReads++
			continue
		}
		reqs = append(reqs, r)
	}
	g.Expect(intentReads).To(Equal(1))
	g.Expect(reqs).To(HaveLen(2))
	reqs = append([]recorded{{}}, reqs...)
	for i, r := range reqs[1:] {
		g.Expect(r.Method).To(Equal(http.MethodGet))
		g.Expect(r.Path).To(Equal("/v1/refunds"))
		g.Expect(r.Query.Get("payment_intent")).To(Equal("pi_1"))
		g.Expect(r.Query.Get("limit")).To(Equal("100"))
		g.Expect(r.Query.Has("starting_after")).To(Equal(i == 1))
	}
	g.Expect(reqs[2].Query.Get("starting_after")).To(Equal("re_x"), "the next page starts after the last refund listed")
	g.Expect(f.count(http.MethodPost)).To(Equal(0))
}

func TestLookupRefundsOfAnIntentWithoutRefunds(t *testing.T) {
	g := NewWithT(t)
	f := newFakeStripe(t, bookOf(refundList(false)))

	book, err := f.provider(t).LookupRefunds(context.Background(), "pi_1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(book.Refunds).To(BeEmpty())
	g.Expect(book.Refunded).To(BeZero())
	g.Expect(book.Complete).To(BeTrue())
	g.Expect(book.Charge.ID).To(Equal("pi_1"))
}

func TestListRefundsDoesNotReadTheIntent(t *testing.T) {
	g := NewWithT(t)
	f := newFakeStripe(t, bookOf(
		refundList(true, refundJSON("re_2", "succeeded", testRefundKey, 500, 1767229200)),
		refundList(false, refundJSON("re_1", "pending", "", 300, 1767229100)),
	))

	book, err := f.provider(t).ListRefunds(context.Background(), "pi_1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(book.Charge).To(Equal(payment.Found{}), "the intent is not read, so the book says nothing of it")
	g.Expect(book.Complete).To(BeTrue())
	g.Expect(book.Refunded).To(Equal(int64(500+300)), "the pending refund without a key counts too")
	g.Expect(ids(book.Refunds[testRefundKey])).To(Equal([]string{"re_2"}))

	reqs := f.received()
	g.Expect(reqs).To(HaveLen(2), "two pages of refunds, and no read of the intent")
	for _, r := range reqs {
		g.Expect(r.Path).To(Equal("/v1/refunds"))
		g.Expect(r.Query.Get("payment_intent")).To(Equal("pi_1"))
	}

	// payment.ListRefunds takes the shorter path of a RefundLister.
	book, err = payment.ListRefunds(context.Background(), f.provider(t), "pi_1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(book.Refunded).To(Equal(int64(800)))
	g.Expect(f.received()).To(HaveLen(4), "two more list requests, still no read of the intent")
	for _, r := range f.received() {
		g.Expect(r.Path).NotTo(HavePrefix("/v1/payment_intents"))
	}
}

func TestListRefundsRefusesBadInputWithoutSending(t *testing.T) {
	g := NewWithT(t)
	f := newFakeStripe(t, bookOf(refundList(false)))
	_, err := f.provider(t).ListRefunds(context.Background(), "pi 1")
	g.Expect(paymenttest.CheckTransient(err)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = f.provider(t).ListRefunds(ctx, "pi_1")
	g.Expect(paymenttest.CheckTransient(err)).To(Succeed())
	g.Expect(f.received()).To(BeEmpty())
}

func TestLookupRefundsPagesAreBounded(t *testing.T) {
	g := NewWithT(t)
	f := newFakeStripe(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.URL.Path == "/v1/payment_intents/pi_1" {
			writeJSON(w, http.StatusOK, succeeded("pi_1"))
			return
		}
		writeJSON(w, http.StatusOK, refundList(true, refundJSON(fmt.Sprintf("re_%d", n), "succeeded", "", 1, 1)))
	})

	_, err := f.provider(t).LookupRefunds(context.Background(), "pi_1")
	g.Expect(paymenttest.CheckTransient(err)).To(Succeed())
	g.Expect(err.Error()).To(ContainSubstring("more than 1000"))
	g.Expect(f.count(http.MethodGet)).To(Equal(1 + maxRefundPages))
}

func TestLookupRefundsErrorsAreUncertain(t *testing.T) {
	intentAnd := func(list func(w http.ResponseWriter, r *http.Request)) func(w http.ResponseWriter, r *http.Request, n int) {
		return func(w http.ResponseWriter, r *http.Request, _ int) {
			if r.URL.Path == "/v1/payment_intents/pi_1" {
				writeJSON(w, http.StatusOK, succeeded("pi_1"))
				return
			}
			list(w, r)
		}
	}
	tests := []struct {
		name     string
		handle   func(w http.ResponseWriter, r *http.Request, n int)
		contains string
	}{
		{name: "the read answers another intent", handle: first(jsonAnswer(http.StatusOK, succeeded("pi_2"))), contains: "pi_2"},
		{name: "the list fails", handle: intentAnd(jsonAnswer(http.StatusInternalServerError, stripeError("api_error", "", "", "oops"))), contains: "cannot list the refunds of payment intent pi_1"},
		{name: "the list is rate limited", handle: intentAnd(jsonAnswer(http.StatusTooManyRequests, stripeError("rate_limit_error", "", "", "slow down"))), contains: "HTTP 429"},
		{name: "a refund without an id", handle: intentAnd(jsonAnswer(http.StatusOK, refundList(false, refundJSON("", "succeeded", "", 1, 1)))), contains: "without an id"},
		{name: "a refund of another intent", handle: intentAnd(jsonAnswer(http.StatusOK, refundList(false,
			withField(refundJSON("re_9", "succeeded", "", 1, 1), "payment_intent", "pi_2")))), contains: "re_9 of another payment intent"},
		{name: "more pages but none listed", handle: intentAnd(jsonAnswer(http.StatusOK, refundList(true))), contains: "listed none"},
		{name: "the list is not Stripe's JSON", handle: intentAnd(rawAnswer(http.StatusOK, "text/html", "<html>hi</html>")), contains: "not the Stripe API's JSON"},
		{name: "the connection closes", handle: intentAnd(hangUp), contains: "pi_1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeStripe(t, tt.handle)
			book, err := f.provider(t).LookupRefunds(context.Background(), "pi_1")
			g.Expect(paymenttest.CheckTransient(err)).To(Succeed())
			g.Expect(err.Error()).To(ContainSubstring(tt.contains))
			g.Expect(err.Error()).NotTo(ContainSubstring(testAPIKey))
			g.Expect(book).To(Equal(payment.RefundBook{}))
			g.Expect(f.count(http.MethodPost)).To(Equal(0))
		})
	}
}

// An intent the account does not hold (Stripe answers 404
// resource_missing) is no uncertainty: the refund stalls ChargeNotFound
// instead of retrying the lookup for ever.
func TestLookupRefundsOfAnIntentTheAccountDoesNotHold(t *testing.T) {
	g := NewWithT(t)
	f := newFakeStripe(t, first(jsonAnswer(http.StatusNotFound,
		stripeError("invalid_request_error", "resource_missing", "intent", "No such payment_intent: 'pi_1'"))))
	book, err := f.provider(t).LookupRefunds(context.Background(), "pi_1")
	refusal, ok := payment.IsRefusal(err)
	g.Expect(ok).To(BeTrue(), "a refusal, not %v", err)
	g.Expect(refusal.Reason).To(Equal(payment.ReasonChargeNotFound))
	g.Expect(refusal.Message).To(ContainSubstring("pi_1"))
	g.Expect(err.Error()).NotTo(ContainSubstring(testAPIKey))
	g.Expect(book).To(Equal(payment.RefundBook{}))
	// The list is read with the intent, at once; the intent's answer decides.
	g.Expect(f.count(http.MethodGet)).To(Equal(2))
	g.Expect(f.count(http.MethodPost)).To(Equal(0))
}

func TestLookupRefundsRefusesBadInputWithoutSending(t *testing.T) {
	for name, charge := range map[string]string{"empty id": "", "id with a newline": "pi_1\n", "id with a space": "pi 1"} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeAnswering(t, succeeded("pi_1"))
			_, err := f.provider(t).LookupRefunds(context.Background(), charge)
			g.Expect(paymenttest.CheckTransient(err)).To(Succeed())
			g.Expect(f.received()).To(BeEmpty())
		})
	}
	t.Run("done context", func(t *testing.T) {
		g := NewWithT(t)
		f := newFakeAnswering(t, succeeded("pi_1"))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := f.provider(t).LookupRefunds(ctx, "pi_1")
		g.Expect(paymenttest.CheckTransient(err)).To(Succeed())
		g.Expect(err).To(MatchError(context.Canceled))
		g.Expect(f.received()).To(BeEmpty())
	})
}
