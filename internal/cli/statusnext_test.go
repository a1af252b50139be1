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
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/providerlookup"
)

// What status says to run next, as a table: the object's state and what
// the provider showed in, the commands out. --charged is named only for a
// charge the provider showed under the payment's key with no warning but
// the search lag's; --not-charged only with no warning at all.
func TestNextSteps(t *testing.T) {
	stalled := func(reason string) []metav1.Condition {
		return []metav1.Condition{{Type: paymentsv1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: reason}}
	}
	processing := paymentsv1alpha1.PaymentStatus{Phase: paymentsv1alpha1.PhaseProcessing, IdempotencyKey: "billing/invoice-7",
		Conditions: stalled(paymentsv1alpha1.ReasonRetriesExhausted)}
	succeeded := providerlookup.Charge{ID: "pi_1", State: "Succeeded"}
	const (
		ask        = "kubectl payments status pj/invoice-7 -n billing --check-provider"
		charged    = "kubectl payments resolve pj/invoice-7 -n billing --charged=pi_1"
		notCharged = "kubectl payments resolve pj/invoice-7 -n billing --not-charged"
		runbook    = "read docs/operations.md#a-job-is-stalled-with-retriesexhausted"
	)
	tests := []struct {
		name  string
		story Story
		st    paymentsv1alpha1.PaymentStatus
		want  []string
	}{
		{name: "stuck, the provider not asked", st: processing, want: []string{ask, runbook}},
		{name: "stuck, the provider could not be asked", st: processing,
			story: Story{ProviderCheck: &ProviderCheck{Key: "billing/invoice-7", Error: "forbidden"}}, want: []string{ask, runbook}},
		{name: "stuck, the provider holds a charge under the key", st: processing,
			story: Story{ProviderCheck: &ProviderCheck{Charges: []providerlookup.Charge{succeeded}}}, want: []string{charged, runbook}},
		{name: "stuck, a charge shown within the search lag is there", st: processing,
			story: Story{ProviderCheck: &ProviderCheck{Charges: []providerlookup.Charge{succeeded}, Warnings: []string{"lag"}, lagging: true}},
			want:  []string{charged, runbook}},
		{name: "stuck, a charge at another account is not this payment's", st: processing,
			story: Story{ProviderCheck: &ProviderCheck{Charges: []providerlookup.Charge{succeeded}, Warnings: []string{"another account"}}},
			want:  []string{ask, runbook}},
		{name: "stuck, nothing at the provider", st: processing,
			story: Story{ProviderCheck: &ProviderCheck{Charges: []providerlookup.Charge{{ID: "pi_2", State: "NotCharged"}}}},
			want:  []string{notCharged, runbook}},
		{name: "stuck, nothing at the provider yet within the search lag", st: processing,
			story: Story{ProviderCheck: &ProviderCheck{Warnings: []string{"lag"}, lagging: true}}, want: []string{ask, runbook}},
		{name: "stuck, a pending charge", st: processing,
			story: Story{ProviderCheck: &ProviderCheck{Charges: []providerlookup.Charge{{ID: "pi_3", State: "Pending"}}}},
			want:  []string{ask, runbook}},
		{name: "suspended", story: Story{Suspended: true}, st: paymentsv1alpha1.PaymentStatus{},
			want: []string{"kubectl payments approve pj/invoice-7 -n billing"}},
		{name: "completed with money left", story: Story{Refunded: &RefundPicture{Job: "invoice-7", Left: 700, Currency: "usd"}},
			st:   paymentsv1alpha1.PaymentStatus{Phase: paymentsv1alpha1.PhaseCompleted},
			want: []string{"kubectl payments refund pj/invoice-7 -n billing --amount 700"}},
		{name: "completed, refunded in whole", story: Story{Refunded: &RefundPicture{Job: "invoice-7"}},
			st: paymentsv1alpha1.PaymentStatus{Phase: paymentsv1alpha1.PhaseCompleted}},
		{name: "a ledger conflict needs a person", st: paymentsv1alpha1.PaymentStatus{Phase: paymentsv1alpha1.PhaseCompleted,
			Conditions: stalled(paymentsv1alpha1.ReasonLedgerConflict)},
			want: []string{"read docs/operations.md#a-finished-payment-conflicts-with-the-ledger"}},
		{name: "a charge mismatch needs a person, not a resolution", st: paymentsv1alpha1.PaymentStatus{Phase: paymentsv1alpha1.PhaseFailed,
			Conditions: stalled(paymentsv1alpha1.ReasonChargeMismatch)},
			want: []string{"read " + stalledRunbook}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := tt.story
			s.Kind, s.Namespace, s.Name = string(kindJob), "billing", "invoice-7"
			var got []string
			for _, n := range nextSteps(&s, &tt.st) {
				got = append(got, n.Command)
			}
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

// A refund's unverified charge and a refund created after its payment
// lead to refunds.md; a refund's ProviderChanged to its own runbook.
func TestNextStepsOfARefund(t *testing.T) {
	g := NewWithT(t)
	for reason, want := range map[string]string{
		paymentsv1alpha1.ReasonChargeUnverified:          "read docs/refunds.md#waiting-pending-no-money-moved",
		paymentsv1alpha1.ReasonChargeNotFound:            "read docs/refunds.md#waiting-pending-no-money-moved",
		paymentsv1alpha1.ReasonPaymentCreatedAfterRefund: "read docs/refunds.md#waiting-pending-no-money-moved",
		paymentsv1alpha1.ReasonProviderChanged:           "read docs/operations.md#a-refund-is-stalled-with-providerchanged",
	} {
		s := Story{Kind: string(kindRefund), Namespace: "billing", Name: "invoice-7-refund"}
		st := paymentsv1alpha1.PaymentStatus{Phase: paymentsv1alpha1.PhasePending,
			Conditions: []metav1.Condition{{Type: paymentsv1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: reason}}}
		g.Expect(nextSteps(&s, &st)).To(ConsistOf(HaveField("Command", want)), reason)
	}
}

// A payment without a ledger entry: an unsent failure is not recorded, an
// unfinished one is written when it finishes, and a finished one names
// the ledger read and how to read the other, never "yet".
func TestLedgerNote(t *testing.T) {
	crd := &statusOptions{bookFlags: bookFlags{ledger: ledgerFlags{backend: backendCRD}}}
	tests := []struct {
		name string
		o    *statusOptions
		kind kind
		st   paymentsv1alpha1.PaymentStatus
		want []string
	}{
		{name: "a refund that failed unsent", o: crd, kind: kindRefund,
			st:   paymentsv1alpha1.PaymentStatus{Phase: paymentsv1alpha1.PhaseFailed, Failure: &paymentsv1alpha1.Failure{Reason: "RefundExceedsCharge"}},
			want: []string{"not recorded: the refund failed before anything was sent to the provider, so no money moved"}},
		{name: "not finished", o: crd, kind: kindJob,
			st:   paymentsv1alpha1.PaymentStatus{Phase: paymentsv1alpha1.PhaseProcessing, IdempotencyKey: "billing/invoice-7", Attempts: 1},
			want: []string{"written when the payment finishes"}},
		{name: "finished, the crd ledger read", o: crd, kind: kindJob,
			st: paymentsv1alpha1.PaymentStatus{Phase: paymentsv1alpha1.PhaseCompleted, IdempotencyKey: "billing/invoice-7", Attempts: 1,
				ProviderResponse: &paymentsv1alpha1.ProviderResponse{ID: "pi_1"}},
			want: []string{"the payment is Completed and the crd ledger was read", "manager --ledger-backend=postgres",
				"--ledger=postgres --ledger-postgres-dsn-file=FILE", "KUBECTL_PAYMENTS_LEDGER=postgres", "KUBECTL_PAYMENTS_LEDGER_DSN_FILE=FILE"}},
		{name: "finished, the postgres ledger read", o: &statusOptions{bookFlags: bookFlags{ledger: ledgerFlags{backend: backendPostgres}}}, kind: kindJob,
			st:   paymentsv1alpha1.PaymentStatus{Phase: paymentsv1alpha1.PhaseFailed, IdempotencyKey: "billing/invoice-7", Attempts: 2},
			want: []string{"the payment is Failed and the postgres ledger was read", "--ledger=crd"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := tt.o.ledgerNote(string(tt.kind), &tt.st)
			for _, w := range tt.want {
				g.Expect(got).To(ContainSubstring(w))
			}
			g.Expect(strings.Contains(got, "yet")).To(BeFalse(), got)
		})
	}
}

// Every runbook status names is a section of the docs: its anchor is a
// heading's, as GitHub renders it.
func TestRunbooksExist(t *testing.T) {
	g := NewWithT(t)
	heading := regexp.MustCompile(`(?m)^#+\s+(.+)$`)
	strip := regexp.MustCompile(`[^\w\- ]`)
	books := make([]string, 0, len(runbooks)+1)
	books = append(books, refundProviderChanged)
	for _, b := range runbooks {
		books = append(books, b)
	}
	for _, b := range books {
		doc, anchor, _ := strings.Cut(b, "#")
		text, err := os.ReadFile(filepath.Join("..", "..", doc))
		g.Expect(err).NotTo(HaveOccurred())
		var anchors []string
		for _, m := range heading.FindAllStringSubmatch(string(text), -1) {
			anchors = append(anchors, strings.ReplaceAll(strip.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), ""), " ", "-"))
		}
		g.Expect(anchors).To(ContainElement(anchor), b)
	}
}
