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
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/sandbox"
)

// chargeResult is the answer of a Provider.Charge run in a goroutine.
type chargeResult struct {
	outcome payment.Outcome
	err     error
}

// chargeAsync runs Charge in a goroutine.
func chargeAsync(ctx context.Context, p *sandbox.Provider, key string, req payment.ChargeRequest) <-chan chargeResult {
	done := make(chan chargeResult, 1)
	go func() {
		out, err := p.Charge(ctx, key, req)
		done <- chargeResult{outcome: out, err: err}
	}()
	return done
}

func TestProviderMapsEngineAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		setup          func(*sandbox.Engine) error
		paymentMethod  string
		wantClass      error // nil for a transient error or a success
		wantTransient  bool
		wantRetryAfter time.Duration
		wantReason     string
		wantMessage    string
		wantStatus     int // HTTP status of the wrapped engine error
		wantCharges    int64
	}{
		{name: "succeeded", paymentMethod: sandbox.PaymentMethodMastercard, wantCharges: 1},
		{name: "generic decline", paymentMethod: sandbox.PaymentMethodChargeDeclined,
			wantClass: payment.ErrDeclined, wantReason: payment.ReasonCardDeclined,
			wantMessage: "card_declined (generic_decline): Your card was declined."},
		{name: "insufficient funds", paymentMethod: sandbox.PaymentMethodInsufficientFunds,
			wantClass: payment.ErrDeclined, wantReason: payment.ReasonCardDeclined,
			wantMessage: "card_declined (insufficient_funds)"},
		{name: "missing payment method", paymentMethod: "",
			wantClass: payment.ErrInvalid, wantReason: payment.ReasonInvalidRequest, wantMessage: "payment_method"},
		{name: "unknown payment method", paymentMethod: "pm_card_nope",
			wantClass: payment.ErrInvalid, wantReason: payment.ReasonInvalidRequest, wantMessage: "No such PaymentMethod"},
		{name: "key reused", paymentMethod: sandbox.PaymentMethodVisa,
			setup: func(e *sandbox.Engine) error {
				_, _, err := e.CreatePaymentIntent("key", request(1, sandbox.PaymentMethodVisa))
				return err
			},
			wantClass: payment.ErrKeyReused, wantReason: payment.ReasonKeyReused, wantCharges: 1},
		{name: "rate limit", paymentMethod: sandbox.PaymentMethodVisa,
			setup: func(e *sandbox.Engine) error {
				e.FailNext(sandbox.FaultRateLimit, 1)
				return e.SetFaults(sandbox.Faults{RetryAfter: 2 * time.Second})
			},
			wantTransient: true, wantRetryAfter: 2 * time.Second, wantStatus: http.StatusTooManyRequests},
		{name: "error before commit", paymentMethod: sandbox.PaymentMethodVisa,
			setup: func(e *sandbox.Engine) error {
				e.FailNext(sandbox.FaultBeforeCommit, 1)
				return nil
			},
			wantTransient: true, wantStatus: http.StatusInternalServerError},
		{name: "error after commit", paymentMethod: sandbox.PaymentMethodVisa,
			setup: func(e *sandbox.Engine) error {
				e.FailNext(sandbox.FaultAfterCommit, 1)
				return nil
			},
			wantTransient: true, wantStatus: http.StatusInternalServerError, wantCharges: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			e := sandbox.NewEngine()
			if tt.setup != nil {
				g.Expect(tt.setup(e)).To(Succeed())
			}
			p := sandbox.NewProvider(e)
			req := request(1500, tt.paymentMethod)

			out, err := p.Charge(context.Background(), "key", req)
			g.Expect(p.Calls()).To(BeEquivalentTo(1))
			g.Expect(e.Stats().Charges).To(Equal(tt.wantCharges))

			switch {
			case tt.wantClass != nil:
				g.Expect(err).To(MatchError(tt.wantClass))
				r, ok := payment.IsRefusal(err)
				g.Expect(ok).To(BeTrue())
				g.Expect(r.Reason).To(Equal(tt.wantReason))
				g.Expect(r.Message).To(ContainSubstring(tt.wantMessage))
			case tt.wantTransient:
				var te *payment.TransientError
				g.Expect(errors.As(err, &te)).To(BeTrue(), "want a transient error, got %v", err)
				_, refused := payment.IsRefusal(err)
				g.Expect(refused).To(BeFalse())
				g.Expect(payment.RetryAfter(err)).To(Equal(tt.wantRetryAfter))
				g.Expect(stripeError(g, err).HTTPStatus).To(Equal(tt.wantStatus))
			default:
				g.Expect(err).NotTo(HaveOccurred())
				in, ok := e.LookupByKey("key")
				g.Expect(ok).To(BeTrue())
				g.Expect(out).To(Equal(payment.Outcome{
					ID:       in.ID,
					Status:   sandbox.StatusSucceeded,
					Amount:   1500,
					Currency: "eur",
					Created:  in.Created,
				}))
				again, err := p.Charge(context.Background(), "key", req)
				g.Expect(err).NotTo(HaveOccurred())
				out.Replayed = true
				g.Expect(again).To(Equal(out))
			}
		})
	}
}

