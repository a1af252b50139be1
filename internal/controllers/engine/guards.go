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

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
	"github.com/idempotency-dev/paymentjob-operator/internal/teeth"
)

// The guards of this file stop an object, without a provider call, whenever a
// charge could pay twice: the status does not match the spec, or the
// provider is not the one the key was first sent to. A stalled object keeps
// its phase (Processing stays Processing: money may have moved) and needs a
// person; it is never Failed by a guard.

// checkRecordedKey stops an object whose status.idempotencyKey is not the key
// its namespace and spec derive: the status was written by something other
// than the operator, and either key could charge again.
func (r *Reconciler) checkRecordedKey(obj Object) *Progress {
	recorded, derived := obj.GetPaymentStatus().IdempotencyKey, r.sentKey(obj)
	if recorded == "" || recorded == derived {
		return nil
	}
	return &Progress{Reason: paymentsv1alpha1.ReasonKeyMismatch, Message: payment.CleanMessage(fmt.Sprintf(
		"%s: status.idempotencyKey %q is not the key derived from the namespace and spec (%q); "+
			"something other than the operator wrote it", r.Kind.Words().not(), recorded, derived), MaxMessageLength)}
}

// logChargeMismatch tells the cluster admin, in the manager's log only,
// which payment under an object's key was made for another request (where: the
// provider or the ledger). The object's conditions and events never name it:
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

// readyReason is the reason of the object's Ready condition, "" without one. It
// is a copy: setting the conditions changes them in place.
func readyReason(obj Object) string {
	if c := meta.FindStatusCondition(obj.GetPaymentStatus().Conditions, paymentsv1alpha1.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

// heldBack says whether an object that was never claimed must wait: held is
// Suspended while spec.suspend is true, or DeadlineExceeded (stalled, for
// good) once activeDeadlineSeconds have passed since its creation. left is
// the time until that deadline, zero without one.
func heldBack(obj Object, terms Terms, words Words, now time.Time) (left time.Duration, held *Progress) {
	if d := terms.ActiveDeadlineSeconds; d != nil {
		deadline := obj.GetCreationTimestamp().Add(time.Duration(*d) * time.Second)
		if !now.Before(deadline) {
			return 0, &Progress{
				Reason:  paymentsv1alpha1.ReasonDeadlineExceeded,
				Message: fmt.Sprintf("Not claimed within activeDeadlineSeconds (%ds); it will not be %s", *d, words.done()),
				Stalled: true,
			}
		}
		left = deadline.Sub(now)
	}
	if terms.Suspend {
		return left, &Progress{Reason: paymentsv1alpha1.ReasonSuspended, Message: "spec.suspend is true; set it to false to send it"}
	}
	return left, nil
}

// providerMoved stops an object whose key was first sent to another provider
// account or endpoint than the one its PaymentProvider reaches now: the same
// key there is a new charge.
func (r *Reconciler) providerMoved(obj Object, t *Target) *Progress {
	recorded := obj.GetPaymentStatus().Provider
	if recorded == nil {
		return nil
	}
	same, why := providercache.SameProvider(*recorded, t.ID, t.AccountsOnly())
	if same || teeth.On(teeth.NoAccountFence) {
		return nil
	}
	return &Progress{Reason: paymentsv1alpha1.ReasonProviderChanged, Message: payment.CleanMessage(fmt.Sprintf(
		"%s: the idempotency key was sent to %s, and PaymentProvider %q now reaches %s: %s. "+
			"Point the provider back at the first account, or resolve the payment there by hand", r.Kind.Words().not(),
		describeIdentity(*recorded), r.terms(obj).Provider, describeIdentity(t.ID), why), MaxMessageLength)}
}
