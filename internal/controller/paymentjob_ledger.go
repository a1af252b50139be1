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
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// The outcome ledger in the protocol: a job that was never claimed is looked
// up in it before anything else (a hit finishes the job with no provider
// call), and a final outcome is recorded in it before the finalizer comes
// off, so the job cannot be deleted before its record is durable.

// +kubebuilder:rbac:groups=payments.idempotency.dev,resources=paymentledgers,verbs=get;list;watch;create;update;delete

// NewLedger returns the outcome ledger of a manager, added to it: it writes
// through the manager's client, reads pages from the API server (never
// caching their entries) and watches the pages' metadata.
func NewLedger(mgr ctrl.Manager, retention time.Duration) (*ledger.Ledger, error) {
	l := ledger.New(mgr.GetClient(), mgr.GetAPIReader(), ledger.Options{Retention: retention})
	if err := l.WatchPages(context.Background(), mgr.GetCache()); err != nil {
		return nil, err
	}
	if err := mgr.Add(l); err != nil {
		return nil, fmt.Errorf("cannot add the outcome ledger to the manager: %w", err)
	}
	return l, nil
}

// OutcomeLedger is the durable record of finished payments; *ledger.Ledger
// is the one the manager uses.
type OutcomeLedger interface {
	// Find returns the outcome recorded under an idempotency key.
	Find(ctx context.Context, key string) (ledger.Entry, bool, error)
	// Has reports, without an API request, whether a key is recorded.
	Has(key string) bool
	// Record stores an outcome, unless one is recorded under its key.
	Record(ctx context.Context, e ledger.Entry) error
}

// fromLedger reports whether the job was finished from the ledger rather
// than by a provider answer in its own lifetime.
func fromLedger(job *paymentsv1alpha1.PaymentJob) bool {
	c := meta.FindStatusCondition(job.Status.Conditions, paymentsv1alpha1.ConditionReady)
	return c != nil && c.Reason == ReasonFoundInLedger
}

// recordFromLedger finishes a job whose key the ledger holds: as the
// recorded outcome when the request is the same, with no provider call; it
// stalls when the key was used for another request.
func (r *PaymentJobReconciler) recordFromLedger(ctx context.Context, job *paymentsv1alpha1.PaymentJob, e ledger.Entry) error {
	key, req := sentKey(job), chargeRequest(job)
	hash := payment.RequestHash(key, req)
	when := e.At.UTC().Format(time.RFC3339)
	if e.Fingerprint != hash {
		return r.stall(ctx, job, progress{reason: ReasonChargeMismatch, message: payment.CleanMessage(fmt.Sprintf(
			"Not charging: the operator's ledger records a payment under this idempotency key for another request "+
				"(%s %s on %s); delete this job, or use another idempotency key", e.Outcome, e.Charge, when), maxMessageLength)})
	}
	now := metav1.NewTime(r.Clock.Now())
	job.Status.IdempotencyKey = key
	job.Status.RequestHash = hash
	job.Status.Claim = nil
	provider := e.Provider
	job.Status.Provider = &provider
	job.Status.CompletedAt = &now
	by := ""
	if e.ResolvedBy != "" {
		by = fmt.Sprintf(", as resolved by %s", e.ResolvedBy)
	}
	var msg, eventType string
	if e.Outcome == paymentsv1alpha1.LedgerCompleted {
		job.Status.Phase = paymentsv1alpha1.PhaseCompleted
		job.Status.ProviderResponse = &paymentsv1alpha1.ProviderResponse{
			ID: e.Charge, Status: "succeeded", Amount: job.Spec.Amount, Currency: job.Spec.Currency, Replayed: true,
		}
		job.Status.Failure = nil
		msg = fmt.Sprintf("Charged %d %s as %s on %s%s: found in the operator's ledger, with no provider call; no money moved again",
			job.Spec.Amount, job.Spec.Currency, e.Charge, when, by)
		eventType = corev1.EventTypeNormal
	} else {
		reason := e.Reason
		if !payment.ValidReason(reason) {
			reason = ReasonPaymentRefused
		}
		job.Status.Phase = paymentsv1alpha1.PhaseFailed
		msg = fmt.Sprintf("Not charged: the operator's ledger records that this payment failed on %s (%s)%s; no provider call",
			when, reason, by)
		job.Status.Failure = &paymentsv1alpha1.Failure{Reason: reason, Message: msg}
		eventType = corev1.EventTypeWarning
	}
	setConditions(job, progress{reason: ReasonFoundInLedger, message: msg})
	if err := r.Client.Status().Update(ctx, job); err != nil {
		return fmt.Errorf("cannot record the outcome found in the ledger: %w", err)
	}
	ledgerHitsTotal.Inc()
	r.Recorder.Eventf(job, nil, eventType, ReasonFoundInLedger, "Charge", "%s", msg)
	log.FromContext(ctx).Info("Found the outcome in the ledger; not calling the provider", "charge", e.Charge, "outcome", e.Outcome)
	return r.finish(ctx, job)
}

