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
	"errors"
	"math/rand/v2"
	"net/http"
	"regexp"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// timeout bounds every wait of these tests.
const timeout = 5 * time.Second

// request returns a valid charge of amount paid with the payment method.
func request(amount int64, paymentMethod string) sandbox.PaymentIntentParams {
	return sandbox.PaymentIntentParams{
		Amount:        amount,
		Currency:      "eur",
		Customer:      "cus_123",
		PaymentMethod: paymentMethod,
		Description:   "order 42",
		Metadata:      map[string]string{"paymentjob": "default/order-42"},
	}
}

// stripeError returns err as a *sandbox.StripeError, failing when it is not.
func stripeError(g *WithT, err error) *sandbox.StripeError {
	var se *sandbox.StripeError
	g.ExpectWithOffset(1, errors.As(err, &se)).To(BeTrue(), "want a *StripeError, got %v", err)
	return se
}

// fakeClock is an Engine clock that moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// newFakeClock returns a clock stopped at 2026-03-01 12:00 UTC.
func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

// Now returns the clock's time.
func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Add moves the clock forward by d.
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// result is the answer of a CreatePaymentIntent run in a goroutine.
type result struct {
	intent   sandbox.Intent
	replayed bool
	err      error
}

// createAsync runs CreatePaymentIntent in a goroutine.
func createAsync(e *sandbox.Engine, key string, p sandbox.PaymentIntentParams) <-chan result {
	done := make(chan result, 1)
	go func() {
		in, replayed, err := e.CreatePaymentIntent(key, p)
		done <- result{intent: in, replayed: replayed, err: err}
	}()
	return done
}

func TestCreatePaymentIntentChargesOnceAndReplays(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	created := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	e := sandbox.NewEngine(sandbox.WithClock(func() time.Time { return created }))
	req := request(1999, sandbox.PaymentMethodVisa)

	first, replayed, err := e.CreatePaymentIntent("ns/order-42", req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replayed).To(BeFalse())
	g.Expect(first.ID).To(MatchRegexp(`^pi_[0-9A-Za-z]{24}$`))
	g.Expect(first).To(Equal(sandbox.Intent{
		ID:             first.ID,
		Amount:         1999,
		Currency:       "eur",
		Customer:       "cus_123",
		PaymentMethod:  sandbox.PaymentMethodVisa,
		Description:    "order 42",
		Metadata:       map[string]string{"paymentjob": "default/order-42"},
		Status:         sandbox.StatusSucceeded,
		Created:        created,
		IdempotencyKey: "ns/order-42",
	}))

	// A caller changing what it got back changes nothing saved.
	first.Metadata["paymentjob"] = "changed"
	req.Metadata["paymentjob"] = "changed"

	second, replayed, err := e.CreatePaymentIntent("ns/order-42", request(1999, sandbox.PaymentMethodVisa))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replayed).To(BeTrue())
	g.Expect(second.ID).To(Equal(first.ID))
	g.Expect(second.Metadata).To(Equal(map[string]string{"paymentjob": "default/order-42"}))

	got, ok := e.GetPaymentIntent(first.ID)
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(Equal(second))
	byKey, ok := e.LookupByKey("ns/order-42")
	g.Expect(ok).To(BeTrue())
	g.Expect(byKey).To(Equal(second))
	_, ok = e.GetPaymentIntent("pi_unknown")
	g.Expect(ok).To(BeFalse())
	_, ok = e.LookupByKey("ns/unknown")
	g.Expect(ok).To(BeFalse())

	g.Expect(e.Stats()).To(Equal(sandbox.Stats{
		Requests:     2,
		Charges:      1,
		Replays:      1,
		Retrieves:    2,
		ChargesByKey: map[string]int{"ns/order-42": 1},
		RefundsByKey: map[string]int{},
	}))
}

