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

package sandboxprovider_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/sandboxprovider"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

func TestProviderBankDebitSettlesLater(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		method     string
		methodType string
		// wantReason is the reason of the refusal of a debit that fails;
		// empty for one that settles.
		wantReason string
	}{
		{name: "sepa settles", method: sandbox.PaymentMethodSEPADebit, methodType: "sepa_debit"},
		{name: "sepa insufficient funds", method: sandbox.PaymentMethodSEPADebitInsufficientFunds,
			methodType: "sepa_debit", wantReason: "insufficient_funds"},
		{name: "ach settles", method: sandbox.PaymentMethodACHDebit, methodType: "us_bank_account"},
		{name: "ach account closed", method: sandbox.PaymentMethodACHDebitAccountClosed,
			methodType: "us_bank_account", wantReason: "account_closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			clock := newFakeClock()
			e := sandbox.NewEngine(sandbox.WithClock(clock.Now), sandbox.WithDebitSettleDelay(14*24*time.Hour))
			p := sandboxprovider.NewProvider(e, sandboxprovider.WithSettleInterval(time.Millisecond))
			// A long deadline: the answer must come at once, not at its end.
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()

			_, err := p.Charge(ctx, "ns/debit", chargeRequest(1500, tt.method))
			s, ok := payment.IsSettling(err)
			g.Expect(ok).To(BeTrue(), "want settling, got %v", err)
			g.Expect(s.Status).To(Equal(sandbox.StatusProcessing))
			g.Expect(s.Method).To(Equal(tt.methodType))
			id := s.ID

			// A retry under the key replays the same debit: settling, not sent again.
			_, err = p.Charge(ctx, "ns/debit", chargeRequest(1500, tt.method))
			again, ok := payment.IsSettling(err)
			g.Expect(ok).To(BeTrue(), "want settling, got %v", err)
			g.Expect(again.ID).To(Equal(id))
			g.Expect(e.Stats().ChargesByKey).To(HaveKeyWithValue("ns/debit", 1))

			// Days later, one read per Settle.
			clock.Add(13 * 24 * time.Hour)
			retrieves := e.Stats().Retrieves
			_, err = p.Settle(ctx, "ns/debit", id)
			_, ok = payment.IsSettling(err)
			g.Expect(ok).To(BeTrue(), "want settling, got %v", err)
			g.Expect(e.Stats().Retrieves - retrieves).To(BeEquivalentTo(1))

			clock.Add(24 * time.Hour)
			out, err := p.Settle(ctx, "ns/debit", id)
			if tt.wantReason == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(out).To(Equal(payment.Outcome{ID: id, Status: sandbox.StatusSucceeded, Amount: 1500,
					Currency: "eur", Created: clock.Now().Add(-14 * 24 * time.Hour)}))
				return
			}
			g.Expect(err).To(MatchError(payment.ErrDeclined))
			reason, refused := payment.IsRefusal(err)
			g.Expect(refused).To(BeTrue())
			g.Expect(reason.Reason).To(Equal(tt.wantReason))
			g.Expect(err.Error()).To(ContainSubstring(tt.methodType))
		})
	}
}

func TestProviderRefundOfSettlingDebitWaits(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now), sandbox.WithDebitSettleDelay(time.Hour))
	p := sandboxprovider.NewProvider(e)
	ctx := context.Background()
	_, err := p.Charge(ctx, "ns/debit", chargeRequest(1500, sandbox.PaymentMethodSEPADebit))
	s, ok := payment.IsSettling(err)
	g.Expect(ok).To(BeTrue(), "want settling, got %v", err)

	refund := payment.RefundRequest{Charge: s.ID, Amount: 500, Currency: "eur"}
	_, err = p.Refund(ctx, "ns/refund", refund)
	g.Expect(err).To(BeAssignableToTypeOf(&payment.TransientError{}))
	g.Expect(err).To(MatchError(ContainSubstring("pending")))
	g.Expect(e.Refunded(s.ID)).To(BeZero())

	clock.Add(time.Hour)
	out, err := p.Refund(ctx, "ns/refund", refund)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Amount).To(BeEquivalentTo(500))
	g.Expect(e.Refunded(s.ID)).To(BeEquivalentTo(500))
}
