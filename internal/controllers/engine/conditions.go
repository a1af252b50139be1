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

package engine

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// Progress is why a pass left an object where it is: the input of its
// conditions besides its phase. A kind returns one to keep an object
// waiting (or stalled) before its first claim.
type Progress struct {
	// Reason is the reason of the conditions and of the event.
	Reason string
	// Message says it to users.
	Message string
	// Stalled marks a non-terminal object that needs attention. A finished
	// object (Completed, Failed) is Stalled when Failed, and with reason
	// LedgerConflict, which sets the Stalled condition only: Ready and
	// Reconciling keep saying what the outcome is.
	Stalled bool
}

// SetConditions computes Ready, Reconciling and Stalled, in the kstatus sense,
// from the object's phase and the progress of the last pass. It is the only
// place that sets the conditions of a PaymentJob or a PaymentRefund.
func SetConditions(obj Object, p Progress) {
	gen := obj.GetGeneration()
	if obj.GetPaymentStatus().Conditions == nil {
		// Ready, Reconciling and Stalled: one allocation instead of three.
		obj.GetPaymentStatus().Conditions = make([]metav1.Condition, 0, 3)
	}
	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&obj.GetPaymentStatus().Conditions, metav1.Condition{
			Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen,
		})
	}
	// A finished object whose outcome is not the ledger's stays Stalled
	// (LedgerConflict) through every later write: only a person ends it.
	conflict := meta.FindStatusCondition(obj.GetPaymentStatus().Conditions, paymentsv1alpha1.ConditionStalled)
	if conflict != nil && (conflict.Status != metav1.ConditionTrue || conflict.Reason != paymentsv1alpha1.ReasonLedgerConflict) {
		conflict = nil
	}
	conflict = conflict.DeepCopy()
	phase := obj.GetPaymentStatus().Phase
	switch {
	case Terminal(phase) && p.Reason == paymentsv1alpha1.ReasonLedgerConflict:
		// A finished object whose outcome is not the ledger's: its outcome
		// stands, as Ready and Reconciling say; Stalled says what is wrong.
		set(paymentsv1alpha1.ConditionStalled, metav1.ConditionTrue, p.Reason, p.Message)
	case phase == paymentsv1alpha1.PhaseCompleted:
		set(paymentsv1alpha1.ConditionReady, metav1.ConditionTrue, p.Reason, p.Message)
		set(paymentsv1alpha1.ConditionReconciling, metav1.ConditionFalse, p.Reason, "")
		set(paymentsv1alpha1.ConditionStalled, metav1.ConditionFalse, p.Reason, "")
	case phase == paymentsv1alpha1.PhaseFailed:
		set(paymentsv1alpha1.ConditionReady, metav1.ConditionFalse, p.Reason, p.Message)
		set(paymentsv1alpha1.ConditionReconciling, metav1.ConditionFalse, p.Reason, "")
		set(paymentsv1alpha1.ConditionStalled, metav1.ConditionTrue, p.Reason, p.Message)
	default:
		set(paymentsv1alpha1.ConditionReady, metav1.ConditionFalse, p.Reason, p.Message)
		// A suspended or expired object makes no progress by itself. A stalled
		// one is still retried, but needs attention: kstatus reads
		// Reconciling before Stalled, so it is False there, and Flux reports
		// the object as failed instead of waiting for it.
		reconciling := !p.Stalled && p.Reason != paymentsv1alpha1.ReasonSuspended && p.Reason != paymentsv1alpha1.ReasonDeadlineExceeded
		set(paymentsv1alpha1.ConditionReconciling, boolStatus(reconciling), p.Reason, p.Message)
		if p.Stalled {
			set(paymentsv1alpha1.ConditionStalled, metav1.ConditionTrue, p.Reason, p.Message)
		} else {
			set(paymentsv1alpha1.ConditionStalled, metav1.ConditionFalse, p.Reason, "")
		}
	}
	if conflict != nil && Terminal(phase) && p.Reason != paymentsv1alpha1.ReasonLedgerConflict {
		set(paymentsv1alpha1.ConditionStalled, metav1.ConditionTrue, conflict.Reason, conflict.Message)
	}
	obj.GetPaymentStatus().ObservedGeneration = gen
}

func boolStatus(b bool) metav1.ConditionStatus {
	if b {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

// refusalReasons maps the refusal codes of package payment, which knows
// nothing of the API, to the API's reasons: the one place they meet.
var refusalReasons = map[string]string{
	payment.ReasonCardDeclined:        paymentsv1alpha1.ReasonCardDeclined,
	payment.ReasonInvalidRequest:      paymentsv1alpha1.ReasonInvalidRequest,
	payment.ReasonKeyReused:           paymentsv1alpha1.ReasonIdempotencyKeyReused,
	payment.ReasonRefundExceedsCharge: paymentsv1alpha1.ReasonRefundExceedsCharge,
	payment.ReasonChargeNotFound:      paymentsv1alpha1.ReasonChargeNotFound,
	payment.ReasonChargeNotRefundable: paymentsv1alpha1.ReasonChargeNotRefundable,
	payment.ReasonRefundFailed:        paymentsv1alpha1.ReasonRefundFailed,
}

// refusalReason is the API's reason for a refusal: its code's
// (refusalReasons), or a provider's own code (a Stripe decline code, a
// reason of the HTTP contract) if the API accepts it as a condition reason,
// or PaymentRefused, so that a provider's odd answer cannot make the
// outcome write fail forever.
func refusalReason(r *payment.Refusal) string {
	if reason, ok := refusalReasons[r.Reason]; ok {
		return reason
	}
	if payment.ValidReason(r.Reason) {
		return r.Reason
	}
	return paymentsv1alpha1.ReasonPaymentRefused
}