// recordInLedger stores the job's final outcome in the ledger. It is called
// before the finalizer is removed, and again by any later pass that finds the
// finalizer still there; the ledger keeps the first outcome of a key.
func (r *PaymentJobReconciler) recordInLedger(ctx context.Context, job *paymentsv1alpha1.PaymentJob) error {
	if r.Ledger == nil || fromLedger(job) || !controllerutil.ContainsFinalizer(job, paymentsv1alpha1.Finalizer) {
		return nil
	}
	if err := r.Ledger.Record(ctx, LedgerEntry(job, r.Clock.Now())); err != nil {
		return fmt.Errorf("cannot record the outcome in the ledger: %w", err)
	}
	return nil
}

// LedgerEntry is the ledger's record of a finished job; now dates it when
// the job has no completion time. The benchmark records its jobs with it too.
func LedgerEntry(job *paymentsv1alpha1.PaymentJob, now time.Time) ledger.Entry {
	// Keyed as a re-created job looks it up: by the key and request its
	// namespace and spec derive (the status says the same, unless someone
	// else wrote it).
	c := ChargeOf(job)
	e := ledger.Entry{
		Key:         c.Key,
		Fingerprint: c.Fingerprint,
		Outcome:     paymentsv1alpha1.LedgerCompleted,
		At:          now,
	}
	if job.Status.CompletedAt != nil {
		e.At = job.Status.CompletedAt.Time
	}
	if p := job.Status.Provider; p != nil {
		e.Provider = *p
	}
	if resp := job.Status.ProviderResponse; resp != nil {
		e.Charge = resp.ID
	}
	if job.Status.Phase == paymentsv1alpha1.PhaseFailed {
		e.Outcome = paymentsv1alpha1.LedgerFailed
		if f := job.Status.Failure; f != nil {
			e.Reason = f.Reason
		}
	}
	if res := job.Status.Resolution; res != nil {
		e.Reason = ReasonResolved
		e.ResolvedBy = res.By
		if e.ResolvedBy == "" {
			e.ResolvedBy = unknownResolver
		}
	}
	return e
}

// finishFromLedger finishes a job that was never claimed here but may have
// been paid before this object existed (a manifest re-created from Git, a
// TTL-deleted job coming back). The ledger is asked first, before any
// deadline, suspension or provider, and answers from memory unless it
// holds the key. A job finished from it needs no finalizer: nothing is in
// flight. done reports that the job was finished (or the ledger failed).
func (r *PaymentJobReconciler) finishFromLedger(ctx context.Context, job *paymentsv1alpha1.PaymentJob) (done bool, err error) {
	if r.Ledger == nil || job.Status.IdempotencyKey != "" {
		return false, nil
	}
	e, found, err := r.Ledger.Find(ctx, sentKey(job))
	if err != nil || !found {
		return err != nil, err
	}
	return true, r.recordFromLedger(ctx, job, e)
}
