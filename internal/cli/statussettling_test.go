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

package cli

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// A settling debit's screen says what it is, how long it has waited, how
// long such payments take, its deadline, and what the operator waits for.
func TestStatusShowsASettlingPaymentWithItsAgeAndWhatTheOperatorWaitsFor(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	since := now.Add(-3 * time.Hour)
	st := &paymentsv1alpha1.PaymentStatus{Phase: paymentsv1alpha1.PhaseProcessing, IdempotencyKey: "billing/inv-1", Attempts: 1,
		ProviderResponse: &paymentsv1alpha1.ProviderResponse{ID: "pi_debit", Status: "processing"},
		Settlement: &paymentsv1alpha1.Settlement{Method: "sepa_debit", Since: metav1.NewTime(since),
			Deadline: metav1.NewTime(since.Add(20 * 24 * time.Hour))}}
	st.Conditions = []metav1.Condition{{Type: paymentsv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: paymentsv1alpha1.ReasonAwaitingSettlement, Message: "Waiting for the provider to settle sepa_debit pi_debit"}}
	s := paymentStory("PaymentJob", "billing", "inv-1", st)
	s.Settling = settlingOf(st, now)

	var out strings.Builder
	g.Expect(printStory(&out, s, now)).To(Succeed())

	g.Expect(flat(out.String())).To(ContainSubstring("Settling: sepa_debit pi_debit, accepted 3h ago, deadline in 19d"))
	g.Expect(flat(out.String())).To(ContainSubstring("Waiting for: the provider to settle it (Why says how long such payments take); " +
		"the operator reads it at a rate that falls with its age"))
	g.Expect(s.Next).To(BeEmpty(), "nothing for a person to do")

	// Past its deadline: overdue, and the runbook.
	late := now.Add(21 * 24 * time.Hour)
	s.Settling = settlingOf(st, late)
	out.Reset()
	g.Expect(printStory(&out, s, late)).To(Succeed())
	g.Expect(flat(out.String())).To(ContainSubstring("overdue since 27h ago: check it at the provider"))
	g.Expect(runbooks).To(HaveKeyWithValue(paymentsv1alpha1.ReasonSettlementOverdue, "docs/operations.md#a-payment-is-stalled-with-settlementoverdue"))

	// Settled: when, not what it waits for.
	settled := metav1.NewTime(now)
	st.Settlement.SettledAt = &settled
	s.Settling = settlingOf(st, now)
	out.Reset()
	g.Expect(printStory(&out, s, now)).To(Succeed())
	g.Expect(flat(out.String())).To(ContainSubstring("Settlement: sepa_debit pi_debit, accepted 3h ago, settled 0s ago"))
	g.Expect(flat(out.String())).NotTo(ContainSubstring("Waiting for:"))
}

// flat is s with every run of spaces one space, as tabwriter pads.
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }
