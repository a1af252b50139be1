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

// wake returns the function that brings the job back to a worker once its
// lookup is answered. It never blocks the lookup: a wake-up that does not
// fit is left to the job's backstop requeue.
func (r *Reconciler) wake(job Object) func() {
	ref := r.Kind.New()
	ref.SetNamespace(job.GetNamespace())
	ref.SetName(job.GetName())
	return func() {
		select {
		case r.wakeups <- event.GenericEvent{Object: ref}:
		default:
		}
	}
}

// admitAfterLookup asks the provider, through the kind, what it holds
// under the key of an object that was never claimed, before its first
// call: the cluster may not remember this payment (a manifest re-created
// from Git, a rebuilt cluster) and the provider may have forgotten its key.
// It claims the object and calls the provider, records what the lookup
// found, or fails the object when the kind refuses the request unsent.
func (r *Reconciler) admitAfterLookup(ctx context.Context, job Object, target *Target) (ctrl.Result, error) {
	c := r.Kind.Request(job, r.Kind.Key(job, target.ID.KeyScope))
	seen, err := r.Kind.Observe(ctx, r, job, target, c)
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case seen.Waiting:
		return ctrl.Result{RequeueAfter: seen.Requeue}, nil
	case seen.Err != nil:
		// Unsure whether it happened: never call on a failed lookup.
		return ctrl.Result{RequeueAfter: Jitter(max(seen.Requeue, providercache.LookupFailureTTL))},
			r.setPending(ctx, job, Progress{Reason: ReasonLookupFailed, Message: payment.CleanMessage(fmt.Sprintf(
				"Cannot look the idempotency key up at the provider, so not sending yet: %v", seen.Err), MaxMessageLength)})
	case seen.Refuse != nil:
		return ctrl.Result{}, r.refuseUnsent(ctx, job, target, c, seen.Refuse)
	case seen.Wait != nil:
		return r.waitUnsent(ctx, job, *seen.Wait, seen.Requeue)
	}
	verdict := payment.Decide(seen.Found, c.Fingerprint, c.match())
	if verdict.Action == payment.ActionStall {
		logChargeMismatch(ctx, "provider", verdict.Charge.ID, verdict.Charge.Amount, verdict.Charge.Currency)
		return ctrl.Result{}, r.stall(ctx, job, Progress{Reason: ReasonChargeMismatch,
			Message: "Not sending: " + verdict.Reason + "; delete this object, or use another idempotency key"})
	}
	return r.claimAndAct(ctx, job, target, ReasonClaimed, verdict)
}

// ObserveBatched is a job's look before its first charge (the PaymentJob
// kind's Observe): its key, batched with other jobs' keys at the provider's
// lookup endpoint (providercache.LookupBatcher), where the PaymentProvider
// looks keys up first. The job is woken when the answer is there, and holds
// no worker meanwhile.
func (r *Reconciler) ObserveBatched(job Object, target *Target, c Request) Observation {
	if !target.LookupFirst() {
		return Observation{}
	}
	found, ok := target.Lookups().Result(c.Key, job.GetUID())
	if !ok {
		target.Lookups().Submit(c.Key, job.GetUID(), r.wake(job))
		return Observation{Waiting: true, Requeue: lookupWakeBackstop}
	}
	if found.Err != nil {
		return Observation{Err: found.Err, Requeue: found.Expires.Sub(r.Clock.Now())}
	}
	return Observation{Found: found.Found}
}
