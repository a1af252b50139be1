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
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// Every API write of a PaymentJob. The rule, once: each write carries the
// resourceVersion the decision was made on (Status().Update with the object
// as read, finalizer and label changes as merge patches with
// MergeFromWithOptimisticLock), so a stale cache or another replica gets a
// 409 Conflict and the pass ends quietly. The only write that retries a
// conflict is the outcome, and only while the claim is still this attempt's.

// recordSuccess writes Completed with the provider's response, then removes
// the finalizer. found marks a charge found at the provider (by a lookup or
// a settle) rather than answered to this pass's charge request.
func (r *PaymentJobReconciler) recordSuccess(ctx context.Context, job *paymentsv1alpha1.PaymentJob, o payment.Outcome, found bool) error {
	now := r.Clock.Now()
	var eventReason, msg string
	err := r.writeOutcome(ctx, job, func(j *paymentsv1alpha1.PaymentJob) {
		eventReason, msg = CompletedStatus(j, o, found, now)
	})
	if err != nil {
		return fmt.Errorf("cannot record the charge outcome: %w", err)
	}
	r.Recorder.Eventf(job, nil, corev1.EventTypeNormal, eventReason, "Charge", "%s", msg)
	log.FromContext(ctx).Info("Payment completed", "charge", o.ID, "replayed", o.Replayed, "attempts", job.Status.Attempts)
	if err := r.recordInLedger(ctx, job); err != nil {
		return err
	}
	return r.finish(ctx, job)
}

// recordRefusal writes Failed: the provider definitively did not charge.
func (r *PaymentJobReconciler) recordRefusal(ctx context.Context, job *paymentsv1alpha1.PaymentJob, refusal *payment.Refusal) error {
	now := metav1.NewTime(r.Clock.Now())
	msg := payment.CleanMessage(refusal.Message, maxMessageLength)
	reason := refusalReason(refusal)
	err := r.writeOutcome(ctx, job, func(j *paymentsv1alpha1.PaymentJob) {
		j.Status.Phase = paymentsv1alpha1.PhaseFailed
		j.Status.Failure = &paymentsv1alpha1.Failure{Reason: reason, Message: msg}
		j.Status.Claim = nil
		j.Status.CompletedAt = &now
		setConditions(j, progress{reason: reason, message: "The provider refused the payment; nothing was charged: " + msg})
	})
	if err != nil {
		return fmt.Errorf("cannot record the refusal: %w", err)
	}
	r.Recorder.Eventf(job, nil, corev1.EventTypeWarning, reason, "Charge", "The provider refused the payment: %s", msg)
	log.FromContext(ctx).Info("Payment refused by the provider", "reason", refusal.Reason)
	if err := r.recordInLedger(ctx, job); err != nil {
		return err
	}
	return r.finish(ctx, job)
}

// refusalReason is the refusal's reason if the API accepts it as a
// condition reason, so that a provider's odd answer cannot make the outcome
// write fail forever.
func refusalReason(r *payment.Refusal) string {
	if payment.ValidReason(r.Reason) {
		return r.Reason
	}
	return ReasonPaymentRefused
}

// writeOutcome writes a final outcome to the job's status. A conflict means
// somebody else wrote the job during the call: a label from a GitOps tool, a
// deletion. The outcome is then written on a fresh copy, but only while the
// claim is still this attempt's; otherwise the conflict is returned and the
// job is looked at again (a later claim replays the outcome at the provider).
func (r *PaymentJobReconciler) writeOutcome(ctx context.Context, job *paymentsv1alpha1.PaymentJob, apply func(*paymentsv1alpha1.PaymentJob)) error {
	attempt := job.Status.Attempts
	current := job
	first := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			fresh := &paymentsv1alpha1.PaymentJob{}
			if err := r.Client.Get(ctx, client.ObjectKeyFromObject(job), fresh); err != nil {
				return err
			}
			c := fresh.Status.Claim
			if fresh.Status.Phase != paymentsv1alpha1.PhaseProcessing || c == nil ||
				c.Holder != r.Holder || fresh.Status.Attempts != attempt {
				return errClaimLost
			}
			current = fresh
		}
		first = false
		apply(current)
		return r.Client.Status().Update(ctx, current)
	})
	if errors.Is(err, errClaimLost) {
		claimLostTotal.Inc()
	}
	if err != nil {
		return err
	}
	*job = *current
	return nil
}

// errClaimLost says the claim moved on while the provider was called.
var errClaimLost = errors.New("the claim was taken over during the provider call")

