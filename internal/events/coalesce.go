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

package events

// A flood of events for one object wakes it once per window.

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// DefaultCoalesceWindow is how long after waking an object further events
// for it wait, to wake it once more together.
const DefaultCoalesceWindow = time.Second

// wakeKey names what one event wakes.
type wakeKey struct {
	provider  types.NamespacedName
	subject   payment.EventSubject
	objectID  string
	key       string
	paymentID string
}

// wakeState is when an object was last woken, and whether a wake is
// scheduled for the events that came since.
type wakeState struct {
	last      time.Time
	scheduled bool
	event     payment.Event
}

// coalescer wakes through waker at most once per window for the same
// objects: the first event wakes them at once; the events that follow
// within the window wake them once, at its end, with the latest event, so
// that the last state the provider announced is always read.
type coalescer struct {
	waker  Waker
	clock  clock.WithDelayedExecution
	window time.Duration

	mu        sync.Mutex
	state     map[wakeKey]*wakeState
	lastPrune time.Time
}

// wake wakes the objects ev names now, returning how many and true, or
// schedules one wake at the end of the window and returns 0 and false.
func (c *coalescer) wake(ctx context.Context, provider types.NamespacedName, ev payment.Event) (int, bool) {
	k := wakeKey{provider: provider, subject: ev.Subject, objectID: ev.ObjectID, key: ev.Key, paymentID: ev.PaymentID}
	now := c.clock.Now()
	c.mu.Lock()
	if c.state == nil {
		c.state = map[wakeKey]*wakeState{}
	}
	c.pruneLocked(now)
	st := c.state[k]
	switch {
	case st == nil || (!st.scheduled && now.Sub(st.last) >= c.window):
		c.state[k] = &wakeState{last: now}
		c.mu.Unlock()
		return c.waker.Wake(ctx, provider, ev), true
	case st.scheduled:
		st.event = ev
	default:
		st.scheduled = true
		st.event = ev
		// fire runs apart: a fake clock calls this under its own lock.
		c.clock.AfterFunc(c.window-now.Sub(st.last), func() { go c.fire(ctx, k) })
	}
	c.mu.Unlock()
	return 0, false
}

// fire wakes the objects of k with the latest event that came in the
// window.
func (c *coalescer) fire(ctx context.Context, k wakeKey) {
	c.mu.Lock()
	st := c.state[k]
	if st == nil || !st.scheduled {
		c.mu.Unlock()
		return
	}
	ev := st.event
	st.scheduled, st.event, st.last = false, payment.Event{}, c.clock.Now()
	c.mu.Unlock()
	if ctx.Err() == nil {
		c.waker.Wake(ctx, k.provider, ev)
	}
}

// pruneLocked forgets the objects woken longer than a window ago, at most
// once per window and only once the map is large.
func (c *coalescer) pruneLocked(now time.Time) {
	if len(c.state) < 1024 || now.Sub(c.lastPrune) < c.window {
		return
	}
	c.lastPrune = now
	for k, st := range c.state {
		if !st.scheduled && now.Sub(st.last) >= c.window {
			delete(c.state, k)
		}
	}
}
