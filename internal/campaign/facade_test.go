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

package campaign

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// TestFacade checks that the exported model and oracle see what the
// in-process ones see: a key charged twice, a charge no manifest asked,
// and an object waiting with no reason.
func TestFacade(t *testing.T) {
	g := NewWithT(t)
	var ms Manifests
	j := JobManifest{Namespace: "shop", Name: "job-0", Key: "order-1", Amount: 500}
	ms.AddJob(j)
	ms.AddRefund(RefundManifest{Namespace: "shop", Name: "refund-0", Job: "job-0"})
	g.Expect(ms.Jobs()).To(Equal([]JobManifest{j}))
	g.Expect(ms.Refunds()).To(HaveLen(1))
	g.Expect(j.SentKey()).To(Equal("shop/order-1"))
	g.Expect(j.Object().Spec.ProviderRef.Name).To(Equal(ProviderName))

	charge := sandbox.Intent{ID: "pi_1", Amount: 500, Status: sandbox.StatusSucceeded, IdempotencyKey: j.SentKey()}
	ok := NewBooks(sandbox.Books{Intents: []sandbox.Intent{charge}, Stats: sandbox.Stats{ChargesByKey: map[string]int{j.SentKey(): 1}}}, nil, nil, nil)
	g.Expect(ms.Violations(ok)).To(BeEmpty())

	other := charge
	other.ID, other.Amount = "pi_2", 900
	bad := NewBooks(sandbox.Books{Intents: []sandbox.Intent{charge, other}, Stats: sandbox.Stats{ChargesByKey: map[string]int{j.SentKey(): 2}}}, nil, nil, nil)
	g.Expect(ms.Violations(bad)).To(ConsistOf(
		ContainSubstring("at-most-one-charge: key shop/order-1 charged 2 times"),
		ContainSubstring("charged-as-asked: pi_2 charged 900"),
	))

	waiting := *j.Object()
	waiting.Status.Phase = paymentsv1alpha1.PhaseProcessing
	g.Expect(Stuck(NewBooks(sandbox.Books{}, []paymentsv1alpha1.PaymentJob{waiting}, nil, nil))).
		To(ConsistOf(ContainSubstring("PaymentJob shop/job-0 waits in phase \"Processing\"")))
	waiting.Status.Conditions = []metav1.Condition{{Type: paymentsv1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: "UncertainRefusal"}}
	g.Expect(Stuck(NewBooks(sandbox.Books{}, []paymentsv1alpha1.PaymentJob{waiting}, nil, nil))).To(BeEmpty())
}
