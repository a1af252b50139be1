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

package sandboxprovider_test

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
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/sandboxprovider"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// chargeResult is the answer of a Provider.Charge run in a goroutine.
type chargeResult struct {
	outcome payment.Outcome
	err     error
}

// chargeRequest is request in the payment package's type, for Charge.
func chargeRequest(amount int64, paymentMethod string) payment.ChargeRequest {
	return payment.ChargeRequest(request(amount, paymentMethod))
}

// transientRetryAfter returns the RetryAfter of err, failing unless err is,
// or wraps, a *payment.TransientError.
func transientRetryAfter(g *WithT, err error) time.Duration {
	var te *payment.TransientError
	if !g.ExpectWithOffset(1, errors.As(err, &te)).To(BeTrue(), "want a transient error, got %v", err) {
		return 0
	}
	return te.RetryAfter
}

// chargeAsync runs Charge in a goroutine.
func chargeAsync(ctx context.Context, p *sandboxprovider.Provider, key string, req payment.ChargeRequest) <-chan chargeResult {
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
			p := sandboxprovider.NewProvider(e)
			req := chargeRequest(1500, tt.paymentMethod)

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
				g.Expect(transientRetryAfter(g, err)).To(Equal(tt.wantRetryAfter))
				_, refused := payment.IsRefusal(err)
				g.Expect(refused).To(BeFalse())
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
	p := sandboxprovider.NewProvider(e)
	req := chargeRequest(1500, sandbox.PaymentMethodVisa)
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
			p := sandboxprovider.NewProvider(e)
			req := chargeRequest(1500, sandbox.PaymentMethodVisa)
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
			g.Expect(transientRetryAfter(g, r.err)).To(BeZero())
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
	p := sandboxprovider.NewProvider(e)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	_, err := p.Charge(ctx, "key", chargeRequest(1500, sandbox.PaymentMethodVisa))
	g.Expect(err).To(MatchError(context.Canceled))
	g.Expect(payment.RetryAfter(err)).To(BeZero())
	_, err = p.Lookup(ctx, []string{"key"})
	g.Expect(err).To(MatchError(context.Canceled))
	g.Expect(err).To(BeAssignableToTypeOf(&payment.TransientError{}))
	_, err = p.Settle(ctx, "key", "pi_any")
	g.Expect(err).To(MatchError(context.Canceled))
	g.Expect(err).To(BeAssignableToTypeOf(&payment.TransientError{}))
	_, err = p.Account(ctx)
	g.Expect(err).To(MatchError(context.Canceled))

	g.Expect(p.Calls()).To(BeEquivalentTo(1))
	g.Expect(p.Lookups()).To(BeEquivalentTo(1))
	g.Expect(p.Settles()).To(BeEquivalentTo(1))
	s := e.Stats()
	g.Expect(s.Requests).To(BeZero())
	g.Expect(s.Searches).To(BeZero())
	g.Expect(s.Retrieves).To(BeZero())
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
	p := sandboxprovider.NewProvider(e)

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
				out, err := p.Charge(context.Background(), key, chargeRequest(100, sandbox.PaymentMethodVisa))
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

func TestProviderChargeTagsMetadataForLookup(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	p := sandboxprovider.NewProvider(e)
	req := chargeRequest(1500, sandbox.PaymentMethodVisa)

	out, err := p.Charge(context.Background(), "ns/order-42", req)
	g.Expect(err).NotTo(HaveOccurred())
	in, ok := e.GetPaymentIntent(out.ID)
	g.Expect(ok).To(BeTrue())
	g.Expect(in.Metadata).To(Equal(map[string]string{
		"paymentjob":                      "default/order-42",
		payment.MetadataKeyIdempotencyKey: "ns/order-42",
		payment.MetadataKeyFingerprint:    payment.RequestHash("ns/order-42", req),
	}))
	g.Expect(req.Metadata).To(Equal(map[string]string{"paymentjob": "default/order-42"}), "the caller's map is not changed")
	g.Expect(sandbox.TaggedRequest("ns/order-42", sandbox.PaymentIntentParams(req)).Metadata).To(Equal(in.Metadata))
}

func TestProviderLookup(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now))
	p := sandboxprovider.NewProvider(e)
	ctx := context.Background()
	req := chargeRequest(1500, sandbox.PaymentMethodVisa)
	// put stores a charge made an hour ago under key, as the operator makes
	// them, with the status.
	put := func(key, status string, age time.Duration) sandbox.Intent {
		return e.PutIntent(sandbox.Intent{Amount: 1500, Currency: "eur", Status: status, IdempotencyKey: key,
			Metadata: sandbox.TaggedRequest(key, sandbox.PaymentIntentParams(req)).Metadata, Created: clock.Now().Add(-age)})
	}
	found := func(key string, in sandbox.Intent, state payment.ChargeState) payment.Found {
		return payment.Found{
			Key: key,
			Outcome: payment.Outcome{ID: in.ID, Status: in.Status, Amount: in.Amount, Currency: in.Currency,
				Created: in.Created},
			State:       state,
			Fingerprint: payment.RequestHash(key, req),
		}
	}

	charged, err := p.Charge(ctx, "ns/charged", req)
	g.Expect(err).NotTo(HaveOccurred())
	chargedIntent, _ := e.GetPaymentIntent(charged.ID)
	_, err = p.Charge(ctx, "ns/declined", chargeRequest(1500, sandbox.PaymentMethodChargeDeclined))
	g.Expect(err).To(MatchError(payment.ErrDeclined))
	canceled := put("ns/retried", sandbox.StatusCanceled, 2*time.Hour)
	processing := put("ns/retried", sandbox.StatusProcessing, time.Hour)
	capture := put("ns/o'brien\\1", sandbox.StatusRequiresCapture, time.Hour)
	action := put("ns/action", sandbox.StatusRequiresAction, time.Hour)
	confirmation := put("ns/confirmation", sandbox.StatusRequiresConfirmation, time.Hour)
	failed := put("ns/failed", sandbox.StatusRequiresPaymentMethod, time.Hour)
	unknown := put("ns/unknown", "requires_review", time.Hour)
	byHand := e.PutIntent(sandbox.Intent{Amount: 900, Currency: "usd", Created: clock.Now().Add(-time.Hour),
		Metadata: map[string]string{payment.MetadataKeyIdempotencyKey: "ns/by-hand"}})
	put("ns/not-asked", sandbox.StatusSucceeded, time.Hour)
	searches := e.Stats().Searches
	retrieves := e.Stats().Retrieves

	got, err := p.Lookup(ctx, []string{"ns/charged", "ns/declined", "ns/retried", "ns/o'brien\\1", "ns/action",
		"ns/confirmation", "ns/failed", "ns/unknown", "ns/by-hand", "ns/none"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(map[string][]payment.Found{
		"ns/charged": {found("ns/charged", chargedIntent, payment.StateSucceeded)},
		"ns/retried": {
			found("ns/retried", processing, payment.StatePending),
			found("ns/retried", canceled, payment.StateNotCharged),
		},
		"ns/o'brien\\1":   {found("ns/o'brien\\1", capture, payment.StateSucceeded)},
		"ns/action":       {found("ns/action", action, payment.StatePending)},
		"ns/confirmation": {found("ns/confirmation", confirmation, payment.StatePending)},
		"ns/failed":       {found("ns/failed", failed, payment.StateNotCharged)},
		"ns/unknown":      {found("ns/unknown", unknown, payment.StatePending)},
		"ns/by-hand": {{Key: "ns/by-hand", State: payment.StateSucceeded, Outcome: payment.Outcome{
			ID: byHand.ID, Status: sandbox.StatusSucceeded, Amount: 900, Currency: "usd", Created: byHand.Created}}},
	}))
	s := e.Stats()
	g.Expect(s.Searches-searches).To(BeEquivalentTo(1), "one search for all the keys")
	g.Expect(s.Retrieves).To(Equal(retrieves))
	g.Expect(p.Lookups()).To(BeEquivalentTo(1))

	empty, err := p.Lookup(ctx, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(empty).To(BeEmpty())
}

func TestProviderLookupKnowsNothingOnError(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now), sandbox.WithRateLimits(sandbox.RateLimits{Searches: 1}))
	p := sandboxprovider.NewProvider(e)
	ctx := context.Background()
	_, err := p.Charge(ctx, "key", chargeRequest(1500, sandbox.PaymentMethodVisa))
	g.Expect(err).NotTo(HaveOccurred())

	// More than MaxLookupKeys: an error, and nothing searched.
	keys := make([]string, payment.MaxLookupKeys+1)
	for i := range keys {
		keys[i] = fmt.Sprint("key-", i)
	}
	got, err := p.Lookup(ctx, keys)
	g.Expect(err).To(MatchError(ContainSubstring("at most 10")))
	g.Expect(got).To(BeNil())
	g.Expect(e.Stats().Searches).To(BeZero())

	got, err = p.Lookup(ctx, keys[:payment.MaxLookupKeys])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(BeEmpty())

	// Beyond the search rate: transient, with the Retry-After.
	got, err = p.Lookup(ctx, []string{"key"})
	g.Expect(got).To(BeNil())
	g.Expect(transientRetryAfter(g, err)).To(Equal(sandbox.RateLimitRetryAfter))
	g.Expect(stripeError(g, err).HTTPStatus).To(Equal(http.StatusTooManyRequests))

	clock.Add(time.Second)
	got, err = p.Lookup(ctx, []string{"key"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(HaveKey("key"))
	g.Expect(e.Stats().Searches).To(BeEquivalentTo(3))
}

func TestProviderLookupLagsBehindCharges(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now), sandbox.WithSearchLag(time.Minute))
	p := sandboxprovider.NewProvider(e)
	ctx := context.Background()
	out, err := p.Charge(ctx, "key", chargeRequest(1500, sandbox.PaymentMethodVisa))
	g.Expect(err).NotTo(HaveOccurred())

	got, err := p.Lookup(ctx, []string{"key"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(BeEmpty())

	clock.Add(time.Minute)
	got, err = p.Lookup(ctx, []string{"key"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got["key"]).To(HaveLen(1))
	g.Expect(got["key"][0].ID).To(Equal(out.ID))
}

func TestProviderSettle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status string
		// then, when set, is the status the intent moves to once Settle has
		// read it twice.
		then          string
		key           string
		id            string
		wantStatus    string
		wantClass     error
		wantTransient string
		wantSettling  bool
	}{
		{name: "succeeded", status: sandbox.StatusSucceeded, wantStatus: sandbox.StatusSucceeded},
		{name: "requires capture", status: sandbox.StatusRequiresCapture, wantStatus: sandbox.StatusRequiresCapture},
		{name: "requires action, canceled by Settle", status: sandbox.StatusRequiresAction, wantClass: payment.ErrDeclined},
		{name: "requires confirmation, canceled by Settle", status: sandbox.StatusRequiresConfirmation,
			wantClass: payment.ErrDeclined},
		{name: "unknown status, then succeeded", status: "requires_review", then: sandbox.StatusSucceeded,
			wantStatus: sandbox.StatusSucceeded},
		{name: "requires payment method", status: sandbox.StatusRequiresPaymentMethod, wantClass: payment.ErrDeclined},
		{name: "canceled", status: sandbox.StatusCanceled, wantClass: payment.ErrDeclined},
		{name: "processing: settling after one read", status: sandbox.StatusProcessing, wantSettling: true},
		{name: "unknown id", status: sandbox.StatusSucceeded, id: "pi_unknown", wantTransient: "no such payment intent"},
		{name: "another key", status: sandbox.StatusSucceeded, key: "other", wantTransient: "another idempotency key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			e := sandbox.NewEngine()
			p := sandboxprovider.NewProvider(e, sandboxprovider.WithSettleInterval(time.Millisecond))
			in := e.PutIntent(sandbox.Intent{Amount: 1500, Currency: "eur", Status: tt.status, IdempotencyKey: "key",
				Metadata: sandbox.TaggedRequest("key", request(1500, sandbox.PaymentMethodVisa)).Metadata})
			key, id := "key", in.ID
			if tt.key != "" {
				key = tt.key
			}
			if tt.id != "" {
				id = tt.id
			}
			timeout := timeout
			if tt.wantTransient == context.DeadlineExceeded.Error() {
				timeout = 50 * time.Millisecond
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()

			done := make(chan chargeResult, 1)
			go func() {
				out, err := p.Settle(ctx, key, id)
				done <- chargeResult{outcome: out, err: err}
			}()
			if tt.then != "" {
				g.Eventually(func() int64 { return e.Stats().Retrieves }).WithTimeout(timeout).Should(BeNumerically(">=", 2))
				g.Consistently(done).WithTimeout(5 * time.Millisecond).ShouldNot(Receive())
				g.Expect(e.SetIntentStatus(in.ID, tt.then)).To(Succeed())
			}
			var r chargeResult
			g.Eventually(done).WithTimeout(timeout + time.Second).Should(Receive(&r))

			switch {
			case tt.wantClass != nil:
				g.Expect(r.err).To(MatchError(tt.wantClass))
				_, refused := payment.IsRefusal(r.err)
				g.Expect(refused).To(BeTrue())
			case tt.wantSettling:
				s, ok := payment.IsSettling(r.err)
				g.Expect(ok).To(BeTrue(), "want settling, got %v", r.err)
				g.Expect(*s).To(Equal(payment.SettlingError{ID: in.ID, Status: sandbox.StatusProcessing}))
				g.Expect(e.Stats().Retrieves).To(BeEquivalentTo(1), "no polling")
			case tt.wantTransient != "":
				g.Expect(r.err).To(BeAssignableToTypeOf(&payment.TransientError{}))
				g.Expect(r.err).To(MatchError(ContainSubstring(tt.wantTransient)))
			default:
				g.Expect(r.err).NotTo(HaveOccurred())
				g.Expect(r.outcome).To(Equal(payment.Outcome{ID: in.ID, Status: tt.wantStatus, Amount: 1500,
					Currency: "eur", Created: in.Created}))
			}
			g.Expect(p.Settles()).To(BeEquivalentTo(1))
			g.Expect(e.Stats().Requests).To(BeZero(), "Settle never charges")
		})
	}
}

func TestProviderAccount(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine(sandbox.WithAccount("acct_provider"))
	account, err := sandboxprovider.NewProvider(e).Account(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(account).To(Equal("acct_provider"))
}
