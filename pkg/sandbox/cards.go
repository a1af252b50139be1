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

// The test payment methods the Engine knows, as Stripe's test mode does,
// and the ones a test makes it decline, or leave in requires_action, on top
// of them.

// Test payment methods known to the sandbox, as in Stripe's test mode. Any
// other payment method is answered with a resource_missing error.
const (
	// PaymentMethodVisa always succeeds.
	PaymentMethodVisa = "pm_card_visa"
	// PaymentMethodMastercard always succeeds.
	PaymentMethodMastercard = "pm_card_mastercard"
	// PaymentMethodChargeDeclined is always declined with generic_decline.
	PaymentMethodChargeDeclined = "pm_card_chargeDeclined"
	// PaymentMethodInsufficientFunds is always declined with
	// insufficient_funds.
	PaymentMethodInsufficientFunds = "pm_card_insufficientFunds"
	// PaymentMethodAuthenticationRequired requires 3-D Secure
	// authentication on every payment, as Stripe's test card
	// 4000 0027 6000 3184 does: confirmed off-session (off_session=true),
	// it is declined with the code and decline code
	// authentication_required and its intent is left
	// requires_payment_method; confirmed on-session, its intent is left
	// requires_action, waiting for a customer who may never come.
	PaymentMethodAuthenticationRequired = "pm_card_authenticationRequired"
	// PaymentMethodThreeDSecureRequired answers like
	// PaymentMethodAuthenticationRequired, as Stripe's test card
	// 4000 0000 0000 3220 does.
	PaymentMethodThreeDSecureRequired = "pm_card_threeDSecureRequired"
)

// authentication is what a payment method needs from the customer.
type authentication int

const (
	// authNone needs nothing: the payment is decided at once.
	authNone authentication = iota
	// authRequired needs 3-D Secure: requires_action on-session, declined
	// with authentication_required off-session.
	authRequired
	// authForced leaves the intent in requires_action whether or not it is
	// off-session (RequireAction).
	authForced
)

// testCard is how a test payment method answers; an empty declineCode and
// authNone mean it succeeds.
type testCard struct {
	declineCode string
	message     string
	auth        authentication
}

var testCards = map[string]testCard{
	PaymentMethodVisa:                   {},
	PaymentMethodMastercard:             {},
	PaymentMethodChargeDeclined:         {declineCode: DeclineGeneric, message: "Your card was declined."},
	PaymentMethodInsufficientFunds:      {declineCode: DeclineInsufficientFunds, message: "Your card has insufficient funds."},
	PaymentMethodAuthenticationRequired: {auth: authRequired},
	PaymentMethodThreeDSecureRequired:   {auth: authRequired},
}

// DeclinePaymentMethod makes the Engine decline paymentMethod from now on
// with generic_decline, as it declines PaymentMethodChargeDeclined; a
// payment method it did not know becomes one it knows.
func (e *Engine) DeclinePaymentMethod(paymentMethod string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.declined == nil {
		e.declined = map[string]testCard{}
	}
	e.declined[paymentMethod] = testCard{declineCode: DeclineGeneric, message: "Your card was declined."}
}

// RequireAction makes the Engine leave every PaymentIntent confirmed with
// paymentMethod from now on in requires_action, off-session or not, with no
// money moved: what a client that sent no off_session, or an issuer that
// demands authentication anyway, leaves behind. The intent stays there until
// it is canceled (CancelPaymentIntent) or the customer authenticates
// (CompleteAction). A payment method it did not know becomes one it knows;
// ClearDeclines forgets it again.
func (e *Engine) RequireAction(paymentMethod string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.declined == nil {
		e.declined = map[string]testCard{}
	}
	e.declined[paymentMethod] = testCard{auth: authForced}
}

// ClearDeclines forgets the payment methods DeclinePaymentMethod and
// RequireAction added.
func (e *Engine) ClearDeclines() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.declined = nil
}

// cardLocked is what the Engine does with a payment method, and whether it
// knows it.
func (e *Engine) cardLocked(paymentMethod string) (testCard, bool) {
	if card, ok := e.declined[paymentMethod]; ok {
		return card, true
	}
	card, ok := testCards[paymentMethod]
	if !ok {
		_, ok = testDebits[paymentMethod]
	}
	return card, ok
}
