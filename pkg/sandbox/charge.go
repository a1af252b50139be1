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
	"time"
)

// Creating a PaymentIntent: a request is admitted under the lock, waits
// without it while its key is in flight, and is committed under the lock.

// answer is the outcome of one request before faults replace it: an intent
// or a refund, or an error.
type answer struct {
	intent   Intent
	refund   Refund
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
// idempotency key, with Stripe's idempotency semantics, on-session (no
// off_session): CreatePaymentIntentWithOptions with zero ConfirmOptions.
func (e *Engine) CreatePaymentIntent(key string, p PaymentIntentParams) (Intent, bool, error) {
	return e.CreatePaymentIntentWithOptions(key, p, ConfirmOptions{})
}

// ConfirmOptions are the parameters of a PaymentIntent's confirmation that
// are not part of the payment itself (PaymentIntentParams).
type ConfirmOptions struct {
	// OffSession is Stripe's off_session=true: no customer is present to
	// authenticate, so a payment method that needs 3-D Secure is declined
	// with authentication_required instead of waiting in requires_action.
	// It is one of the parameters a retry must repeat: the same key with
	// another OffSession is a key reused.
	OffSession bool
}

// CreatePaymentIntentWithOptions creates and confirms a PaymentIntent for p
// under the idempotency key, with Stripe's idempotency semantics. A new key
// is held in flight for the configured latency and then charged, declined,
// left in requires_action or refused; a saved key with the same parameters
// replays its answer as it was given (replayed is true, also for a replayed
// card error) and moves no money. A request beyond the write rate limit is
// refused with a 429 first; with idempotency off (SetIdempotency) every
// request is treated as one with a new key and nothing is remembered.
// Errors are always *StripeError.
//
// A payment method that needs authentication (PaymentMethodAuthenticationRequired,
// PaymentMethodThreeDSecureRequired) is declined off-session with a card
// error whose code and decline code are authentication_required, and its
// intent is kept in requires_payment_method; on-session, and for a payment
// method of RequireAction always, the intent is kept in requires_action.
// Neither moves money nor counts in Stats.Charges.
func (e *Engine) CreatePaymentIntentWithOptions(key string, p PaymentIntentParams, o ConfirmOptions) (Intent, bool, error) {
	fp := p.fingerprint()
	if o.OffSession {
		fp += " off_session"
	}
	return e.createPaymentIntent(key, p, o, fp)
}

// createPaymentIntent is CreatePaymentIntentWithOptions with the
// fingerprint that tells a retry from a reuse of the key with another
// request.
func (e *Engine) createPaymentIntent(key string, p PaymentIntentParams, o ConfirmOptions, fp string) (Intent, bool, error) {
	a := e.process(key, fp, &e.stats.Requests, func(t *ticket) (answer, bool) {
		return e.commit(key, p, o, t)
	})
	if a.err != nil {
		return Intent{}, a.replayed, a.err
	}
	return a.intent, a.replayed, nil
}

// process runs one create request under an idempotency key, whatever it
// creates: admit decides it or marks its key in flight, the ticket's latency
// and gate hold it, commit saves its outcome, and an after-commit fault
// replaces the answer. requests is the counter of Stats the request counts
// in. Charges and refunds go through it alike, so that every fault, limit
// and idempotency rule applies to both.
func (e *Engine) process(key, fp string, requests *int64, commit func(*ticket) (answer, bool)) answer {
	a, t, lose := e.admit(key, fp, requests)
	if t != nil {
		t.wait(key)
		var lost bool
		a, lost = commit(t)
		lose = lose || lost
	}
	// A request that already failed with a 500 keeps its answer.
	if lose && (a.err == nil || a.err.Type != ErrorTypeAPI) {
		e.mu.Lock()
		e.stats.Faults++
		e.mu.Unlock()
		return answer{err: apiError(FaultAfterCommit)}
	}
	return a
}

// admit decides a request under the lock, or marks its new key in flight and
// returns a ticket to commit it. lose is true when the answer must be
// replaced by an after-commit fault.
func (e *Engine) admit(key, fp string, requests *int64) (a answer, t *ticket, lose bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	*requests++
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
		if s.savedRefund != nil {
			return answer{refund: s.savedRefund.clone(), replayed: true}, nil, lose
		}
		if s.saved != nil {
			return answer{intent: s.saved.clone(), replayed: true}, nil, lose
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
func (e *Engine) commit(key string, p PaymentIntentParams, o ConfirmOptions, t *ticket) (a answer, lost bool) {
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
	card, _ := e.cardLocked(p.PaymentMethod)
	if card.declineCode != "" {
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
		OffSession:     o.OffSession,
	}.clone()
	s.intentID = in.ID
	switch {
	case card.auth == authRequired && o.OffSession:
		// Stripe keeps the intent, waiting for another payment method,
		// and answers the card error with it.
		in.Status = StatusRequiresPaymentMethod
		in.LastPaymentError = authenticationRequiredError()
		e.storeIntentLocked(in)
		s.err = authenticationRequiredError()
		saved := in.clone()
		s.err.intent = &saved
		e.stats.Declines++
		return answer{err: s.err.clone()}, lost
	case card.auth != authNone:
		in.Status = StatusRequiresAction
		e.storeIntentLocked(in)
		saved := in.clone()
		s.saved = &saved
		e.stats.RequiresAction++
		return answer{intent: in.clone()}, lost
	}
	if debit, ok := testDebits[p.PaymentMethod]; ok && card.auth == authNone {
		e.acceptDebitLocked(&in, debit)
	} else {
		e.storeIntentLocked(in)
	}
	saved := in.clone()
	s.saved = &saved
	e.stats.Charges++
	e.stats.ChargesByKey[key]++
	return answer{intent: in.clone()}, lost
}

// validateLocked returns the invalid_request_error Stripe answers for p, or
// nil. The caller holds the lock.
func (e *Engine) validateLocked(p PaymentIntentParams) *StripeError {
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
