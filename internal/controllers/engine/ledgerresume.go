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

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
	"github.com/idempotency-dev/paymentjob-operator/internal/teeth"
)

// The ledger before a Processing object is sent again, where it may know
// more than the object (a ledger outside etcd after a restore, an object
// older than the provider's key memory).

// outsideEtcd is implemented by a ledger kept outside etcd (PostgreSQL): it
// may hold outcomes that an etcd restore took away from the objects.
type outsideEtcd interface {
	OutsideEtcd() bool
}

// ledgerKnowsMore reports whether the ledger may hold the outcome of a
// Processing object that the object does not: the ledger is kept outside
// etcd (a restored snapshot took the object back, not the ledger), or the
// object was first claimed longer ago than the provider remembers keys
// (another copy of it may have finished and been recorded meanwhile).
func (r *Reconciler) ledgerKnowsMore(obj Object) bool {
	if r.Ledger == nil {
		return false
	}
	if o, ok := r.Ledger.(outsideEtcd); ok && o.OutsideEtcd() {
		return true
	}
	started := obj.GetPaymentStatus().StartedAt
	return r.KeyRetention > 0 && started != nil && r.Clock.Since(started.Time) > r.KeyRetention
}

// resumeFromLedger asks the ledger before a Processing object is sent
// again, where it may know more than the object (ledgerKnowsMore): an
// outcome recorded under the object's key and request, made where t
// reaches, finishes the object as recorded, with no provider call (past
// the provider's key memory, a second send would be a second payment).
// Another request under the key stalls it, and a ledger that does not
// answer keeps it Processing, unsent. done reports that the pass ends here.
func (r *Reconciler) resumeFromLedger(ctx context.Context, obj Object, t *Target) (res ctrl.Result, done bool, err error) {
	if !r.ledgerKnowsMore(obj) {
		return ctrl.Result{}, false, nil
	}
	c := r.requestOf(obj)
	e, found, err := r.Ledger.Find(ctx, c.Key)
	if err != nil && teeth.On(teeth.LedgerErrorAsNotFound) {
		err = nil
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return ctrl.Result{}, true, err
	case err != nil:
		p := LedgerUnanswered(ctx, r.Kind.Name(), err, "asked whether this payment was finished before it is sent again")
		previous := readyReason(obj)
		if err := r.writeProgress(ctx, obj, p); err != nil {
			return ctrl.Result{}, true, err
		}
		if previous != p.Reason {
			r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, p.Reason, r.Kind.Words().Action, "%s", p.Message)
		}
		return ctrl.Result{RequeueAfter: Jitter(r.retryDelay(obj))}, true, nil
	case !found:
		return ctrl.Result{}, false, nil
	}
	if e.Fingerprint != c.Fingerprint {
		logChargeMismatch(ctx, "ledger", e.Charge, 0, "")
		return ctrl.Result{}, true, r.stall(ctx, obj, Progress{Reason: paymentsv1alpha1.ReasonChargeMismatch, Message: "Not sending again: " +
			"the operator's ledger records a payment under this idempotency key for another request; the operator's log " +
			"names it (ChargeMismatch)"})
	}
	if same, why := providercache.SameBooks(e.Provider, t.ID, t.AccountsOnly()); !same {
		return ctrl.Result{}, true, r.stall(ctx, obj, Progress{Reason: paymentsv1alpha1.ReasonProviderChanged, Message: payment.CleanMessage(fmt.Sprintf(
			"Not sending again: the operator's ledger records this payment as made at %s, and PaymentProvider %q now reaches %s: %s",
			providercache.DescribeBooks(e.Provider), r.terms(obj).Provider, providercache.DescribeBooks(t.ID), why), MaxMessageLength)})
	}
	return ctrl.Result{}, true, r.recordFromLedger(ctx, obj, t, c, e)
}
