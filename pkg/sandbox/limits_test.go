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

package sandbox_test

import (
	"fmt"
	"math"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

func TestWriteRateLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		writes float64
		// burst is how many creates pass at one instant.
		burst int
		// refill is how long the clock must move for one more.
		refill time.Duration
	}{
		{name: "three a second", writes: 3, burst: 3, refill: time.Second / 3},
		{name: "half a request a second", writes: 0.5, burst: 1, refill: 2 * time.Second},
		{name: "live mode", writes: sandbox.LiveRateLimits().Writes, burst: 100, refill: 10 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			clock := newFakeClock()
			e := sandbox.NewEngine(sandbox.WithClock(clock.Now))
			g.Expect(e.SetRateLimits(sandbox.RateLimits{Writes: tt.writes})).To(Succeed())
			g.Expect(e.RateLimits()).To(Equal(sandbox.RateLimits{Writes: tt.writes}))
			create := func(key string, amount int64) error {
				_, _, err := e.CreatePaymentIntent(key, request(amount, sandbox.PaymentMethodVisa))
				return err
			}

			for i := range tt.burst {
				g.Expect(create(fmt.Sprint("key-", i), 1000)).To(Succeed())
			}
			se := stripeError(g, create("limited", 1000))
			g.Expect(se.HTTPStatus).To(Equal(http.StatusTooManyRequests))
			g.Expect(se.Code).To(Equal(sandbox.CodeRateLimit))
			g.Expect(se.RetryAfter).To(Equal(time.Second))
			// A replay counts against the limit too.
			g.Expect(stripeError(g, create("key-0", 1000)).Code).To(Equal(sandbox.CodeRateLimit))

			clock.Add(tt.refill - time.Millisecond)
			g.Expect(stripeError(g, create("limited", 1000)).Code).To(Equal(sandbox.CodeRateLimit))
			clock.Add(time.Millisecond)
			// Nothing was saved under the refused key: other parameters charge.
			g.Expect(create("limited", 2000)).To(Succeed())

			s := e.Stats()
			g.Expect(s.RateLimited).To(BeEquivalentTo(3))
			g.Expect(s.Faults).To(BeZero())
			g.Expect(s.Charges).To(BeEquivalentTo(tt.burst + 1))
			g.Expect(s.Requests).To(BeEquivalentTo(tt.burst + 4))
		})
	}
}

func TestRateLimitsCanBeLifted(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now), sandbox.WithRateLimits(sandbox.RateLimits{Writes: 1}))
	_, _, err := e.CreatePaymentIntent("a", request(1000, sandbox.PaymentMethodVisa))
	g.Expect(err).NotTo(HaveOccurred())
	_, _, err = e.CreatePaymentIntent("b", request(1000, sandbox.PaymentMethodVisa))
	g.Expect(err).To(HaveOccurred())

	g.Expect(e.SetRateLimits(sandbox.RateLimits{})).To(Succeed())
	for _, key := range []string{"b", "c", "d"} {
		_, _, err = e.CreatePaymentIntent(key, request(1000, sandbox.PaymentMethodVisa))
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(sandbox.LiveRateLimits()).To(Equal(sandbox.RateLimits{Writes: 100, Searches: 20, Reads: 100}))
}

func TestSetRateLimitsRejectsInvalidRates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		limits sandbox.RateLimits
	}{
		{name: "negative writes", limits: sandbox.RateLimits{Writes: -1}},
		{name: "negative searches", limits: sandbox.RateLimits{Searches: -0.5}},
		{name: "negative reads", limits: sandbox.RateLimits{Reads: -2}},
		{name: "NaN", limits: sandbox.RateLimits{Writes: math.NaN()}},
		{name: "infinite", limits: sandbox.RateLimits{Searches: math.Inf(1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			e := sandbox.NewEngine(sandbox.WithRateLimits(sandbox.LiveRateLimits()))
			g.Expect(e.SetRateLimits(tt.limits)).To(MatchError(ContainSubstring("cannot set rate limits")))
			g.Expect(e.RateLimits()).To(Equal(sandbox.LiveRateLimits()))
			g.Expect(func() { sandbox.WithRateLimits(tt.limits) }).To(Panic())
		})
	}
}
