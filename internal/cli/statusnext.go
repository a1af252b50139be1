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
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// What status says to do next: a command with the object's real name and
// namespace, or the runbook section for a reason that needs a person. It
// suggests --charged only when the provider showed that charge under the
// payment's own key, at the account it was sent to.

// NextStep is one thing to do next.
type NextStep struct {
	// Why says what the step is for.
	Why string `json:"why"`
	// Command is the command to run, or the document to read.
	Command string `json:"command"`
}

// runbooks are the sections of the docs for reasons that need a person.
var runbooks = map[string]string{
	paymentsv1alpha1.ReasonRetriesExhausted:          "docs/operations.md#a-job-is-stalled-with-retriesexhausted",
	paymentsv1alpha1.ReasonRequestChanged:            stalledRunbook,
	paymentsv1alpha1.ReasonChargeMismatch:            stalledRunbook,
	paymentsv1alpha1.ReasonProviderChanged:           stalledRunbook,
	paymentsv1alpha1.ReasonKeyMismatch:               stalledRunbook,
	paymentsv1alpha1.ReasonUncertainRefusal:          stalledRunbook,
	paymentsv1alpha1.ReasonResolutionRefused:         "docs/operations.md#resolving-an-uncertain-job-by-hand",
	paymentsv1alpha1.ReasonLedgerConflict:            "docs/operations.md#a-finished-payment-conflicts-with-the-ledger",
	paymentsv1alpha1.ReasonLedgerUnavailable:         "docs/operations.md#the-ledger-cannot-be-read",
	paymentsv1alpha1.ReasonAuthenticationRequired:    "docs/operations.md#a-job-is-failed-with-authentication_required",
	paymentsv1alpha1.ReasonLookupFailed:              "docs/operations.md#a-job-is-pending-with-lookupfailed",
	paymentsv1alpha1.ReasonProviderNotReady:          "docs/operations.md#a-job-is-pending-with-providernotready-secretnotfound",
	paymentsv1alpha1.ReasonSecretNotFound:            "docs/operations.md#a-job-is-pending-with-providernotready-secretnotfound",
	paymentsv1alpha1.ReasonProviderDeleted:           "docs/operations.md#a-job-is-stalled-with-providerdeleted",
	paymentsv1alpha1.ReasonRefundExceedsCharge:       "docs/operations.md#a-refund-is-failed-with-refundexceedscharge",
	paymentsv1alpha1.ReasonRefundsUnsupported:        "docs/operations.md#a-refund-is-pending-with-refundsunsupported",
	paymentsv1alpha1.ReasonPaymentNotFound:           "docs/operations.md#a-refund-is-pending-with-paymentnotfound",
	paymentsv1alpha1.ReasonRefundFailedAfterSuccess:  "docs/operations.md#a-refund-failed-after-it-succeeded",
	paymentsv1alpha1.ReasonSettlementOverdue:         "docs/operations.md#a-payment-is-stalled-with-settlementoverdue",
	paymentsv1alpha1.ReasonChargeUnverified:          refundWaiting,
	paymentsv1alpha1.ReasonPaymentCreatedAfterRefund: refundWaiting,
}

// The runbooks of a job stopped so that nothing is paid twice, and of a
// refund whose provider changed or that waits unsent.
const (
	stalledRunbook        = "docs/operations.md#a-job-is-stalled-with-providerchanged-chargemismatch-keymismatch-requestchanged-or-uncertainrefusal"
	refundProviderChanged = "docs/operations.md#a-refund-is-stalled-with-providerchanged"
	refundWaiting         = "docs/refunds.md#waiting-pending-no-money-moved"
)