func TestProviderReportsKeyInFlight(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	p := sandbox.NewProvider(e)
	req := request(1500, sandbox.PaymentMethodVisa)
	gate := e.Hold()
	defer gate.Release()

	first := chargeAsync(context.Background(), p, "key", req)
	g.Eventually(gate.Entered()).WithTimeout(timeout).Should(Receive())

	_, err := p.Charge(context.Background(), "key", req)
	g.Expect(err).To(MatchError(payment.ErrInFlight))
	g.Expect(payment.RetryAfter(err)).To(Equal(sandbox.InFlightRetryAfter))
	_, refused := payment.IsRefusal(err)
	g.Expect(refused).To(BeFalse())

	gate.Release()
	var r chargeResult
	g.Eventually(first).WithTimeout(timeout).Should(Receive(&r))
	g.Expect(r.err).NotTo(HaveOccurred())
	g.Expect(r.outcome.Replayed).To(BeFalse())
	g.Expect(e.Stats().Charges).To(BeEquivalentTo(1))
}

func TestProviderContextEndsWhileEngineWorks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		context func() (context.Context, context.CancelFunc)
		end     func(context.CancelFunc)
		wantErr error
	}{
		{
			name:    "cancelled",
			context: func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			end:     func(cancel context.CancelFunc) { cancel() },
			wantErr: context.Canceled,
		},
		{
			name: "deadline",
			context: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 10*time.Millisecond)
			},
			end:     func(context.CancelFunc) {},
			wantErr: context.DeadlineExceeded,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			e := sandbox.NewEngine()
			p := sandbox.NewProvider(e)
			req := request(1500, sandbox.PaymentMethodVisa)
			gate := e.Hold()
			defer gate.Release()

			ctx, cancel := tt.context()
			defer cancel()
			done := chargeAsync(ctx, p, "key", req)
			g.Eventually(gate.Entered()).WithTimeout(timeout).Should(Receive())
			tt.end(cancel)

			var r chargeResult
			g.Eventually(done).WithTimeout(timeout).Should(Receive(&r))
			g.Expect(r.err).To(MatchError(tt.wantErr))
			var te *payment.TransientError
			g.Expect(errors.As(r.err, &te)).To(BeTrue(), "want a transient error, got %v", r.err)
			g.Expect(e.Stats().Charges).To(BeZero())

			// The engine still charges, exactly once, after the caller gave up.
			gate.Release()
			g.Eventually(func() int64 { return e.Stats().Charges }).WithTimeout(timeout).Should(BeEquivalentTo(1))
			g.Consistently(func() int64 { return e.Stats().Charges }).Should(BeEquivalentTo(1))

			// The retry replays it.
			out, err := p.Charge(context.Background(), "key", req)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out.Replayed).To(BeTrue())
			saved, ok := e.LookupByKey("key")
			g.Expect(ok).To(BeTrue())
			g.Expect(out.ID).To(Equal(saved.ID))
			s := e.Stats()
			g.Expect(s.Charges).To(BeEquivalentTo(1))
			g.Expect(s.ChargesByKey).To(Equal(map[string]int{"key": 1}))
		})
	}
}

