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
	"maps"
	"math/rand/v2"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// PaymentIntent statuses, as at Stripe. The Engine creates only succeeded
// intents (and declines without an intent); the others come from PutIntent
// and SetIntentStatus, so that tests can model charges that are not final.
const (
	// StatusSucceeded is the status of a PaymentIntent whose money moved.
	StatusSucceeded = "succeeded"
	// StatusProcessing is a payment the provider is still processing.
	StatusProcessing = "processing"
	// StatusRequiresAction is a payment waiting for the customer, such as
	// 3-D Secure.
	StatusRequiresAction = "requires_action"
	// StatusRequiresConfirmation is a payment created but not confirmed.
	StatusRequiresConfirmation = "requires_confirmation"
	// StatusRequiresCapture is a payment authorized and not yet captured.
	StatusRequiresCapture = "requires_capture"
	// StatusRequiresPaymentMethod is a payment whose attempt failed; it
	// moved no money.
	StatusRequiresPaymentMethod = "requires_payment_method"
	// StatusCanceled is a payment canceled without moving money.
	StatusCanceled = "canceled"
)

// statuses are the PaymentIntent statuses SetIntentStatus accepts.
var statuses = []string{
	StatusSucceeded, StatusProcessing, StatusRequiresAction, StatusRequiresConfirmation,
	StatusRequiresCapture, StatusRequiresPaymentMethod, StatusCanceled,
}

// DefaultRetryAfter is the Retry-After of a rate limit when Faults.RetryAfter
// is zero.
const DefaultRetryAfter = time.Second

// Intent is a PaymentIntent created and confirmed by the Engine.
type Intent struct {
	// ID is "pi_" followed by 24 letters and digits.
	ID string
	// Amount in the currency's minor unit.
	Amount int64
	// Currency is the lower-case ISO 4217 code.
	Currency string
	// Customer is the customer identifier sent, if any.
	Customer string
	// PaymentMethod is the payment method charged.
	PaymentMethod string
	// Description is the description sent, if any.
	Description string
	// Metadata is the metadata sent, if any.
	Metadata map[string]string
	// Status is StatusSucceeded for an intent the Engine created, and may be
	// any of the Status constants (or, through PutIntent, any string) for
	// one a test put or changed.
	Status string
	// Created is when the Engine committed the charge, by its clock. Search
	// sees the intent once the search lag has passed since Created.
	Created time.Time
	// IdempotencyKey is the key the intent was created with.
	IdempotencyKey string
}

// clone returns a copy that shares no map with in.
func (in Intent) clone() Intent {
	in.Metadata = maps.Clone(in.Metadata)
	return in
}

// Stats are the Engine's counters since it was created.
type Stats struct {
	// Requests counts every CreatePaymentIntent call.
	Requests int64
	// Charges counts the payments whose money moved.
	Charges int64
	// Replays counts the answers replayed from a saved outcome, successes
	// and declines alike.
	Replays int64
	// InFlightConflicts counts the requests refused because their key was in
	// flight.
	InFlightConflicts int64
	// Declines counts the card errors saved; replayed declines are not
	// counted again.
	Declines int64
	// KeyReusedErrors counts the requests refused because their key was
	// saved with other parameters.
	KeyReusedErrors int64
	// InvalidRequests counts the requests refused as malformed.
	InvalidRequests int64
	// Faults counts the injected faults answered, of every kind; requests
	// refused by the RateLimits are counted in RateLimited instead.
	Faults int64
	// RateLimited counts the create and search requests refused with a 429
	// because they went beyond the RateLimits.
	RateLimited int64
	// Searches counts every search request, answered or refused.
	Searches int64
	// Retrieves counts the GetPaymentIntent reads.
	Retrieves int64
	// KeysForgotten counts the idempotency keys forgotten by ForgetKeys.
	KeysForgotten int64
	// ChargesByKey counts the payments whose money moved, by idempotency key.
	// With idempotency off, a key may count more than one.
	ChargesByKey map[string]int
}

// Option configures an Engine.
type Option func(*Engine)

// WithClock sets the clock that stamps Intent.Created; time.Now by default.
func WithClock(now func() time.Time) Option {
	return func(e *Engine) {
		if now != nil {
			e.now = now
		}
	}
}

