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

package stripe

import (
	"fmt"

	stripego "github.com/stripe/stripe-go/v85"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// Payments that settle later: an intent in processing is accepted and not
// settled (a bank debit settles in days), answered as a payment.Settling
// that the operator reads again by its id.

// processing is the answer for an intent in processing that is not
// polled: a bank debit, which settles in days (accepted, not an
// uncertainty, and not worth polling within a call), or an intent without
// an id; nil for any other, which is polled.
func processing(intent *stripego.PaymentIntent) error {
	if intent.ID == "" {
		return payment.Transient(fmt.Errorf("the payment intent from Stripe in status %s has no id", intent.Status), 0)
	}
	if method := intentMethod(intent); payment.BankDebit(method) {
		return payment.Settling(intent.ID, string(intent.Status), method)
	}
	return nil
}

// stillWaiting is the answer for an intent the call's time ran out on
// (cause): one in processing is accepted and not final, read again later
// by its id, never created again; any other is uncertain.
func (p *Provider) stillWaiting(intent *stripego.PaymentIntent, cause error) error {
	if intent.Status == stripego.PaymentIntentStatusProcessing {
		return payment.Settling(intent.ID, string(intent.Status), intentMethod(intent))
	}
	return payment.Transient(fmt.Errorf("payment intent %s is still %s: %w", p.clean(intent.ID), intent.Status, cause), 0)
}

// intentMethod is the payment method type the intent is paid with: its
// expanded payment method's, or its only allowed type; "" when Stripe's
// answer does not say.
func intentMethod(intent *stripego.PaymentIntent) string {
	if intent.PaymentMethod != nil && intent.PaymentMethod.Type != "" {
		return string(intent.PaymentMethod.Type)
	}
	if len(intent.PaymentMethodTypes) == 1 {
		return intent.PaymentMethodTypes[0]
	}
	return ""
}
