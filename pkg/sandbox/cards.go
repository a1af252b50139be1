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
// and the ones a test makes it decline on top of them.

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
)

// testCard is how a test payment method answers; an empty declineCode means
// it succeeds.
type testCard struct {
	declineCode string
	message     string
}

var testCards = map[string]testCard{
	PaymentMethodVisa:              {},
	PaymentMethodMastercard:        {},
	PaymentMethodChargeDeclined:    {declineCode: DeclineGeneric, message: "Your card was declined."},
	PaymentMethodInsufficientFunds: {declineCode: DeclineInsufficientFunds, message: "Your card has insufficient funds."},
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

// ClearDeclines forgets the payment methods DeclinePaymentMethod added.
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
	return card, ok
}