// WithRand sets the random source of intent IDs, latencies and random faults,
// for reproducible runs. The Engine uses it only under its lock.
func WithRand(r *rand.Rand) Option {
	return func(e *Engine) {
		if r != nil {
			e.rnd = r
		}
	}
}

// WithAccount sets the account identifier the Engine answers to, such as
// "acct_1Nv0FGQ9RKHgCVdK"; by default it is "acct_" followed by 16 letters
// and digits drawn from the Engine's random source.
func WithAccount(id string) Option {
	return func(e *Engine) { e.account = id }
}

// WithIdempotency switches idempotency keys on (the default) or off; see
// SetIdempotency.
func WithIdempotency(on bool) Option {
	return func(e *Engine) { e.idempotent = on }
}

// keyState is what the Engine remembers of an idempotency key.
type keyState struct {
	// fingerprint of the parameters first sent with the key.
	fingerprint string
	// inFlight is true until the first request is decided.
	inFlight bool
	// intentID is the saved successful intent, if any.
	intentID string
	// err is the saved card error, if any.
	err *StripeError
}

// Engine is the sandbox's state: the account, idempotency keys,
// PaymentIntents, faults, rate limits, search lag, the lookup switch and
// counters. It is safe for concurrent use; latency and held requests never
// hold its lock.
type Engine struct {
	mu          sync.Mutex
	now         func() time.Time
	rnd         *rand.Rand
	account     string
	idempotent  bool
	searchLag   time.Duration
	lookupOff   bool
	limits      RateLimits
	writes      *rate.Limiter
	searches    *rate.Limiter
	faults      Faults
	failNext    map[FaultKind]int
	failNextAny map[FaultKind]int
	gate        *Gate
	// declined are payment methods declined on top of the test cards.
	declined map[string]testCard
	keys     map[string]*keyState
	intents  map[string]Intent
	stats    Stats
}

// NewEngine returns an Engine without faults, rate limits or search lag,
// that honours idempotency keys.
func NewEngine(opts ...Option) *Engine {
	e := &Engine{
		now:         time.Now,
		rnd:         rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		idempotent:  true,
		failNext:    map[FaultKind]int{},
		failNextAny: map[FaultKind]int{},
		keys:        map[string]*keyState{},
		intents:     map[string]Intent{},
		stats:       Stats{ChargesByKey: map[string]int{}},
	}
	for _, opt := range opts {
		opt(e)
	}
	if e.account == "" {
		e.account = "acct_" + e.randomText(16)
	}
	e.writes, e.searches = e.limits.limiters()
	return e
}

// Account returns the identifier of the account the Engine answers to.
func (e *Engine) Account() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.account
}

// SetIdempotency switches idempotency keys on or off. Off, the Engine
// behaves like a provider that ignores them: every create request is a new
// charge, with no replay, no in-flight conflict and no key-reused error,
// so ChargesByKey counts how many times each key was charged. It is the
// oracle that proves a caller never sends the same payment twice. Keys
// remembered while it was on are kept, and honoured again once it is.
func (e *Engine) SetIdempotency(on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.idempotent = on
}

// Idempotency reports whether idempotency keys are honoured.
func (e *Engine) Idempotency() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.idempotent
}

// ForgetKeys forgets every decided idempotency key, as Stripe does after 24
// hours, and returns how many it forgot: the next request with one of them
// is a new charge. Keys in flight stay in flight; intents stay, and remain
// retrievable and searchable by their metadata.
func (e *Engine) ForgetKeys() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for key, s := range e.keys {
		if !s.inFlight {
			delete(e.keys, key)
			n++
		}
	}
	e.stats.KeysForgotten += int64(n)
	return n
}

// answer is the outcome of one request before faults replace it.
type answer struct {
	intent   Intent
	replayed bool
	err      *StripeError
}

// ticket is a request with a new key, admitted and in flight.
type ticket struct {
	fingerprint      string
	remember         bool
	failBeforeCommit bool
	latency          time.Duration
	gate             *Gate
}

