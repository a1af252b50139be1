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
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/sandboxprovider"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// charged returns a succeeded PaymentIntent of amount made through e.
func charged(g *WithT, e *sandbox.Engine, key string, amount int64) sandbox.Intent {
	in, _, err := e.CreatePaymentIntent(key, request(amount, sandbox.PaymentMethodVisa))
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return in
}

// refundOf is a refund of amount of the intent.
func refundOf(in sandbox.Intent, amount int64) sandbox.RefundParams {
	return sandbox.RefundParams{PaymentIntent: in.ID, Amount: amount, Reason: sandbox.RefundReasonRequestedByCustomer,
		Metadata: map[string]string{"order": "42"}}
}

// refundResult is the answer of a CreateRefund run in a goroutine.
type refundResult struct {
	refund sandbox.Refund
	err    error
}

// refundAsync runs CreateRefund in a goroutine.
func refundAsync(e *sandbox.Engine, key string, p sandbox.RefundParams) <-chan refundResult {
	done := make(chan refundResult, 1)
	go func() {
		r, _, err := e.CreateRefund(key, p)
		done <- refundResult{refund: r, err: err}
	}()
	return done
}

// noneBeyondTheirAmount checks the oracle: no PaymentIntent refunded beyond
// its amount.
func noneBeyondTheirAmount(g *WithT, e *sandbox.Engine) {
	for _, r := range e.ListRefunds("") {
		in, ok := e.GetPaymentIntent(r.PaymentIntent)
		g.ExpectWithOffset(1, ok).To(BeTrue())
		g.ExpectWithOffset(1, e.Refunded(in.ID)).To(BeNumerically("<=", in.Amount), in.ID)
	}
}

func TestCreateRefundRefundsOnceAndReplays(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now))
	in := charged(g, e, "ns/order-42", 2000)

	first, replayed, err := e.CreateRefund("ns.refund/r1", refundOf(in, 500))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replayed).To(BeFalse())
	g.Expect(first.ID).To(MatchRegexp(`^re_[0-9A-Za-z]{24}$`))
	g.Expect(first).To(Equal(sandbox.Refund{
		ID: first.ID, PaymentIntent: in.ID, Charge: "ch_" + strings.TrimPrefix(in.ID, "pi_"), Amount: 500,
		Currency: "eur", Reason: sandbox.RefundReasonRequestedByCustomer, Metadata: map[string]string{"order": "42"},
		Status: sandbox.RefundStatusSucceeded, Created: clock.Now(), IdempotencyKey: "ns.refund/r1",
	}))

	again, replayed, err := e.CreateRefund("ns.refund/r1", refundOf(in, 500))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replayed).To(BeTrue())
	g.Expect(again).To(Equal(first))
	g.Expect(e.Refunded(in.ID)).To(BeEquivalentTo(500))

	// The key with another amount, and keys shared with payment intents.
	_, _, err = e.CreateRefund("ns.refund/r1", refundOf(in, 400))
	g.Expect(stripeError(g, err).Type).To(Equal(sandbox.ErrorTypeIdempotency))
	_, _, err = e.CreateRefund("ns/order-42", refundOf(in, 400))
	g.Expect(stripeError(g, err).Type).To(Equal(sandbox.ErrorTypeIdempotency))
	_, _, err = e.CreatePaymentIntent("ns.refund/r1", request(2000, sandbox.PaymentMethodVisa))
	g.Expect(stripeError(g, err).Type).To(Equal(sandbox.ErrorTypeIdempotency))

	got, ok := e.GetRefund(first.ID)
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(Equal(first))
	_, ok = e.GetRefund("re_missing")
	g.Expect(ok).To(BeFalse())

	s := e.Stats()
	g.Expect(s.RefundRequests).To(BeEquivalentTo(4))
	g.Expect(s.Refunds).To(BeEquivalentTo(1))
	g.Expect(s.RefundsByKey).To(Equal(map[string]int{"ns.refund/r1": 1}))
	g.Expect(s.Replays).To(BeEquivalentTo(1))
	g.Expect(s.KeyReusedErrors).To(BeEquivalentTo(3))
	g.Expect(s.Charges).To(BeEquivalentTo(1))
}