func TestCreatePaymentIntentKeyReusedWithOtherParams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*sandbox.PaymentIntentParams)
	}{
		{name: "amount", change: func(p *sandbox.PaymentIntentParams) { p.Amount++ }},
		{name: "currency", change: func(p *sandbox.PaymentIntentParams) { p.Currency = "usd" }},
		{name: "customer", change: func(p *sandbox.PaymentIntentParams) { p.Customer = "cus_456" }},
		{name: "payment method", change: func(p *sandbox.PaymentIntentParams) { p.PaymentMethod = sandbox.PaymentMethodMastercard }},
		{name: "description", change: func(p *sandbox.PaymentIntentParams) { p.Description = "order 43" }},
		{name: "metadata", change: func(p *sandbox.PaymentIntentParams) { p.Metadata = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			e := sandbox.NewEngine()
			first, _, err := e.CreatePaymentIntent("ns/order-7", request(500, sandbox.PaymentMethodVisa))
			g.Expect(err).NotTo(HaveOccurred())

			other := request(500, sandbox.PaymentMethodVisa)
			tt.change(&other)
			_, replayed, err := e.CreatePaymentIntent("ns/order-7", other)
			se := stripeError(g, err)
			g.Expect(se.Type).To(Equal(sandbox.ErrorTypeIdempotency))
			g.Expect(se.HTTPStatus).To(Equal(http.StatusBadRequest))
			g.Expect(se.Error()).NotTo(ContainSubstring("ns/order-7"))
			g.Expect(replayed).To(BeFalse())

			// The saved outcome is untouched.
			again, replayed, err := e.CreatePaymentIntent("ns/order-7", request(500, sandbox.PaymentMethodVisa))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(replayed).To(BeTrue())
			g.Expect(again.ID).To(Equal(first.ID))

			s := e.Stats()
			g.Expect(s.Charges).To(BeEquivalentTo(1))
			g.Expect(s.KeyReusedErrors).To(BeEquivalentTo(1))
			g.Expect(s.ChargesByKey).To(Equal(map[string]int{"ns/order-7": 1}))
		})
	}
}

func TestCreatePaymentIntentDeclinesAreSavedWithoutCharge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		paymentMethod   string
		wantDeclineCode string
	}{
		{paymentMethod: sandbox.PaymentMethodChargeDeclined, wantDeclineCode: sandbox.DeclineGeneric},
		{paymentMethod: sandbox.PaymentMethodInsufficientFunds, wantDeclineCode: sandbox.DeclineInsufficientFunds},
	}
	for _, tt := range tests {
		t.Run(tt.paymentMethod, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			e := sandbox.NewEngine()
			req := request(700, tt.paymentMethod)

			_, replayed, err := e.CreatePaymentIntent("key", req)
			first := stripeError(g, err)
			g.Expect(replayed).To(BeFalse())
			g.Expect(first.Type).To(Equal(sandbox.ErrorTypeCard))
			g.Expect(first.Code).To(Equal(sandbox.CodeCardDeclined))
			g.Expect(first.DeclineCode).To(Equal(tt.wantDeclineCode))
			g.Expect(first.HTTPStatus).To(Equal(http.StatusPaymentRequired))

			_, replayed, err = e.CreatePaymentIntent("key", req)
			g.Expect(replayed).To(BeTrue())
			g.Expect(stripeError(g, err)).To(Equal(first))

			_, ok := e.LookupByKey("key")
			g.Expect(ok).To(BeFalse())
			s := e.Stats()
			g.Expect(s.Charges).To(BeZero())
			g.Expect(s.ChargesByKey).To(BeEmpty())
			g.Expect(s.Declines).To(BeEquivalentTo(1))
			g.Expect(s.Replays).To(BeEquivalentTo(1))
		})
	}
}

