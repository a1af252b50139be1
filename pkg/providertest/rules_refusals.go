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
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"regexp"
	"strings"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// This file holds the rules about refusals, the lookup endpoint and
// credentials. Each returns the status and message of its Result.

// reasonPattern is a reason the operator uses as it is: CamelCase, at most
// 64 characters (docs/providers.md, "Answers").
var reasonPattern = regexp.MustCompile(`^[A-Z][A-Za-z0-9]{0,63}$`)

// checkDecline: a declined payment is a refusal (402, or a 2xx with a
// failed status) that is saved: the same request again replays the same
// decline, marked as a replay, and nothing is ever charged under the key.
func checkDecline(ctx context.Context, s *session) (Status, string) {
	key, req := s.key(RuleDecline), s.request(s.opts.DecliningPaymentMethod)
	first := s.charge(ctx, key, req, nil)
	switch {
	case first.charged():
		return Fail, fmt.Sprintf("the declining payment method %q was charged under key %q: %s "+
			"(set DecliningPaymentMethod to one the service declines)", req.PaymentMethod, key, first)
	case !first.refused(payment.ErrDeclined):
		return Fail, fmt.Sprintf("the declining payment method %q under key %q was answered %s, "+
			"not 402 Payment Required (or a 2xx with status failed)", req.PaymentMethod, key, first)
	}
	second := s.charge(ctx, key, req, nil)
	switch {
	case second.charged():
		return Fail, fmt.Sprintf("the decline was not saved: the same request sent again under key %q was charged: %s", key, second)
	case !second.refused(payment.ErrDeclined):
		return Fail, fmt.Sprintf("the same declined request sent again under key %q was answered %s, not the saved decline",
			key, second)
	case !markedReplayed(second):
		return Fail, fmt.Sprintf("the same declined request sent again under key %q was answered %s without "+
			"Idempotent-Replayed: true: a decline must be saved and replayed", key, second)
	}
	r1, _ := payment.IsRefusal(first.err)
	r2, _ := payment.IsRefusal(second.err)
	if r1.Reason != r2.Reason {
		return Fail, fmt.Sprintf("the replayed decline under key %q has reason %q, the first %q", key, r2.Reason, r1.Reason)
	}
	found, ok, failure := s.charges(ctx, key)
	switch {
	case failure != "":
		return Fail, failure
	case len(found) > 0:
		return Fail, fmt.Sprintf("the lookup holds charge %q (%s) under the declined key %q", found[0].ID, found[0].Status, key)
	case !ok:
		return Pass, fmt.Sprintf("declined with %d (%s), and replayed (no lookup endpoint to count the charges)",
			first.status, r1.Reason)
	}
	return Pass, fmt.Sprintf("declined with %d (%s), and replayed; the lookup holds no charge under the key",
		first.status, r1.Reason)
}

// checkLookup: the lookup endpoint finds the charge just answered by its
// key, with its id, amount, currency and fingerprint; answers a key never
// sent with no charges (200, not 404), alone and next to a known key; and
// answers the account probe (a lookup without keys).
func checkLookup(ctx context.Context, s *session) (Status, string) {
	if s.looker == nil {
		return Skip, "Options.LookupURL (--lookup-url) is not set: the service has no lookup endpoint"
	}
	key, unknown, req := s.key(RuleLookup), s.key(RuleLookup), s.succeeding()
	a := s.charge(ctx, key, req, nil)
	if msg := notNewCharge(key, req.PaymentMethod, a); msg != "" {
		return Fail, msg
	}
	none, failure := s.lookup(ctx, []string{unknown})
	if failure != "" {
		return Fail, failure
	}
	if len(none[unknown]) > 0 {
		return Fail, fmt.Sprintf("the lookup holds charge %q under key %q, which was never sent: "+
			"the service must answer only the charges made under the keys asked", none[unknown][0].ID, unknown)
	}
	all, failure := s.lookup(ctx, []string{key, unknown})
	if failure != "" {
		return Fail, failure
	}
	found := all[key]
	switch {
	case len(all[unknown]) > 0:
		return Fail, fmt.Sprintf("the lookup holds charge %q under key %q, which was never sent: "+
			"the service must answer only the charges made under the keys asked", all[unknown][0].ID, unknown)
	case len(found) != 1:
		return Fail, fmt.Sprintf("the lookup holds %d charges under key %q right after charge %q was answered, not 1: "+
			"the service must find a charge whose request was answered by the next lookup, under the key it was made under",
			len(found), key, a.outcome.ID)
	}
	f := found[0]
	fingerprint := payment.RequestHash(key, req)
	switch {
	case f.ID != a.outcome.ID:
		return Fail, fmt.Sprintf("the lookup holds charge %q under key %q, but the charge answered was %q: "+
			"the service must answer the lookup with the charge's own id", f.ID, key, a.outcome.ID)
	case f.State != payment.StateSucceeded:
		return Fail, fmt.Sprintf("the lookup holds charge %q with status %q, not succeeded, where the charge "+
			"answered succeeded%s", f.ID, f.Status, foundAdvice(f.Status))
	case f.Amount != req.Amount || f.Currency != req.Currency:
		return Fail, fmt.Sprintf("the lookup holds charge %q of %d %s, but %d %s was charged: "+
			"the service must answer the amount and currency charged", f.ID, f.Amount, f.Currency, req.Amount, req.Currency)
	case f.Fingerprint != "" && f.Fingerprint != fingerprint:
		return Fail, fmt.Sprintf("the lookup holds charge %q with fingerprint %q, not the %q sent: the service must "+
			"store the request's fingerprint with the charge and answer it unchanged (with another one the operator "+
			"stalls the payment as made for another request)", f.ID, f.Fingerprint, fingerprint)
	}
	if failure := s.account(ctx); failure != "" {
		return Fail, failure
	}
	note := "with its fingerprint"
	if f.Fingerprint == "" {
		note = "without a fingerprint (store it: the operator then compares amount and currency only)"
	}
	return Pass, fmt.Sprintf("found charge %q by its key %s, nothing under an unknown key, and the account probe answered", f.ID, note)
}