// TestCreateRefundBeyondWhatIsLeftWithoutACode refuses a refund beyond
// what is left as Stripe answers it in the wild once
// SetAmountTooLargeCode(false) says so: an invalid_request_error on the
// amount parameter with Stripe's message and no code, saved under its key
// and replayed so. The in-process Provider still names the reason.
func TestCreateRefundBeyondWhatIsLeftWithoutACode(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	g.Expect(e.AmountTooLargeCode()).To(BeTrue(), "the code is sent by default")
	in := charged(g, e, "charge", 2000)
	_, _, err := e.CreateRefund("r1", refundOf(in, 1500))
	g.Expect(err).NotTo(HaveOccurred())

	e.SetAmountTooLargeCode(false)
	g.Expect(e.AmountTooLargeCode()).To(BeFalse())
	for _, wantReplayed := range []bool{false, true} {
		_, replayed, err := e.CreateRefund("r2", refundOf(in, 1500))
		g.Expect(replayed).To(Equal(wantReplayed))
		se := stripeError(g, err)
		g.Expect(se.HTTPStatus).To(Equal(http.StatusBadRequest))
		g.Expect(se.Type).To(Equal(sandbox.ErrorTypeInvalidRequest))
		g.Expect(se.Code).To(BeEmpty())
		g.Expect(se.Param).To(Equal("amount"))
		g.Expect(se.Message).To(Equal("Refund amount (1500 eur) is greater than unrefunded amount on charge (500 eur)."))
	}
	_, err = sandboxprovider.NewProvider(e).Refund(context.Background(), "r3",
		payment.RefundRequest{Charge: in.ID, Amount: 1500, Currency: in.Currency})
	r, refused := payment.IsRefusal(err)
	g.Expect(refused).To(BeTrue(), "%v", err)
	g.Expect(r.Reason).To(Equal(payment.ReasonRefundExceedsCharge))

	e.SetAmountTooLargeCode(true)
	_, _, err = e.CreateRefund("r4", refundOf(in, 1500))
	g.Expect(stripeError(g, err).Code).To(Equal(sandbox.CodeAmountTooLarge))
	g.Expect(e.Refunded(in.ID)).To(BeEquivalentTo(1500))
}

func TestCreateRefundPartialRefundsAddUpToTheCharge(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	in := charged(g, e, "charge", 2000)

	_, _, err := e.CreateRefund("r1", refundOf(in, 700))
	g.Expect(err).NotTo(HaveOccurred())
	_, _, err = e.CreateRefund("r2", refundOf(in, 1301))
	se := stripeError(g, err)
	g.Expect(se.HTTPStatus).To(Equal(http.StatusBadRequest))
	g.Expect(se.Type).To(Equal(sandbox.ErrorTypeInvalidRequest))
	g.Expect(se.Code).To(Equal(sandbox.CodeAmountTooLarge))
	g.Expect(se.Param).To(Equal("amount"))

	// Saved under its key, as a decline is.
	_, replayed, err := e.CreateRefund("r2", refundOf(in, 1301))
	g.Expect(replayed).To(BeTrue())
	g.Expect(stripeError(g, err).Code).To(Equal(sandbox.CodeAmountTooLarge))

	// No amount: what is left.
	rest, _, err := e.CreateRefund("r3", sandbox.RefundParams{PaymentIntent: in.ID})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rest.Amount).To(BeEquivalentTo(1300))
	g.Expect(e.Refunded(in.ID)).To(BeEquivalentTo(2000))

	for key, p := range map[string]sandbox.RefundParams{"one more": refundOf(in, 1), "what is left": {PaymentIntent: in.ID}} {
		_, _, err = e.CreateRefund(key, p)
		se = stripeError(g, err)
		g.Expect(se.Code).To(Equal(sandbox.CodeChargeAlreadyRefunded))
		g.Expect(se.Message).To(ContainSubstring("ch_"))
	}
	g.Expect(e.ListRefunds(in.ID)).To(HaveLen(2))
	s := e.Stats()
	g.Expect(s.Refunds).To(BeEquivalentTo(2))
	g.Expect(s.RefundRefusals).To(BeEquivalentTo(3))
	noneBeyondTheirAmount(g, e)
}

