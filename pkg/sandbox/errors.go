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
	"net/http"
	"strings"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// Stripe error types, the "type" field of an error body.
const (
	// ErrorTypeCard is a declined payment method (HTTP 402).
	ErrorTypeCard = "card_error"
	// ErrorTypeInvalidRequest is a malformed request, an idempotency key in
	// use (HTTP 409) or a rate limit (HTTP 429).
	ErrorTypeInvalidRequest = "invalid_request_error"
	// ErrorTypeIdempotency is an idempotency key reused with other
	// parameters (HTTP 400).
	ErrorTypeIdempotency = "idempotency_error"
	// ErrorTypeAPI is an error of the server itself (HTTP 500).
	ErrorTypeAPI = "api_error"
)

// Stripe error codes, the "code" field of an error body.
const (
	// CodeCardDeclined is the code of every card error of the sandbox.
	CodeCardDeclined = "card_declined"
	// CodeParameterMissing is a required parameter left out.
	CodeParameterMissing = "parameter_missing"
	// CodeParameterInvalid is a parameter with a malformed value.
	CodeParameterInvalid = "parameter_invalid"
	// CodeAmountTooSmall is an amount that is not greater than zero.
	CodeAmountTooSmall = "amount_too_small"
	// CodeResourceMissing is an unknown payment method.
	CodeResourceMissing = "resource_missing"
	// CodeIdempotencyKeyInUse is a request whose key is held by another
	// request still being processed.
	CodeIdempotencyKeyInUse = "idempotency_key_in_use"
	// CodeRateLimit is a request refused because too many were sent.
	CodeRateLimit = "rate_limit"
	// CodeAuthenticationRequired is the code (and decline code) of a card
	// error for a payment that needs 3-D Secure, confirmed off-session.
	CodeAuthenticationRequired = "authentication_required"
	// CodePaymentIntentUnexpectedState is a request the intent's status
	// does not allow, such as canceling a succeeded intent.
	CodePaymentIntentUnexpectedState = "payment_intent_unexpected_state"
	// CodeParameterInvalidInteger is a parameter that is not a positive
	// integer, such as a refund's amount.
	CodeParameterInvalidInteger = "parameter_invalid_integer"
	// CodeChargeAlreadyRefunded is a refund of a payment with nothing left
	// to refund.
	CodeChargeAlreadyRefunded = "charge_already_refunded"
	// CodeAmountTooLarge is a refund of more than what is left of the
	// payment.
	CodeAmountTooLarge = "amount_too_large"
)

// Decline codes, the "decline_code" field of a card error.
const (
	// DeclineGeneric is a decline without a stated reason.
	DeclineGeneric = "generic_decline"
	// DeclineInsufficientFunds is a decline for lack of funds.
	DeclineInsufficientFunds = "insufficient_funds"
	// DeclineAuthenticationRequired is a decline of a payment that needs
	// 3-D Secure, confirmed off-session.
	DeclineAuthenticationRequired = "authentication_required"
)

// StripeError is an error answered by the Engine, shaped like a Stripe error
// body so that an HTTP layer can write it as is: {"error": {"type", "code",
// "decline_code", "param", "message"}} with HTTPStatus and, for a rate
// limit, a Retry-After header.
type StripeError struct {
	// Type is one of the ErrorType constants.
	Type string
	// Code is one of the Code constants, or empty.
	Code string
	// DeclineCode is set on card errors.
	DeclineCode string
	// Param names the offending request parameter, if any.
	Param string
	// Message is the human-readable explanation. It never contains the
	// idempotency key.
	Message string
	// HTTPStatus is the status code the HTTP layer answers with.
	HTTPStatus int
	// RetryAfter is how long a rate-limited client should wait.
	RetryAfter time.Duration
	// intent is the PaymentIntent the error is about, written as the
	// body's payment_intent, as Stripe does for a declined confirmation
	// and an intent in an unexpected state.
	intent *Intent
	// refusal is the payment package's reason of a refund refused for what
	// the payment allows (payment.ReasonRefundExceedsCharge, ...), which
	// the HTTP contract answers with a 402; empty for any other error.
	refusal string
}

// PaymentIntent returns the PaymentIntent the error is about, as it was
// when the error was answered, and false when there is none.
func (e *StripeError) PaymentIntent() (Intent, bool) {
	if e.intent == nil {
		return Intent{}, false
	}
	return e.intent.clone(), true
}

// InFlightRetryAfter is the Retry-After answered for a key in flight at the
// Engine (CodeIdempotencyKeyInUse), over the HTTP contract and by the
// operator's in-process provider.
const InFlightRetryAfter = time.Second

// Refusal returns the operator's reason of a refund refused for what the
// payment allows (RefundExceedsCharge, ChargeNotFound, ChargeNotRefundable),
// which the HTTP contract answers with a 402, and "" for any other error.
func (e *StripeError) Refusal() string { return e.refusal }

// Error returns the type, the code and the message.
func (e *StripeError) Error() string {
	switch {
	case e.DeclineCode != "":
		return fmt.Sprintf("%s: %s (%s): %s", e.Type, e.Code, e.DeclineCode, e.Message)
	case e.Code != "":
		return fmt.Sprintf("%s: %s: %s", e.Type, e.Code, e.Message)
	default:
		return fmt.Sprintf("%s: %s", e.Type, e.Message)
	}
}

