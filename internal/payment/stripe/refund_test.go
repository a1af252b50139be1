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

// The tests of Refund and SettleRefund: refund.go.

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/paymenttest"
)

// testRefundKey is the key the refund tests send.
const testRefundKey = "billing.refund/invoice-42"

// fullRefund is a refund request with every field set.
func fullRefund() payment.RefundRequest {
	return payment.RefundRequest{
		Charge:   "pi_1",
		Amount:   1500,
		Currency: "usd",
		Reason:   "requested_by_customer",
		Metadata: map[string]string{"ticket": "T-7"},
	}
}

// refundJSON is the JSON of a refund of pi_1 as Stripe returns it, made
// under key (no metadata entry when key is empty) at the Unix time created.
func refundJSON(id, status, key string, amount, created int64) map[string]any {
	metadata := map[string]string{}
	if key != "" {
		metadata[payment.MetadataKeyIdempotencyKey] = key
		metadata[payment.MetadataKeyFingerprint] = "sha256:" + id
	}
	return map[string]any{
		"id":             id,
		"object":         "refund",
		"amount":         amount,
		"currency":       "usd",
		"created":        created,
		"status":         status,
		"payment_intent": "pi_1",
		"metadata":       metadata,
	}
}

// pendingRefund is re_1 under testRefundKey in status.
func pendingRefund(status string) map[string]any {
	return refundJSON("re_1", status, testRefundKey, 1500, 1767225600)
}

// refundOf is the outcome of re_1 in status.
func refundOf(status string) payment.Outcome {
	return payment.Outcome{ID: "re_1", Status: status, Amount: 1500, Currency: "usd", Created: time.Unix(1767225600, 0).UTC()}
}

func TestRefundSendsOneCreateRequest(t *testing.T) {
	cases := map[string]struct {
		req payment.RefundRequest
		// extra are the form's fields beyond the ones every refund sends.
		extra url.Values
	}{
		"every field":            {req: fullRefund(), extra: url.Values{"reason": {"requested_by_customer"}, "metadata[ticket]": {"T-7"}}},
		"no reason, no metadata": {req: payment.RefundRequest{Charge: "pi_1", Amount: 1500, Currency: "usd"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			// Stripe answers with the refund an earlier attempt made.
			f := newFakeAnswering(t, pendingRefund("succeeded"), "Idempotent-Replayed", "true")
			out, err := f.provider(t).Refund(context.Background(), testRefundKey, c.req)
			g.Expect(err).NotTo(HaveOccurred())
			want := refundOf("succeeded")
			want.Replayed = true
			g.Expect(out).To(Equal(want))

			sent := f.single(g, http.MethodPost, "/v1/refunds")
			g.Expect(sent.Header.Get("Idempotency-Key")).To(Equal(testRefundKey))
			form := url.Values{
				"payment_intent": {"pi_1"},
				"amount":         {"1500"},
				"metadata[" + payment.MetadataKeyIdempotencyKey + "]": {testRefundKey},
				"metadata[" + payment.MetadataKeyFingerprint + "]":    {payment.RefundHash(testRefundKey, c.req)},
			}
			maps.Copy(form, c.extra)
			g.Expect(sent.Form).To(Equal(form))
		})
	}
}

// refundPoll is re_1 created in status first, then read until final: the
// reads answer reads in order, the last one to every later read.
type refundPoll struct {
	name  string
	first string
	reads []map[string]any
	check func(g Gomega, out payment.Outcome, err error)
}

// answer answers the create with re_1 in status first, and the nth read
// with reads[n].
func (tt refundPoll) answer(w http.ResponseWriter, r *http.Request, n int) {
	body := pendingRefund(tt.first)
	if r.Method == http.MethodGet {
		body = tt.reads[min(n, len(tt.reads)-1)]
	}
	writeJSON(w, http.StatusOK, body)
}

// refundPolls are refunds read until they are final.
var refundPolls = []refundPoll{
	{
		name: "pending until succeeded", first: "pending",
		reads: []map[string]any{pendingRefund("pending"), pendingRefund("pending"), pendingRefund("succeeded")},
		check: func(g Gomega, out payment.Outcome, err error) {
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out).To(Equal(refundOf("succeeded")))
		},
	},
	{
		name: "requires_action until failed", first: "requires_action",
		reads: []map[string]any{pendingRefund("requires_action"), withField(pendingRefund("failed"), "failure_reason", "expired_or_canceled_card")},
		check: declinedWith(payment.ReasonRefundFailed, "expired_or_canceled_card"),
	},
	{
		name: "pending until canceled", first: "pending",
		reads: []map[string]any{pendingRefund("canceled")},
		check: declinedWith(payment.ReasonRefundFailed, "re_1 canceled"),
	},
	{
		name: "an unknown status is uncertain", first: "pending",
		reads: []map[string]any{pendingRefund("reversed")},
		check: func(g Gomega, _ payment.Outcome, err error) {
			g.Expect(paymenttest.CheckTransient(err)).To(Succeed())
			g.Expect(err.Error()).To(ContainSubstring(`"reversed"`))
		},
	},
}

