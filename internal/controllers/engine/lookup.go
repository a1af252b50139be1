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

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"

	"k8s.io/apimachinery/pkg/types"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
)

// Lookups before a first call: the engine's side. The provider cache batches
// the lookups (providercache.LookupBatcher); the engine asks, leaves, and is
// woken with the answer.

// wakeupBuffer is how many answered lookups may wait for the controller.
const wakeupBuffer = 1024

// wake returns the function that brings the object back to a worker once its
// lookup is answered. It never blocks the lookup: a wake-up that does not
// fit is left to the object's backstop requeue.
func (r *Reconciler) wake(obj Object) func() {
	ref := r.Kind.New()
	ref.SetNamespace(obj.GetNamespace())
	ref.SetName(obj.GetName())
	return func() {
		select {
		case r.wakeups <- event.GenericEvent{Object: ref}:
		default:
		}
	}
}

// admitAfterLookup asks the provider, through the kind's client, what it
// holds under the key of an object that was never claimed, before its first
// call: the cluster may not remember this payment (a manifest re-created
// from Git, a rebuilt cluster) and the provider may have forgotten its key.
// It claims the object and calls the provider, records what the lookup
// found, or fails the object when the kind refuses the request unsent.
func (r *Reconciler) admitAfterLookup(ctx context.Context, obj Object, target *Target) (ctrl.Result, error) {
	c := r.Kind.Request(obj, r.Kind.Key(obj, target.ID.KeyScope))
	calls, err := r.connect(ctx, obj, target)
	if err != nil {
		return ctrl.Result{}, err
	}
	seen, err := calls.Observe(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	if res, done, err := r.unsent(ctx, obj, target, c, seen); done || err != nil {
		return res, err
	}
	verdict := payment.Decide(seen.Found, c.Fingerprint, c.match())
	if verdict.Action == payment.ActionStall {
		logChargeMismatch(ctx, "provider", verdict.Charge.ID, verdict.Charge.Amount, verdict.Charge.Currency)
		return ctrl.Result{}, r.stall(ctx, obj, Progress{Reason: paymentsv1alpha1.ReasonChargeMismatch,
			Message: "Not sending: " + verdict.Reason + "; delete this object, or use another idempotency key"})
	}
	return r.claimAndAct(ctx, obj, target, paymentsv1alpha1.ReasonClaimed, verdict)
}

// unsent acts on what a kind decided about an object before its first
// claim: it fails it without a provider call, keeps it waiting, or lets it
// go on (done false). t and c, when known, record where and what it would
// have sent.
func (r *Reconciler) unsent(ctx context.Context, obj Object, t *Target, c Request, decided Result) (res ctrl.Result, done bool, err error) {
	switch {
	case decided.Refuse != nil:
		return ctrl.Result{}, true, r.refuseUnsent(ctx, obj, t, c, decided.Refuse)
	case decided.Wait != nil:
		res, err := r.waitUnsent(ctx, obj, *decided.Wait, decided.Requeue)
		return res, true, err
	case decided.Requeue > 0:
		// Waiting quietly: a batched lookup wakes the object.
		return ctrl.Result{RequeueAfter: decided.Requeue}, true, nil
	}
	return ctrl.Result{}, false, nil
}

// connect opens obj's client at t through its kind; t's batched lookup
// wakes obj.
func (r *Reconciler) connect(ctx context.Context, obj Object, t *Target) (Client, error) {
	t.asker = asker{uid: obj.GetUID(), wake: r.wake(obj), now: r.Clock.Now}
	return r.Kind.connect(ctx, obj, t)
}

// LookupFailed is the Result of a lookup before the first call that the
// provider did not answer: the object waits (LookupFailed) and looks again
// after requeue, at the soonest after providercache.LookupFailureTTL.
// Nothing is sent on the strength of a failed lookup.
func LookupFailed(err error, requeue time.Duration) Result {
	return Wait(Progress{Reason: paymentsv1alpha1.ReasonLookupFailed, Message: payment.CleanMessage(fmt.Sprintf(
		"Cannot look the idempotency key up at the provider, so not sending yet: %v", err), MaxMessageLength)},
		Jitter(max(requeue, providercache.LookupFailureTTL)))
}

// asker is the object a Target's batched lookup asks for.
type asker struct {
	uid  types.UID
	wake func()
	now  func() time.Time
}

// LookupBatched is the look before a first call of a kind whose provider
// searches by key (the PaymentJob kind's Observe): the key, batched with
// other objects' keys at the provider's lookup endpoint
// (providercache.LookupBatcher), where the PaymentProvider looks keys up
// first. The object is woken when the answer is there, and holds no worker
// meanwhile.
func (t *Target) LookupBatched(req Request) Result {
	if !t.LookupFirst() {
		return Proceed()
	}
	found, ok := t.Lookups().Result(req.Key, t.asker.uid)
	if !ok {
		t.Lookups().Submit(req.Key, t.asker.uid, t.asker.wake)
		return Result{Requeue: lookupWakeBackstop}
	}
	if found.Err != nil {
		return LookupFailed(found.Err, found.Expires.Sub(t.asker.now()))
	}
	return Proceed(found.Found...)
}

// waitUnsent keeps an object that was never claimed waiting (or stalled)
// for the reason of p, and looks again after requeue (or its pending
// recheck).
func (r *Reconciler) waitUnsent(ctx context.Context, obj Object, p Progress, requeue time.Duration) (ctrl.Result, error) {
	if p.Stalled {
		return ctrl.Result{RequeueAfter: requeue}, r.stall(ctx, obj, p)
	}
	if requeue <= 0 {
		requeue = r.pendingRecheck(obj, p.Reason, 0)
	}
	return ctrl.Result{RequeueAfter: requeue}, r.setPending(ctx, obj, p)
}