func TestCreatePaymentIntentInvalidRequestsAreNotSaved(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		key         string
		change      func(*sandbox.PaymentIntentParams)
		wantCode    string
		wantMessage string
	}{
		{name: "no key", key: "", wantCode: sandbox.CodeParameterMissing, wantMessage: "idempotency key"},
		{name: "no payment method", key: "k", change: func(p *sandbox.PaymentIntentParams) { p.PaymentMethod = "" },
			wantCode: sandbox.CodeParameterMissing, wantMessage: "payment_method"},
		{name: "unknown payment method", key: "k", change: func(p *sandbox.PaymentIntentParams) { p.PaymentMethod = "pm_card_unknown" },
			wantCode: sandbox.CodeResourceMissing, wantMessage: "No such PaymentMethod"},
		{name: "zero amount", key: "k", change: func(p *sandbox.PaymentIntentParams) { p.Amount = 0 },
			wantCode: sandbox.CodeAmountTooSmall, wantMessage: "Amount"},
		{name: "negative amount", key: "k", change: func(p *sandbox.PaymentIntentParams) { p.Amount = -5 },
			wantCode: sandbox.CodeAmountTooSmall, wantMessage: "Amount"},
		{name: "upper-case currency", key: "k", change: func(p *sandbox.PaymentIntentParams) { p.Currency = "EUR" },
			wantCode: sandbox.CodeParameterInvalid, wantMessage: "currency"},
		{name: "short currency", key: "k", change: func(p *sandbox.PaymentIntentParams) { p.Currency = "eu" },
			wantCode: sandbox.CodeParameterInvalid, wantMessage: "currency"},
		{name: "no currency", key: "k", change: func(p *sandbox.PaymentIntentParams) { p.Currency = "" },
			wantCode: sandbox.CodeParameterInvalid, wantMessage: "currency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			e := sandbox.NewEngine()
			bad := request(300, sandbox.PaymentMethodVisa)
			if tt.change != nil {
				tt.change(&bad)
			}

			_, replayed, err := e.CreatePaymentIntent(tt.key, bad)
			se := stripeError(g, err)
			g.Expect(replayed).To(BeFalse())
			g.Expect(se.Type).To(Equal(sandbox.ErrorTypeInvalidRequest))
			g.Expect(se.Code).To(Equal(tt.wantCode))
			g.Expect(se.HTTPStatus).To(Equal(http.StatusBadRequest))
			g.Expect(se.Message).To(ContainSubstring(tt.wantMessage))

			// Nothing was saved: the key then takes other parameters.
			_, replayed, err = e.CreatePaymentIntent("k", request(300, sandbox.PaymentMethodVisa))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(replayed).To(BeFalse())
			s := e.Stats()
			g.Expect(s.InvalidRequests).To(BeEquivalentTo(1))
			g.Expect(s.Charges).To(BeEquivalentTo(1))
		})
	}
}

func TestCreatePaymentIntentKeyInFlight(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	req := request(1000, sandbox.PaymentMethodVisa)
	gate := e.Hold()
	defer gate.Release()

	first := createAsync(e, "key", req)
	g.Eventually(gate.Entered()).WithTimeout(timeout).Should(Receive(Equal("key")))

	// Same or other parameters: the key is in use either way.
	for _, p := range []sandbox.PaymentIntentParams{req, request(1, sandbox.PaymentMethodVisa)} {
		_, replayed, err := e.CreatePaymentIntent("key", p)
		se := stripeError(g, err)
		g.Expect(replayed).To(BeFalse())
		g.Expect(se.Code).To(Equal(sandbox.CodeIdempotencyKeyInUse))
		g.Expect(se.HTTPStatus).To(Equal(http.StatusConflict))
	}
	_, ok := e.LookupByKey("key")
	g.Expect(ok).To(BeFalse())
	g.Expect(e.Stats().Charges).To(BeZero())

	gate.Release()
	var r result
	g.Eventually(first).WithTimeout(timeout).Should(Receive(&r))
	g.Expect(r.err).NotTo(HaveOccurred())
	g.Expect(r.replayed).To(BeFalse())

	again, replayed, err := e.CreatePaymentIntent("key", req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replayed).To(BeTrue())
	g.Expect(again.ID).To(Equal(r.intent.ID))
	s := e.Stats()
	g.Expect(s.InFlightConflicts).To(BeEquivalentTo(2))
	g.Expect(s.Charges).To(BeEquivalentTo(1))
}

