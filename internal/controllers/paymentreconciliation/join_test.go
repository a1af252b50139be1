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
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/books"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/sandboxprovider"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// Every row of a run names the job of its charge, says whether the ledger
// holds it and what is left of the charge, from the jobs, the ledger and
// the provider's lists the run reads anyway: a job refunded by a
// PaymentRefund and in the dashboard, a job deleted after its TTL (named
// from the ledger) refunded in full in the dashboard, and one not
// refunded; compared whole and in slices of one charge, whose refunds fall
// in another slice than their charges.
func TestRowsLeadBackToTheirJobsAndSayWhatIsLeft(t *testing.T) {
	g := NewWithT(t)
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	// The sandbox's clock stamps refunds: 15 seconds into the window.
	engine := sandbox.NewEngine(sandbox.WithAccount("acct_join"), sandbox.WithClock(func() time.Time { return base.Add(15 * time.Second) }))
	account := paymentsv1alpha1.ProviderIdentity{UID: "uid", Endpoint: "https://api.stripe.com", Account: "acct_join", Mode: "test"}
	var objects []client.Object
	var inLedger entries
	charge := func(name string, amount int64, at time.Duration, inCluster bool) sandbox.Intent {
		key := payment.SentKey("shop", name)
		in := engine.PutIntent(sandbox.Intent{Amount: amount, Currency: "eur", Created: base.Add(at),
			Metadata: map[string]string{payment.MetadataKeyIdempotencyKey: key}})
		inLedger = append(inLedger, ledger.Entry{Key: key, Provider: account, Charge: in.ID, Amount: amount, Currency: "eur",
			Outcome: paymentsv1alpha1.LedgerCompleted, At: in.Created.Add(700 * time.Millisecond)})
		if inCluster {
			j := &paymentsv1alpha1.PaymentJob{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
				Spec: paymentsv1alpha1.PaymentJobSpec{Amount: amount, Currency: "eur"}}
			j.Status.Phase, j.Status.IdempotencyKey, j.Status.Provider = paymentsv1alpha1.PhaseCompleted, key, &account
			j.Status.ProviderResponse = &paymentsv1alpha1.ProviderResponse{ID: in.ID, Created: &metav1.Time{Time: in.Created}}
			objects = append(objects, j)
		}
		return in
	}
	dashboard := func(in sandbox.Intent, amount int64) {
		_, _, err := engine.CreateRefund("dashboard-"+in.ID, sandbox.RefundParams{PaymentIntent: in.ID, Amount: amount})
		g.Expect(err).NotTo(HaveOccurred())
	}
	one := charge("order-1", 1000, time.Second, true)
	two := charge("order-2", 2000, 3*time.Second, false)
	charge("order-3", 3000, 5*time.Second, true)
	refundKey := payment.RefundKey("", "shop", "order-1-back")
	re, _, err := engine.CreateRefund(refundKey, sandbox.RefundParams{PaymentIntent: one.ID, Amount: 300,
		Metadata: map[string]string{payment.MetadataKeyIdempotencyKey: refundKey}})
	g.Expect(err).NotTo(HaveOccurred())
	back := &paymentsv1alpha1.PaymentRefund{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "order-1-back"},
		Spec: paymentsv1alpha1.PaymentRefundSpec{PaymentJobRef: paymentsv1alpha1.PaymentJobReference{Name: "order-1"}, Amount: ptr.To(int64(300))}}
	back.Status.Phase, back.Status.IdempotencyKey, back.Status.Provider = paymentsv1alpha1.PhaseCompleted, refundKey, &account
	back.Status.ProviderResponse = &paymentsv1alpha1.ProviderResponse{ID: re.ID, Created: &metav1.Time{Time: base.Add(15 * time.Second)}}
	back.Status.Charge = &paymentsv1alpha1.RefundedCharge{ID: one.ID, IdempotencyKey: payment.SentKey("shop", "order-1"),
		Amount: 1000, Currency: "eur"}
	objects = append(objects, back)
	inLedger = append(inLedger, ledger.Entry{Key: refundKey, Provider: account, Charge: re.ID, RefundedCharge: one.ID, Amount: 300,
		Currency: "eur", Outcome: paymentsv1alpha1.LedgerCompleted, At: base.Add(16 * time.Second)})
	dashboard(one, 200)
	dashboard(two, 2000)

	scheme := runtime.NewScheme()
	g.Expect(paymentsv1alpha1.AddToScheme(scheme)).To(Succeed())
	s := scope{account: account, accountsOnly: true, from: base, to: base.Add(time.Minute)}
	perSecond := int32(100)
	pr := &paymentsv1alpha1.PaymentReconciliation{Spec: paymentsv1alpha1.PaymentReconciliationSpec{
		RequestsPerSecond: &perSecond, Report: paymentsv1alpha1.ReportAll}}
	type row struct {
		object              string
		objectDeleted       bool
		inLedger            bool
		chargeObject        string
		chargeObjectDeleted bool
		chargeInLedger      bool
		chargeID            string
		left                int64
	}
	want := map[string]row{
		"Matched charge shop/order-1":                 {"shop/order-1", false, true, "shop/order-1", false, true, one.ID, 1000 - 300 - 200},
		"Matched refund " + refundKey:                 {"shop/order-1-back", false, true, "shop/order-1", false, true, one.ID, 500},
		"RefundedOutsideOperator refund shop/order-1": {"shop/order-1", false, true, "shop/order-1", false, true, one.ID, 500},
		"Matched charge shop/order-2":                 {"shop/order-2", true, true, "shop/order-2", true, true, two.ID, 0},
		"RefundedOutsideOperator refund shop/order-2": {"shop/order-2", true, true, "shop/order-2", true, true, two.ID, 0},
		"Matched charge shop/order-3":                 {"shop/order-3", false, true, "shop/order-3", false, true, "", 3000},
	}
	for _, slice := range []int{1 << 20, 1} {
		reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).WithStatusSubresource(objects...).Build()
		r := &Reconciler{Reader: reader, Ledger: inLedger, Clock: clock.RealClock{}, SliceObjects: slice}
		l := &lister{Provider: sandboxprovider.NewProvider(engine), engine: engine}
		res, requests, err := r.run(t.Context(), pr, l, s)
		g.Expect(err).NotTo(HaveOccurred())
		got := map[string]row{}
		var actions []string
		for _, f := range res.report.Findings {
			g.Expect(f.ChargeLeft).NotTo(BeNil(), "%+v", f)
			id := f.ChargeID
			if f.Key == payment.SentKey("shop", "order-3") {
				id = ""
			}
			got[string(f.Category)+" "+string(f.Kind)+" "+f.Key] = row{f.Object, f.ObjectDeleted, f.InLedger, f.ChargeObject,
				f.ChargeObjectDeleted, f.ChargeInLedger, id, *f.ChargeLeft}
			if f.Category == books.RefundedOutside {
				actions = append(actions, f.Action)
			}
		}
		g.Expect(got).To(Equal(want), "slices of %d", slice)
		g.Expect(actions).To(ConsistOf(
			ContainSubstring("kubectl payments status pj/order-1 -n shop --check-provider"),
			ContainSubstring("pj/order-2 is deleted: kubectl payments ledger find pj/order-2 -n shop")))
		t.Logf("slices of %d: %d provider requests", slice, requests)
	}
}
