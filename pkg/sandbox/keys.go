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

// The Engine's memory of idempotency keys: what it saved for each, whether
// it honours them at all, and forgetting them as Stripe does after 24 hours.

// keyState is what the Engine remembers of an idempotency key.
type keyState struct {
	// fingerprint of the parameters first sent with the key.
	fingerprint string
	// inFlight is true until the first request is decided.
	inFlight bool
	// intentID is the intent created under the key, if any.
	intentID string
	// saved is the intent as it was first answered: a replay answers it
	// again, as Stripe replays its saved response, even after the intent
	// moved on (canceled, or authenticated).
	saved *Intent
	// err is the saved card error or refund refusal, if any.
	err *StripeError
	// savedRefund is the refund created under the key, as it was first
	// answered.
	savedRefund *Refund
}

// WithIdempotency switches idempotency keys on (the default) or off; see
// SetIdempotency.
func WithIdempotency(on bool) Option {
	return func(e *Engine) { e.idempotent = on }
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

// release forgets the key of a ticket whose request was not processed. The
// caller holds the lock.
func (e *Engine) release(key string, t *ticket) {
	if t.remember {
		delete(e.keys, key)
	}
}
