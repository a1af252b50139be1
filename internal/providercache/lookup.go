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

package providercache

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// LookupBatcher looks the keys of many jobs up at one provider in batches
// of up to payment.MaxLookupKeys keys per request, within the provider's
// lookup rate limit. A job does not wait for its lookup on a worker: it asks
// (Submit) and leaves, and is woken when the answer is there. Answers are
// kept for a while, so a pass that lost its claim to a conflict does not
// look up again.
type LookupBatcher struct {
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
	results  map[string]LookupResult
	running  bool
}

// waiter is a job waiting for its key's answer.
type waiter struct {
	job  types.UID
	wake func()
}

// LookupResult is the answer for one key.
type LookupResult struct {
	// Found is what the provider holds under the key.
	Found []payment.Found
	// Err says the provider could not be asked.
	Err error
	// Expires is when the answer is asked again.
	Expires time.Time
	// askedBy are the jobs that asked before the request was sent. An
	// answer is only theirs: a job created again under the same key (a new
	// UID) after its twin was charged must ask again, or it would take the
	// "nothing found" from before that charge for the truth.
	askedBy map[types.UID]bool
}

func newLookupBatcher(looker payment.Looker, limiter *rate.Limiter) *LookupBatcher {
	return &LookupBatcher{
		looker:   looker,
		limiter:  limiter,
		timeout:  30 * time.Second,
		now:      time.Now,
		queued:   map[string]bool{},
		waiters:  map[string][]waiter{},
		inFlight: map[string]map[types.UID]bool{},
		results:  map[string]LookupResult{},
	}
}

// Result returns the answer for key that the job asked for, if there is a
// current one.
func (b *LookupBatcher) Result(key string, job types.UID) (LookupResult, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.results[key]
	if !ok || !b.now().Before(r.Expires) || !r.askedBy[job] {
		return LookupResult{}, false
	}
	return r, true
}

// Submit asks for key to be looked up for the job and wake to be called
// once the answer is there. Keys already queued are asked once; a key whose
// request is already in flight is asked again, since that request may
// predate whatever the job's twin did.
func (b *LookupBatcher) Submit(key string, job types.UID, wake func()) {
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
func (b *LookupBatcher) run() {
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
func (b *LookupBatcher) waitForMore(d time.Duration) {
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
func (b *LookupBatcher) lookup(keys []string, asked map[string][]waiter) {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	found, err := b.send(ctx, keys)
	cancel()

	now := b.now()
	b.mu.Lock()
	var wake []func()
	for _, k := range keys {
		r := LookupResult{Found: found[k], Expires: now.Add(lookupResultTTL)}
		if err != nil {
			r = LookupResult{Err: err, Expires: now.Add(max(LookupFailureTTL, payment.RetryAfter(err)))}
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
func (b *LookupBatcher) prune(now time.Time) {
	for k, r := range b.results {
		if !now.Before(r.Expires) {
			delete(b.results, k)
		}
	}
}

// LookupNow looks one key up at once, within the rate limit, for a job that
// holds its claim and cannot wait for a batch.
func (b *LookupBatcher) LookupNow(ctx context.Context, key string) ([]payment.Found, error) {
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
func (b *LookupBatcher) send(ctx context.Context, keys []string) (map[string][]payment.Found, error) {
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
