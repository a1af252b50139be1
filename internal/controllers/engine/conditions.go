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

// Reasons of conditions and events. A condition and the event announcing it
// carry the same reason, so users can match either. Each is the API's
// constant (api/v1alpha1/reasons.go), the one source of the values.
const (
	// ReasonSuspended: spec.suspend holds the job in Pending.
	ReasonSuspended = paymentsv1alpha1.ReasonSuspended
	// ReasonDeadlineExceeded: activeDeadlineSeconds passed before the job
	// was claimed; it will never be charged.
	ReasonDeadlineExceeded = paymentsv1alpha1.ReasonDeadlineExceeded
	// ReasonProviderNotFound: the referenced PaymentProvider does not exist.
	ReasonProviderNotFound = paymentsv1alpha1.ReasonProviderNotFound
	// ReasonProviderNotReady: the referenced PaymentProvider is not Ready.
	ReasonProviderNotReady = paymentsv1alpha1.ReasonProviderNotReady
	// ReasonLedgerUnavailable: the ledger did not answer; nothing is sent.
	ReasonLedgerUnavailable = paymentsv1alpha1.ReasonLedgerUnavailable
	// ReasonProviderDeleted: the referenced PaymentProvider is being
	// deleted, so a job that was not claimed waits; or it is gone while the
	// job was Processing and this process kept no adapter for it, so the
	// job is Stalled until a person resolves it.
	ReasonProviderDeleted = paymentsv1alpha1.ReasonProviderDeleted
	// ReasonRateLimited: the job waits for a token of its provider's
	// client-side rate limit (requestsPerSecond, burst).
	ReasonRateLimited = paymentsv1alpha1.ReasonRateLimited
	// ReasonClaimed: this manager claimed the job and is charging it.
	ReasonClaimed = paymentsv1alpha1.ReasonClaimed
	// ReasonClaimTakenOver: the previous claim expired and this manager took
	// it over, with the same idempotency key.
	ReasonClaimTakenOver = paymentsv1alpha1.ReasonClaimTakenOver
	// ReasonTransientError: the provider call had an uncertain outcome; it is
	// retried with the same key.
	ReasonTransientError = paymentsv1alpha1.ReasonTransientError
	// ReasonRetriesExhausted: backoffLimit retries failed; the job keeps
	// retrying at the longest interval and needs attention.
	ReasonRetriesExhausted = paymentsv1alpha1.ReasonRetriesExhausted
	// ReasonRequestChanged: the request no longer matches the one recorded at
	// the first claim; the job is not charged again.
	ReasonRequestChanged = paymentsv1alpha1.ReasonRequestChanged
	// ReasonLookupFailed: the provider could not be asked whether it holds a
	// charge under the job's key; the job is not charged until it answers.
	ReasonLookupFailed = paymentsv1alpha1.ReasonLookupFailed
	// ReasonChargeMismatch: the provider holds a charge under the job's key
	// that was made for another request; the job is not charged.
	ReasonChargeMismatch = paymentsv1alpha1.ReasonChargeMismatch
	// ReasonProviderChanged: the job's provider no longer reaches the
	// account (or object, or endpoint) its key was first sent to; the job is
	// not charged there.
	ReasonProviderChanged = paymentsv1alpha1.ReasonProviderChanged
	// ReasonKeyMismatch: status.idempotencyKey is not the key derived from
	// the namespace and spec; the job is not charged.
	ReasonKeyMismatch = paymentsv1alpha1.ReasonKeyMismatch
	// ReasonUncertainRefusal: a retry was refused as invalid or as a reused
	// key, but an earlier attempt had no answer and may have charged; the
	// job is not failed.
	ReasonUncertainRefusal = paymentsv1alpha1.ReasonUncertainRefusal
	// ReasonLedgerConflict: the object finished, but the ledger holds
	// another outcome under its key (recorded first by another object);
	// it keeps its finalizer and its phase, Stalled, until a person acts.
	ReasonLedgerConflict = paymentsv1alpha1.ReasonLedgerConflict
	// ReasonFoundAtProvider: the provider already held this job's charge
	// (found by its key, or settled); no money moved again.
	ReasonFoundAtProvider = paymentsv1alpha1.ReasonFoundAtProvider
	// ReasonFoundInLedger: the operator's ledger records this payment's
	// outcome (the job was deleted and created again); it was finished from
	// the ledger with no provider call.
	ReasonFoundInLedger = paymentsv1alpha1.ReasonFoundInLedger
	// ReasonResolved: a person resolved the uncertain outcome with the
	// payments.idempotency.dev/resolve annotation.
	ReasonResolved = paymentsv1alpha1.ReasonResolved
	// ReasonResolutionRefused: the resolve annotation was not honoured: the
	// job is not Stalled on an uncertain outcome, the value is not valid, or
	// the provider contradicts it.
	ReasonResolutionRefused = paymentsv1alpha1.ReasonResolutionRefused
	// ReasonResolutionWaiting: a not-charged resolution waits until the
	// last attempt is older than the provider's search lag (a charge it
	// made may not show in the lookup before); no attempt is made
	// meanwhile.
	ReasonResolutionWaiting = paymentsv1alpha1.ReasonResolutionWaiting
	// ReasonSucceeded: the provider confirmed the charge.
	ReasonSucceeded = paymentsv1alpha1.ReasonSucceeded
	// ReasonReplayed: the provider answered with the saved outcome of an
	// earlier request with the same key; no money moved again.
	ReasonReplayed = paymentsv1alpha1.ReasonReplayed

	// ReasonCardDeclined, ReasonInvalidRequest and ReasonKeyReused are the
	// failure reasons of definitive refusals.
	ReasonCardDeclined   = payment.ReasonCardDeclined
	ReasonInvalidRequest = payment.ReasonInvalidRequest
	ReasonKeyReused      = payment.ReasonKeyReused
	// ReasonPaymentRefused stands for a provider's refusal reason that is
	// not a valid condition reason.
	ReasonPaymentRefused = paymentsv1alpha1.ReasonPaymentRefused
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
func SetConditions(job Object, p Progress) {
	gen := job.GetGeneration()
	if job.GetPaymentStatus().Conditions == nil {
		// Ready, Reconciling and Stalled: one allocation instead of three.
		job.GetPaymentStatus().Conditions = make([]metav1.Condition, 0, 3)
	}
	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&job.GetPaymentStatus().Conditions, metav1.Condition{
			Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen,
		})
	}
	// A finished object whose outcome is not the ledger's stays Stalled
	// (LedgerConflict) through every later write: only a person ends it.
	conflict := meta.FindStatusCondition(job.GetPaymentStatus().Conditions, paymentsv1alpha1.ConditionStalled)
	if conflict != nil && (conflict.Status != metav1.ConditionTrue || conflict.Reason != ReasonLedgerConflict) {
		conflict = nil
	}
	conflict = conflict.DeepCopy()
	phase := job.GetPaymentStatus().Phase
	switch {
	case Terminal(phase) && p.Reason == ReasonLedgerConflict:
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
		// A suspended or expired job makes no progress by itself. A stalled
		// one is still retried, but needs attention: kstatus reads
		// Reconciling before Stalled, so it is False there, and Flux reports
		// the job as failed instead of waiting for it.
		reconciling := !p.Stalled && p.Reason != ReasonSuspended && p.Reason != ReasonDeadlineExceeded
		set(paymentsv1alpha1.ConditionReconciling, boolStatus(reconciling), p.Reason, p.Message)
		if p.Stalled {
			set(paymentsv1alpha1.ConditionStalled, metav1.ConditionTrue, p.Reason, p.Message)
		} else {
			set(paymentsv1alpha1.ConditionStalled, metav1.ConditionFalse, p.Reason, "")
		}
	}
	if conflict != nil && Terminal(phase) && p.Reason != ReasonLedgerConflict {
		set(paymentsv1alpha1.ConditionStalled, metav1.ConditionTrue, conflict.Reason, conflict.Message)
	}
	job.GetPaymentStatus().ObservedGeneration = gen
}

func boolStatus(b bool) metav1.ConditionStatus {
	if b {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}
