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

package cli_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/cli"
)

// completedWithRefund makes a job of 1999 that is Completed, refunded by
// 500, both in the ledger and with their events recorded.
func completedWithRefund(t *testing.T, ns string) (*paymentsv1alpha1.PaymentJob, *paymentsv1alpha1.PaymentRefund) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	pj := createJob(t, ns, "invoice-1", 1999, paymentsv1alpha1.PhaseCompleted)
	rf := &paymentsv1alpha1.PaymentRefund{
		ObjectMeta: metav1.ObjectMeta{Name: "invoice-1-return", Namespace: ns},
		Spec: paymentsv1alpha1.PaymentRefundSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: "stripe"},
			PaymentJobRef: paymentsv1alpha1.PaymentJobReference{Name: "invoice-1"}, Amount: ptr.To(int64(500)),
			Reason: paymentsv1alpha1.RefundRequestedByCustomer},
	}
	g.Expect(k8s.Create(ctx, rf)).To(Succeed())
	rf, err := env.WaitForRefundPhase(ctx, ns, rf.Name, paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	for _, obj := range []string{"pj/invoice-1", "prefund/invoice-1-return"} {
		// The ledger entry and the events come a moment after the phase.
		g.Eventually(func(g Gomega) {
			var s cli.Story
			r := kubectlPayments("status", obj, "-n", ns, "-o", "json")
			succeeded(g, r)
			g.Expect(json.Unmarshal([]byte(r.Stdout), &s)).To(Succeed())
			g.Expect(s.Ledger.Found).To(BeTrue())
			g.Expect(s.Events).To(ContainElement(HaveField("Reason", paymentsv1alpha1.ReasonSucceeded)))
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	}
	return pj, rf
}

func TestStatusTellsTheWholeStory(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, "status")
	pj, rf := completedWithRefund(t, ns)

	r := kubectlPayments("status", "pj/invoice-1", "-n", ns)
	succeeded(g, r)
	golden(t, "status-job.golden", r.Stdout)
	g.Expect(r.Stdout).To(ContainSubstring(pj.Status.ProviderResponse.ID), "the charge's id")
	g.Expect(r.Stdout).To(ContainSubstring(rf.Status.ProviderResponse.ID), "the refund's id")

	r = kubectlPayments("status", "pj/invoice-1", "-n", ns, "-o", "json")
	succeeded(g, r)
	golden(t, "status-job.json.golden", r.Stdout)
	var s cli.Story
	g.Expect(json.Unmarshal([]byte(r.Stdout), &s)).To(Succeed())
	g.Expect(s.Phase).To(Equal("Completed"))
	g.Expect(s.IdempotencyKey).To(Equal(ns + "/invoice-1"))
	g.Expect(s.Ledger.Entries).To(ConsistOf(And(HaveField("Charge", pj.Status.ProviderResponse.ID),
		HaveField("Amount", int64(1999)), HaveField("Outcome", paymentsv1alpha1.LedgerCompleted))))

	r = kubectlPayments("status", "prefund/invoice-1-return", "-n", ns)
	succeeded(g, r)
	golden(t, "status-refund.golden", r.Stdout)

	r = kubectlPayments("status", "paymentjobs", "invoice-1", "-n", ns, "-o", "yaml")
	succeeded(g, r)
	g.Expect(r.Stdout).To(ContainSubstring("phase: Completed"))
}

func TestStatusChecksTheProviderReadOnly(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, "status-check")
	pj, rf := completedWithRefund(t, ns)
	before := env.Sandbox().Stats()

	r := kubectlPayments("status", "pj/invoice-1", "-n", ns, "--check-provider", "--insecure-provider-hosts=127.0.0.1", "-o", "json")
	succeeded(g, r)
	var s cli.Story
	g.Expect(json.Unmarshal([]byte(r.Stdout), &s)).To(Succeed())
	g.Expect(s.ProviderCheck).NotTo(BeNil())
	g.Expect(s.ProviderCheck.Charges).To(ConsistOf(And(
		HaveField("ID", pj.Status.ProviderResponse.ID), HaveField("Amount", int64(1999)), HaveField("State", "Succeeded"),
		HaveField("Refunds", ConsistOf(And(HaveField("ID", rf.Status.ProviderResponse.ID), HaveField("Amount", int64(500)))))),
	))
	r = kubectlPayments("status", "pj/invoice-1", "-n", ns, "--check-provider", "--insecure-provider-hosts=127.0.0.1")
	succeeded(g, r)
	golden(t, "status-check-provider.golden", r.Stdout)
	after := env.Sandbox().Stats()
	g.Expect(after.Charges).To(Equal(before.Charges), "a status never charges")
	g.Expect(after.Refunds).To(Equal(before.Refunds), "a status never refunds")
	g.Expect(r.Stdout+r.Stderr).NotTo(ContainSubstring("sk_test_paymentjobtest"), "the credential is never printed")

	// A refund's check reads the charge it refunds, with its refunds.
	r = kubectlPayments("status", "prefund/invoice-1-return", "-n", ns, "--check-provider", "--insecure-provider-hosts=127.0.0.1", "-o", "json")
	succeeded(g, r)
	s = cli.Story{}
	g.Expect(json.Unmarshal([]byte(r.Stdout), &s)).To(Succeed())
	g.Expect(s.ProviderCheck.Key).To(Equal(ns + "/invoice-1"))
	g.Expect(s.ProviderCheck.Charges).To(ConsistOf(And(HaveField("ID", pj.Status.ProviderResponse.ID),
		HaveField("Refunds", ContainElement(HaveField("ID", rf.Status.ProviderResponse.ID))))))

	// Without the insecure host, the sandbox's http endpoint is refused,
	// as the manager refuses it, and the command says which field.
	// The rest of the story is still told, with why the provider was not
	// asked.
	r = kubectlPayments("status", "pj/invoice-1", "-n", ns, "--check-provider")
	succeeded(g, r)
	g.Expect(r.Stdout).To(ContainSubstring("At the provider (read-only): cannot call PaymentProvider " + ns + "/stripe"))
	g.Expect(r.Stdout).To(ContainSubstring("spec.stripe.apiBase"))
	g.Expect(r.Stdout).To(ContainSubstring("--insecure-provider-hosts"))
	g.Expect(r.Stdout).To(ContainSubstring("Ledger (crd):"))
}
