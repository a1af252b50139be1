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
	"maps"
	"math/rand/v2"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

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
	reads       *rate.Limiter
	faults      Faults
	failNext    map[FaultKind]int
	failNextAny map[FaultKind]int
	gate        *Gate
	// declined are payment methods declined, or left in requires_action,
	// on top of the test cards.
	declined map[string]testCard
	keys     map[string]*keyState
	intents  map[string]Intent
	// intentIndex orders the intents by (Created, ID) for the lists, as
	// refundIndex and disputeIndex order the refunds and the disputes.
	intentIndex createdIndex
	// refunds are the refunds by ID, refundOrder their IDs in the order
	// they were created, refundsOf the same by PaymentIntent (Stripe lists
	// a PaymentIntent's refunds from an index too), and settles when each
	// pending refund succeeds.
	refunds     map[string]Refund
	refundOrder []string
	refundsOf   map[string][]string
	settles     map[string]time.Time
	refundDelay time.Duration
	refundIndex createdIndex
	// noAmountTooLargeCode leaves the code out of the refusal of a refund
	// beyond what is left (SetAmountTooLargeCode).
	noAmountTooLargeCode bool
	// disputes are the disputes by ID, disputesOf their IDs by
	// PaymentIntent.
	disputes     map[string]Dispute
	disputesOf   map[string][]string
	disputeIndex createdIndex
	// debits are the bank debits still processing, by intent ID, with when
	// each is decided; debitDelay is how long a new one waits.
	debits     map[string]time.Time
	debitDelay time.Duration
	// nextDebit is when the first of debits falls due: before it, a read
	// decides nothing.
	nextDebit time.Time
	// hooks sends the webhooks, nil until SetWebhooks; startHooks is the
	// config of WithWebhooks, started once every option is applied.
	hooks      *webhooks
	startHooks *WebhookConfig
	stats      Stats
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
		refunds:     map[string]Refund{},
		refundsOf:   map[string][]string{},
		settles:     map[string]time.Time{},
		disputes:    map[string]Dispute{},
		disputesOf:  map[string][]string{},
		debits:      map[string]time.Time{},
		debitDelay:  DefaultDebitSettleDelay,
		stats:       Stats{ChargesByKey: map[string]int{}, RefundsByKey: map[string]int{}},
	}
	for _, opt := range opts {
		opt(e)
	}
	if e.account == "" {
		e.account = "acct_" + e.randomText(16)
	}
	e.writes, e.searches, e.reads = e.limits.limiters()
	if e.startHooks != nil {
		e.mu.Lock()
		// Validated by WithWebhooks.
		_ = e.setWebhooksLocked(*e.startHooks)
		e.mu.Unlock()
		e.startHooks = nil
	}
	return e
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

// Account returns the identifier of the account the Engine answers to.
func (e *Engine) Account() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.account
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
	// RequiresAction counts the intents the Engine left in requires_action
	// (waiting for a customer's authentication); they moved no money.
	RequiresAction int64
	// Cancels counts the PaymentIntents canceled by CancelPaymentIntent; a
	// canceled intent moved no money. Replayed cancels are not counted
	// again.
	Cancels int64
	// KeyReusedErrors counts the requests refused because their key was
	// saved with other parameters.
	KeyReusedErrors int64
	// InvalidRequests counts the requests refused as malformed.
	InvalidRequests int64
	// Faults counts the injected faults answered, of every kind; requests
	// refused by the RateLimits are counted in RateLimited instead.
	Faults int64
	// RateLimited counts the create, search and read requests refused with
	// a 429 because they went beyond the RateLimits.
	RateLimited int64
	// Searches counts every search request, answered or refused.
	Searches int64
	// Retrieves counts the GetPaymentIntent reads.
	Retrieves int64
	// Reads counts the HTTP read requests subject to RateLimits.Reads
	// (every GET of /v1 but search, and GET /http/list), answered or
	// refused.
	Reads int64
	// Lists counts the calls of ListIntents, ListRefundsPage and
	// ListDisputes, and so the list requests of both HTTP APIs that were
	// not refused before (by the rate limit or a malformed parameter).
	Lists int64
	// KeysForgotten counts the idempotency keys forgotten by ForgetKeys.
	KeysForgotten int64
	// ChargesByKey counts the payments whose money moved, by idempotency key.
	// With idempotency off, a key may count more than one.
	ChargesByKey map[string]int
	// RefundRequests counts every CreateRefund call.
	RefundRequests int64
	// Refunds counts the refunds created, succeeded or pending: the ones
	// that moved money back or were set to. Replays are not counted again.
	Refunds int64
	// RefundsFailed counts the refunds that failed after they were created
	// (FailRefund); their money went back to the account.
	RefundsFailed int64
	// RefundRefusals counts the refund requests refused for what the
	// payment allows (nothing left to refund, an amount beyond what is
	// left, a payment that did not succeed); replayed refusals are not
	// counted again.
	RefundRefusals int64
	// RefundsByKey counts the refunds created, by idempotency key. With
	// idempotency off, a key may count more than one.
	RefundsByKey map[string]int
	// Debits counts the bank debits accepted (left processing); each also
	// counts in Charges and ChargesByKey when it is accepted, since it was
	// sent to the bank, whether it later settles or fails.
	Debits int64
	// DebitsSettled counts the bank debits that succeeded after their
	// delay.
	DebitsSettled int64
	// DebitsFailed counts the bank debits that failed after their delay;
	// they moved no money.
	DebitsFailed int64
}

// Stats returns a copy of the counters.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.stats
	s.ChargesByKey = maps.Clone(e.stats.ChargesByKey)
	s.RefundsByKey = maps.Clone(e.stats.RefundsByKey)
	return s
}

// idAlphabet are the letters and digits of intent IDs and accounts.
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
