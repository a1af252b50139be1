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
	"net/http"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// debit is a bank-debit intent in status.
func debit(method, status string) map[string]any {
	in := intent("pi_1", status)
	in["payment_method_types"] = []string{method}
	in["currency"] = "eur"
	return in
}

func TestABankDebitProcessingIsSettlingAtOnce(t *testing.T) {
	for _, method := range []string{"sepa_debit", "us_bank_account", "bacs_debit"} {
		t.Run(method, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeStripe(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				writeJSON(w, http.StatusOK, debit(method, "processing"))
			})
			p := f.provider(t)

			_, err := p.Charge(context.Background(), testKey, payment.ChargeRequest{Amount: 2000, Currency: "eur"})
			s, ok := payment.IsSettling(err)
			g.Expect(ok).To(BeTrue(), "settling: %v", err)
			g.Expect(*s).To(Equal(payment.SettlingError{ID: "pi_1", Status: "processing", Method: method}))
			_, refused := payment.IsRefusal(err)
			g.Expect(refused).To(BeFalse())
			g.Expect(f.count(http.MethodPost)).To(Equal(1))
			g.Expect(f.count(http.MethodGet)).To(BeZero(), "a debit is not polled within the call")

			_, err = p.Settle(context.Background(), testKey, "pi_1")
			_, ok = payment.IsSettling(err)
			g.Expect(ok).To(BeTrue(), "settling: %v", err)
			g.Expect(f.count(http.MethodGet)).To(Equal(1), "one read per Settle")
		})
	}
}

func TestAPaymentStillProcessingAtTheDeadlineIsSettling(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFakeStripe(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, http.StatusOK, intent("pi_1", "processing"))
		if r.Method == http.MethodGet && n == 2 {
			// The deadline passes during the wait after this read.
			cancel()
		}
	})

	_, err := f.provider(t).Charge(ctx, testKey, payment.ChargeRequest{Amount: 2000, Currency: "eur"})

	s, ok := payment.IsSettling(err)
	g.Expect(ok).To(BeTrue(), "settling, not uncertain: %v", err)
	g.Expect(s.ID).To(Equal("pi_1"))
	g.Expect(s.Method).To(BeEmpty(), "the intent allows several methods")
	g.Expect(f.count(http.MethodPost)).To(Equal(1))
}

func TestAFailedBankDebitHasTheBanksReason(t *testing.T) {
	g := NewWithT(t)
	failed := withLastPaymentError(debit("sepa_debit", "requires_payment_method"), "insufficient_funds", "", "The account has insufficient funds.")
	f := newFakeStripe(t, func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, http.StatusOK, failed) })

	_, err := f.provider(t).Settle(context.Background(), testKey, "pi_1")

	refusal, ok := payment.IsRefusal(err)
	g.Expect(ok).To(BeTrue(), "refusal: %v", err)
	g.Expect(err).To(MatchError(payment.ErrDeclined))
	g.Expect(refusal.Reason).To(Equal("insufficient_funds"))
}
