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

package httpprovider

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// maxMessageLength bounds, in bytes, each field of the service's JSON
// copied into an error, and any other text cleaned for one.
const maxMessageLength = 200

// chargeResponse is the JSON body of a 2xx answer.
type chargeResponse struct {
	ID       string          `json:"id"`
	Status   string          `json:"status"`
	Amount   *int64          `json:"amount"`
	Currency string          `json:"currency"`
	Created  json.RawMessage `json:"created"`
	Replayed bool            `json:"replayed"`
	Reason   string          `json:"reason"`
	Message  string          `json:"message"`
	// Method is the payment method type of a payment that settles later
	// (sepa_debit, us_bank_account); optional.
	Method string `json:"method"`
}

// errorResponse is the JSON body of an error answer: the contract's reason
// and message, or the detail and title of RFC 9457 problem details.
type errorResponse struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Detail  string `json:"detail"`
	Title   string `json:"title"`
}

// readBody reads the whole body, but never more than limit+1 bytes.
func readBody(r io.Reader, limit int64) ([]byte, error) {
	n := limit
	if n < math.MaxInt64 {
		n++
	}
	b, err := io.ReadAll(io.LimitReader(r, n))
	if err != nil {
		return nil, fmt.Errorf("its body could not be read in full: %w", err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("its body is larger than %d bytes", limit)
	}
	return b, nil
}

// operation is what differs between the endpoints that create something
// at the service, a charge or a refund, and between the lookups of the two:
// the words of their errors, the default reason of their refusals, and
// what a 400 and an answer that is not final yet become.
type operation struct {
	// noun names what is created: "charge" or "refund".
	noun string
	// effect names what may have happened when an answer is not
	// understood: "payment" or "refund".
	effect string
	// reason is the default reason of a refusal without one ("" is
	// payment.Declined's, CardDeclined).
	reason string
	// invalidReason is whether a 400's body may give its refusal's reason
	// (the default is payment.ReasonInvalidRequest).
	invalidReason bool
	// notFinal, when it is not nil, is wrapped by the error of an answer
	// that is not final yet.
	notFinal error
	// hints say what to fix for the status codes the contract does not use.
	hints endpointHints
}

var (
	// chargeOp is the charge endpoint's operation.
	chargeOp = operation{noun: "charge", effect: "payment", hints: chargeHints}
	// refundOp is the refund endpoint's operation.
	refundOp = operation{
		noun: "refund", effect: "refund", reason: payment.ReasonRefundFailed,
		invalidReason: true, notFinal: payment.ErrInFlight, hints: refundHints,
	}
)

// pending is the uncertain error of an answer that is not final yet: cause,
// wrapping op.notFinal too when there is one.
func (op operation) pending(cause error, retryAfter time.Duration) error {
	if op.notFinal != nil {
		cause = fmt.Errorf("%w: %w", cause, op.notFinal)
	}
	return payment.Transient(cause, retryAfter)
}

// interpret maps a complete answer to op to an outcome or an error class;
// fallback holds the amount and currency of the request.
func (p *Provider) interpret(op operation, a answer, fallback payment.Outcome) (payment.Outcome, error) {
	switch code := a.code; {
	case code >= 200 && code <= 299:
		return p.success(op, a, fallback)
	case code == http.StatusBadRequest:
		reason, msg := p.explain(code, a.raw)
		if !op.invalidReason || reason == "" {
			reason = payment.ReasonInvalidRequest
		}
		return payment.Outcome{}, &payment.Refusal{Class: payment.ErrInvalid, Reason: reason, Message: msg}
	case code == http.StatusPaymentRequired:
		reason, msg := p.explain(code, a.raw)
		return payment.Outcome{}, payment.Declined(cmp.Or(reason, op.reason), msg)
	case code == http.StatusUnprocessableEntity:
		_, msg := p.explain(code, a.raw)
		return payment.Outcome{}, payment.KeyReused(msg)
	case code == http.StatusConflict:
		return payment.Outcome{}, payment.InFlight(a.retryAfter)
	case code == http.StatusTooManyRequests || (code >= 500 && code <= 599):
		return payment.Outcome{}, payment.Transient(
			fmt.Errorf("payment service answered %s%s", statusLine(code), p.serviceSaid(a.raw)), a.retryAfter)
	default:
		return payment.Outcome{}, payment.Transient(
			fmt.Errorf("payment service answered %s: %s%s", statusLine(code), op.hints.hint(code), p.serviceSaid(a.raw)), a.retryAfter)
	}
}

// success maps a 2xx answer. Anything short of a well-formed answer with an
// id is Transient: the payment (or refund) may have happened.
func (p *Provider) success(op operation, a answer, fallback payment.Outcome) (payment.Outcome, error) {
	line := statusLine(a.code)
	if len(bytes.TrimSpace(a.raw)) == 0 {
		return payment.Outcome{}, payment.Transient(
			fmt.Errorf("payment service answered %s with an empty body, so the %s may have happened", line, op.effect), a.retryAfter)
	}
	var body chargeResponse
	if err := json.Unmarshal(a.raw, &body); err != nil {
		return payment.Outcome{}, payment.Transient(
			fmt.Errorf("payment service answered %s with a body that is not the expected JSON object, so the %s may have happened: %s",
				line, op.effect, p.clean(err.Error())), a.retryAfter)
	}
	if body.ID == "" {
		return payment.Outcome{}, payment.Transient(
			fmt.Errorf("payment service answered %s without a %s id, so the %s may have happened", line, op.noun, op.effect), a.retryAfter)
	}
	created, err := parseCreated(body.Created)
	if err != nil {
		return payment.Outcome{}, payment.Transient(
			fmt.Errorf("payment service answered %s with a malformed %s, so the %s may have happened: %w", line, op.noun, op.effect, err), a.retryAfter)
	}

	outcome := fallback
	outcome.ID = body.ID
	outcome.Status = body.Status
	outcome.Created = created
	outcome.Replayed = body.Replayed || strings.EqualFold(strings.TrimSpace(a.header.Get("Idempotent-Replayed")), "true")
	if body.Amount != nil {
		outcome.Amount = *body.Amount
	}
	if body.Currency != "" {
		outcome.Currency = body.Currency
	}

	status := strings.ToLower(strings.TrimSpace(body.Status))
	switch status {
	case "succeeded", "paid", "completed":
		return outcome, nil
	case "":
		if a.code == http.StatusAccepted {
			return payment.Outcome{}, op.pending(fmt.Errorf(
				"payment service accepted the %s without a status; asking again later with the same key", op.noun), a.retryAfter)
		}
		return outcome, nil
	case "failed", "declined", "canceled", "cancelled", "rejected":
		return payment.Outcome{}, p.declined(op, "the "+op.noun, status, body.Reason, body.Message)
	case "processing":
		// Accepted under body.ID, not settled yet (a bank debit): read it
		// again later by its id, or with the same key; never a new one.
		return payment.Outcome{}, payment.Settling(body.ID, status, p.clean(body.Method))
	case "pending":
		return payment.Outcome{}, op.pending(fmt.Errorf(
			"payment service reported the %s as %q; asking again later with the same key", op.noun, status), a.retryAfter)
	default:
		return payment.Outcome{}, payment.Transient(
			fmt.Errorf("payment service reported the %s with the unknown status %q, so the outcome is uncertain", op.noun, p.clean(status)), a.retryAfter)
	}
}

// declined is the refusal of op's object, named by what, that the service
// reports in the final status without money moved, with the reason and
// message the service gave; op.reason when it gave none.
func (p *Provider) declined(op operation, what, status, reason, message string) error {
	msg := fmt.Sprintf("payment service reported %s as %q", what, status)
	if m := p.clean(message); m != "" {
		msg += ": " + m
	}
	reason, msg = p.reason(reason, msg)
	return payment.Declined(cmp.Or(reason, op.reason), msg)
}

// explain returns the reason and message of a refusal: from the fields of
// the JSON body when it has them, or the status line.
func (p *Provider) explain(code int, raw []byte) (string, string) {
	body := parseError(raw)
	msg := ""
	for _, m := range []string{body.Message, body.Detail, body.Title} {
		if msg = p.clean(m); msg != "" {
			break
		}
	}
	if msg == "" {
		msg = "payment service answered " + statusLine(code)
	}
	return p.reason(body.Reason, msg)
}

// reason returns raw when it can be a Kubernetes condition reason
// (payment.ValidReason) and does not hold the token. Otherwise it returns no
// reason, so the class's default applies, and keeps raw, cleaned, at the
// front of the message.
func (p *Provider) reason(raw, msg string) (string, string) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", msg
	}
	if payment.ValidReason(raw) && p.clean(raw) == raw {
		return raw, msg
	}
	return "", p.clean(raw + ": " + msg)
}

