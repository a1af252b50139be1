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

package controller

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// What a job sends and what the claim, the outcome and the finishing write
// set on it, as functions of the job alone. The reconciler's writes use them,
// and so does the benchmark's writes-only baseline, so that the baseline
// writes what the operator writes.

// Charge is what a job sends to its provider, the same on every attempt.
type Charge struct {
	// Key is the idempotency key: the job's key, scoped to its namespace
	// and to the key scope of the provider it was claimed for.
	Key string
	// Request is the charge request built from the job's spec.
	Request payment.ChargeRequest
	// Fingerprint is the request's hash under Key, recorded at the first
	// claim (status.requestHash) and compared at every later one.
	Fingerprint string
}

// ChargeOf derives the charge job sends through the provider it was claimed
// for (status.provider).
func ChargeOf(job *paymentsv1alpha1.PaymentJob) Charge {
	return chargeWithKey(job, sentKey(job))
}

// chargeWithKey is the charge job sends under key.
func chargeWithKey(job *paymentsv1alpha1.PaymentJob, key string) Charge {
	req := chargeRequest(job)
	return Charge{Key: key, Request: req, Fingerprint: payment.RequestHash(key, req)}
}

// sentKey is the key the job sends: the one derived from its namespace,
// its spec and the key scope of the provider it was claimed for
// (checkRecordedKey stops a job whose status says otherwise).
func sentKey(job *paymentsv1alpha1.PaymentJob) string {
	return scopedKey(job, claimedScope(job))
}

// claimedScope is the key scope the job was claimed with:
// status.provider.keyScope, or else the scope its recorded key carries. A
// version that does not know key scopes erases status.provider.keyScope
// with its first status write (a rollback), but not the key it found
// recorded; namespaces never contain ':', so "<scope>:<namespace>/..." says
// the scope. checkRecordedKey still compares the whole key.
func claimedScope(job *paymentsv1alpha1.PaymentJob) string {
	if p := job.Status.Provider; p != nil && p.KeyScope != "" {
		return p.KeyScope
	}
	k := job.Status.IdempotencyKey
	colon, slash := strings.IndexByte(k, ':'), strings.IndexByte(k, '/')
	if colon > 0 && colon < slash {
		return k[:colon]
	}
	return ""
}

// scopedKey is the key the job sends through a provider with key scope
// scope.
func scopedKey(job *paymentsv1alpha1.PaymentJob, scope string) string {
	return payment.ScopedKey(scope, job.Namespace, payment.EffectiveKey(job.Name, job.Spec.IdempotencyKey))
}

// chargeRequest is the request the job sends, the same on every attempt.
func chargeRequest(job *paymentsv1alpha1.PaymentJob) payment.ChargeRequest {
	return payment.ChargeRequest{
		Amount:        job.Spec.Amount,
		Currency:      job.Spec.Currency,
		Customer:      job.Spec.Customer,
		PaymentMethod: job.Spec.PaymentMethod,
		Description:   job.Spec.Description,
		Metadata:      job.Spec.Metadata,
	}
}

// ClaimStatus sets what a claim write sets: phase Processing, the charge's
// key and fingerprint, one more attempt, a claim by holder from now for
// lease, the start time of the first claim, and the conditions with reason.
// It returns the conditions' message.
func ClaimStatus(job *paymentsv1alpha1.PaymentJob, c Charge, holder string, now time.Time, lease time.Duration, reason string) string {
	job.Status.Phase = paymentsv1alpha1.PhaseProcessing
	job.Status.IdempotencyKey = c.Key
	job.Status.RequestHash = c.Fingerprint
	job.Status.Attempts++
	job.Status.Claim = &paymentsv1alpha1.Claim{
		Holder:     holder,
		AcquiredAt: metav1.NewMicroTime(now),
		ExpiresAt:  metav1.NewMicroTime(now.Add(lease)),
	}
	if job.Status.StartedAt == nil {
		job.Status.StartedAt = &metav1.Time{Time: now}
	}
	note := fmt.Sprintf("Attempt %d claimed by %s until %s", job.Status.Attempts, holder,
		job.Status.Claim.ExpiresAt.UTC().Format(time.RFC3339))
	setConditions(job, progress{reason: reason, message: note})
	return note
}

// CompletedStatus sets what the outcome write of a charge sets: phase
// Completed with the provider's answer, the claim released, the completion
// time and the conditions. found marks a charge found at the provider (by a
// lookup or a settle) rather than answered to a charge request. It returns
// the reason and the message of the job's event.
func CompletedStatus(job *paymentsv1alpha1.PaymentJob, o payment.Outcome, found bool, now time.Time) (reason, message string) {
	resp := responseOf(o)
	message = fmt.Sprintf("Charged %d %s as %s", resp.Amount, resp.Currency, resp.ID)
	reason = ReasonSucceeded
	switch {
	case found:
		message += " (found at the provider under this job's idempotency key; no money moved again)"
		reason = ReasonFoundAtProvider
	case o.Replayed:
		message += " (the provider replayed the outcome of an earlier attempt; no money moved again)"
		reason = ReasonReplayed
	}
	completed := metav1.NewTime(now)
	job.Status.Phase = paymentsv1alpha1.PhaseCompleted
	job.Status.ProviderResponse = resp
	job.Status.Failure = nil
	job.Status.Claim = nil
	job.Status.CompletedAt = &completed
	setConditions(job, progress{reason: ReasonSucceeded, message: message})
	return reason, message
}

// MarkFinished sets what the last write of a finished job sets: the
// finalizer removed and the finished label, which takes the job out of the
// manager's cache.
func MarkFinished(job *paymentsv1alpha1.PaymentJob) {
	controllerutil.RemoveFinalizer(job, paymentsv1alpha1.Finalizer)
	if job.Labels == nil {
		job.Labels = map[string]string{}
	}
	job.Labels[paymentsv1alpha1.LabelFinished] = "true"
}

// responseOf is the status's record of a provider's answer, bounded
// whatever the provider answers (see maxIDLength).
func responseOf(o payment.Outcome) *paymentsv1alpha1.ProviderResponse {
	resp := &paymentsv1alpha1.ProviderResponse{
		ID:       payment.Bound(o.ID, maxIDLength),
		Status:   payment.Bound(o.Status, maxShortLength),
		Amount:   o.Amount,
		Currency: payment.Bound(o.Currency, maxShortLength),
		Replayed: o.Replayed,
	}
	if !o.Created.IsZero() {
		resp.Created = &metav1.Time{Time: o.Created}
	}
	return resp
}
