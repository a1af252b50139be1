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
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	stripego "github.com/stripe/stripe-go/v85"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// ReasonPaymentCanceled is the failure reason of a PaymentIntent that was
// canceled before it succeeded.
const ReasonPaymentCanceled = "PaymentCanceled"

// ReasonAuthenticationRequired is the failure reason of a payment that
// needed the customer's authentication (3-D Secure), which a job cannot
// give: Stripe's code and decline code authentication_required of a payment
// confirmed off-session, and the reason of an intent that waited in
// requires_action until the adapter canceled it. Nothing was charged; the
// customer must pay on-session, or the card be set up for off-session use.
const ReasonAuthenticationRequired = "authentication_required"

// Error types of Stripe that stripe-go has no constant for.
const (
	errorTypeAuthentication stripego.ErrorType = "authentication_error"
	errorTypePermission     stripego.ErrorType = "permission_error"
	errorTypeRateLimit      stripego.ErrorType = "rate_limit_error"
)

const (
	// inFlightRetryAfter is the wait for a key in flight when Stripe does
	// not send Retry-After.
	inFlightRetryAfter = time.Second
	// maxMessageLength is how many bytes of a message from Stripe are kept.
	maxMessageLength = 500
)

// classify maps an error of a stripe-go call to one of package payment's
// classes, as the package documentation describes; op says what failed.
func (p *Provider) classify(op string, err error) error {
	var se *stripego.Error
	if !errors.As(err, &se) {
		// A network error, a deadline or an answer that is not Stripe's
		// JSON: the request may have been processed.
		return payment.Transient(p.cause(op, err), 0)
	}
	retryAfter := retryAfterOf(se)
	status := se.HTTPStatusCode
	switch {
	case se.Type == stripego.ErrorTypeCard:
		return payment.Declined(cardReason(se), p.clean(cardMessage(se)))
	case se.Type == stripego.ErrorTypeIdempotency:
		return payment.KeyReused(p.clean(withCode(se)))
	case se.Code == stripego.ErrorCodeIdempotencyKeyInUse || status == http.StatusConflict:
		if retryAfter == 0 {
			retryAfter = inFlightRetryAfter
		}
		return payment.InFlight(retryAfter)
	case status == http.StatusTooManyRequests || se.Code == stripego.ErrorCodeRateLimit || se.Type == errorTypeRateLimit:
		return payment.Transient(p.apiCause(op, se), retryAfter)
	case status == http.StatusUnauthorized || status == http.StatusForbidden ||
		se.Type == errorTypeAuthentication || se.Type == errorTypePermission:
		// Stripe's message may quote part of the key: leave it out.
		return payment.Transient(fmt.Errorf("%s: Stripe refused the API key (%s); check the secret referenced by the PaymentProvider",
			op, p.clean(describe(se))), retryAfter)
	case status >= http.StatusInternalServerError || se.Type == stripego.ErrorTypeAPI:
		return payment.Transient(p.apiCause(op, se), retryAfter)
	case se.Type == stripego.ErrorTypeInvalidRequest && (status == http.StatusBadRequest || status == http.StatusNotFound):
		return payment.Invalid(p.clean(withCode(se)))
	default:
		return payment.Transient(p.apiCause(op, se), retryAfter)
	}
}

// cardReason is the failure reason of a card error: authentication_required
// when Stripe's code or decline code says so, CardDeclined otherwise.
func cardReason(e *stripego.Error) string {
	if e.Code == stripego.ErrorCodeAuthenticationRequired || e.DeclineCode == stripego.DeclineCodeAuthenticationRequired {
		return ReasonAuthenticationRequired
	}
	return payment.ReasonCardDeclined
}

// declinedIntent is the refusal for an intent that needs a new payment
// method after it was confirmed: its payment attempt failed.
func (p *Provider) declinedIntent(intent *stripego.PaymentIntent) error {
	if e := intent.LastPaymentError; e != nil {
		reason := cardReason(e)
		if method := intentMethod(intent); payment.BankDebit(method) && e.Code != "" && payment.ValidReason(string(e.Code)) {
			// A bank debit that failed after it was accepted: the bank's
			// reason (insufficient_funds, account_closed) is the one a
			// person acts on, not a card decline.
			reason = string(e.Code)
		}
		return payment.Declined(reason, p.clean(fmt.Sprintf("%s (payment intent %s)", cardMessage(e), intent.ID)))
	}
	return payment.Declined(payment.ReasonCardDeclined,
		p.clean(fmt.Sprintf("payment intent %s requires a new payment method: the payment attempt failed", intent.ID)))
}