// CreatePaymentIntent creates and confirms a PaymentIntent for p under the
// idempotency key, with Stripe's idempotency semantics. A new key is held in
// flight for the configured latency and then charged, declined or refused; a
// saved key with the same parameters replays its outcome (replayed is true,
// also for a replayed card error) and moves no money. A request beyond the
// write rate limit is refused with a 429 first; with idempotency off
// (SetIdempotency) every request is treated as one with a new key and
// nothing is remembered. Errors are always *StripeError.
func (e *Engine) CreatePaymentIntent(key string, p payment.ChargeRequest) (Intent, bool, error) {
	return e.createPaymentIntent(key, p, payment.RequestHash("", p))
}

// createPaymentIntent is CreatePaymentIntent with the fingerprint that
// tells a retry from a reuse of the key with another request.
func (e *Engine) createPaymentIntent(key string, p payment.ChargeRequest, fp string) (Intent, bool, error) {
	a, t, lose := e.admit(key, p, fp)
	if t != nil {
		t.wait(key)
		var lost bool
		a, lost = e.commit(key, p, t)
		lose = lose || lost
	}
	// A request that already failed with a 500 keeps its answer.
	if lose && (a.err == nil || a.err.Type != ErrorTypeAPI) {
		e.mu.Lock()
		e.stats.Faults++
		e.mu.Unlock()
		return Intent{}, false, apiError(FaultAfterCommit)
	}
	if a.err != nil {
		return Intent{}, a.replayed, a.err
	}
	return a.intent, a.replayed, nil
}

// admit decides a request under the lock, or marks its new key in flight and
// returns a ticket to commit it. lose is true when the answer must be
// replaced by an after-commit fault.
func (e *Engine) admit(key string, p payment.ChargeRequest, fp string) (a answer, t *ticket, lose bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stats.Requests++
	if !e.allow(e.writes) {
		return answer{err: rateLimitError(RateLimitRetryAfter, false)}, nil, false
	}
	if key == "" {
		e.stats.InvalidRequests++
		return answer{err: invalidRequest(CodeParameterMissing, "",
			"An idempotency key is required.")}, nil, false
	}
	if e.take(e.failNextAny, FaultBeforeCommit) {
		e.stats.Faults++
		return answer{err: apiError(FaultBeforeCommit)}, nil, false
	}
	if e.take(e.failNextAny, FaultRateLimit) || e.chance(e.faults.RateLimit) {
		e.stats.Faults++
		return answer{err: rateLimitError(e.retryAfter(), true)}, nil, false
	}
	lose = e.take(e.failNextAny, FaultAfterCommit)

	if s, ok := e.keys[key]; ok && e.idempotent {
		switch {
		case s.inFlight:
			e.stats.InFlightConflicts++
			return answer{err: keyInUseError()}, nil, lose
		case s.fingerprint != fp:
			e.stats.KeyReusedErrors++
			return answer{err: keyReusedError()}, nil, lose
		}
		e.stats.Replays++
		if s.err != nil {
			return answer{err: s.err.clone(), replayed: true}, nil, lose
		}
		return answer{intent: e.intents[s.intentID].clone(), replayed: true}, nil, lose
	}

	if e.take(e.failNext, FaultRateLimit) {
		e.stats.Faults++
		return answer{err: rateLimitError(e.retryAfter(), true)}, nil, lose
	}
	if e.idempotent {
		e.keys[key] = &keyState{fingerprint: fp, inFlight: true}
	}
	return answer{}, &ticket{
		fingerprint:      fp,
		remember:         e.idempotent,
		failBeforeCommit: e.take(e.failNext, FaultBeforeCommit) || e.chance(e.faults.ErrorBeforeCommit),
		latency:          e.latency(),
		gate:             e.gate,
	}, lose
}

// wait keeps the key in flight for the ticket's latency and gate, without
// the lock.
func (t *ticket) wait(key string) {
	if t.latency > 0 {
		time.Sleep(t.latency)
	}
	if t.gate != nil {
		t.gate.wait(key)
	}
}

