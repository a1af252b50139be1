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
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// lookupBatcher looks the keys of many jobs up at one provider in batches
// of up to payment.MaxLookupKeys keys per request, within the provider's
// lookup rate limit. A job does not wait for its lookup on a worker: it asks
// (submit) and leaves, and is woken when the answer is there. Answers are
// kept for a while, so a pass that lost its claim to a conflict does not
// look up again.
type lookupBatcher struct {
	looker  payment.Looker
	limiter *rate.Limiter
	// timeout bounds one lookup request.
	timeout time.Duration
	// now is the clock of result expiry.
	now func() time.Time

	mu      sync.Mutex
	queue   []string
	queued  map[string]bool
	waiters map[string][]waiter
	// inFlight are the jobs whose key is being looked up, by key.
	inFlight map[string]map[types.UID]bool
	results  map[string]lookupResult
	running  bool
}

// waiter is a job waiting for its key's answer.
type waiter struct {
	job  types.UID
	wake func()
}

// lookupResult is the answer for one key.
type lookupResult struct {
	found   []payment.Found
	err     error
	expires time.Time
	// askedBy are the jobs that asked before the request was sent. An
	// answer is only theirs: a job created again under the same key (a new
	// UID) after its twin was charged must ask again, or it would take the
	// "nothing found" from before that charge for the truth.
	askedBy map[types.UID]bool
}

func newLookupBatcher(looker payment.Looker, limiter *rate.Limiter) *lookupBatcher {
	return &lookupBatcher{
		looker:   looker,
		limiter:  limiter,
		timeout:  30 * time.Second,
		now:      time.Now,
		queued:   map[string]bool{},
		waiters:  map[string][]waiter{},
		inFlight: map[string]map[types.UID]bool{},
		results:  map[string]lookupResult{},
	}
}

// result returns the answer for key that the job asked for, if there is a
// current one.
func (b *lookupBatcher) result(key string, job types.UID) (lookupResult, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.results[key]
	if !ok || !b.now().Before(r.expires) || !r.askedBy[job] {
		return lookupResult{}, false
	}
	return r, true
}

// submit asks for key to be looked up for the job and wake to be called
// once the answer is there. Keys already queued are asked once; a key whose
// request is already in flight is asked again, since that request may
// predate whatever the job's twin did.
func (b *lookupBatcher) submit(key string, job types.UID, wake func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inFlight[key][job] {
		// Its answer is on the way, and wakes it.
		return
	}
	b.waiters[key] = append(b.waiters[key], waiter{job: job, wake: wake})
	if !b.queued[key] {
		b.queued[key] = true
		b.queue = append(b.queue, key)
	}
	if !b.running {
		b.running = true
		go b.run()
	}
}

// run sends batches until the queue is empty. A batch waits for the
// lookup rate limit, and up to lookupBatchWindow for more keys unless it is
// full: under load the rate limit itself fills the batches.
func (b *lookupBatcher) run() {
	for {
		b.mu.Lock()
		n := len(b.queue)
		b.mu.Unlock()
		if n < payment.MaxLookupKeys {
			b.waitForMore(lookupBatchWindow)
		}
		if b.limiter != nil {
			// Wait only fails for a context, and this one has none.
			_ = b.limiter.Wait(context.Background())
		}
		b.mu.Lock()
		take := min(len(b.queue), payment.MaxLookupKeys)
		keys := append([]string(nil), b.queue[:take]...)
		b.queue = b.queue[take:]
		if len(keys) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		asked := make(map[string][]waiter, len(keys))
		for _, k := range keys {
			asked[k] = b.waiters[k]
			delete(b.waiters, k)
			delete(b.queued, k)
			if b.inFlight[k] == nil {
				b.inFlight[k] = map[types.UID]bool{}
			}
			for _, w := range asked[k] {
				b.inFlight[k][w.job] = true
			}
		}
		b.mu.Unlock()
		// Batches run concurrently within the rate limit.
		go b.lookup(keys, asked)
	}
}

// waitForMore waits until the queue holds a full batch or d passed.
func (b *lookupBatcher) waitForMore(d time.Duration) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(d / 4)
	defer tick.Stop()
	for {
		select {
		case <-deadline.C:
			return
		case <-tick.C:
			b.mu.Lock()
			n := len(b.queue)
			b.mu.Unlock()
			if n >= payment.MaxLookupKeys {
				return
			}
		}
	}
}