// serviceSaid returns "; the service said: <message>", or nothing when the
// body is not JSON with a message.
func (p *Provider) serviceSaid(raw []byte) string {
	body := parseError(raw)
	for _, m := range []string{body.Message, body.Detail, body.Title, body.Reason} {
		if m = p.clean(m); m != "" {
			return "; the service said: " + m
		}
	}
	return ""
}

// parseError returns the fields of an error answer's JSON body. Any other
// body, text or HTML, gives none: the operator may be pointed at a server
// that is not a payment service, and what it answers must not reach a
// PaymentJob's status, so nothing of a body but these fields, each cleaned,
// is ever copied into an error.
func parseError(raw []byte) errorResponse {
	var body errorResponse
	if err := json.Unmarshal(raw, &body); err != nil {
		return errorResponse{}
	}
	return body
}

// endpointHints say what to fix when one endpoint of the service answers a
// status code that the contract does not use: the service did not process
// the request, and will not until someone changes the configuration.
type endpointHints struct {
	// url names the PaymentProvider's field that holds the endpoint.
	url string
	// may is what the token must allow.
	may string
	// endpoint names the endpoint a redirect should be replaced with.
	endpoint string
	// other says why any other status code is unexpected.
	other string
}

// The hints of each endpoint, a table: what the PaymentProvider's field of
// its url is, what its token must allow, what a redirect should name, and
// why another status code is unexpected.
var (
	chargeHints = endpointHints{url: "url (spec.http.url)", may: "create charges", endpoint: "the charge endpoint", other: unusedStatus}
	refundHints = endpointHints{url: "refund url (spec.http.refundURL)", may: "create refunds", endpoint: "the refund endpoint", other: unusedStatus}
	lookupHints = endpointHints{url: "lookup url (spec.http.lookupURL)", may: "look charges up", endpoint: "the lookup endpoint",
		other: "the contract answers a lookup with 200 only"}
	listHints = endpointHints{url: "list url (spec.http.listURL)", may: "list charges and refunds", endpoint: "the list endpoint",
		other: "the contract answers a list with 200 only"}
)