func TestLatencyKeepsKeyInFlightWithoutLockingEngine(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	g.Expect(e.SetFaults(sandbox.Faults{LatencyMin: time.Second, LatencyMax: time.Second})).To(Succeed())
	req := request(1000, sandbox.PaymentMethodVisa)

	first := createAsync(e, "key", req)
	// The first request is admitted, and its key marked in flight, under the
	// same lock as it is counted.
	g.Eventually(func() int64 { return e.Stats().Requests }).WithTimeout(timeout).Should(BeEquivalentTo(1))
	// Other requests are answered while the first one waits.
	_, _, err := e.CreatePaymentIntent("key", req)
	g.Expect(stripeError(g, err).Code).To(Equal(sandbox.CodeIdempotencyKeyInUse))
	g.Expect(e.Stats().Charges).To(BeZero())

	var r result
	g.Eventually(first).WithTimeout(timeout).Should(Receive(&r))
	g.Expect(r.err).NotTo(HaveOccurred())
	g.Expect(e.Stats().Charges).To(BeEquivalentTo(1))
}

// injection is a way to make the next request fail with a fault.
type injection struct {
	name   string
	inject func(*sandbox.Engine) error
}

// injections are the three ways to fail the next request with kind: the
// switch for requests with a new key, the switch for any request, and the
// random faults certain, which draw kind every time.
func injections(kind sandbox.FaultKind, certain sandbox.Faults) []injection {
	return []injection{
		{name: "next request", inject: func(e *sandbox.Engine) error {
			e.FailNext(kind, 1)
			return nil
		}},
		{name: "next request of any key", inject: func(e *sandbox.Engine) error {
			e.FailNextAny(kind, 1)
			return nil
		}},
		{name: "random", inject: func(e *sandbox.Engine) error { return e.SetFaults(certain) }},
	}
}

func TestFaultBeforeCommitChargesNothing(t *testing.T) {
	t.Parallel()
	for _, tt := range injections(sandbox.FaultBeforeCommit, sandbox.Faults{ErrorBeforeCommit: 1}) {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			e := sandbox.NewEngine()
			g.Expect(tt.inject(e)).To(Succeed())
			req := request(1000, sandbox.PaymentMethodVisa)

			_, _, err := e.CreatePaymentIntent("key", req)
			se := stripeError(g, err)
			g.Expect(se.Type).To(Equal(sandbox.ErrorTypeAPI))
			g.Expect(se.HTTPStatus).To(Equal(http.StatusInternalServerError))
			_, ok := e.LookupByKey("key")
			g.Expect(ok).To(BeFalse())
			g.Expect(e.Stats().Charges).To(BeZero())

			// The retry is a new request under the released key.
			g.Expect(e.SetFaults(sandbox.Faults{})).To(Succeed())
			_, replayed, err := e.CreatePaymentIntent("key", req)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(replayed).To(BeFalse())
			s := e.Stats()
			g.Expect(s.Charges).To(BeEquivalentTo(1))
			g.Expect(s.Faults).To(BeEquivalentTo(1))
		})
	}
}

func TestFaultAfterCommitChargesAndReplays(t *testing.T) {
	t.Parallel()
	for _, tt := range injections(sandbox.FaultAfterCommit, sandbox.Faults{ErrorAfterCommit: 1}) {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			e := sandbox.NewEngine()
			g.Expect(tt.inject(e)).To(Succeed())
			req := request(1000, sandbox.PaymentMethodVisa)

			_, _, err := e.CreatePaymentIntent("key", req)
			g.Expect(stripeError(g, err).Type).To(Equal(sandbox.ErrorTypeAPI))
			saved, ok := e.LookupByKey("key")
			g.Expect(ok).To(BeTrue())
			g.Expect(e.Stats().Charges).To(BeEquivalentTo(1))

			g.Expect(e.SetFaults(sandbox.Faults{})).To(Succeed())
			again, replayed, err := e.CreatePaymentIntent("key", req)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(replayed).To(BeTrue())
			g.Expect(again.ID).To(Equal(saved.ID))
			s := e.Stats()
			g.Expect(s.Charges).To(BeEquivalentTo(1))
			g.Expect(s.ChargesByKey).To(Equal(map[string]int{"key": 1}))
			g.Expect(s.Faults).To(BeEquivalentTo(1))
		})
	}
}

func TestFailNextFailsInARowThenAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		chargeFirst  bool
		inject       func(*sandbox.Engine)
		wantReplayed bool
	}{
		{name: "new key", inject: func(e *sandbox.Engine) { e.FailNext(sandbox.FaultBeforeCommit, 5) }},
		{name: "any key, new", inject: func(e *sandbox.Engine) { e.FailNextAny(sandbox.FaultBeforeCommit, 5) }},
		{name: "any key, saved", chargeFirst: true, wantReplayed: true,
			inject: func(e *sandbox.Engine) { e.FailNextAny(sandbox.FaultBeforeCommit, 5) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			e := sandbox.NewEngine()
			req := request(1000, sandbox.PaymentMethodVisa)
			if tt.chargeFirst {
				_, _, err := e.CreatePaymentIntent("key", req)
				g.Expect(err).NotTo(HaveOccurred())
			}
			tt.inject(e)

			for i := range 5 {
				_, _, err := e.CreatePaymentIntent("key", req)
				g.Expect(stripeError(g, err).Type).To(Equal(sandbox.ErrorTypeAPI), "attempt %d", i+1)
			}
			_, replayed, err := e.CreatePaymentIntent("key", req)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(replayed).To(Equal(tt.wantReplayed))
			s := e.Stats()
			g.Expect(s.Charges).To(BeEquivalentTo(1))
			g.Expect(s.Faults).To(BeEquivalentTo(5))
		})
	}
}

func TestFailNextIgnoresSavedKeysAndCanBeSwitchedOff(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	req := request(1000, sandbox.PaymentMethodVisa)
	_, _, err := e.CreatePaymentIntent("saved", req)
	g.Expect(err).NotTo(HaveOccurred())

	e.FailNext(sandbox.FaultBeforeCommit, 3)
	_, replayed, err := e.CreatePaymentIntent("saved", req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replayed).To(BeTrue())

	e.FailNext(sandbox.FaultBeforeCommit, 0)
	_, _, err = e.CreatePaymentIntent("new", req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.Stats().Faults).To(BeZero())
}

func TestRateLimitCarriesRetryAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		inject         func(*sandbox.Engine) error
		wantRetryAfter time.Duration
	}{
		{name: "next request", wantRetryAfter: 3 * time.Second, inject: func(e *sandbox.Engine) error {
			e.FailNext(sandbox.FaultRateLimit, 1)
			return e.SetFaults(sandbox.Faults{RetryAfter: 3 * time.Second})
		}},
		{name: "next request of any key", wantRetryAfter: sandbox.DefaultRetryAfter, inject: func(e *sandbox.Engine) error {
			e.FailNextAny(sandbox.FaultRateLimit, 1)
			return nil
		}},
		{name: "random", wantRetryAfter: 2 * time.Second, inject: func(e *sandbox.Engine) error {
			return e.SetFaults(sandbox.Faults{RateLimit: 1, RetryAfter: 2 * time.Second})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			e := sandbox.NewEngine()
			g.Expect(tt.inject(e)).To(Succeed())
			req := request(1000, sandbox.PaymentMethodVisa)

			_, _, err := e.CreatePaymentIntent("key", req)
			se := stripeError(g, err)
			g.Expect(se.Code).To(Equal(sandbox.CodeRateLimit))
			g.Expect(se.HTTPStatus).To(Equal(http.StatusTooManyRequests))
			g.Expect(se.RetryAfter).To(Equal(tt.wantRetryAfter))

			// Nothing was saved: other parameters are taken.
			g.Expect(e.SetFaults(sandbox.Faults{})).To(Succeed())
			_, replayed, err := e.CreatePaymentIntent("key", request(2000, sandbox.PaymentMethodVisa))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(replayed).To(BeFalse())
			g.Expect(e.Stats().Charges).To(BeEquivalentTo(1))
		})
	}
}

