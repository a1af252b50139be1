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
	"fmt"
	"math"
	"time"

	"golang.org/x/time/rate"
)

// RateLimitRetryAfter is the Retry-After of a request refused because it
// went beyond the RateLimits.
const RateLimitRetryAfter = time.Second

// RateLimits are the request rates the Engine accepts, like Stripe's rate
// limits in live mode. Each is a token bucket filled at the rate, by the
// Engine's clock, that holds the rate rounded up (at least one request);
// a request that finds it empty is answered with a 429 rate_limit error,
// Retry-After RateLimitRetryAfter, and nothing is saved. The zero value
// limits nothing.
type RateLimits struct {
	// Writes is the create requests per second; 0 is unlimited.
	Writes float64
	// Searches is the search requests per second; 0 is unlimited.
	Searches float64
	// Reads is the read requests per second of the HTTP server: every GET
	// of /v1 (retrieves and lists) but search, which has its own rate, and
	// GET /http/list; 0 is unlimited. The Engine's own methods are not
	// limited by it.
	Reads float64
}

// LiveRateLimits returns Stripe's default rate limits in live mode: 100
// writes, 20 searches and 100 reads a second.
func LiveRateLimits() RateLimits {
	return RateLimits{Writes: 100, Searches: 20, Reads: 100}
}

// validate returns an error when a rate is negative or not a finite number.
func (l RateLimits) validate() error {
	for _, r := range []struct {
		name  string
		value float64
	}{
		{"writes", l.Writes},
		{"searches", l.Searches},
		{"reads", l.Reads},
	} {
		// Written so that NaN is refused too.
		if !(r.value >= 0 && r.value <= math.MaxFloat64) {
			return fmt.Errorf("rate %s must be a finite number of requests per second, 0 or more, got %v", r.name, r.value)
		}
	}
	return nil
}

// limiters returns the full buckets of the writes, the searches and the
// reads; nil for an unlimited rate.
func (l RateLimits) limiters() (writes, searches, reads *rate.Limiter) {
	return limiter(l.Writes), limiter(l.Searches), limiter(l.Reads)
}

// limiter is a full token bucket of perSecond, nil when it is 0.
func limiter(perSecond float64) *rate.Limiter {
	if perSecond == 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(perSecond), int(math.Ceil(perSecond)))
}

// WithRateLimits sets the RateLimits; see SetRateLimits. It panics on a
// negative or infinite rate, a mistake of the caller.
func WithRateLimits(l RateLimits) Option {
	if err := l.validate(); err != nil {
		panic(fmt.Sprintf("sandbox.WithRateLimits: %v", err))
	}
	return func(e *Engine) { e.limits = l }
}

// SetRateLimits replaces the RateLimits, with full buckets. It returns an
// error, and changes nothing, when a rate is negative or infinite.
func (e *Engine) SetRateLimits(l RateLimits) error {
	if err := l.validate(); err != nil {
		return fmt.Errorf("cannot set rate limits: %w", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.limits = l
	e.writes, e.searches, e.reads = l.limiters()
	return nil
}

// RateLimits returns the rate limits in force.
func (e *Engine) RateLimits() RateLimits {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.limits
}

// allow takes a token from the bucket, nil for unlimited, and counts the
// request in RateLimited when there is none. The caller holds the lock.
func (e *Engine) allow(bucket *rate.Limiter) bool {
	if bucket == nil || bucket.AllowN(e.now(), 1) {
		return true
	}
	e.stats.RateLimited++
	return false
}

// admitRead counts a read request of the HTTP server in Stats.Reads and
// returns the 429 of a request beyond RateLimits.Reads, nil otherwise.
func (e *Engine) admitRead() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stats.Reads++
	if !e.allow(e.reads) {
		return rateLimitError(RateLimitRetryAfter, false)
	}
	return nil
}
