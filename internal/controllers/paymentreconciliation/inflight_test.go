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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/books"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/sandboxprovider"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// Two jobs share a key: the first is Completed, its charge at the
// provider; the second is still in flight under the same key. A run over a
// provider without a list (a lookup by key) compares the finished job with
// the charge it looked up for it: what is in flight under the key is no
// finding, but the charge the finished job recorded is its own. Before,
// the charge was dropped with the key in flight, and the run reported the
// Completed job's charge MissingAtProvider, advising to charge again.
func TestAFinishedJobIsComparedWithItsChargeWhileAnotherIsInFlightUnderItsKey(t *testing.T) {
	g := NewWithT(t)
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	engine := sandbox.NewEngine(sandbox.WithAccount("acct_inflight"), sandbox.WithClock(func() time.Time { return base }))
	account := paymentsv1alpha1.ProviderIdentity{UID: "uid", Endpoint: "https://api.stripe.com", Account: "acct_inflight", Mode: "test"}
	const key = "shop/order-1"
	in := engine.PutIntent(sandbox.Intent{Amount: 1000, Currency: "eur", Created: base.Add(time.Second),
		Metadata: map[string]string{payment.MetadataKeyIdempotencyKey: key}})
	created := metav1.NewTime(in.Created)
	done := &paymentsv1alpha1.PaymentJob{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "job-1"},
		Spec: paymentsv1alpha1.PaymentJobSpec{Amount: 1000, Currency: "eur"}}
	done.Status.Phase, done.Status.IdempotencyKey, done.Status.Provider = paymentsv1alpha1.PhaseCompleted, key, &account
	done.Status.ProviderResponse = &paymentsv1alpha1.ProviderResponse{ID: in.ID, Status: "succeeded", Amount: 1000, Currency: "eur", Created: &created}
	done.Status.CompletedAt = &created
	flying := &paymentsv1alpha1.PaymentJob{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "job-2"},
		Spec: paymentsv1alpha1.PaymentJobSpec{Amount: 500, Currency: "eur"}}
	flying.Status.Phase, flying.Status.IdempotencyKey, flying.Status.Provider = paymentsv1alpha1.PhaseProcessing, key, &account
	inLedger := entries{{Key: key, Provider: account, Charge: in.ID, Amount: 1000, Currency: "eur",
		Outcome: paymentsv1alpha1.LedgerCompleted, At: in.Created}}

	scheme := runtime.NewScheme()
	g.Expect(paymentsv1alpha1.AddToScheme(scheme)).To(Succeed())
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(done, flying).
		WithStatusSubresource(&paymentsv1alpha1.PaymentJob{}).Build()
	for _, j := range []*paymentsv1alpha1.PaymentJob{done, flying} {
		st := j.Status
		g.Expect(reader.Get(t.Context(), client.ObjectKeyFromObject(j), j)).To(Succeed())
		j.Status = st
		g.Expect(reader.Status().Update(t.Context(), j)).To(Succeed())
	}
	perSecond := int32(100)
	pr := &paymentsv1alpha1.PaymentReconciliation{Spec: paymentsv1alpha1.PaymentReconciliationSpec{RequestsPerSecond: &perSecond}}
	r := &Reconciler{Reader: reader, Ledger: inLedger, Clock: clock.RealClock{}}
	s := scope{account: account, accountsOnly: true, from: base, to: base.Add(time.Minute)}
	res, _, err := r.run(t.Context(), pr, sandboxprovider.NewProvider(engine), s)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.report.Listed).To(BeFalse(), "the in-process sandbox provider has no list: the run looks keys up")
	g.Expect(res.counts).To(Equal(map[books.Category]int{books.Matched: 1}), "%+v", res.report.Findings)
}
