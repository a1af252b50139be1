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
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// Bank debits: a PaymentIntent confirmed with one of these test payment
// methods is accepted in status processing and decided later, by the
// Engine's clock, as SEPA and ACH Direct Debits are decided days later at
// Stripe.

// Test bank-debit payment methods, named after the tokens of Stripe's test
// mode. Stripe documents, for SEPA Direct Debit, pm_success_de (IBAN
// DE89370400440532013000: "the PaymentIntent status transitions from
// processing to succeeded"), pm_failed_de (DE62370400440532013001: from
// processing to requires_payment_method) and pm_insufficientFunds_de
// (DE65370400440002222227: "the payment fails with an insufficient_funds
// failure code"); for ACH Direct Debit (us_bank_account, routing number
// 110000000), pm_usBankAccount_success (account 000123456789),
// pm_usBankAccount_accountClosed (000111111113, "fails because the account
// is closed") and pm_usBankAccount_insufficientFunds (000222222227). At
// Stripe the decision comes minutes to days later; in the sandbox it comes
// after the debit settle delay (SetDebitSettleDelay).
const (
	// PaymentMethodSEPADebit is a SEPA Direct Debit (sepa_debit) that
	// settles: processing, then succeeded.
	PaymentMethodSEPADebit = "pm_success_de"
	// PaymentMethodSEPADebitFailed is a SEPA Direct Debit that fails:
	// processing, then requires_payment_method with the failure code
	// generic_decline (Stripe documents no code for pm_failed_de).
	PaymentMethodSEPADebitFailed = "pm_failed_de"
	// PaymentMethodSEPADebitInsufficientFunds is a SEPA Direct Debit that
	// fails with insufficient_funds.
	PaymentMethodSEPADebitInsufficientFunds = "pm_insufficientFunds_de"
	// PaymentMethodACHDebit is an ACH Direct Debit (us_bank_account) that
	// settles.
	PaymentMethodACHDebit = "pm_usBankAccount_success"
	// PaymentMethodACHDebitAccountClosed is an ACH Direct Debit that fails
	// with account_closed.
	PaymentMethodACHDebitAccountClosed = "pm_usBankAccount_accountClosed"
	// PaymentMethodACHDebitInsufficientFunds is an ACH Direct Debit that
	// fails with insufficient_funds.
	PaymentMethodACHDebitInsufficientFunds = "pm_usBankAccount_insufficientFunds"
)

// Payment method types, the payment_method_types of a PaymentIntent.
const (
	// MethodTypeCard is every test card's type.
	MethodTypeCard = "card"
	// MethodTypeSEPADebit is SEPA Direct Debit's.
	MethodTypeSEPADebit = "sepa_debit"
	// MethodTypeACHDebit is ACH Direct Debit's (a US bank account).
	MethodTypeACHDebit = "us_bank_account"
)

// Failure codes of a bank debit that failed, the code of the intent's
// last payment error, as Stripe names them.
const (
	// FailureInsufficientFunds is an account without the funds.
	FailureInsufficientFunds = "insufficient_funds"
	// FailureAccountClosed is a closed account.
	FailureAccountClosed = "account_closed"
)

// DefaultDebitSettleDelay is how long a bank debit stays processing when
// no delay is set.
const DefaultDebitSettleDelay = 5 * time.Second

// testDebit is how a bank-debit test payment method ends: failureCode
// empty settles it.
type testDebit struct {
	methodType  string
	failureCode string
	message     string
}

var testDebits = map[string]testDebit{
	PaymentMethodSEPADebit:                  {methodType: MethodTypeSEPADebit},
	PaymentMethodSEPADebitFailed:            {methodType: MethodTypeSEPADebit, failureCode: DeclineGeneric, message: "The debit was returned by the customer's bank."},
	PaymentMethodSEPADebitInsufficientFunds: {methodType: MethodTypeSEPADebit, failureCode: FailureInsufficientFunds, message: "The customer's account has insufficient funds to cover this payment."},
	PaymentMethodACHDebit:                   {methodType: MethodTypeACHDebit},
	PaymentMethodACHDebitAccountClosed:      {methodType: MethodTypeACHDebit, failureCode: FailureAccountClosed, message: "The customer's bank account has been closed."},
	PaymentMethodACHDebitInsufficientFunds:  {methodType: MethodTypeACHDebit, failureCode: FailureInsufficientFunds, message: "The customer's account has insufficient funds to cover this payment."},
}

// WithDebitSettleDelay sets the debit settle delay; see SetDebitSettleDelay.
func WithDebitSettleDelay(d time.Duration) Option {
	return func(e *Engine) { e.debitDelay = max(d, 0) }
}