func TestSetFaultsRejectsOutOfRange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		faults sandbox.Faults
	}{
		{name: "probability above one", faults: sandbox.Faults{ErrorBeforeCommit: 1.5}},
		{name: "negative probability", faults: sandbox.Faults{RateLimit: -0.1}},
		{name: "negative retry after", faults: sandbox.Faults{RetryAfter: -time.Second}},
		{name: "latency bounds swapped", faults: sandbox.Faults{LatencyMin: time.Second, LatencyMax: time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			e := sandbox.NewEngine()
			valid := sandbox.Faults{ErrorAfterCommit: 0.5}
			g.Expect(e.SetFaults(valid)).To(Succeed())
			g.Expect(e.SetFaults(tt.faults)).To(MatchError(ContainSubstring("cannot set faults")))
			g.Expect(e.Faults()).To(Equal(valid))
		})
	}
}

func TestIntentIDsComeFromTheRandomSource(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	newEngine := func() *sandbox.Engine {
		return sandbox.NewEngine(sandbox.WithRand(rand.New(rand.NewPCG(1, 2))))
	}
	a, _, err := newEngine().CreatePaymentIntent("key", request(1, sandbox.PaymentMethodVisa))
	g.Expect(err).NotTo(HaveOccurred())
	b, _, err := newEngine().CreatePaymentIntent("key", request(1, sandbox.PaymentMethodVisa))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.ID).To(Equal(b.ID))

	e := newEngine()
	id := regexp.MustCompile(`^pi_[0-9A-Za-z]{24}$`)
	seen := map[string]bool{}
	for _, key := range []string{"a", "b", "c", "d"} {
		in, _, err := e.CreatePaymentIntent(key, request(1, sandbox.PaymentMethodVisa))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(id.MatchString(in.ID)).To(BeTrue(), in.ID)
		g.Expect(seen).NotTo(HaveKey(in.ID))
		seen[in.ID] = true
	}
}

func TestEngineAccount(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	seeded := func(opts ...sandbox.Option) *sandbox.Engine {
		return sandbox.NewEngine(append([]sandbox.Option{sandbox.WithRand(rand.New(rand.NewPCG(7, 8)))}, opts...)...)
	}

	account := seeded().Account()
	g.Expect(account).To(MatchRegexp(`^acct_[0-9A-Za-z]{16}$`))
	g.Expect(seeded().Account()).To(Equal(account), "the account comes from the random source")
	g.Expect(sandbox.NewEngine().Account()).NotTo(Equal(sandbox.NewEngine().Account()))
	g.Expect(seeded(sandbox.WithAccount("acct_1Nv0FGQ9RKHgCVdK")).Account()).To(Equal("acct_1Nv0FGQ9RKHgCVdK"))
}