func TestCreateRefundRefusesWhatCannotBeRefunded(t *testing.T) {
	t.Parallel()
	e := sandbox.NewEngine()
	paid, _, _ := e.CreatePaymentIntent("paid", request(1000, sandbox.PaymentMethodVisa))
	waiting := e.PutIntent(sandbox.Intent{Amount: 1000, Currency: "eur", Status: sandbox.StatusRequiresAction})
	tests := []struct {
		name       string
		params     sandbox.RefundParams
		wantStatus int
		wantCode   string
		wantParam  string
		wantSaved  bool
	}{
		{name: "unknown payment intent", params: sandbox.RefundParams{PaymentIntent: "pi_missing"},
			wantStatus: http.StatusNotFound, wantCode: sandbox.CodeResourceMissing, wantParam: "payment_intent"},
		{name: "no payment intent", params: sandbox.RefundParams{Amount: 100},
			wantStatus: http.StatusBadRequest, wantCode: sandbox.CodeParameterMissing, wantParam: "payment_intent"},
		{name: "payment not succeeded", params: sandbox.RefundParams{PaymentIntent: waiting.ID},
			wantStatus: http.StatusBadRequest, wantParam: "payment_intent", wantSaved: true},
		{name: "negative amount", params: refundOf(paid, -1),
			wantStatus: http.StatusBadRequest, wantCode: sandbox.CodeParameterInvalidInteger, wantParam: "amount"},
		{name: "unknown reason", params: sandbox.RefundParams{PaymentIntent: paid.ID, Reason: "changed_mind"},
			wantStatus: http.StatusBadRequest, wantCode: sandbox.CodeParameterInvalid, wantParam: "reason"},
		{name: "other currency", params: sandbox.RefundParams{PaymentIntent: paid.ID, Currency: "usd"},
			wantStatus: http.StatusBadRequest, wantCode: sandbox.CodeParameterInvalid, wantParam: "currency"},
		{name: "more than the charge", params: refundOf(paid, 1001),
			wantStatus: http.StatusBadRequest, wantCode: sandbox.CodeAmountTooLarge, wantParam: "amount", wantSaved: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			key := "refund/" + tt.name
			_, replayed, err := e.CreateRefund(key, tt.params)
			g.Expect(replayed).To(BeFalse())
			se := stripeError(g, err)
			g.Expect(se.HTTPStatus).To(Equal(tt.wantStatus))
			g.Expect(se.Type).To(Equal(sandbox.ErrorTypeInvalidRequest))
			g.Expect(se.Code).To(Equal(tt.wantCode))
			g.Expect(se.Param).To(Equal(tt.wantParam))
			// A refusal of what the payment allows is saved; a malformed
			// request releases its key.
			_, replayed, _ = e.CreateRefund(key, tt.params)
			g.Expect(replayed).To(Equal(tt.wantSaved))
		})
	}
	g := NewWithT(t)
	g.Expect(e.ListRefunds("")).To(BeEmpty())
	g.Expect(e.Stats().Refunds).To(BeZero())
}

func TestConcurrentRefundsRaceForTheLastOfACharge(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	in := charged(g, e, "charge", 1000)
	_, _, err := e.CreateRefund("first", refundOf(in, 600))
	g.Expect(err).NotTo(HaveOccurred())

	// Both requests are in flight together, then decided one after the
	// other: only one of them finds 400 left.
	gate := e.Hold()
	a := refundAsync(e, "a", refundOf(in, 400))
	b := refundAsync(e, "b", refundOf(in, 400))
	for range 2 {
		g.Eventually(gate.Entered()).WithTimeout(timeout).Should(Receive())
	}
	gate.Release()
	var succeeded, refused int
	for _, done := range []<-chan refundResult{a, b} {
		var r refundResult
		g.Eventually(done).WithTimeout(timeout).Should(Receive(&r))
		if r.err == nil {
			succeeded++
			continue
		}
		refused++
		g.Expect(stripeError(g, r.err).Code).To(Equal(sandbox.CodeChargeAlreadyRefunded))
	}
	g.Expect(succeeded).To(Equal(1))
	g.Expect(refused).To(Equal(1))
	g.Expect(e.Refunded(in.ID)).To(BeEquivalentTo(1000))
	noneBeyondTheirAmount(g, e)
}

func TestFailRefundLeavesItsAmountToRefundAgain(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	in := charged(g, e, "charge", 1000)
	full, _, err := e.CreateRefund("full", refundOf(in, 1000))
	g.Expect(err).NotTo(HaveOccurred())

	failed, err := e.FailRefund(full.ID, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(failed.Status).To(Equal(sandbox.RefundStatusFailed))
	g.Expect(failed.FailureReason).To(Equal(sandbox.RefundFailureUnknown))
	got, _ := e.GetRefund(full.ID)
	g.Expect(got).To(Equal(failed))
	g.Expect(e.Refunded(in.ID)).To(BeZero())

	// A replay answers the refund as it was first answered, as Stripe does.
	replay, replayed, err := e.CreateRefund("full", refundOf(in, 1000))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replayed).To(BeTrue())
	g.Expect(replay.Status).To(Equal(sandbox.RefundStatusSucceeded))

	again, _, err := e.CreateRefund("again", refundOf(in, 1000))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Status).To(Equal(sandbox.RefundStatusSucceeded))
	g.Expect(e.Refunded(in.ID)).To(BeEquivalentTo(1000))

	_, err = e.FailRefund(full.ID, "")
	g.Expect(err).To(MatchError(ContainSubstring("already failed")))
	_, err = e.FailRefund("re_missing", "")
	g.Expect(err).To(MatchError(ContainSubstring("no such refund")))
	_, err = e.FailRefund(again.ID, "card_melted")
	g.Expect(err).To(MatchError(ContainSubstring("unknown failure reason")))
	failed, err = e.FailRefund(again.ID, sandbox.RefundFailureLostOrStolenCard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(failed.FailureReason).To(Equal(sandbox.RefundFailureLostOrStolenCard))
	g.Expect(e.Stats().RefundsFailed).To(BeEquivalentTo(2))
	g.Expect(e.Stats().Refunds).To(BeEquivalentTo(2))
}