// unusedStatus is why a status code the charge and refund endpoints'
// contract does not name is unexpected.
const unusedStatus = "the contract does not use this status"

// hint says what to fix for code.
func (e endpointHints) hint(code int) string {
	switch {
	case code == http.StatusUnauthorized:
		return "check the PaymentProvider's secret (spec.http.secretKeyRef)"
	case code == http.StatusForbidden:
		return "check that the token in the PaymentProvider's secret (spec.http.secretKeyRef) may " + e.may
	case code == http.StatusNotFound || code == http.StatusMethodNotAllowed:
		return "check the PaymentProvider's " + e.url
	case code >= 300 && code <= 399:
		return "redirects are not followed; set the PaymentProvider's " + e.url + " to " + e.endpoint + " itself"
	default:
		return e.other + "; check the PaymentProvider and the payment service"
	}
}

// clean makes text from the service fit for an error with
// payment.CleanMessage: the token redacted, one line, cut to
// maxMessageLength bytes.
func (p *Provider) clean(s string) string {
	return payment.CleanMessage(s, maxMessageLength, p.token)
}

// parseCreated reads unix seconds or an RFC 3339 time; null, "", 0 and an
// absent field are the zero time.
func parseCreated(raw json.RawMessage) (time.Time, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return time.Time{}, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return time.Time{}, errors.New("created is not a valid JSON string")
		}
		if s == "" {
			return time.Time{}, nil
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return time.Time{}, errors.New("created is neither unix seconds nor an RFC 3339 time")
		}
		return t.UTC(), nil
	}
	secs, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return time.Time{}, errors.New("created is neither unix seconds nor an RFC 3339 time")
	}
	if secs <= 0 {
		return time.Time{}, nil
	}
	return time.Unix(secs, 0).UTC(), nil
}

// statusLine is "402 Payment Required", or the bare code when it has no text.
func statusLine(code int) string {
	if text := http.StatusText(code); text != "" {
		return fmt.Sprintf("%d %s", code, text)
	}
	return strconv.Itoa(code)
}
