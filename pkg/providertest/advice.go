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

package providertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// This file says what the service must change. The operator's client
// explains an answer it cannot use to the person running the operator
// ("check the PaymentProvider's url"); the reader of a Result is the
// service's author, so a Result describes the raw answer and the contract
// instead, and never names an operator setting.

// Statuses of a charge that the contract names, in lower case (the operator
// compares them without regard to case or surrounding spaces).
var (
	chargedStatuses    = []string{"succeeded", "paid", "completed"}
	notChargedStatuses = []string{"failed", "declined", "canceled", "cancelled", "rejected"}
	pendingStatuses    = []string{"processing", "pending"}
)

// statusAdvice says which statuses a service must use.
const statusAdvice = `the service must report a charge that moved money as "succeeded" (or "paid", "completed"), ` +
	`one that did not as "failed" (or "declined", "canceled", "cancelled", "rejected"), ` +
	`and one that is not final yet as "processing" or "pending"`

// refundStatusAdvice says which statuses a service must use for refunds.
const refundStatusAdvice = `the service must report a refund that gave money back as "succeeded" (or "paid", "completed"), ` +
	`one that did not as "failed" (or "declined", "canceled", "cancelled", "rejected"), ` +
	`and one that is not final yet as "processing" or "pending"`

// endpoint is what an answer's messages say of the endpoint it came from.
type endpoint struct {
	// noun is what the endpoint makes: "charge" or "refund".
	noun string
	// did says that it was made: "charged" or "refunded".
	did string
	// option and flag name the setting that holds the endpoint's url.
	option, flag string
	// codes say which status codes the contract uses for the endpoint.
	codes string
	// statuses say which statuses the contract names.
	statuses string
}

var (
	// chargeEndpoint is the charge endpoint.
	chargeEndpoint = endpoint{noun: "charge", did: "charged", option: "Options.URL", flag: "--url",
		codes: "the service must answer a charge with 2xx, a decline with 402, an invalid request with 400, " +
			"a reused key with 422 and a key in flight with 409",
		statuses: statusAdvice}
	// refundEndpoint is the refund endpoint.
	refundEndpoint = endpoint{noun: "refund", did: "refunded", option: "Options.RefundURL", flag: "--refund-url",
		codes: "the service must answer a refund with 2xx, a refusal with 402 (an invalid request with 400), " +
			"a reused key with 422 and a key in flight with 409",
		statuses: refundStatusAdvice}
)

// emptyLookupAdvice says how a lookup answers keys without charges.
const emptyLookupAdvice = `the service must answer 200 with an empty charges array ({"charges": []}) ` +
	`for keys it holds no charge under, never 404`

// knownStatus reports whether status is one the contract names.
func knownStatus(status string) bool {
	s := strings.ToLower(strings.TrimSpace(status))
	return slices.Contains(chargedStatuses, s) || slices.Contains(notChargedStatuses, s) || slices.Contains(pendingStatuses, s)
}

// String says what the service answered and what the operator made of it,
// and for an answer the operator cannot act on, what the service must
// change.
func (a answer) String() string {
	e := a.endpoint()
	switch {
	case a.status == 0:
		return fmt.Sprintf("no answer (%v)", a.err)
	case a.charged():
		replayed := ""
		if a.outcome.Replayed {
			replayed = ", marked as a replay"
		}
		return fmt.Sprintf("%d with %s %q%s", a.status, e.noun, a.outcome.ID, replayed)
	case !a.uncertain():
		return fmt.Sprintf("%d (%v)", a.status, a.err)
	case a.status == http.StatusConflict:
		return fmt.Sprintf("409 (%v)", a.err)
	}
	return fmt.Sprintf("%d %s", a.status, e.advice(a.status, a.header, a.body, a.err))
}

// endpoint is the endpoint that answered a.
func (a answer) endpoint() endpoint {
	if a.refund {
		return refundEndpoint
	}
	return chargeEndpoint
}

// advice explains an answer of e with status code code that the operator
// reads as uncertain, and says what the service must change when the
// contract does not allow it.
func (e endpoint) advice(code int, h http.Header, body []byte, err error) string {
	said := serviceSaid(body)
	switch {
	case code >= 200 && code <= 299:
		return e.successAdvice(code, body, err)
	case code == http.StatusTooManyRequests || code >= 500:
		return "(the operator retries it with the same key" + said + ")"
	case code >= 300 && code <= 399:
		return fmt.Sprintf("(a redirect to %q%s): the operator never follows a redirect, which could send the %s "+
			"elsewhere; the %s endpoint must answer at its own url (or %s, %s, must be the url redirected to)",
			h.Get("Location"), said, e.noun, e.noun, e.option, e.flag)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return fmt.Sprintf("(the credentials were refused%s): Options.Token (--token-file) must be a token "+
			"the service accepts for %ss", said, e.noun)
	case code == http.StatusNotFound || code == http.StatusMethodNotAllowed:
		return fmt.Sprintf("(no %s endpoint at this url%s): %s (%s) must be the service's %s endpoint, which answers POST",
			e.noun, said, e.option, e.flag, e.noun)
	}
	return fmt.Sprintf("(a status code the contract does not use for a %s%s): %s", e.noun, said, e.codes)
}