// lookup sends one request for keys, stores the answers for the jobs that
// asked before it was sent, and wakes them.
func (b *lookupBatcher) lookup(keys []string, asked map[string][]waiter) {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	found, err := b.send(ctx, keys)
	cancel()

	now := b.now()
	b.mu.Lock()
	var wake []func()
	for _, k := range keys {
		r := lookupResult{found: found[k], expires: now.Add(lookupResultTTL)}
		if err != nil {
			r = lookupResult{err: err, expires: now.Add(max(lookupFailureTTL, payment.RetryAfter(err)))}
		}
		r.askedBy = make(map[types.UID]bool, len(asked[k]))
		for _, w := range asked[k] {
			r.askedBy[w.job] = true
			delete(b.inFlight[k], w.job)
			wake = append(wake, w.wake)
		}
		if len(b.inFlight[k]) == 0 {
			delete(b.inFlight, k)
		}
		b.results[k] = r
	}
	b.prune(now)
	b.mu.Unlock()
	for _, w := range wake {
		w()
	}
}

// prune drops expired answers. The caller holds the lock.
func (b *lookupBatcher) prune(now time.Time) {
	for k, r := range b.results {
		if !now.Before(r.expires) {
			delete(b.results, k)
		}
	}
}

// lookupNow looks one key up at once, within the rate limit, for a job that
// holds its claim and cannot wait for a batch.
func (b *lookupBatcher) lookupNow(ctx context.Context, key string) ([]payment.Found, error) {
	if b.limiter != nil {
		if err := b.limiter.Wait(ctx); err != nil {
			return nil, payment.Transient(err, 0)
		}
	}
	found, err := b.send(ctx, []string{key})
	if err != nil {
		return nil, err
	}
	return found[key], nil
}

// send asks the provider for keys and counts the request and each key's
// result.
func (b *lookupBatcher) send(ctx context.Context, keys []string) (map[string][]payment.Found, error) {
	found, err := b.looker.Lookup(ctx, keys)
	lookupRequestsTotal.Inc()
	for _, k := range keys {
		switch {
		case err != nil:
			lookupKeysTotal.WithLabelValues(lookupFailed).Inc()
		case len(found[k]) > 0:
			lookupKeysTotal.WithLabelValues(lookupFound).Inc()
		default:
			lookupKeysTotal.WithLabelValues(lookupNone).Inc()
		}
	}
	return found, err
}

// wakeupBuffer is how many answered lookups may wait for the controller.
const wakeupBuffer = 1024

// wake returns the function that brings the job back to a worker once its
// lookup is answered. It never blocks the lookup: a wake-up that does not
// fit is left to the job's backstop requeue.
func (r *Reconciler) wake(job Object) func() {
	ref := r.kind().New()
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
func (r *Reconciler) admitAfterLookup(ctx context.Context, job Object, target *target) (ctrl.Result, error) {
	c := r.kind().Request(job, r.kind().Key(job, target.id.KeyScope))
	seen, err := r.kind().Observe(ctx, r, job, target, c)
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case seen.Waiting:
		return ctrl.Result{RequeueAfter: seen.Requeue}, nil
	case seen.Err != nil:
		// Unsure whether it happened: never call on a failed lookup.
		return ctrl.Result{RequeueAfter: jitter(max(seen.Requeue, lookupFailureTTL))},
			r.setPending(ctx, job, progress{reason: ReasonLookupFailed, message: payment.CleanMessage(fmt.Sprintf(
				"Cannot look the idempotency key up at the provider, so not sending yet: %v", seen.Err), maxMessageLength)})
	case seen.Refuse != nil:
		return ctrl.Result{}, r.refuseUnsent(ctx, job, target, c, seen.Refuse)
	case seen.Wait != nil:
		return r.waitUnsent(ctx, job, *seen.Wait, seen.Requeue)
	}
	verdict := payment.Decide(seen.Found, c.Fingerprint, c.match())
	if verdict.Action == payment.ActionStall {
		logChargeMismatch(ctx, "provider", verdict.Charge.ID, verdict.Charge.Amount, verdict.Charge.Currency)
		return ctrl.Result{}, r.stall(ctx, job, progress{reason: ReasonChargeMismatch,
			message: "Not sending: " + verdict.Reason + "; delete this object, or use another idempotency key"})
	}
	return r.claimAndAct(ctx, job, target, ReasonClaimed, verdict)
}

// observeCharge is a job's look before its first charge: its key, batched
// with other jobs' keys at the provider's lookup endpoint, where the
// PaymentProvider looks keys up first. The job is woken when the answer is
// there, and holds no worker meanwhile.
func (r *Reconciler) observeCharge(job Object, target *target, c Request) Observation {
	if !target.lookupFirst {
		return Observation{}
	}
	found, ok := target.lookups.result(c.Key, job.GetUID())
	if !ok {
		target.lookups.submit(c.Key, job.GetUID(), r.wake(job))
		return Observation{Waiting: true, Requeue: lookupWakeBackstop}
	}
	if found.err != nil {
		return Observation{Err: found.err, Requeue: found.expires.Sub(r.Clock.Now())}
	}
	return Observation{Found: found.found}
}