func TestProviderSendsNothingWhenContextIsDone(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	p := sandbox.NewProvider(e)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	_, err := p.Charge(ctx, "key", request(1500, sandbox.PaymentMethodVisa))
	g.Expect(err).To(MatchError(context.Canceled))
	g.Expect(payment.RetryAfter(err)).To(BeZero())
	_, _, err = p.Lookup(ctx, "key")
	g.Expect(err).To(MatchError(context.Canceled))

	g.Expect(p.Calls()).To(BeEquivalentTo(1))
	g.Expect(p.Lookups()).To(BeEquivalentTo(1))
	g.Expect(e.Stats().Requests).To(BeZero())
}

func TestProviderLookup(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	p := sandbox.NewProvider(e)
	g.Expect(p.Engine()).To(BeIdenticalTo(e))
	ctx := context.Background()

	_, found, err := p.Lookup(ctx, "key")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeFalse())

	charged, err := p.Charge(ctx, "key", request(1500, sandbox.PaymentMethodVisa))
	g.Expect(err).NotTo(HaveOccurred())
	looked, found, err := p.Lookup(ctx, "key")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeTrue())
	g.Expect(looked).To(Equal(charged))

	_, err = p.Charge(ctx, "declined", request(1500, sandbox.PaymentMethodChargeDeclined))
	g.Expect(err).To(MatchError(payment.ErrDeclined))
	_, found, err = p.Lookup(ctx, "declined")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeFalse())

	g.Expect(p.Calls()).To(BeEquivalentTo(2))
	g.Expect(p.Lookups()).To(BeEquivalentTo(3))
}

func TestProviderChargesEachKeyOnceUnderConcurrency(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	const (
		keys       = 50
		goroutines = 200
	)
	e := sandbox.NewEngine()
	// A little latency keeps keys in flight long enough to collide.
	g.Expect(e.SetFaults(sandbox.Faults{LatencyMax: 2 * time.Millisecond})).To(Succeed())
	p := sandbox.NewProvider(e)

	type charge struct {
		key     string
		outcome payment.Outcome
		err     error
	}
	results := make(chan charge, goroutines)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range goroutines {
		key := fmt.Sprintf("ns/job-%d", i%keys)
		wg.Go(func() {
			<-start
			// Retry while the key is in flight, as the reconciler would.
			for range 10000 {
				out, err := p.Charge(context.Background(), key, request(100, sandbox.PaymentMethodVisa))
				if errors.Is(err, payment.ErrInFlight) {
					continue
				}
				results <- charge{key: key, outcome: out, err: err}
				return
			}
			results <- charge{key: key, err: errors.New("key still in flight after 10000 attempts")}
		})
	}
	close(start)
	wg.Wait()
	close(results)

	ids := map[string]string{}
	firsts := map[string]int{}
	for r := range results {
		g.Expect(r.err).NotTo(HaveOccurred(), r.key)
		if id, ok := ids[r.key]; ok {
			g.Expect(r.outcome.ID).To(Equal(id), r.key)
		}
		ids[r.key] = r.outcome.ID
		if !r.outcome.Replayed {
			firsts[r.key]++
		}
	}
	g.Expect(ids).To(HaveLen(keys))
	g.Expect(firsts).To(HaveLen(keys))
	for key, n := range firsts {
		g.Expect(n).To(Equal(1), key)
	}

	s := e.Stats()
	t.Logf("in-flight conflicts retried: %d", s.InFlightConflicts)
	g.Expect(s.Charges).To(BeEquivalentTo(keys))
	g.Expect(s.ChargesByKey).To(HaveLen(keys))
	for key, n := range s.ChargesByKey {
		g.Expect(n).To(Equal(1), key)
	}
	g.Expect(s.Replays).To(BeEquivalentTo(goroutines - keys))
	g.Expect(s.Requests).To(Equal(s.Charges + s.Replays + s.InFlightConflicts))
}