// clone returns a copy, so that a saved error cannot be changed by a caller.
func (e *StripeError) clone() *StripeError {
	c := *e
	if c.intent != nil {
		in := c.intent.clone()
		c.intent = &in
	}
	return &c
}

// authenticationRequiredError is the card error of a payment that needs
// 3-D Secure, confirmed off-session.
func authenticationRequiredError() *StripeError {
	return &StripeError{
		Type:        ErrorTypeCard,
		Code:        CodeAuthenticationRequired,
		DeclineCode: DeclineAuthenticationRequired,
		Param:       "payment_method",
		Message: "Your card was declined. This transaction requires authentication: " +
			"the customer must complete it on-session.",
		HTTPStatus: http.StatusPaymentRequired,
	}
}

// unexpectedStateError refuses an action that in's status does not allow.
func unexpectedStateError(in Intent, action string, allowed []string) *StripeError {
	return &StripeError{
		Type: ErrorTypeInvalidRequest,
		Code: CodePaymentIntentUnexpectedState,
		Message: fmt.Sprintf("You cannot %s this PaymentIntent because it has a status of %s. "+
			"Only a PaymentIntent with one of the following statuses may be %sed: %s.",
			action, in.Status, action, strings.Join(allowed, ", ")),
		HTTPStatus: http.StatusBadRequest,
		intent:     &in,
	}
}

func cardError(declineCode, message string) *StripeError {
	return &StripeError{
		Type:        ErrorTypeCard,
		Code:        CodeCardDeclined,
		DeclineCode: declineCode,
		Param:       "payment_method",
		Message:     message,
		HTTPStatus:  http.StatusPaymentRequired,
	}
}

func invalidRequest(code, param, message string) *StripeError {
	return &StripeError{
		Type:       ErrorTypeInvalidRequest,
		Code:       code,
		Param:      param,
		Message:    message,
		HTTPStatus: http.StatusBadRequest,
	}
}

func keyReusedError() *StripeError {
	return &StripeError{
		Type: ErrorTypeIdempotency,
		Message: "Keys for idempotent requests can only be used with the same parameters " +
			"they were first used with.",
		HTTPStatus: http.StatusBadRequest,
	}
}

func keyInUseError() *StripeError {
	return &StripeError{
		Type: ErrorTypeInvalidRequest,
		Code: CodeIdempotencyKeyInUse,
		Message: "There is currently another in-progress request using this idempotency key. " +
			"Try again later.",
		HTTPStatus: http.StatusConflict,
	}
}

// rateLimitError is a 429; injected tells a random or switched fault from a
// request beyond the RateLimits.
func rateLimitError(retryAfter time.Duration, injected bool) *StripeError {
	message := "Too many requests hit the API too quickly."
	if injected {
		message = "Too many requests hit the API too quickly (injected fault)."
	}
	return &StripeError{
		Type:       ErrorTypeInvalidRequest,
		Code:       CodeRateLimit,
		Message:    message,
		HTTPStatus: http.StatusTooManyRequests,
		RetryAfter: retryAfter,
	}
}

func apiError(kind FaultKind) *StripeError {
	return &StripeError{
		Type:       ErrorTypeAPI,
		Message:    fmt.Sprintf("An unexpected error occurred (injected fault %s).", kind),
		HTTPStatus: http.StatusInternalServerError,
	}
}

// lookupOffError is the 404 of a search while lookups are off: what a
// provider without a search or lookup route answers.
func lookupOffError() *StripeError {
	return &StripeError{
		Type:       ErrorTypeInvalidRequest,
		Message:    "Unrecognized request URL: search and lookups are turned off on this sandbox (PUT /_sandbox/lookup).",
		HTTPStatus: http.StatusNotFound,
	}
}

// noSuchPaymentIntentError is the 404 of a refund of an unknown
// PaymentIntent.
func noSuchPaymentIntentError(id string) *StripeError {
	se := invalidRequest(CodeResourceMissing, "payment_intent", fmt.Sprintf("No such payment_intent: '%s'", id))
	se.HTTPStatus = http.StatusNotFound
	se.refusal = payment.ReasonChargeNotFound
	return se
}

// notRefundableError refuses a refund of a PaymentIntent that did not
// succeed, with Stripe's message; Stripe sends no code with it.
func notRefundableError(intentID string) *StripeError {
	se := invalidRequest("", "payment_intent",
		fmt.Sprintf("This PaymentIntent (%s) does not have a successful charge to refund.", intentID))
	se.refusal = payment.ReasonChargeNotRefundable
	return se
}

// alreadyRefundedError refuses a refund of a payment with nothing left.
func alreadyRefundedError(charge string) *StripeError {
	se := invalidRequest(CodeChargeAlreadyRefunded, "", fmt.Sprintf("Charge %s has already been refunded.", charge))
	se.refusal = payment.ReasonRefundExceedsCharge
	return se
}

// amountTooLargeError refuses a refund of more than what is left.
func amountTooLargeError(amount, left int64, currency string) *StripeError {
	se := invalidRequest(CodeAmountTooLarge, "amount",
		fmt.Sprintf("Refund amount (%d %s) is greater than unrefunded amount on charge (%d %s).",
			amount, currency, left, currency))
	se.refusal = payment.ReasonRefundExceedsCharge
	return se
}