func TestForgetKeysMakesTheNextRequestANewCharge(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	req := request(1000, sandbox.PaymentMethodVisa)

	first, _, err := e.CreatePaymentIntent("paid", req)
	g.Expect(err).NotTo(HaveOccurred())
	_, _, err = e.CreatePaymentIntent("declined", request(1000, sandbox.PaymentMethodChargeDeclined))
	g.Expect(stripeError(g, err).Type).To(Equal(sandbox.ErrorTypeCard))
	gate := e.Hold()
	defer gate.Release()
	held := createAsync(e, "held", req)
	g.Eventually(gate.Entered()).WithTimeout(timeout).Should(Receive(Equal("held")))

	g.Expect(e.ForgetKeys()).To(Equal(2))
	gate.Release()

	// The key in flight stayed in flight: it was decided afterwards, and is
	// remembered.
	var r result
	g.Eventually(held).WithTimeout(timeout).Should(Receive(&r))
	g.Expect(r.err).NotTo(HaveOccurred())
	_, replayed, err := e.CreatePaymentIntent("held", req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replayed).To(BeTrue())

	// The same request under a forgotten key charges again.
	second, replayed, err := e.CreatePaymentIntent("paid", req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replayed).To(BeFalse())
	g.Expect(second.ID).NotTo(Equal(first.ID))
	// Other parameters under a forgotten key are no key reuse.
	_, replayed, err = e.CreatePaymentIntent("declined", req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replayed).To(BeFalse())

	// The first intent stays, retrievable and searchable.
	got, ok := e.GetPaymentIntent(first.ID)
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(Equal(first))
	found, err := e.SearchPaymentIntents(`metadata['paymentjob']:'default/order-42'`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(HaveLen(4))
	latest, ok := e.LookupByKey("paid")
	g.Expect(ok).To(BeTrue())
	g.Expect(latest.ID).To(Equal(second.ID))

	s := e.Stats()
	g.Expect(s.KeysForgotten).To(BeEquivalentTo(2))
	g.Expect(s.ChargesByKey).To(Equal(map[string]int{"paid": 2, "declined": 1, "held": 1}))
	g.Expect(s.KeyReusedErrors).To(BeZero())
	g.Expect(e.ForgetKeys()).To(Equal(3))
	g.Expect(e.Stats().KeysForgotten).To(BeEquivalentTo(5))
}

func TestIdempotencyOffChargesEveryRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// send sends the second request under "key" after a first one with
		// request(1000, visa).
		send         func(g *WithT, e *sandbox.Engine)
		wantDeclines int64
	}{
		{name: "same request", send: func(g *WithT, e *sandbox.Engine) {
			_, replayed, err := e.CreatePaymentIntent("key", request(1000, sandbox.PaymentMethodVisa))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(replayed).To(BeFalse())
		}},
		{name: "other parameters", send: func(g *WithT, e *sandbox.Engine) {
			_, _, err := e.CreatePaymentIntent("key", request(2000, sandbox.PaymentMethodMastercard))
			g.Expect(err).NotTo(HaveOccurred())
		}},
		{name: "while the first is in flight", send: func(g *WithT, e *sandbox.Engine) {
			gate := e.Hold()
			defer gate.Release()
			held := createAsync(e, "key", request(1000, sandbox.PaymentMethodVisa))
			g.Eventually(gate.Entered()).WithTimeout(timeout).Should(Receive(Equal("key")))
			gate.Release()
			var r result
			g.Eventually(held).WithTimeout(timeout).Should(Receive(&r))
			g.Expect(r.err).NotTo(HaveOccurred())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			e := sandbox.NewEngine()
			// A key remembered while idempotency was on is not honoured.
			remembered, _, err := e.CreatePaymentIntent("key", request(1000, sandbox.PaymentMethodVisa))
			g.Expect(err).NotTo(HaveOccurred())
			e.SetIdempotency(false)
			g.Expect(e.Idempotency()).To(BeFalse())

			first, replayed, err := e.CreatePaymentIntent("key", request(1000, sandbox.PaymentMethodVisa))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(replayed).To(BeFalse())
			g.Expect(first.ID).NotTo(Equal(remembered.ID))
			tt.send(g, e)

			s := e.Stats()
			g.Expect(s.Requests).To(BeEquivalentTo(3))
			g.Expect(s.Charges).To(BeEquivalentTo(3))
			g.Expect(s.ChargesByKey).To(Equal(map[string]int{"key": 3}))
			g.Expect(s.Replays + s.InFlightConflicts + s.KeyReusedErrors).To(BeZero())

			// On again, the key remembered before is honoured again.
			e.SetIdempotency(true)
			again, replayed, err := e.CreatePaymentIntent("key", request(1000, sandbox.PaymentMethodVisa))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(replayed).To(BeTrue())
			g.Expect(again.ID).To(Equal(remembered.ID))
		})
	}
}

