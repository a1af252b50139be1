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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// The guards of this file stop a job, without a provider call, whenever a
// charge could pay twice: the status does not match the spec, or the
// provider is not the one the key was first sent to. A stalled job keeps
// its phase (Processing stays Processing: money may have moved) and needs a
// person; it is never Failed by a guard.

// checkRecordedKey stops a job whose status.idempotencyKey is not the key
// its namespace and spec derive: the status was written by something other
// than the operator, and either key could charge again.
func checkRecordedKey(job *paymentsv1alpha1.PaymentJob) *progress {
	recorded, derived := job.Status.IdempotencyKey, sentKey(job)
	if recorded == "" || recorded == derived {
		return nil
	}
	return &progress{reason: ReasonKeyMismatch, message: truncate(fmt.Sprintf(
		"Not charging: status.idempotencyKey %q is not the key derived from the namespace and spec (%q); "+
			"something other than the operator wrote it", recorded, derived), maxMessageLength)}
}

// describeIdentity names a provider identity for a message.
func describeIdentity(id paymentsv1alpha1.ProviderIdentity) string {
	s := fmt.Sprintf("%s (PaymentProvider uid %s", id.Endpoint, id.UID)
	if id.Account != "" {
		s += ", account " + id.Account
	}
	return s + ")"
}

// stall records that the job needs attention: Stalled=True with the reason,
// in its current phase (a new job becomes Pending). The reason is announced
// once with a Warning event.
func (r *PaymentJobReconciler) stall(ctx context.Context, job *paymentsv1alpha1.PaymentJob, p progress) error {
	p.stalled = true
	previous := readyReason(job)
	if job.Status.Phase == "" {
		job.Status.Phase = paymentsv1alpha1.PhasePending
	}
	changed, err := r.updateStatusIfChanged(ctx, job, p)
	if err != nil || !changed {
		return err
	}
	if previous != p.reason {
		stalledTotal.WithLabelValues(p.reason).Inc()
		log.FromContext(ctx).Info("Stopping payment job without charging", "reason", p.reason, "phase", job.Status.Phase)
		r.Recorder.Eventf(job, nil, corev1.EventTypeWarning, p.reason, "Stall", "%s", p.message)
	}
	return nil
}

// readyReason is the reason of the job's Ready condition, "" without one. It
// is a copy: setting the conditions changes them in place.
func readyReason(job *paymentsv1alpha1.PaymentJob) string {
	if c := meta.FindStatusCondition(job.Status.Conditions, paymentsv1alpha1.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}