// canceledIntent is the refusal for a canceled intent. waited is the status
// the intent waited in when the adapter canceled it itself, empty when it
// found it canceled: requires_action and requires_payment_method (declined
// with authentication_required) are authentication_required, anything else
// PaymentCanceled.
func (p *Provider) canceledIntent(intent *stripego.PaymentIntent, waited stripego.PaymentIntentStatus) error {
	switch waited {
	case stripego.PaymentIntentStatusRequiresAction:
		return payment.Declined(ReasonAuthenticationRequired, p.clean(fmt.Sprintf(
			"payment intent %s required the customer's authentication (requires_action) and was canceled: "+
				"no customer is present to authenticate, nothing was charged", intent.ID)))
	case stripego.PaymentIntentStatusRequiresPaymentMethod:
		return payment.Declined(ReasonAuthenticationRequired, p.clean(fmt.Sprintf(
			"payment intent %s was declined off-session with authentication_required and was canceled: "+
				"nothing was charged", intent.ID)))
	}
	msg := fmt.Sprintf("payment intent %s was canceled", intent.ID)
	if waited != "" {
		msg = fmt.Sprintf("payment intent %s waited in %s and was canceled: nothing was charged", intent.ID, waited)
	}
	if intent.CancellationReason != "" {
		msg += fmt.Sprintf(" (%s)", intent.CancellationReason)
	}
	return payment.Declined(ReasonPaymentCanceled, p.clean(msg))
}

// cardMessage is "<code> (<decline code>): <message>" of a card error.
func cardMessage(e *stripego.Error) string {
	code := string(e.Code)
	if code == "" {
		code = string(stripego.ErrorCodeCardDeclined)
	}
	if e.DeclineCode != "" {
		code += fmt.Sprintf(" (%s)", e.DeclineCode)
	}
	if e.Msg == "" {
		return code
	}
	return code + ": " + e.Msg
}

// withCode is Stripe's message, preceded by its code and parameter.
func withCode(e *stripego.Error) string {
	prefix := string(e.Code)
	if e.Param != "" {
		prefix = strings.TrimSpace(prefix + " (parameter " + e.Param + ")")
	}
	switch {
	case prefix == "":
		return e.Msg
	case e.Msg == "":
		return prefix
	}
	return prefix + ": " + e.Msg
}

// describe names a Stripe error by HTTP status, type, code and request id,
// without its message.
func describe(e *stripego.Error) string {
	parts := []string{fmt.Sprintf("HTTP %d", e.HTTPStatusCode)}
	if e.Type != "" {
		parts = append(parts, string(e.Type))
	}
	if e.Code != "" {
		parts = append(parts, "code "+string(e.Code))
	}
	if e.RequestID != "" {
		parts = append(parts, "request "+e.RequestID)
	}
	return strings.Join(parts, ", ")
}

// apiCause is the cause of a transient Stripe error. It does not wrap the
// *stripe.Error, whose Error method prints the whole JSON error, including
// any PaymentIntent in it.
func (p *Provider) apiCause(op string, e *stripego.Error) error {
	msg := describe(e)
	if e.Msg != "" {
		msg += ": " + e.Msg
	}
	return errors.New(op + ": Stripe answered " + p.clean(msg))
}

// cause is the cause of a transient error that is not a Stripe API error.
// A failure to send the request or to receive the answer (a network error,
// a deadline, a refused connection) keeps its cleaned message and unwraps
// to err, so that errors.Is still finds context.DeadlineExceeded. Any other
// error is stripe-go's about an answer that is not the Stripe API's JSON,
// and stripe-go quotes the answer's body in it; the API base may point at
// any server, so the body never reaches the message: only the HTTP status
// does.
func (p *Provider) cause(op string, err error) error {
	if transport(err) {
		return &causeError{msg: op + ": " + p.clean(err.Error()), err: err}
	}
	return errors.New(op + ": " + unreadable(err))
}

// transport reports whether err is a failure to send a request or to
// receive its answer, whose message stripe-go does not build from the
// answer's body.
func transport(err error) bool {
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.ErrUnexpectedEOF)
}

// deserializeStatus finds the HTTP status in stripe-go's error about an
// answer that is not JSON.
var deserializeStatus = regexp.MustCompile(`^Couldn't deserialize JSON \(response status: (\d{3})\b`)

// unreadable describes, without its body, an answer that stripe-go could
// not read as the Stripe API's JSON.
func unreadable(err error) string {
	const hint = "is not the Stripe API's JSON, so its body is not shown; check the PaymentProvider's API base (spec.stripe.apiBase)"
	if m := deserializeStatus.FindStringSubmatch(err.Error()); m != nil {
		return "the answer (HTTP " + m[1] + ") " + hint
	}
	return "the answer " + hint
}

// causeError is an error with a cleaned message that unwraps to its cause.
type causeError struct {
	msg string
	err error
}

// Error returns the cleaned message.
func (e *causeError) Error() string { return e.msg }

// Unwrap returns the cause.
func (e *causeError) Unwrap() error { return e.err }

// clean makes s safe to show with payment.CleanMessage: the API key
// redacted, one line, cut to maxMessageLength bytes.
func (p *Provider) clean(s string) string {
	return payment.CleanMessage(s, maxMessageLength, p.apiKey)
}

// retryAfterOf reads the Retry-After header of a Stripe error response.
func retryAfterOf(e *stripego.Error) time.Duration {
	if e.LastResponse == nil {
		return 0
	}
	return payment.ParseRetryAfter(e.LastResponse.Header.Get("Retry-After"), time.Now())
}
