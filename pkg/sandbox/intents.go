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
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// PaymentIntent statuses, as at Stripe. The Engine creates succeeded
// intents, requires_action ones for payment methods that need 3-D Secure
// on-session (or RequireAction), requires_payment_method ones for those
// declined with authentication_required off-session, and canceled ones
// through CancelPaymentIntent (other declines leave no intent); the others
// come from PutIntent and SetIntentStatus, so that tests can model charges
// that are not final.
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
	// PaymentMethodType is the payment method's type, such as
	// MethodTypeSEPADebit; empty is MethodTypeCard.
	PaymentMethodType string
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
	// OffSession is whether the intent was confirmed off-session
	// (off_session=true): no customer was present to authenticate.
	OffSession bool
	// LastPaymentError is the card error of the intent's failed payment
	// attempt, for an intent left requires_payment_method; nil otherwise.
	LastPaymentError *StripeError
	// CancellationReason is why a canceled intent was canceled, as sent to
	// CancelPaymentIntent; empty when none was given.
	CancellationReason string
}

// clone returns a copy that shares no map or error with in.
func (in Intent) clone() Intent {
	in.Metadata = maps.Clone(in.Metadata)
	if in.LastPaymentError != nil {
		in.LastPaymentError = in.LastPaymentError.clone()
	}
	return in
}

// PaymentIntentParams are the parameters of a PaymentIntent to create and
// confirm with CreatePaymentIntent. A retry under the same idempotency key
// sends the same parameters; other ones are refused as a key reused.
type PaymentIntentParams struct {
	// Amount to charge, in the currency's minor unit; one that is not
	// greater than zero is refused with amount_too_small.
	Amount int64
	// Currency is a three-letter ISO 4217 code in lower case, such as "eur".
	Currency string
	// Customer is an optional customer identifier, kept on the intent.
	Customer string
	// PaymentMethod is required: a PaymentMethod constant, or one that
	// DeclinePaymentMethod made known; any other is resource_missing.
	PaymentMethod string
	// Description is optional text kept on the intent.
	Description string
	// Metadata is kept on the intent; search finds the intent by it.
	Metadata map[string]string
}

// fingerprint tells a retry under a key from a reuse of the key with other
// parameters. PaymentIntentParams has the fields of payment.ChargeRequest,
// so that the sandbox fingerprints and tags (TaggedRequest) with the
// operator's own code, and the compiler checks the conversion.
func (p PaymentIntentParams) fingerprint() string {
	return payment.RequestHash("", payment.ChargeRequest(p))
}

// TaggedRequest returns a copy of p whose metadata also holds key under
// "paymentjob_idempotency_key" and the fingerprint of key and p under
// "paymentjob_request_fingerprint": what the operator's adapters send, so
// that a lookup finds the charge by its key. p's map is not changed. Tests
// use it to PutIntent a charge as the operator would have made it.
func TaggedRequest(key string, p PaymentIntentParams) PaymentIntentParams {
	p.Metadata = payment.LookupMetadata(key, payment.ChargeRequest(p))
	return p
}

// GetPaymentIntent returns the intent with the ID, and false when there is
// none. Every call counts in Stats.Retrieves.
func (e *Engine) GetPaymentIntent(id string) (Intent, bool) {
	e.lockSettled()
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
	e.lockSettled()
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