func TestPendingRefundsSettleAfterTheDelay(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now), sandbox.WithRefundSettleDelay(time.Minute))
	g.Expect(e.RefundSettleDelay()).To(Equal(time.Minute))
	in := charged(g, e, "charge", 1000)

	pending, _, err := e.CreateRefund("r1", refundOf(in, 800))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pending.Status).To(Equal(sandbox.RefundStatusPending))
	// A pending refund counts against what is left.
	g.Expect(e.Refunded(in.ID)).To(BeEquivalentTo(800))
	_, _, err = e.CreateRefund("r2", refundOf(in, 300))
	g.Expect(stripeError(g, err).Code).To(Equal(sandbox.CodeAmountTooLarge))

	clock.Add(time.Minute - time.Second)
	got, _ := e.GetRefund(pending.ID)
	g.Expect(got.Status).To(Equal(sandbox.RefundStatusPending))
	clock.Add(time.Second)
	got, _ = e.GetRefund(pending.ID)
	g.Expect(got.Status).To(Equal(sandbox.RefundStatusSucceeded))
	g.Expect(e.ListRefunds(in.ID)).To(ConsistOf(HaveField("Status", sandbox.RefundStatusSucceeded)))
	// The replay is the answer first given.
	replay, _, err := e.CreateRefund("r1", refundOf(in, 800))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replay.Status).To(Equal(sandbox.RefundStatusPending))

	// A pending refund may fail too; switched off, refunds succeed at once.
	other, _, err := e.CreateRefund("r3", refundOf(in, 200))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(other.Status).To(Equal(sandbox.RefundStatusPending))
	failed, err := e.FailRefund(other.ID, "")
	g.Expect(err).NotTo(HaveOccurred())
	clock.Add(time.Hour)
	got, _ = e.GetRefund(failed.ID)
	g.Expect(got.Status).To(Equal(sandbox.RefundStatusFailed))
	e.SetRefundSettleDelay(0)
	now, _, err := e.CreateRefund("r4", refundOf(in, 200))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(now.Status).To(Equal(sandbox.RefundStatusSucceeded))
	noneBeyondTheirAmount(g, e)
}