func TestRefundPollsUntilFinal(t *testing.T) {
	calls := []struct {
		name string
		// creates is how many refunds the call creates: it reads after.
		creates int
		call    func(p *Provider) (payment.Outcome, error)
	}{
		{name: "Refund", creates: 1, call: func(p *Provider) (payment.Outcome, error) {
			return p.Refund(context.Background(), testRefundKey, fullRefund())
		}},
		{name: "SettleRefund", call: func(p *Provider) (payment.Outcome, error) {
			return p.SettleRefund(context.Background(), testRefundKey, "re_1")
		}},
	}
	for _, c := range calls {
		for _, tt := range refundPolls {
			t.Run(c.name+"/"+tt.name, func(t *testing.T) {
				g := NewWithT(t)
				f := newFakeStripe(t, tt.answer)
				out, err := c.call(f.provider(t))
				tt.check(g, out, err)

				g.Expect(f.count(http.MethodPost)).To(Equal(c.creates), "polling never creates a refund")
				expectRefundReads(g, f.received()[c.creates:], len(tt.reads))
			})
		}
	}
}

// expectRefundReads asserts that reads are n GETs of re_1 with the API key.
func expectRefundReads(g Gomega, reads []recorded, n int) {
	g.Expect(reads).To(HaveLen(n))
	for _, r := range reads {
		g.Expect(r.Method).To(Equal(http.MethodGet))
		g.Expect(r.Path).To(Equal("/v1/refunds/re_1"))
		g.Expect(r.Header.Get("Authorization")).To(Equal("Bearer " + testAPIKey))
	}
}

// refundErrorCases are Stripe's answers that refuse a refund it will not
// make, with the reason each is given.
var refundErrorCases = []errorCase{
	{
		name: "amount beyond what is left", answer: jsonAnswer(http.StatusBadRequest, map[string]any{"error": map[string]any{
			"type": "invalid_request_error", "code": "amount_too_large", "param": "amount",
			"message": "Refund amount ($20.00) is greater than unrefunded amount on charge ($15.00)"}}),
		class: payment.ErrDeclined, reason: payment.ReasonRefundExceedsCharge, contains: []string{"amount_too_large (parameter amount): Refund amount"},
	},
	{
		// Stripe does not document a code for this refusal, and answers
		// it without one: the parameter says what was refused.
		name: "amount beyond what is left, without a code", answer: jsonAnswer(http.StatusBadRequest, map[string]any{"error": map[string]any{
			"type": "invalid_request_error", "param": "amount",
			"message": "Refund amount ($20.00) is greater than unrefunded amount on charge ($15.00)"}}),
		class: payment.ErrDeclined, reason: payment.ReasonRefundExceedsCharge,
		contains: []string{"(parameter amount): Refund amount ($20.00) is greater than unrefunded amount on charge ($15.00)"},
	},
	{
		name: "amount_too_large without a parameter", answer: jsonAnswer(http.StatusBadRequest, stripeError("invalid_request_error", "amount_too_large", "", "Amount too large.")),
		class: payment.ErrDeclined, reason: payment.ReasonRefundExceedsCharge, contains: []string{"amount_too_large: Amount too large."},
	},
	{
		name: "already refunded", answer: jsonAnswer(http.StatusBadRequest, stripeError("invalid_request_error", "charge_already_refunded", "", "Charge ch_1 has already been refunded.")),
		class: payment.ErrDeclined, reason: payment.ReasonRefundExceedsCharge, contains: []string{"charge_already_refunded"},
	},
	{
		name: "no such payment intent", answer: jsonAnswer(http.StatusBadRequest, map[string]any{"error": map[string]any{
			"type": "invalid_request_error", "code": "resource_missing", "param": "payment_intent", "message": "No such payment_intent: 'pi_1'"}}),
		class: payment.ErrDeclined, reason: payment.ReasonChargeNotFound, contains: []string{"No such payment_intent"},
	},
	{
		name: "disputed", answer: jsonAnswer(http.StatusBadRequest, stripeError("invalid_request_error", "charge_disputed", "", "Charge ch_1 has been charged back.")),
		class: payment.ErrDeclined, reason: payment.ReasonChargeNotRefundable, contains: []string{"charge_disputed"},
	},
	{
		name: "refund of a disputed payment", answer: jsonAnswer(http.StatusBadRequest, stripeError("invalid_request_error", "refund_disputed_payment", "", "disputed")),
		class: payment.ErrDeclined, reason: payment.ReasonChargeNotRefundable,
	},
	{
		name: "not refundable", answer: jsonAnswer(http.StatusBadRequest, stripeError("invalid_request_error", "charge_not_refundable", "", "not refundable")),
		class: payment.ErrDeclined, reason: payment.ReasonChargeNotRefundable,
	},
	{
		name: "intent that has not succeeded", answer: jsonAnswer(http.StatusBadRequest, stripeError("invalid_request_error", "payment_intent_unexpected_state", "", "This PaymentIntent does not have a successful charge to refund.")),
		class: payment.ErrDeclined, reason: payment.ReasonChargeNotRefundable, contains: []string{"successful charge"},
	},
	{
		name: "key used for another refund", answer: jsonAnswer(http.StatusBadRequest, stripeError("idempotency_error", "", "", "Keys for idempotent requests can only be used with the same parameters")),
		class: payment.ErrKeyReused, reason: payment.ReasonKeyReused,
	},
	{
		name: "a code of the list on a 5xx is uncertain", answer: jsonAnswer(http.StatusInternalServerError, stripeError("api_error", "charge_already_refunded", "", "odd")),
		contains: []string{"HTTP 500"},
	},
}

