//go:build postgres

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

package pgledger

import (
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// A manifest created again from Git after its job was deleted, once the
// provider forgot its idempotency keys: the PostgreSQL ledger finishes it
// with the first job's charge, and the provider hears nothing of it (no
// create, no search, no read).
func TestRecreatedJobIsFinishedFromThePostgresLedger(t *testing.T) {
	t.Parallel()
	s := newScenario(t, nil)
	ctx := t.Context()
	const name = "invoice-2026-0042"

	s.createJobs(name)
	var first paymentsv1alpha1.PaymentJob
	s.Eventually(func(g Gomega) {
		first = s.jobs(g)[name]
		s.expectPaidOnce(g, []string{name})
	}, timeout, poll).Should(Succeed())
	s.Expect(meta.FindStatusCondition(first.Status.Conditions, paymentsv1alpha1.ConditionReady).Reason).
		To(Equal(paymentsv1alpha1.ReasonSucceeded), "charged by the provider the first time")

	s.Expect(k8sClient.Delete(ctx, &first)).To(Succeed())
	s.Eventually(func() error {
		return k8sClient.Get(ctx, client.ObjectKeyFromObject(&first), &paymentsv1alpha1.PaymentJob{})
	}, timeout, poll).Should(Satisfy(apierrors.IsNotFound), "the first job is gone")
	s.Expect(s.kit.Faults().ForgetKeys()).To(Equal(1), "the provider forgot the key, as Stripe does after a day")
	before := s.kit.Sandbox().Stats()

	s.createJobs(name)
	again, err := s.kit.WaitForPhase(ctx, s.ns, name, paymentsv1alpha1.PhaseCompleted, timeout)
	s.Expect(err).NotTo(HaveOccurred())
	s.Expect(meta.FindStatusCondition(again.Status.Conditions, paymentsv1alpha1.ConditionReady).Reason).
		To(Equal(paymentsv1alpha1.ReasonFoundInLedger))
	s.Expect(again.UID).NotTo(Equal(first.UID), "a new object")
	s.Expect(again.Status.Attempts).To(BeZero(), "never claimed")
	s.Expect(again.Status.ProviderResponse.ID).To(Equal(first.Status.ProviderResponse.ID), "the first job's charge")
	_, err = s.kit.WaitForEvent(ctx, again, paymentsv1alpha1.ReasonFoundInLedger, timeout)
	s.Expect(err).NotTo(HaveOccurred())

	after := s.kit.Sandbox().Stats()
	s.Expect(after.Requests).To(Equal(before.Requests), "no create request for the re-created job")
	s.Expect(after.Searches).To(Equal(before.Searches), "no lookup at the provider: the ledger answered first")
	s.Expect(after.Retrieves).To(Equal(before.Retrieves), "no read at the provider")
	s.Expect(after.Charges).To(Equal(before.Charges))
	s.Eventually(func(g Gomega) { s.expectPaidOnce(g, []string{name}) }, timeout, poll).Should(Succeed(),
		"the ledger still holds the one row, and the re-created job is finished")
}
