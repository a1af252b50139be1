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

package paymentjobtest_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/paymentjobtest"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// The refund helpers against the control plane: what a refund gave back
// is read at the sandbox (Refunds, Refunded), never from the operator's
// status alone.

// paidJob creates a job of 2000 through provider "stripe" in a new
// namespace and waits until it is Completed; it returns the namespace.
func paidJob(t *testing.T, name string) string {
	t.Helper()
	ns := namespace(t)
	job(t, ns, name, paymentjobtest.PaymentMethodSucceeds)
	_, err := env.WaitForPhase(context.Background(), ns, name, paymentsv1alpha1.PhaseCompleted, time.Minute)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return ns
}

// TestRefundsThroughEveryAdapter: partial refunds up to the charge through
// the Stripe adapter and the HTTP one, each made once at the sandbox; a
// refund of the whole charge after them fails, and its wait says so at
// once.
func TestRefundsThroughEveryAdapter(t *testing.T) {
	tests := []struct {
		name   string
		create func(ctx context.Context, ns, name string) error
	}{
		{"stripe", env.CreateProvider},
		{"http", env.CreateHTTPProvider},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := emptyNamespace(t)
			g.Expect(tt.create(ctx, ns, "payments")).To(Succeed())
			g.Expect(env.Client().Create(ctx, &paymentsv1alpha1.PaymentJob{
				ObjectMeta: metav1.ObjectMeta{Name: "invoice", Namespace: ns},
				Spec: paymentsv1alpha1.PaymentJobSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: "payments"},
					Amount: 2000, Currency: "usd", PaymentMethod: paymentjobtest.PaymentMethodSucceeds,
					IdempotencyKey: "invoice-2026-0042"},
			})).To(Succeed())
			key := ns + "/invoice-2026-0042"

			// Created before the job is paid: the refund waits for it.
			_, err := env.CreateRefund(ctx, ns, "part", "invoice",
				paymentjobtest.RefundOptions{Amount: 800, Reason: paymentsv1alpha1.RefundRequestedByCustomer})
			g.Expect(err).NotTo(HaveOccurred())
			part, err := env.WaitForRefundPhase(ctx, ns, "part", paymentsv1alpha1.PhaseCompleted, time.Minute)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(part.Spec.PaymentJobRef.IdempotencyKey).To(Equal("invoice-2026-0042"), "the job's key, for the ledger")
			rest, err := env.CreateRefund(ctx, ns, "rest", "invoice", paymentjobtest.RefundOptions{Amount: 1200})
			g.Expect(err).NotTo(HaveOccurred())
			_, err = env.WaitForRefundPhase(ctx, ns, rest.Name, paymentsv1alpha1.PhaseCompleted, time.Minute)
			g.Expect(err).NotTo(HaveOccurred())

			refunds := env.Refunds(key)
			g.Expect(refunds).To(HaveLen(2))
			g.Expect(refunds[1].ID).To(Equal(part.Status.ProviderResponse.ID))
			g.Expect(refunds[1].Amount).To(Equal(int64(800)))
			g.Expect(refunds[1].Reason).To(Equal(sandbox.RefundReasonRequestedByCustomer))
			g.Expect(refunds[0].Amount).To(Equal(int64(1200)))
			g.Expect(env.Refunded(key)).To(Equal(int64(2000)))

			_, err = env.CreateRefund(ctx, ns, "all", "invoice", paymentjobtest.RefundOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			started := time.Now()
			_, err = env.WaitForRefundPhase(ctx, ns, "all", paymentsv1alpha1.PhaseCompleted, time.Minute)
			g.Expect(err).To(MatchError(And(ContainSubstring("it is Failed, which is final"),
				ContainSubstring(paymentsv1alpha1.ReasonRefundExceedsCharge))))
			g.Expect(time.Since(started)).To(BeNumerically("<", 30*time.Second), "not the whole minute")
			g.Expect(env.Refunds(key)).To(HaveLen(2), "nothing sent for the refund beyond the charge")
		})
	}
}

