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

package paymentjob

import (
	"time"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// What the engine's writes set on a PaymentJob, typed for the callers that
// imitate them: the protocol table builds its jobs with them, and the
// benchmark's writes-only baseline writes what the operator writes.

// ClaimStatus sets what a claim write sets: phase Processing, the charge's
// key and fingerprint, one more attempt, a claim by holder from now for
// lease, the start time of the first claim, and the conditions with reason.
// It returns the conditions' message.
func ClaimStatus(job *paymentsv1alpha1.PaymentJob, c Charge, holder string, now time.Time, lease time.Duration, reason string) string {
	return engine.ClaimStatus(job, c.request(), holder, now, lease, reason)
}

// CompletedStatus sets what the outcome write of a charge sets: phase
// Completed with the provider's answer, the claim released, the completion
// time and the conditions. found marks a charge found at the provider (by a
// lookup or a settle) rather than answered to a charge request. It returns
// the reason and the message of the job's event.
func CompletedStatus(job *paymentsv1alpha1.PaymentJob, o payment.Outcome, found bool, now time.Time) (reason, message string) {
	return engine.CompletedStatus(job, words, o, found, now)
}

// LedgerEntry is the ledger's record of a finished job; now dates it when
// the job has no completion time. The benchmark records its jobs with it too.
func LedgerEntry(job *paymentsv1alpha1.PaymentJob, now time.Time) ledger.Entry {
	return engine.LedgerEntry(job, ChargeOf(job).request(), now)
}
