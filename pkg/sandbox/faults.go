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

package sandbox

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// FaultKind is a fault the Engine can inject.
type FaultKind int

const (
	// FaultBeforeCommit answers a 500 api_error before anything is saved or
	// charged; the key is released, so a retry is a new request.
	FaultBeforeCommit FaultKind = iota + 1
	// FaultAfterCommit saves the outcome (and moves the money) and then
	// answers a 500 api_error, as when a response is lost.
	FaultAfterCommit
	// FaultRateLimit answers a 429 with a Retry-After; nothing is saved.
	FaultRateLimit
)

// String returns the name of the fault.
func (k FaultKind) String() string {
	switch k {
	case FaultBeforeCommit:
		return "before-commit"
	case FaultAfterCommit:
		return "after-commit"
	case FaultRateLimit:
		return "rate-limit"
	default:
		return fmt.Sprintf("FaultKind(%d)", int(k))
	}
}

// DefaultRetryAfter is the Retry-After of a rate limit when Faults.RetryAfter
// is zero.
const DefaultRetryAfter = time.Second

// Faults are random faults, drawn for each request from the Engine's random
// source. The zero value injects nothing.
type Faults struct {
	// ErrorBeforeCommit is the probability, 0 to 1, that a request with a new
	// key fails with FaultBeforeCommit.
	ErrorBeforeCommit float64
	// ErrorAfterCommit is the probability, 0 to 1, that a request with a new
	// key that committed fails with FaultAfterCommit.
	ErrorAfterCommit float64
	// RateLimit is the probability, 0 to 1, that any request fails with
	// FaultRateLimit.
	RateLimit float64
	// RetryAfter is sent with rate limits; DefaultRetryAfter when zero.
	RetryAfter time.Duration
	// LatencyMin is the least time a request with a new key keeps its key
	// in flight before it is decided.
	LatencyMin time.Duration
	// LatencyMax is the most such time; the latency is drawn uniformly
	// between LatencyMin and LatencyMax.
	LatencyMax time.Duration
}

// validate returns an error when a probability or a duration is out of range.
func (f Faults) validate() error {
	for _, p := range []struct {
		name  string
		value float64
	}{
		{"errorBeforeCommit", f.ErrorBeforeCommit},
		{"errorAfterCommit", f.ErrorAfterCommit},
		{"rateLimit", f.RateLimit},
	} {
		if p.value < 0 || p.value > 1 {
			return fmt.Errorf("probability %s must be between 0 and 1, got %v", p.name, p.value)
		}
	}
	if f.RetryAfter < 0 || f.LatencyMin < 0 || f.LatencyMax < 0 {
		return errors.New("retryAfter, latencyMin and latencyMax must not be negative")
	}
	if f.LatencyMax < f.LatencyMin {
		return fmt.Errorf("latencyMax %s is less than latencyMin %s", f.LatencyMax, f.LatencyMin)
	}
	return nil
}

// SetFaults replaces the random faults. It returns an error, and changes
// nothing, when a probability or a duration is out of range.
func (e *Engine) SetFaults(f Faults) error {
	if err := f.validate(); err != nil {
		return fmt.Errorf("cannot set faults: %w", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.faults = f
	return nil
}

// Faults returns the random faults in force.
func (e *Engine) Faults() Faults {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.faults
}

// FailNext makes the next n requests with a new key fail with the fault
// kind, whatever the random faults say; n <= 0 switches it off. A key whose
// request failed before its commit is new again, so FailNext(FaultBeforeCommit,
// 5) fails the first five attempts of a job and lets the sixth charge.
func (e *Engine) FailNext(kind FaultKind, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failNext[kind] = max(n, 0)
}

// FailNextAny makes the next n requests fail with the fault kind, whatever
// the state of their key: FaultBeforeCommit and FaultRateLimit answer before
// the key is looked at, FaultAfterCommit lets the request run (charge,
// replay or refusal) and replaces its answer with a 500. n <= 0 switches it
// off. Requests without a key are refused before and do not count.
func (e *Engine) FailNextAny(kind FaultKind, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failNextAny[kind] = max(n, 0)
}

// Gate holds requests with a new key while their key is in flight, until it
// is released; tests use it to make in-flight conflicts and timeouts happen
// at a known moment.
type Gate struct {
	engine   *Engine
	entered  chan string
	released chan struct{}
	once     sync.Once
}

// Hold installs a new Gate: every request with a new key admitted from now
// on marks its key in flight and then waits for Release. Requests admitted
// under an earlier Gate keep waiting for that one.
func (e *Engine) Hold() *Gate {
	g := &Gate{engine: e, entered: make(chan string), released: make(chan struct{})}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gate = g
	return g
}

// Entered receives the key of each held request once its key is in flight.
// Reading it is optional: a request that nobody reads from still waits for
// Release.
func (g *Gate) Entered() <-chan string { return g.entered }

// Release lets the held requests go on and stops holding new ones. It may be
// called more than once.
func (g *Gate) Release() {
	g.once.Do(func() {
		g.engine.mu.Lock()
		if g.engine.gate == g {
			g.engine.gate = nil
		}
		g.engine.mu.Unlock()
		close(g.released)
	})
}

// wait announces key on Entered and blocks until Release.
func (g *Gate) wait(key string) {
	select {
	case g.entered <- key:
	case <-g.released:
		return
	}
	<-g.released
}

// take consumes one of the next-n switches of kind, and reports whether
// there was one. The caller holds the lock.
func (e *Engine) take(switches map[FaultKind]int, kind FaultKind) bool {
	if switches[kind] <= 0 {
		return false
	}
	switches[kind]--
	return true
}

// chance draws a random fault of probability p. The caller holds the lock.
func (e *Engine) chance(p float64) bool {
	return p > 0 && e.rnd.Float64() < p
}

// latency draws a latency between the bounds. The caller holds the lock.
func (e *Engine) latency() time.Duration {
	lo, hi := e.faults.LatencyMin, e.faults.LatencyMax
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(e.rnd.Int64N(int64(hi-lo)+1))
}

// retryAfter is the Retry-After of a rate limit. The caller holds the lock.
func (e *Engine) retryAfter() time.Duration {
	if e.faults.RetryAfter > 0 {
		return e.faults.RetryAfter
	}
	return DefaultRetryAfter
}