func TestRefundFaults(t *testing.T) {
	tests := []struct {
		name  string
		fault func(paymentjobtest.Faults) error
		// faults is how many injected faults the sandbox answered.
		faults int64
		check  func(g Gomega, rf *paymentsv1alpha1.PaymentRefund, took time.Duration)
	}{
		{name: "answer lost after the refund", fault: func(f paymentjobtest.Faults) error { return f.LoseResponses(1) },
			faults: 1,
			check: func(g Gomega, rf *paymentsv1alpha1.PaymentRefund, _ time.Duration) {
				g.Expect(rf.Status.ProviderResponse.Replayed).To(BeTrue())
				g.Expect(rf.Status.Attempts).To(BeNumerically(">=", 2))
			}},
		{name: "pending for a while", fault: func(f paymentjobtest.Faults) error { return f.PendingRefunds(time.Second) },
			check: func(g Gomega, _ *paymentsv1alpha1.PaymentRefund, took time.Duration) {
				g.Expect(took).To(BeNumerically(">=", time.Second))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := paidJob(t, "invoice")
			g.Expect(tt.fault(env.Faults())).To(Succeed())
			t.Cleanup(func() { g.Expect(env.Faults().Reset()).To(Succeed()) })
			before := env.Sandbox().Stats().Faults
			created := time.Now()

			_, err := env.CreateRefund(ctx, ns, "refund", "invoice", paymentjobtest.RefundOptions{Amount: 500})
			g.Expect(err).NotTo(HaveOccurred())
			rf, err := env.WaitForRefundPhase(ctx, ns, "refund", paymentsv1alpha1.PhaseCompleted, time.Minute)

			g.Expect(err).NotTo(HaveOccurred())
			took := time.Since(created)
			g.Expect(env.Refunds(ns + "/invoice")).To(HaveLen(1))
			g.Expect(env.Refunded(ns + "/invoice")).To(Equal(int64(500)))
			g.Expect(env.Sandbox().Stats().Faults-before).To(Equal(tt.faults), "faults the sandbox answered")
			tt.check(g, rf, took)
		})
	}
}

// TestRefundFailedAfterItSucceeded: the sandbox fails a Completed refund,
// and the operator sets it Failed with a Warning event; its amount is no
// longer refunded.
func TestRefundFailedAfterItSucceeded(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := paidJob(t, "invoice")
	_, err := env.CreateRefund(ctx, ns, "refund", "invoice", paymentjobtest.RefundOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	done, err := env.WaitForRefundPhase(ctx, ns, "refund", paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Refunded(ns + "/invoice")).To(Equal(int64(2000)))

	g.Expect(env.Faults().FailRefund(done.Status.ProviderResponse.ID)).To(Succeed())

	failed, err := env.WaitForRefundPhase(ctx, ns, "refund", paymentsv1alpha1.PhaseFailed, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(failed.Status.Failure.Reason).To(Equal(paymentsv1alpha1.ReasonRefundFailedAfterSuccess))
	ev, err := env.WaitForEvent(ctx, failed, paymentsv1alpha1.ReasonRefundFailedAfterSuccess, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ev.Type).To(Equal("Warning"))
	refunds := env.Refunds(ns + "/invoice")
	g.Expect(refunds).To(HaveLen(1))
	g.Expect(refunds[0].Status).To(Equal(sandbox.RefundStatusFailed))
	g.Expect(env.Refunded(ns + "/invoice")).To(BeZero())
	g.Expect(env.Faults().FailRefund(done.Status.ProviderResponse.ID)).To(MatchError(ContainSubstring("already failed")))
}

// TestCreateRefundOfAJobThatIsNotThere: without a provider the kit cannot
// tell which one refunds; with one, the refund waits for the payment, and
// its wait says so.
func TestCreateRefundOfAJobThatIsNotThere(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)

	_, err := env.CreateRefund(ctx, ns, "refund", "nowhere", paymentjobtest.RefundOptions{})
	g.Expect(err).To(MatchError(And(ContainSubstring(ns+"/nowhere"), ContainSubstring("RefundOptions.Provider"))))
	g.Expect(env.Client().Get(ctx, client.ObjectKey{Namespace: ns, Name: "refund"}, &paymentsv1alpha1.PaymentRefund{})).
		NotTo(Succeed(), "nothing created")

	rf, err := env.CreateRefund(ctx, ns, "refund", "nowhere", paymentjobtest.RefundOptions{Provider: "stripe"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rf.Spec.ProviderRef.Name).To(Equal("stripe"))
	g.Expect(rf.Spec.Amount).To(BeNil(), "the whole charge")
	_, err = env.WaitForRefundPhase(ctx, ns, "refund", paymentsv1alpha1.PhaseCompleted, 3*time.Second)
	g.Expect(err).To(MatchError(And(
		ContainSubstring("PaymentRefund "+ns+"/refund did not reach Completed within 3s"),
		ContainSubstring("phase Pending"),
		ContainSubstring(paymentsv1alpha1.ReasonPaymentNotFound),
	)))

	// The job comes: the refund goes on by itself.
	job(t, ns, "nowhere", paymentjobtest.PaymentMethodSucceeds)
	done, err := env.WaitForRefundPhase(ctx, ns, "refund", paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(done.Status.ProviderResponse.Amount).To(Equal(int64(2000)))
	g.Expect(env.Refunds(ns + "/nowhere")).To(HaveLen(1))
}

// TestRefundReadsOfAChargeThatIsNotThere: nothing charged, nothing
// refunded.
func TestRefundReadsOfAChargeThatIsNotThere(t *testing.T) {
	g := NewWithT(t)
	g.Expect(env.Refunds("nowhere/never-charged")).To(BeEmpty())
	g.Expect(env.Refunded("nowhere/never-charged")).To(BeZero())
}