// stalledReason is the reason of st's Stalled condition, if it is True.
func stalledReason(st *paymentsv1alpha1.PaymentStatus) string {
	if c := meta.FindStatusCondition(st.Conditions, paymentsv1alpha1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue {
		return c.Reason
	}
	return ""
}

// nextSteps are the steps for s, whose status is st.
func nextSteps(s *Story, st *paymentsv1alpha1.PaymentStatus) []NextStep {
	obj := fmt.Sprintf("%s/%s -n %s", shortKind(s.Kind), s.Name, s.Namespace)
	var steps []NextStep
	add := func(why, format string, args ...any) {
		steps = append(steps, NextStep{Why: why, Command: fmt.Sprintf(format, args...)})
	}
	if s.Suspended {
		add("send the payment: it waits for approval", "kubectl payments approve %s", obj)
	}
	stalled := stalledReason(st)
	if stalled != "" && st.Phase == paymentsv1alpha1.PhaseProcessing && s.Kind == string(kindJob) {
		steps = append(steps, resolveSteps(s, obj)...)
	}
	if book := runbookOf(s, st, stalled); book != "" {
		add("what the reason means and what to do", "read %s", book)
	}
	if p := s.Refunded; p != nil && p.Left > 0 && (s.Kind == string(kindJob) || finished(st)) {
		add(fmt.Sprintf("refund what is left of the charge (%s), or less", money(p.Left, p.Currency)),
			"kubectl payments refund pj/%s -n %s --amount %d", p.Job, s.Namespace, p.Left)
	}
	return steps
}

// resolveSteps are the steps of a stuck job: ask the provider, then
// resolve with what it showed.
func resolveSteps(s *Story, obj string) []NextStep {
	c := s.ProviderCheck
	switch {
	case c == nil:
		return []NextStep{{Why: "ask the provider (read-only) what it holds under the payment's key",
			Command: fmt.Sprintf("kubectl payments status %s --check-provider", obj)}}
	case c.Error != "":
		return []NextStep{{Why: "the provider could not be asked (above): fix that and ask again, or look the key " + c.Key +
			" up at the provider yourself", Command: fmt.Sprintf("kubectl payments status %s --check-provider", obj)}}
	case len(c.Warnings) > 1 || (len(c.Warnings) == 1 && !c.lagging):
		// Another account, or a replaced PaymentProvider: what it
		// shows is not about this payment.
		return []NextStep{{Why: "the provider's answer may not be about this payment (the warnings above): " +
			"ask again once they are gone", Command: fmt.Sprintf("kubectl payments status %s --check-provider", obj)}}
	}
	ask := NextStep{Why: "the provider's search may not show a charge of the last attempt yet (the warning above): ask again " +
		"after the search lag", Command: fmt.Sprintf("kubectl payments status %s --check-provider", obj)}
	var succeeded, pending []string
	for _, ch := range c.Charges {
		switch ch.State {
		case "Succeeded":
			succeeded = append(succeeded, ch.ID)
		case "Pending":
			pending = append(pending, ch.ID)
		}
	}
	switch {
	case len(pending) > 0:
		return []NextStep{{Why: "the provider holds a pending charge under the key: wait for it to settle, then ask again",
			Command: fmt.Sprintf("kubectl payments status %s --check-provider", obj)}}
	case len(succeeded) == 1:
		return []NextStep{{Why: fmt.Sprintf("the provider holds charge %s under the payment's key: the payment was charged", succeeded[0]),
			Command: fmt.Sprintf("kubectl payments resolve %s --charged=%s", obj, succeeded[0])}}
	case len(succeeded) > 1:
		return nil
	case c.lagging:
		// Nothing shown yet is not nothing charged.
		return []NextStep{ask}
	}
	return []NextStep{{Why: "the provider holds no charge under the payment's key that succeeded or is pending: nothing was charged",
		Command: fmt.Sprintf("kubectl payments resolve %s --not-charged", obj)}}
}

// runbookOf is the section of the docs for the reason that stopped s,
// or failed it, if one needs a person.
func runbookOf(s *Story, st *paymentsv1alpha1.PaymentStatus, stalled string) string {
	reason := stalled
	if reason == "" && st.Failure != nil && st.Phase == paymentsv1alpha1.PhaseFailed {
		reason = st.Failure.Reason
	}
	if reason == "" {
		if c := meta.FindStatusCondition(st.Conditions, paymentsv1alpha1.ConditionReady); c != nil {
			reason = c.Reason
		}
	}
	switch {
	case reason == paymentsv1alpha1.ReasonProviderChanged && s.Kind == string(kindRefund):
		return refundProviderChanged
	case reason == paymentsv1alpha1.ReasonChargeNotFound && stalled != "":
		// A refund waiting on a charge its provider does not hold (Failed
		// ChargeNotFound, the provider's refusal, needs no runbook).
		return refundWaiting
	}
	return runbooks[reason]
}

// finished reports whether st is Completed or Failed.
func finished(st *paymentsv1alpha1.PaymentStatus) bool {
	return st.Phase == paymentsv1alpha1.PhaseCompleted || st.Phase == paymentsv1alpha1.PhaseFailed
}