// recordUncertain keeps the job Processing after an uncertain outcome and
// schedules the next attempt; after backoffLimit retries it reports Stalled
// and keeps retrying at the longest interval. It never writes Failed.
func (r *PaymentJobReconciler) recordUncertain(ctx context.Context, job *paymentsv1alpha1.PaymentJob, callErr error) (ctrl.Result, error) {
	delay := max(r.retryDelay(job), payment.RetryAfter(callErr))
	msg := payment.CleanMessage(fmt.Sprintf("Attempt %d had an uncertain outcome (%v); retrying in %s with the same idempotency key",
		job.Status.Attempts, callErr, delay.Round(time.Millisecond)), maxMessageLength)
	p := progress{reason: ReasonTransientError, message: msg}
	if r.exhausted(job) {
		p = progress{reason: ReasonRetriesExhausted, message: msg, stalled: true}
	}
	log.FromContext(ctx).Info("Provider call failed, will retry", "attempt", job.Status.Attempts,
		"retryAfter", delay, "error", callErr.Error())
	r.Recorder.Eventf(job, nil, corev1.EventTypeWarning, p.reason, "Charge", "%s", msg)
	if err := r.writeProgress(ctx, job, p); err != nil && !apierrors.IsConflict(err) {
		return ctrl.Result{}, err
	}
	return r.retryIn(job, jitter(delay)), nil
}

// setPending writes phase Pending with the reason, if that changes anything.
func (r *PaymentJobReconciler) setPending(ctx context.Context, job *paymentsv1alpha1.PaymentJob, p progress) error {
	previous := readyReason(job)
	job.Status.Phase = paymentsv1alpha1.PhasePending
	changed, err := r.updateStatusIfChanged(ctx, job, p)
	if err != nil || !changed {
		return err
	}
	if previous != p.reason {
		eventType := corev1.EventTypeNormal
		if p.stalled || p.reason == ReasonProviderNotFound || p.reason == ReasonProviderNotReady {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(job, nil, eventType, p.reason, "Wait", "%s", p.message)
	}
	return nil
}

// writeProgress records the progress of a pass in the conditions, if that
// changes anything.
func (r *PaymentJobReconciler) writeProgress(ctx context.Context, job *paymentsv1alpha1.PaymentJob, p progress) error {
	_, err := r.updateStatusIfChanged(ctx, job, p)
	return err
}

func (r *PaymentJobReconciler) updateStatusIfChanged(ctx context.Context, job *paymentsv1alpha1.PaymentJob, p progress) (bool, error) {
	before := job.Status.DeepCopy()
	setConditions(job, p)
	if equality.Semantic.DeepEqual(before, &job.Status) && before.Phase == job.Status.Phase {
		return false, nil
	}
	if err := r.Client.Status().Update(ctx, job); err != nil {
		return false, fmt.Errorf("cannot update payment job status: %w", err)
	}
	return true, nil
}

// ensureFinalizer adds the outcome guard before the job can be claimed.
func (r *PaymentJobReconciler) ensureFinalizer(ctx context.Context, job *paymentsv1alpha1.PaymentJob) error {
	if controllerutil.ContainsFinalizer(job, paymentsv1alpha1.Finalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(job.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(job, paymentsv1alpha1.Finalizer)
	if err := r.Client.Patch(ctx, job, patch); err != nil {
		return fmt.Errorf("cannot add finalizer: %w", err)
	}
	return nil
}

// removeFinalizer releases a job that has no work in flight.
func (r *PaymentJobReconciler) removeFinalizer(ctx context.Context, job *paymentsv1alpha1.PaymentJob) error {
	if !controllerutil.ContainsFinalizer(job, paymentsv1alpha1.Finalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(job.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(job, paymentsv1alpha1.Finalizer)
	if err := r.Client.Patch(ctx, job, patch); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("cannot remove finalizer: %w", err)
	}
	return nil
}

// finish releases a job with a final outcome: in one write it removes the
// finalizer and sets the finished label, which takes the job out of the
// manager's cache (see CacheOptions). Nothing reads a finished job again.
func (r *PaymentJobReconciler) finish(ctx context.Context, job *paymentsv1alpha1.PaymentJob) error {
	if job.Labels[paymentsv1alpha1.LabelFinished] == "true" &&
		!controllerutil.ContainsFinalizer(job, paymentsv1alpha1.Finalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(job.DeepCopy(), client.MergeFromWithOptimisticLock{})
	MarkFinished(job)
	if err := r.Client.Patch(ctx, job, patch); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("cannot mark the payment job finished: %w", err)
	}
	if r.Collector != nil {
		r.Collector.Schedule(job)
	}
	return nil
}