func TestRefundFaults(t *testing.T) {
	t.Parallel()
	t.Run("after commit: refunded, and replayed", func(t *testing.T) {
		t.Parallel()
		for _, tt := range injections(sandbox.FaultAfterCommit, sandbox.Faults{ErrorAfterCommit: 1}) {
			g := NewWithT(t)
			e := sandbox.NewEngine()
			in := charged(g, e, "charge", 1000)
			g.Expect(tt.inject(e)).To(Succeed(), tt.name)

			_, _, err := e.CreateRefund("r", refundOf(in, 1000))
			g.Expect(stripeError(g, err).Type).To(Equal(sandbox.ErrorTypeAPI), tt.name)
			g.Expect(e.Refunded(in.ID)).To(BeEquivalentTo(1000), tt.name)

			g.Expect(e.SetFaults(sandbox.Faults{})).To(Succeed())
			again, replayed, err := e.CreateRefund("r", refundOf(in, 1000))
			g.Expect(err).NotTo(HaveOccurred(), tt.name)
			g.Expect(replayed).To(BeTrue(), tt.name)
			g.Expect(e.ListRefunds(in.ID)).To(ConsistOf(HaveField("ID", again.ID)), tt.name)
			g.Expect(e.Stats().RefundsByKey).To(Equal(map[string]int{"r": 1}), tt.name)
		}
	})
	t.Run("before commit: nothing refunded", func(t *testing.T) {
		t.Parallel()
		for _, tt := range injections(sandbox.FaultBeforeCommit, sandbox.Faults{ErrorBeforeCommit: 1}) {
			g := NewWithT(t)
			e := sandbox.NewEngine()
			in := charged(g, e, "charge", 1000)
			g.Expect(tt.inject(e)).To(Succeed(), tt.name)

			_, _, err := e.CreateRefund("r", refundOf(in, 1000))
			g.Expect(stripeError(g, err).Type).To(Equal(sandbox.ErrorTypeAPI), tt.name)
			g.Expect(e.Refunded(in.ID)).To(BeZero(), tt.name)

			g.Expect(e.SetFaults(sandbox.Faults{})).To(Succeed())
			_, replayed, err := e.CreateRefund("r", refundOf(in, 1000))
			g.Expect(err).NotTo(HaveOccurred(), tt.name)
			g.Expect(replayed).To(BeFalse(), tt.name)
		}
	})
	t.Run("rate limit and key in flight", func(t *testing.T) {
		t.Parallel()
		g := NewWithT(t)
		e := sandbox.NewEngine()
		in := charged(g, e, "charge", 1000)
		e.FailNext(sandbox.FaultRateLimit, 1)
		_, _, err := e.CreateRefund("r", refundOf(in, 100))
		se := stripeError(g, err)
		g.Expect(se.HTTPStatus).To(Equal(http.StatusTooManyRequests))
		g.Expect(se.RetryAfter).To(Equal(sandbox.DefaultRetryAfter))

		gate := e.Hold()
		held := refundAsync(e, "r", refundOf(in, 100))
		g.Eventually(gate.Entered()).WithTimeout(timeout).Should(Receive(Equal("r")))
		_, _, err = e.CreateRefund("r", refundOf(in, 100))
		g.Expect(stripeError(g, err).Code).To(Equal(sandbox.CodeIdempotencyKeyInUse))
		gate.Release()
		var r refundResult
		g.Eventually(held).WithTimeout(timeout).Should(Receive(&r))
		g.Expect(r.err).NotTo(HaveOccurred())
		g.Expect(e.Stats().InFlightConflicts).To(BeEquivalentTo(1))
	})
}

func TestRefundsWithIdempotencyOff(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine(sandbox.WithIdempotency(false))
	in := charged(g, e, "charge", 1000)

	ids := make([]string, 0, 3)
	for range 3 {
		r, replayed, err := e.CreateRefund("r", refundOf(in, 300))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(replayed).To(BeFalse())
		ids = append(ids, r.ID)
	}
	g.Expect(ids).To(HaveLen(3))
	g.Expect(ids[0]).NotTo(Equal(ids[1]))
	// Never beyond the charge, keys or not.
	_, _, err := e.CreateRefund("r", refundOf(in, 300))
	g.Expect(stripeError(g, err).Code).To(Equal(sandbox.CodeAmountTooLarge))
	g.Expect(e.Stats().RefundsByKey).To(Equal(map[string]int{"r": 3}))
	g.Expect(e.Refunded(in.ID)).To(BeEquivalentTo(900))
	noneBeyondTheirAmount(g, e)
}

func TestListRefundsNewestFirst(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	a := charged(g, e, "a", 1000)
	b := charged(g, e, "b", 1000)
	made := make([]string, 0, 3)
	for i, in := range []sandbox.Intent{a, b, a} {
		r, _, err := e.CreateRefund(string(rune('x'+i)), refundOf(in, 100))
		g.Expect(err).NotTo(HaveOccurred())
		made = append(made, r.ID)
	}
	ids := func(refunds []sandbox.Refund) []string {
		out := make([]string, 0, len(refunds))
		for _, r := range refunds {
			out = append(out, r.ID)
		}
		return out
	}
	g.Expect(ids(e.ListRefunds(a.ID))).To(Equal([]string{made[2], made[0]}))
	g.Expect(ids(e.ListRefunds(""))).To(Equal([]string{made[2], made[1], made[0]}))
	g.Expect(e.ListRefunds("pi_missing")).To(BeEmpty())
}

func TestTaggedRefundCarriesTheOperatorsMetadata(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	p := sandbox.RefundParams{PaymentIntent: "pi_1", Amount: 100, Currency: "eur", Metadata: map[string]string{"a": "b"}}
	tagged := sandbox.TaggedRefund("ns.refund/r", p)
	req := payment.RefundRequest{Charge: "pi_1", Amount: 100, Currency: "eur", Metadata: map[string]string{"a": "b"}}
	g.Expect(tagged.Metadata).To(Equal(payment.RefundMetadata("ns.refund/r", req)))
	g.Expect(p.Metadata).To(Equal(map[string]string{"a": "b"}))
}