// checkErrorBody: the answers 400, 402 and 422 carry a JSON body with a
// CamelCase reason and a message, which become the job's failure.
func checkErrorBody(ctx context.Context, s *session) (Status, string) {
	decline := s.charge(ctx, s.key(RuleErrorBody), s.request(s.opts.DecliningPaymentMethod), nil)
	key := s.key(RuleErrorBody)
	var reused answer
	if first := s.charge(ctx, key, s.succeeding(), nil); first.charged() {
		other := s.succeeding()
		other.Amount++
		reused = s.charge(ctx, key, other, nil)
	}
	keyless := s.charge(ctx, s.key(RuleErrorBody), s.succeeding(), &exchange{withoutKey: true})

	var checked []string
	for _, p := range []struct {
		what   string
		status int
		a      answer
	}{
		{"a decline", http.StatusPaymentRequired, decline},
		{"a reused key", http.StatusUnprocessableEntity, reused},
		{"a charge without a key", http.StatusBadRequest, keyless},
	} {
		if p.a.status != p.status {
			continue // the rule about that answer reports it
		}
		if problem := errorBodyProblem(p.a); problem != "" {
			return Fail, fmt.Sprintf("the %d answer to %s has %s: %q", p.status, p.what, problem, snippet(p.a.body))
		}
		checked = append(checked, fmt.Sprint(p.status))
	}
	if len(checked) == 0 {
		return Skip, "the service answered none of a decline, a reused key and a charge without a key with " +
			"402, 422 or 400; the rules about those answers say what it did"
	}
	return Pass, fmt.Sprintf("the bodies of %s have a CamelCase reason and a message", strings.Join(checked, ", "))
}

// errorBodyProblem says what is wrong with the body of a refusal, or "".
func errorBodyProblem(a answer) string {
	mt, _, err := mime.ParseMediaType(a.header.Get("Content-Type"))
	if err != nil || (mt != "application/json" && mt != "application/problem+json") {
		return fmt.Sprintf("Content-Type %q, not application/json", a.header.Get("Content-Type"))
	}
	var body struct {
		Reason  *string `json:"reason"`
		Message string  `json:"message"`
		Detail  string  `json:"detail"`
		Title   string  `json:"title"`
	}
	switch {
	case json.Unmarshal(a.body, &body) != nil:
		return "a body that is not a JSON object"
	case body.Reason == nil:
		return `no "reason"`
	case !reasonPattern.MatchString(*body.Reason):
		return fmt.Sprintf("reason %q, not a CamelCase code of at most 64 characters", *body.Reason)
	case strings.TrimSpace(body.Message+body.Detail+body.Title) == "":
		return `no "message"`
	}
	return ""
}

// checkCredentials: with a token configured, a charge without it or with
// another one is refused with 401 or 403, and saves nothing under its key.
func checkCredentials(ctx context.Context, s *session) (Status, string) {
	if strings.TrimSpace(s.opts.Token) == "" {
		return Skip, "Options.Token (--token-file) is not set: the service is checked without credentials"
	}
	key, req := s.key(RuleCredentials), s.succeeding()
	for _, c := range []struct{ what, token string }{
		{"without a token", ""},
		{"with a wrong token", "providertest-wrong-" + rand.Text()},
	} {
		p, err := s.newProvider(c.token)
		if err != nil {
			return Fail, err.Error()
		}
		a := s.chargeWith(ctx, p, key, req, nil)
		if a.status != http.StatusUnauthorized && a.status != http.StatusForbidden {
			return Fail, fmt.Sprintf("a charge %s under key %q was answered %s, not 401 or 403", c.what, key, a)
		}
	}
	a := s.charge(ctx, key, req, nil)
	if msg := notNewCharge(key, req.PaymentMethod, a); msg != "" {
		return Fail, "after the refusals without valid credentials, " + msg
	}
	failure, note := s.onlyCharge(ctx, key, a.outcome.ID)
	if failure != "" {
		return Fail, failure
	}
	return Pass, "charges without a token and with a wrong one were refused and saved nothing under their key" + note
}

// checkKeyRequired: a charge without an idempotency key is refused with
// 400. Only the status code says nothing was charged: a charge without a
// key cannot be looked up.
func checkKeyRequired(ctx context.Context, s *session) (Status, string) {
	a := s.charge(ctx, s.key(RuleKeyRequired), s.succeeding(), &exchange{withoutKey: true})
	switch {
	case a.charged():
		return Fail, fmt.Sprintf("a charge without an Idempotency-Key was charged: %s; no retry of it could be safe", a)
	case a.status != http.StatusBadRequest:
		return Fail, fmt.Sprintf("a charge without an Idempotency-Key was answered %s, not 400 Bad Request", a)
	}
	return Pass, "a charge without an Idempotency-Key was refused with 400 (seen by the status code only: " +
		"a charge without a key cannot be looked up)"
}

// markedReplayed reports whether the answer a says it is a replay, by the
// Idempotent-Replayed header or a "replayed": true in its body.
func markedReplayed(a answer) bool {
	if a.outcome.Replayed || strings.EqualFold(strings.TrimSpace(a.header.Get("Idempotent-Replayed")), "true") {
		return true
	}
	var body struct {
		Replayed bool `json:"replayed"`
	}
	return json.Unmarshal(a.body, &body) == nil && body.Replayed
}