// successAdvice explains a 2xx answer of e the operator reads as
// uncertain.
func (e endpoint) successAdvice(code int, body []byte, err error) string {
	var charge struct {
		ID     *string `json:"id"`
		Status *string `json:"status"`
	}
	switch {
	case len(strings.TrimSpace(string(body))) == 0 || json.Unmarshal(body, &charge) != nil:
		return fmt.Sprintf("with a body that is not a JSON object (%q): the operator cannot tell whether it %s "+
			`and sends the request again; the service must answer a %s with a JSON object with its "id" and "status"`,
			snippet(body), e.did, e.noun)
	case charge.ID == nil || *charge.ID == "":
		return fmt.Sprintf(`without a %s "id": the operator cannot tell whether it %s and sends the request again; `+
			`the service must answer every %s with its "id"`, e.noun, e.did, e.noun)
	case charge.Status == nil || *charge.Status == "":
		if code == http.StatusAccepted {
			return "without a status: the operator reads it as pending and asks again with the same key; " +
				"the service must then answer the final outcome"
		}
		return fmt.Sprintf("(%v)", err)
	case !knownStatus(*charge.Status):
		return fmt.Sprintf("with status %q, which the contract does not name: the operator cannot tell whether it "+
			"%s and asks again with the same key; %s", *charge.Status, e.did, e.statuses)
	case slices.Contains(pendingStatuses, strings.ToLower(strings.TrimSpace(*charge.Status))):
		return fmt.Sprintf("with status %q: not final, so the operator asks again with the same key; the service must "+
			"then answer the final outcome", *charge.Status)
	}
	return fmt.Sprintf("(%v)", err)
}

// lookupAdvice explains a failed lookup of keys from its raw answer x and
// the operator's error err, and says what the service must change.
func lookupAdvice(what string, x *exchange, err error) string {
	said := serviceSaid(x.body)
	switch {
	case x.status == 0:
		return fmt.Sprintf("%s got no answer (%v)", what, err)
	case x.status == http.StatusNotFound:
		return fmt.Sprintf("%s was answered 404 Not Found%s: %s (the operator reads any status but 200 as "+
			"\"nothing is known\" and charges nothing; if the lookup endpoint is at another url, set Options.LookupURL, "+
			"--lookup-url)", what, said, emptyLookupAdvice)
	case x.status == http.StatusUnauthorized || x.status == http.StatusForbidden:
		return fmt.Sprintf("%s was answered %d%s: the service must accept the token it accepts for charges "+
			"(Options.Token, --token-file) for lookups too", what, x.status, said)
	case x.status >= 300 && x.status <= 399:
		return fmt.Sprintf("%s was answered %d, a redirect to %q: the operator never follows a redirect; the lookup "+
			"endpoint must answer at its own url", what, x.status, x.header.Get("Location"))
	case x.status != http.StatusOK:
		return fmt.Sprintf("%s was answered %d%s: the service must answer every lookup with 200 and "+
			`{"charges": [...]}; the operator reads any other status as "nothing is known"`, what, x.status, said)
	}
	return fmt.Sprintf("%s was answered 200 that the operator cannot read (%v): the service must answer a JSON object "+
		`{"charges": [...]} whose every charge has "idempotencyKey", "id", "amount", "currency" and "status"`,
		what, lookupCause(err))
}

// lookupCause is the operator's reading of a 200 lookup answer it could
// not use, without the wrapping that names the endpoint.
func lookupCause(err error) string {
	var t *payment.TransientError
	if errors.As(err, &t) && t.Err != nil {
		err = t.Err
	}
	return strings.TrimPrefix(err.Error(), "payment service's lookup endpoint answered ")
}

// foundAdvice says what is wrong with the status of a charge the lookup
// holds where a succeeded one was due.
func foundAdvice(status string) string {
	if knownStatus(status) {
		return ""
	}
	return fmt.Sprintf("; status %q is not one the contract names, so the operator never treats the charge as final: %s",
		status, statusAdvice)
}

// serviceSaid is "; the service said: <message>" from an error body's
// message, detail, title or reason, or "".
func serviceSaid(body []byte) string {
	var e struct {
		Reason  string `json:"reason"`
		Message string `json:"message"`
		Detail  string `json:"detail"`
		Title   string `json:"title"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	for _, m := range []string{e.Message, e.Detail, e.Title, e.Reason} {
		if m = payment.CleanMessage(m, 120); m != "" {
			return "; the service said: " + m
		}
	}
	return ""
}

// refundsAdvice says how a lookup answers refunds.
const refundsAdvice = `the service must answer a lookup of a charge (?charge=) or of keys with a "refunds" array ` +
	`beside "charges" ([] when it holds none), whose every refund has "idempotencyKey" (as sent), "id", "amount", ` +
	`"currency", "status" and "charge"`

// refundLookupAdvice explains a lookup of refunds, said by what, whose raw
// answer x the operator could not use (err), and says what the service
// must change.
func refundLookupAdvice(what string, x *exchange, err error) string {
	switch {
	case x.status == http.StatusNotFound:
		return fmt.Sprintf(`%s was answered 404 Not Found%s: the service must answer 200 with empty arrays `+
			`({"charges": [], "refunds": []}) for a charge or keys it holds nothing on, never 404`, what, serviceSaid(x.body))
	case x.status != http.StatusOK:
		return lookupAdvice(what, x, err)
	case !hasRefunds(x.body):
		return fmt.Sprintf(`%s was answered 200 without a "refunds" array, which says the service does not know refunds: `+
			"the operator refunds nothing on the strength of it; %s", what, refundsAdvice)
	}
	return fmt.Sprintf("%s was answered 200 that the operator cannot read (%s): %s", what, lookupCause(err), refundsAdvice)
}

// hasRefunds reports whether a lookup answer's body has a refunds array.
func hasRefunds(body []byte) bool {
	var b struct {
		Refunds *[]json.RawMessage `json:"refunds"`
	}
	return json.Unmarshal(body, &b) == nil && b.Refunds != nil
}