// commit decides a request whose key is in flight: it releases the key on a
// before-commit fault or a malformed request, and otherwise saves the
// outcome. lost is true when an after-commit fault must replace the answer.
func (e *Engine) commit(key string, p payment.ChargeRequest, t *ticket) (a answer, lost bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t.failBeforeCommit {
		e.release(key, t)
		e.stats.Faults++
		return answer{err: apiError(FaultBeforeCommit)}, false
	}
	if err := e.validateLocked(p); err != nil {
		e.release(key, t)
		e.stats.InvalidRequests++
		return answer{err: err}, false
	}

	lost = e.take(e.failNext, FaultAfterCommit) || e.chance(e.faults.ErrorAfterCommit)
	s := &keyState{fingerprint: t.fingerprint}
	if t.remember {
		e.keys[key] = s
	}
	if card, _ := e.cardLocked(p.PaymentMethod); card.declineCode != "" {
		s.err = cardError(card.declineCode, card.message)
		e.stats.Declines++
		return answer{err: s.err.clone()}, lost
	}

	in := Intent{
		ID:             e.newID(),
		Amount:         p.Amount,
		Currency:       p.Currency,
		Customer:       p.Customer,
		PaymentMethod:  p.PaymentMethod,
		Description:    p.Description,
		Metadata:       p.Metadata,
		Status:         StatusSucceeded,
		Created:        e.now(),
		IdempotencyKey: key,
	}.clone()
	e.intents[in.ID] = in
	s.intentID = in.ID
	e.stats.Charges++
	e.stats.ChargesByKey[key]++
	return answer{intent: in.clone()}, lost
}

// release forgets the key of a ticket whose request was not processed. The
// caller holds the lock.
func (e *Engine) release(key string, t *ticket) {
	if t.remember {
		delete(e.keys, key)
	}
}

// validate returns the invalid_request_error Stripe answers for p, or nil.
func (e *Engine) validateLocked(p payment.ChargeRequest) *StripeError {
	switch {
	case p.Amount <= 0:
		return invalidRequest(CodeAmountTooSmall, "amount", "Amount must be greater than zero.")
	case !isCurrency(p.Currency):
		return invalidRequest(CodeParameterInvalid, "currency",
			fmt.Sprintf("Invalid currency: %q. Use a lower-case three-letter ISO code.", p.Currency))
	case p.PaymentMethod == "":
		return invalidRequest(CodeParameterMissing, "payment_method",
			"Missing required param: payment_method.")
	}
	if _, ok := e.cardLocked(p.PaymentMethod); !ok {
		return invalidRequest(CodeResourceMissing, "payment_method",
			fmt.Sprintf("No such PaymentMethod: '%s'", p.PaymentMethod))
	}
	return nil
}

// isCurrency reports whether s is three lower-case ASCII letters.
func isCurrency(s string) bool {
	if len(s) != 3 {
		return false
	}
	for _, c := range []byte(s) {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

const idAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// randomText returns n letters and digits drawn from the random source.
// The caller holds the lock, or is NewEngine.
func (e *Engine) randomText(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = idAlphabet[e.rnd.IntN(len(idAlphabet))]
	}
	return string(b)
}

// newID returns an unused intent ID. The caller holds the lock.
func (e *Engine) newID() string {
	for {
		id := "pi_" + e.randomText(24)
		if _, taken := e.intents[id]; !taken {
			return id
		}
	}
}

// GetPaymentIntent returns the intent with the ID, and false when there is
// none. Every call counts in Stats.Retrieves.
func (e *Engine) GetPaymentIntent(id string) (Intent, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stats.Retrieves++
	in, ok := e.intents[id]
	return in.clone(), ok
}

// LookupByKey returns the newest succeeded intent created under the
// idempotency key, whether or not the key is still remembered, and false
// when there is none (the key is unknown, in flight or saved a decline). It
// is a test's view of the Engine: it counts nothing and ignores the search
// lag and the rate limits.
func (e *Engine) LookupByKey(key string) (Intent, bool) {
	e.mu.Lock()
	var found []Intent
	for _, in := range e.intents {
		if in.IdempotencyKey == key && in.Status == StatusSucceeded {
			found = append(found, in)
		}
	}
	e.mu.Unlock()
	if len(found) == 0 {
		return Intent{}, false
	}
	sortNewestFirst(found)
	return found[0].clone(), true
}

// Stats returns a copy of the counters.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.stats
	s.ChargesByKey = maps.Clone(e.stats.ChargesByKey)
	return s
}
