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

package billing_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/paymentjobtest"

	"example.com/billing"
)

// docs:start refund
func TestCreditNoteRefundsPartOfAnInvoice(t *testing.T) {
	g, ctx := NewWithT(t), context.Background()
	svc := newService(t, "billing-credit")
	inv := billing.Invoice{Number: "2026-0046", AmountCents: 2000, Currency: "usd",
		PaymentMethod: paymentjobtest.PaymentMethodSucceeds}
	g.Expect(svc.Submit(ctx, inv)).To(Succeed())
	_, err := env.WaitForPhase(ctx, "billing-credit", billing.JobName(inv), paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())

	note := billing.CreditNote{Number: "CN-7", AmountCents: 500}
	g.Expect(svc.Credit(ctx, inv, note)).To(Succeed())
	g.Expect(svc.Credit(ctx, inv, note)).To(Succeed()) // a retry of the credit run
	refund, err := env.WaitForRefundPhase(ctx, "billing-credit", billing.RefundName(inv, note),
		paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())

	// The sandbox gave 500 back from the invoice's charge, once.
	paid := "billing-credit/" + billing.PaymentKey(inv)
	g.Expect(env.Refunded(paid)).To(Equal(int64(500)))
	g.Expect(env.Refunds(paid)).To(ConsistOf(HaveField("ID", refund.Status.ProviderResponse.ID)))
	g.Expect(env.Sandbox().Stats().RefundsByKey).To(HaveKeyWithValue("billing-credit.refund/credit-note/CN-7", 1))
}

// docs:end refund
