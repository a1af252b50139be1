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

package paymentreconciliation

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/books"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/sandboxprovider"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// A refund the provider made before the window, whose outcome the ledger
// recorded in it (a refund finished from the ledger, recorded late), of a
// charge made long before: the ledger's entry names the charge, the run
// reads that charge's refunds and finds it. It is matched, never reported
// missing with the advice to refund again; with a list (Stripe) and
// without one (HTTP without listURL).
func TestARefundOutsideTheWindowIsFoundThroughItsCharge(t *testing.T) {
	g := NewWithT(t)
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	// The sandbox stamps the refund half an hour before the window.
	engine := sandbox.NewEngine(sandbox.WithAccount("acct_refunds"), sandbox.WithClock(func() time.Time { return base.Add(-30 * time.Minute) }))
	account := paymentsv1alpha1.ProviderIdentity{UID: "uid", Endpoint: "https://api.stripe.com", Account: "acct_refunds", Mode: "test"}
	chargeKey, refundKey := payment.SentKey("shop", "order-1"), payment.RefundKey("", "shop", "back-1")
	in := engine.PutIntent(sandbox.Intent{Amount: 1000, Currency: "eur", Created: base.Add(-time.Hour),
		Metadata: map[string]string{payment.MetadataKeyIdempotencyKey: chargeKey}})
	re, _, err := engine.CreateRefund(refundKey, sandbox.RefundParams{PaymentIntent: in.ID, Amount: 400,
		Metadata: map[string]string{payment.MetadataKeyIdempotencyKey: refundKey}})
	g.Expect(err).NotTo(HaveOccurred())
	inLedger := entries{
		{Key: chargeKey, Provider: account, Charge: in.ID, Amount: 1000, Currency: "eur",
			Outcome: paymentsv1alpha1.LedgerCompleted, At: base.Add(-time.Hour)},
		{Key: refundKey, Provider: account, Charge: re.ID, RefundedCharge: in.ID, Amount: 400, Currency: "eur",
			Outcome: paymentsv1alpha1.LedgerCompleted, At: base.Add(10 * time.Second)},
	}
	scheme := runtime.NewScheme()
	g.Expect(paymentsv1alpha1.AddToScheme(scheme)).To(Succeed())
	s := scope{account: account, accountsOnly: true, from: base, to: base.Add(time.Minute)}
	perSecond := int32(100)
	pr := &paymentsv1alpha1.PaymentReconciliation{Spec: paymentsv1alpha1.PaymentReconciliationSpec{
		RequestsPerSecond: &perSecond, Report: paymentsv1alpha1.ReportAll}}
	for _, tc := range []struct {
		name     string
		provider payment.Provider
	}{
		{"listed", &lister{Provider: sandboxprovider.NewProvider(engine), engine: engine}},
		{"looked up, without a list", sandboxprovider.NewProvider(engine)},
	} {
		r := &Reconciler{Reader: fake.NewClientBuilder().WithScheme(scheme).Build(), Ledger: inLedger, Clock: clock.RealClock{}, SliceObjects: 3}
		res, _, err := r.run(t.Context(), pr, tc.provider, s)
		g.Expect(err).NotTo(HaveOccurred(), tc.name)
		g.Expect(res.counts).To(Equal(map[books.Category]int{books.Matched: 1}), "%s: %+v", tc.name, res.report.Findings)
		g.Expect(res.report.Findings[0].ProviderIDs).To(ConsistOf(re.ID), tc.name)
	}
}

// Tenant A's PaymentRefund gave money back from tenant B's charge (a
// charge its payment recorded unverified): the run reads that charge's
// refunds, sees the charge was made under B's key, and reports it.
func TestARefundOfAnotherPaymentsChargeIsReported(t *testing.T) {
	g := NewWithT(t)
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	engine := sandbox.NewEngine(sandbox.WithAccount("acct_shared"), sandbox.WithClock(func() time.Time { return base.Add(20 * time.Second) }))
	account := paymentsv1alpha1.ProviderIdentity{UID: "uid", Endpoint: "https://api.stripe.com", Account: "acct_shared", Mode: "test"}
	keyA, keyB, refundKey := payment.SentKey("tenant-a", "order-1"), payment.SentKey("tenant-b", "order-9"), payment.RefundKey("", "tenant-a", "back-1")
	b := engine.PutIntent(sandbox.Intent{Amount: 1000, Currency: "eur", Created: base.Add(-time.Hour),
		Metadata: map[string]string{payment.MetadataKeyIdempotencyKey: keyB}})
	re, _, err := engine.CreateRefund(refundKey, sandbox.RefundParams{PaymentIntent: b.ID, Amount: 1000,
		Metadata: map[string]string{payment.MetadataKeyIdempotencyKey: refundKey}})
	g.Expect(err).NotTo(HaveOccurred())
	refund := &paymentsv1alpha1.PaymentRefund{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "back-1"}}
	refund.Status.Phase, refund.Status.IdempotencyKey, refund.Status.Provider = paymentsv1alpha1.PhaseCompleted, refundKey, &account
	refund.Status.ProviderResponse = &paymentsv1alpha1.ProviderResponse{ID: re.ID, Created: &metav1.Time{Time: base.Add(20 * time.Second)}}
	refund.Status.Charge = &paymentsv1alpha1.RefundedCharge{ID: b.ID, IdempotencyKey: keyA, Amount: 1000, Currency: "eur"}
	scheme := runtime.NewScheme()
	g.Expect(paymentsv1alpha1.AddToScheme(scheme)).To(Succeed())
	s := scope{account: account, accountsOnly: true, from: base, to: base.Add(time.Minute)}
	perSecond := int32(100)
	pr := &paymentsv1alpha1.PaymentReconciliation{Spec: paymentsv1alpha1.PaymentReconciliationSpec{RequestsPerSecond: &perSecond}}
	for _, tc := range []struct {
		name     string
		provider payment.Provider
	}{
		{"listed", &lister{Provider: sandboxprovider.NewProvider(engine), engine: engine}},
		{"looked up, without a list", sandboxprovider.NewProvider(engine)},
	} {
		reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(refund).WithStatusSubresource(refund).Build()
		r := &Reconciler{Reader: reader, Clock: clock.RealClock{}, SliceObjects: 3}
		res, _, err := r.run(t.Context(), pr, tc.provider, s)
		g.Expect(err).NotTo(HaveOccurred(), tc.name)
		g.Expect(res.counts).To(HaveKeyWithValue(books.RefundOfForeignCharge, 1), "%s: %+v", tc.name, res.report.Findings)
		f := res.report.Findings[0]
		g.Expect(f.Key).To(Equal(refundKey), tc.name)
		g.Expect(f.Detail).To(ContainSubstring(keyB), tc.name)
	}
}