func TestRefundErrors(t *testing.T) {
	// The charge's error answers, which a refund classifies in the same
	// way, then the refund's own.
	var tests []errorCase
	for _, tt := range errorCases {
		rec := httptest.NewRecorder()
		tt.answer(rec, httptest.NewRequest(http.MethodPost, "/v1/refunds", nil))
		if rec.Code >= http.StatusBadRequest || rec.Body.Len() == 0 {
			tests = append(tests, tt)
		}
	}
	tests = append(tests, refundErrorCases...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeStripe(t, func(w http.ResponseWriter, r *http.Request, _ int) { tt.answer(w, r) })

			out, err := f.provider(t).Refund(context.Background(), testRefundKey, fullRefund())
			tt.expect(g, err)
			g.Expect(out).To(Equal(payment.Outcome{}))
			g.Expect(f.count(http.MethodPost)).To(Equal(1))
			g.Expect(f.count(http.MethodGet)).To(Equal(0))
		})
	}
}

func TestRefundRefusesABadChargeWithoutSending(t *testing.T) {
	charges := map[string]string{
		"no charge":              "",
		"charge with a newline":  "pi_1\n",
		"charge with a space":    "pi 1",
		"charge with non-ASCII":  "pi_é",
		"charge of one bad byte": "\xff",
	}
	for name, charge := range charges {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeAnswering(t, pendingRefund("succeeded"))
			req := fullRefund()
			req.Charge = charge
			_, err := f.provider(t).Refund(context.Background(), testRefundKey, req)
			g.Expect(errors.Is(err, payment.ErrInvalid)).To(BeTrue(), "error %v", err)
			g.Expect(f.received()).To(BeEmpty())
		})
	}
}

func TestSettleRefundRefusesAnotherRefund(t *testing.T) {
	tests := []struct {
		name     string
		refund   map[string]any
		contains string
	}{
		{name: "another key", refund: refundJSON("re_1", "pending", "billing.refund/other", 1500, 1), contains: "carries another idempotency key"},
		{name: "no key", refund: refundJSON("re_1", "succeeded", "", 1500, 1), contains: "carries no idempotency key"},
		{name: "another refund", refund: refundJSON("re_2", "succeeded", testRefundKey, 1500, 1), contains: "re_2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeAnswering(t, tt.refund)
			out, err := f.provider(t).SettleRefund(context.Background(), testRefundKey, "re_1")
			g.Expect(paymenttest.CheckTransient(err)).To(Succeed())
			g.Expect(err.Error()).To(ContainSubstring(tt.contains))
			g.Expect(out).To(Equal(payment.Outcome{}))
			g.Expect(f.received()).To(HaveLen(1), "another refund is not polled")
		})
	}
}