// SetDebitSettleDelay sets how long, by the Engine's clock, the bank debits
// accepted from now on stay processing before they succeed or fail
// (DefaultDebitSettleDelay until it is set). Zero decides them at the
// next read.
func (e *Engine) SetDebitSettleDelay(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.debitDelay = max(d, 0)
}

// DebitSettleDelay returns the debit settle delay in force.
func (e *Engine) DebitSettleDelay() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.debitDelay
}

// SettleDebits decides every bank debit whose settle delay has passed by
// the Engine's clock and returns how many it decided. Every read of the
// Engine does it first, and the webhook loop (SetWebhooks) does it on a
// timer, so that a test rarely needs to call it: it is there for a test
// that moves a fake clock.
func (e *Engine) SettleDebits() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.settleDebitsLocked()
}

// lockSettled takes the lock and decides the debits that are due, so that
// a read never sees a debit processing past its delay.
func (e *Engine) lockSettled() {
	e.mu.Lock()
	e.settleDebitsLocked()
}

// settleDebitsLocked decides the debits that are due. The caller holds the
// lock.
func (e *Engine) settleDebitsLocked() int {
	if len(e.debits) == 0 {
		return 0
	}
	now := e.now()
	if now.Before(e.nextDebit) {
		return 0
	}
	// Decided in the order they fell due, so that their events are too.
	var due []string
	e.nextDebit = time.Time{}
	for id, at := range e.debits {
		if now.Before(at) {
			if e.nextDebit.IsZero() || at.Before(e.nextDebit) {
				e.nextDebit = at
			}
			continue
		}
		due = append(due, id)
	}
	slices.SortFunc(due, func(a, b string) int {
		return cmp.Or(e.debits[a].Compare(e.debits[b]), cmp.Compare(a, b))
	})
	n := 0
	for _, id := range due {
		delete(e.debits, id)
		in, ok := e.intents[id]
		if !ok || in.Status != StatusProcessing {
			continue
		}
		n++
		debit := testDebits[in.PaymentMethod]
		if debit.failureCode == "" {
			in.Status = StatusSucceeded
			e.stats.DebitsSettled++
		} else {
			in.Status = StatusRequiresPaymentMethod
			in.LastPaymentError = debitFailure(debit)
			e.stats.DebitsFailed++
		}
		e.storeIntentLocked(in)
	}
	return n
}

// paramPaymentMethod is the param of payment method errors.
const paramPaymentMethod = "payment_method"

// debitFailure is the last payment error of a failed debit.
func debitFailure(d testDebit) *StripeError {
	return &StripeError{
		Type:       ErrorTypeCard,
		Code:       d.failureCode,
		Param:      paramPaymentMethod,
		Message:    d.message,
		HTTPStatus: http.StatusPaymentRequired,
	}
}

// acceptDebitLocked stores in as a processing debit, decided after the
// debit settle delay. The caller holds the lock.
func (e *Engine) acceptDebitLocked(in *Intent, d testDebit) {
	in.Status = StatusProcessing
	in.PaymentMethodType = d.methodType
	if e.debits == nil {
		e.debits = map[string]time.Time{}
	}
	at := in.Created.Add(e.debitDelay)
	e.debits[in.ID] = at
	if len(e.debits) == 1 || at.Before(e.nextDebit) {
		e.nextDebit = at
	}
	e.storeIntentLocked(*in)
	e.stats.Debits++
}

// notSettledError refuses a refund of a payment still processing, as
// Stripe refuses one whose charge has not succeeded. Newer API versions
// (2025-04-30.basil) may instead accept it as a refund pending with
// pending_reason charge_pending; the sandbox answers as the issue's
// operator expects, with a refusal it can wait out.
func notSettledError(in Intent) *StripeError {
	se := invalidRequest("", "payment_intent", fmt.Sprintf(
		"This PaymentIntent (%s) is processing: its charge %s is pending and has not succeeded yet, "+
			"so it cannot be refunded until it succeeds.", in.ID, chargeID(in.ID)))
	se.refusal = ReasonChargePending
	return se
}

// ReasonChargePending is the HTTP contract's reason (a 409) for a refund
// of a payment that is still processing: nothing was refunded, and the
// same refund may be sent again once the payment succeeded.
const ReasonChargePending = "ChargePending"

// methodTypeOf is the payment method type of in: its own, or card.
func methodTypeOf(in Intent) string {
	if in.PaymentMethodType != "" {
		return in.PaymentMethodType
	}
	return MethodTypeCard
}