func TestIdempotencyOffDoesNotSaveDeclines(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine(sandbox.WithIdempotency(false))
	g.Expect(e.Idempotency()).To(BeFalse())
	for range 2 {
		_, replayed, err := e.CreatePaymentIntent("key", request(1000, sandbox.PaymentMethodChargeDeclined))
		g.Expect(stripeError(g, err).Type).To(Equal(sandbox.ErrorTypeCard))
		g.Expect(replayed).To(BeFalse())
	}
	_, _, err := e.CreatePaymentIntent("key", request(1000, sandbox.PaymentMethodVisa))
	g.Expect(err).NotTo(HaveOccurred())
	s := e.Stats()
	g.Expect(s.Declines).To(BeEquivalentTo(2))
	g.Expect(s.ChargesByKey).To(Equal(map[string]int{"key": 1}))
}

func TestPutIntentStoresHistory(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now))
	metadata := map[string]string{"paymentjob": "default/old"}

	earlier := clock.Now().Add(-48 * time.Hour)
	processing := e.PutIntent(sandbox.Intent{Amount: 700, Currency: "eur", Metadata: metadata,
		Status: sandbox.StatusProcessing, Created: earlier, IdempotencyKey: "old"})
	g.Expect(processing.ID).To(MatchRegexp(`^pi_[0-9A-Za-z]{24}$`))
	g.Expect(processing.Created).To(Equal(earlier))
	g.Expect(processing.Status).To(Equal(sandbox.StatusProcessing))
	metadata["paymentjob"] = "changed"
	got, ok := e.GetPaymentIntent(processing.ID)
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(Equal(processing))
	g.Expect(got.Metadata).To(Equal(map[string]string{"paymentjob": "default/old"}))

	defaulted := e.PutIntent(sandbox.Intent{ID: "pi_given", Amount: 1, Currency: "usd", Status: "requires_review"})
	g.Expect(defaulted.ID).To(Equal("pi_given"))
	g.Expect(defaulted.Created).To(Equal(clock.Now()))
	g.Expect(defaulted.Status).To(Equal("requires_review"), "a status the sandbox does not know is kept")
	g.Expect(e.PutIntent(sandbox.Intent{}).Status).To(Equal(sandbox.StatusSucceeded))

	// History is no charge, and its key is not remembered.
	_, ok = e.LookupByKey("old")
	g.Expect(ok).To(BeFalse(), "processing is not succeeded")
	g.Expect(e.SetIntentStatus(processing.ID, sandbox.StatusSucceeded)).To(Succeed())
	found, ok := e.LookupByKey("old")
	g.Expect(ok).To(BeTrue())
	g.Expect(found.ID).To(Equal(processing.ID))
	_, replayed, err := e.CreatePaymentIntent("old", request(700, sandbox.PaymentMethodVisa))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replayed).To(BeFalse())
	s := e.Stats()
	g.Expect(s.Charges).To(BeEquivalentTo(1))
	g.Expect(s.ChargesByKey).To(Equal(map[string]int{"old": 1}))
	g.Expect(s.Requests).To(BeEquivalentTo(1))
}

func TestSetIntentStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		id      string
		status  string
		wantErr string
	}{
		{name: "processing to succeeded", status: sandbox.StatusSucceeded},
		{name: "to canceled", status: sandbox.StatusCanceled},
		{name: "to requires_payment_method", status: sandbox.StatusRequiresPaymentMethod},
		{name: "to requires_capture", status: sandbox.StatusRequiresCapture},
		{name: "to requires_action", status: sandbox.StatusRequiresAction},
		{name: "to requires_confirmation", status: sandbox.StatusRequiresConfirmation},
		{name: "unknown id", id: "pi_unknown", status: sandbox.StatusSucceeded, wantErr: "no such payment intent"},
		{name: "unknown status", status: "paid", wantErr: `unknown status "paid"`},
		{name: "empty status", status: "", wantErr: "unknown status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			e := sandbox.NewEngine()
			in := e.PutIntent(sandbox.Intent{Amount: 1, Currency: "eur", Status: sandbox.StatusProcessing})
			id := in.ID
			if tt.id != "" {
				id = tt.id
			}

			err := e.SetIntentStatus(id, tt.status)
			got, _ := e.GetPaymentIntent(in.ID)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(got.Status).To(Equal(sandbox.StatusProcessing))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status).To(Equal(tt.status))
		})
	}
}
