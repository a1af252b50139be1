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
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
	"github.com/idempotency-dev/paymentjob-operator/internal/teeth"
)

// The guards of this file stop a job, without a provider call, whenever a
// charge could pay twice: the status does not match the spec, or the
// provider is not the one the key was first sent to. A stalled job keeps
// its phase (Processing stays Processing: money may have moved) and needs a
// person; it is never Failed by a guard.

// checkRecordedKey stops a job whose status.idempotencyKey is not the key
// its namespace and spec derive: the status was written by something other
// than the operator, and either key could charge again.
func (r *Reconciler) checkRecordedKey(job Object) *Progress {
	recorded, derived := job.GetPaymentStatus().IdempotencyKey, r.sentKey(job)
	if recorded == "" || recorded == derived {
		return nil
	}
	return &Progress{Reason: ReasonKeyMismatch, Message: payment.CleanMessage(fmt.Sprintf(
		"Not charging: status.idempotencyKey %q is not the key derived from the namespace and spec (%q); "+
			"something other than the operator wrote it", recorded, derived), MaxMessageLength)}
}

// logChargeMismatch tells the cluster admin, in the manager's log only,
// which payment under a job's key was made for another request (where: the
// provider or the ledger). The job's conditions and events never name it:
// under a recycled namespace name, or an account shared by clusters, it may
// be another tenant's.
func logChargeMismatch(ctx context.Context, where, charge string, amount int64, currency string) {
	log.FromContext(ctx).Info("Not charging: a payment under this idempotency key was made for another request",
		"where", where, "charge", charge, "amount", amount, "currency", currency)
}

// describeIdentity names a provider identity for a message.
func describeIdentity(id paymentsv1alpha1.ProviderIdentity) string {
	s := fmt.Sprintf("%s (PaymentProvider uid %s", id.Endpoint, id.UID)
	if id.Account != "" {
		s += ", account " + id.Account
	}
	if id.Mode != "" {
		s += ", " + id.Mode + " mode"
	}
	return s + ")"
}

// stall records that the job needs attention: Stalled=True with the reason,
// in its current phase (a new job becomes Pending). The reason is announced
// once with a Warning event.
func (r *Reconciler) stall(ctx context.Context, job Object, p Progress) error {
	p.Stalled = true
	previous := readyReason(job)
	if job.GetPaymentStatus().Phase == "" {
		job.GetPaymentStatus().Phase = paymentsv1alpha1.PhasePending
	}
	changed, err := r.updateStatusIfChanged(ctx, job, p)
	if err != nil || !changed {
		return err
	}
	if previous != p.Reason {
		stalledTotal.WithLabelValues(p.Reason).Inc()
		log.FromContext(ctx).Info("Stopping payment job without charging", "reason", p.Reason, "phase", job.GetPaymentStatus().Phase)
		r.Recorder.Eventf(job, nil, corev1.EventTypeWarning, p.Reason, "Stall", "%s", p.Message)
	}
	return nil
}

// readyReason is the reason of the job's Ready condition, "" without one. It
// is a copy: setting the conditions changes them in place.
func readyReason(job Object) string {
	if c := meta.FindStatusCondition(job.GetPaymentStatus().Conditions, paymentsv1alpha1.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

// heldBack says whether a job that was never claimed must wait: held is
// Suspended while spec.suspend is true, or DeadlineExceeded (stalled, for
// good) once activeDeadlineSeconds have passed since its creation. left is
// the time until that deadline, zero without one.
func heldBack(job Object, terms Terms, now time.Time) (left time.Duration, held *Progress) {
	if d := terms.ActiveDeadlineSeconds; d != nil {
		deadline := job.GetCreationTimestamp().Add(time.Duration(*d) * time.Second)
		if !now.Before(deadline) {
			return 0, &Progress{
				Reason:  ReasonDeadlineExceeded,
				Message: fmt.Sprintf("Not claimed within activeDeadlineSeconds (%ds); it will not be charged", *d),
				Stalled: true,
			}
		}
		left = deadline.Sub(now)
	}
	if terms.Suspend {
		return left, &Progress{Reason: ReasonSuspended, Message: "spec.suspend is true; set it to false to send it"}
	}
	return left, nil
}

// providerMoved stops a job whose key was first sent to another provider
// account or endpoint than the one its PaymentProvider reaches now: the same
// key there is a new charge.
func (r *Reconciler) providerMoved(job Object, t *Target) *Progress {
	recorded := job.GetPaymentStatus().Provider
	if recorded == nil {
		return nil
	}
	same, why := providercache.SameProvider(*recorded, t.ID, t.AccountsOnly())
	if same || teeth.On(teeth.NoAccountFence) {
		return nil
	}
	return &Progress{Reason: ReasonProviderChanged, Message: payment.CleanMessage(fmt.Sprintf(
		"Not charging: the idempotency key was sent to %s, and PaymentProvider %q now reaches %s: %s. "+
			"Point the provider back at the first account, or resolve the payment there by hand",
		describeIdentity(*recorded), r.terms(job).Provider, describeIdentity(t.ID), why), MaxMessageLength)}
}
