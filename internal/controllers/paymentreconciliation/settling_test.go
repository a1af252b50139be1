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
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/books"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/stripe"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// A bank debit the provider accepted and has not settled is counted as
// settling: neither Matched nor MissingAtProvider nor UnknownToCluster,
// although the provider lists it (processing) and the cluster has no
// outcome for it yet. The settled payment beside it is Matched.
func TestASettlingPaymentIsCountedAsSettlingNeverMissing(t *testing.T) {
	g := NewWithT(t)
	engine := sandbox.NewEngine(sandbox.WithAccount("acct_settling"))
	srv := httptest.NewServer(sandbox.NewServer(engine, sandbox.ServerOptions{}))
	t.Cleanup(srv.Close)
	provider, err := stripe.New(stripe.Config{APIKey: "sk_test_x", APIBase: srv.URL})
	g.Expect(err).NotTo(HaveOccurred())
	account := paymentsv1alpha1.ProviderIdentity{UID: "uid", Endpoint: "https://api.stripe.com", Account: "acct_settling", Mode: "test"}
	base := time.Now().Add(-time.Hour).Truncate(time.Second)

	settled := engine.PutIntent(sandbox.Intent{Amount: 1000, Currency: "eur", Created: base.Add(time.Second),
		Metadata: map[string]string{payment.MetadataKeyIdempotencyKey: "shop/paid"}})
	debit := engine.PutIntent(sandbox.Intent{Amount: 2500, Currency: "eur", Status: sandbox.StatusProcessing, Created: base.Add(2 * time.Second),
		Metadata: map[string]string{payment.MetadataKeyIdempotencyKey: "shop/debit"}})

	paid := &paymentsv1alpha1.PaymentJob{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "paid"},
		Spec: paymentsv1alpha1.PaymentJobSpec{Amount: 1000, Currency: "eur"}}
	created := metav1.NewTime(settled.Created)
	paid.Status.Phase, paid.Status.IdempotencyKey, paid.Status.Provider = paymentsv1alpha1.PhaseCompleted, "shop/paid", &account
	paid.Status.ProviderResponse = &paymentsv1alpha1.ProviderResponse{ID: settled.ID, Status: "succeeded", Amount: 1000, Currency: "eur", Created: &created}
	paid.Status.CompletedAt = &created
	settling := &paymentsv1alpha1.PaymentJob{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "debit"},
		Spec: paymentsv1alpha1.PaymentJobSpec{Amount: 2500, Currency: "eur"}}
	settling.Status.Phase, settling.Status.IdempotencyKey, settling.Status.Provider = paymentsv1alpha1.PhaseProcessing, "shop/debit", &account
	settling.Status.ProviderResponse = &paymentsv1alpha1.ProviderResponse{ID: debit.ID, Status: "processing"}
	settling.Status.Settlement = &paymentsv1alpha1.Settlement{Method: "sepa_debit", Since: metav1.NewTime(debit.Created),
		Deadline: metav1.NewTime(debit.Created.Add(20 * 24 * time.Hour))}

	scheme := runtime.NewScheme()
	g.Expect(paymentsv1alpha1.AddToScheme(scheme)).To(Succeed())
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(paid, settling).
		WithStatusSubresource(&paymentsv1alpha1.PaymentJob{}).Build()
	for _, j := range []*paymentsv1alpha1.PaymentJob{paid, settling} {
		st := j.Status
		g.Expect(reader.Get(t.Context(), client.ObjectKeyFromObject(j), j)).To(Succeed())
		j.Status = st
		g.Expect(reader.Status().Update(t.Context(), j)).To(Succeed())
	}
	perSecond := int32(100)
	pr := &paymentsv1alpha1.PaymentReconciliation{Spec: paymentsv1alpha1.PaymentReconciliationSpec{RequestsPerSecond: &perSecond}}
	r := &Reconciler{Reader: reader, Ledger: entries{}, Clock: clock.RealClock{}}
	s := scope{account: account, accountsOnly: true, from: base, to: base.Add(time.Minute)}

	res, _, err := r.run(t.Context(), pr, provider, s)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.report.Listed).To(BeTrue(), "the provider listed the window")
	g.Expect(res.counts[books.Matched]).To(Equal(1), "%+v", res.report.Findings)
	g.Expect(res.counts[books.MissingAtProvider]).To(BeZero())
	g.Expect(res.counts[books.UnknownToCluster]).To(BeZero(), "%+v", res.report.Findings)
	g.Expect(res.settling).To(Equal(map[string]bool{debit.ID: true}), "the debit is counted as settling")
}
