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
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// This file holds the rules of docs/providers.md, "Idempotency": what the
// service does with a key it has seen. Each returns the status and message
// of its Result.

// maxSecondWait bounds how long the in-flight rule waits for the answer to
// its second request while the first is held: at most a third of the
// request timeout, so that the first still has time to finish.
const maxSecondWait = 5 * time.Second

// checkReplay: a repeated request with the same key and body returns the
// saved outcome, marked as a replay, and charges nothing.
func checkReplay(ctx context.Context, s *session) (Status, string) {
	key, req := s.key(RuleReplay), s.succeeding()
	first := s.charge(ctx, key, req, nil)
	if msg := notNewCharge(key, req.PaymentMethod, first); msg != "" {
		return Fail, msg
	}
	second := s.charge(ctx, key, req, nil)
	if msg := notReplayOf(fmt.Sprintf("the same request sent again under key %q", key), first.outcome.ID, second); msg != "" {
		return Fail, msg
	}
	failure, note := s.onlyCharge(ctx, key, first.outcome.ID)
	if failure != "" {
		return Fail, failure
	}
	return Pass, fmt.Sprintf("the same request sent again replayed charge %q (%s)%s",
		first.outcome.ID, replayMark(second), note)
}

// checkLostResponse: a retry after the first answer was lost, whether the
// client threw it away, hung up before it came, or the service lost it
// after its commit (Options.LoseResponse), ends with the one charge.
func checkLostResponse(ctx context.Context, s *session) (Status, string) {
	req := s.succeeding()
	var notes []string

	// The service answered, and the client never used the answer.
	key := s.key(RuleLostResponse)
	lost := s.charge(ctx, key, req, &exchange{throwAway: true})
	id := chargeID(lost)
	if lost.status < 200 || lost.status > 299 || id == "" {
		return Fail, fmt.Sprintf("the first request under key %q was answered %d %q, not a 2xx charge with an id",
			key, lost.status, snippet(lost.body))
	}
	retry := s.chargeUntilFinal(ctx, key, req)
	if msg := notReplayOf(fmt.Sprintf("after an answer the client threw away (charge %q), the retry under key %q", id, key),
		id, retry); msg != "" {
		return Fail, msg
	}
	if failure, _ := s.onlyCharge(ctx, key, id); failure != "" {
		return Fail, "after an answer the client threw away: " + failure
	}
	notes = append(notes, "a retry after an answer thrown away replayed its charge")

	// The client hung up once the request was written.
	key = s.key(RuleLostResponse)
	_ = s.charge(ctx, key, req, &exchange{cancelAfterWrite: true})
	if msg := s.settlesToOneCharge(ctx, key, "after the client hung up once the request was sent"); msg != "" {
		return Fail, msg
	}
	notes = append(notes, "a retry after the client hung up found one charge")

	if s.opts.LoseResponse != nil {
		key = s.key(RuleLostResponse)
		s.opts.LoseResponse()
		first := s.charge(ctx, key, req, nil)
		if first.charged() {
			return Fail, fmt.Sprintf("after Options.LoseResponse the request under key %q was still answered %s: the hook lost nothing",
				key, first)
		}
		if msg := s.settlesToOneCharge(ctx, key, fmt.Sprintf("after the service lost its answer (%s)", first)); msg != "" {
			return Fail, msg
		}
		notes = append(notes, "a retry after the service lost its answer found the charge")
	}
	if s.looker == nil {
		notes = append(notes, "no lookup endpoint to count the charges")
	}
	return Pass, strings.Join(notes, "; ")
}

// settlesToOneCharge retries the succeeding request under key until it is
// final, and returns a failure message, prefixed with when, unless it is a
// charge that a second retry replays and the only one the lookup holds.
func (s *session) settlesToOneCharge(ctx context.Context, key, when string) string {
	req := s.succeeding()
	retry := s.chargeUntilFinal(ctx, key, req)
	if !retry.charged() {
		return fmt.Sprintf("%s, the retries under key %q ended with %s, not a charge", when, key, retry)
	}
	again := s.charge(ctx, key, req, nil)
	if msg := notReplayOf(fmt.Sprintf("%s, a second retry under key %q", when, key), retry.outcome.ID, again); msg != "" {
		return msg
	}
	if failure, _ := s.onlyCharge(ctx, key, retry.outcome.ID); failure != "" {
		return when + ": " + failure
	}
	return ""
}

// checkKeyReuse: the same key with another body is refused with 422,
// charges nothing, and leaves the saved outcome as it was.
func checkKeyReuse(ctx context.Context, s *session) (Status, string) {
	key, req := s.key(RuleKeyReuse), s.succeeding()
	first := s.charge(ctx, key, req, nil)
	if msg := notNewCharge(key, req.PaymentMethod, first); msg != "" {
		return Fail, msg
	}
	other := req
	other.Amount++
	second := s.charge(ctx, key, other, nil)
	if second.status != http.StatusUnprocessableEntity {
		return Fail, fmt.Sprintf("the same key %q with amount %d instead of %d was answered %s, not 422 Unprocessable Content",
			key, other.Amount, req.Amount, second)
	}
	third := s.charge(ctx, key, req, nil)
	if msg := notReplayOf(fmt.Sprintf("after the 422, the first request sent again under key %q", key),
		first.outcome.ID, third); msg != "" {
		return Fail, msg
	}
	failure, note := s.onlyCharge(ctx, key, first.outcome.ID)
	if failure != "" {
		return Fail, failure
	}
	return Pass, fmt.Sprintf("another amount under the key was refused with 422, and the first request still replays %q%s",
		first.outcome.ID, note)
}

// checkFingerprint: the same request sent first without its fingerprint
// (by an operator that sent none) and then with it is a retry: the
// contract leaves the fingerprint out of the comparison of requests.
func checkFingerprint(ctx context.Context, s *session) (Status, string) {
	key, req := s.key(RuleFingerprint), s.succeeding()
	first := s.charge(ctx, key, req, &exchange{withoutFingerprint: true})
	if msg := notNewCharge(key, req.PaymentMethod, first); msg != "" {
		return Fail, msg
	}
	second := s.charge(ctx, key, req, nil)
	if msg := notReplayOf(fmt.Sprintf("the same request sent again with a fingerprint under key %q, first sent without one,", key),
		first.outcome.ID, second); msg != "" {
		return Fail, msg + "; the fingerprint is not part of the comparison of requests"
	}
	return Pass, fmt.Sprintf("the same request with and without a fingerprint replayed charge %q (%s)",
		first.outcome.ID, replayMark(second))
}

// checkKeyFromHeader: the service keys a charge on its Idempotency-Key
// header, not on the body's idempotencyKey. The operator sends both with
// one value; the rule sends them different, so that a service keying on the
// body shows: a new header with an earlier charge's key in the body must not
// replay that charge, and the earlier charge's header with a new key in the
// body must not charge again. Refusing the disagreement (400, or 422 for
// the second) passes too. A service that does not replay the same request
// is skipped: it fails RuleReplay, and its keys cannot be told apart.
func checkKeyFromHeader(ctx context.Context, s *session) (Status, string) {
	key, req := s.key(RuleKeyFromHeader), s.succeeding()
	first := s.charge(ctx, key, req, nil)
	if msg := notNewCharge(key, req.PaymentMethod, first); msg != "" {
		return Fail, msg
	}
	// Which key a service uses shows only if it replays at all.
	if again := s.charge(ctx, key, req, nil); !again.charged() || again.outcome.ID != first.outcome.ID {
		return Skip, fmt.Sprintf("the same request sent again under key %q was answered %s, not a replay of charge %q, "+
			"so which key the service uses cannot be told; %s says what to change", key, again, first.outcome.ID, RuleReplay)
	}
	const mustKeyOnHeader = "the service must key charges on the Idempotency-Key header " +
		"(and may refuse a body whose idempotencyKey differs from it with 400)"
	var notes []string

	header := s.key(RuleKeyFromHeader)
	a := s.charge(ctx, key, req, &exchange{headerKey: header})
	what := fmt.Sprintf("a request under the new Idempotency-Key %q, whose body carried the idempotencyKey %q of charge %q,",
		header, key, first.outcome.ID)
	switch {
	case a.status == http.StatusBadRequest:
		notes = append(notes, "a new header with an earlier key in the body was refused with 400")
	case a.charged() && a.outcome.ID == first.outcome.ID:
		return Fail, fmt.Sprintf("%s was answered %s: the service keys charges on the body's idempotencyKey; %s",
			what, a, mustKeyOnHeader)
	case !a.charged() || a.outcome.Replayed:
		return Fail, fmt.Sprintf("%s was answered %s, not a new charge (or 400); %s", what, a, mustKeyOnHeader)
	default:
		if failure, _ := s.onlyCharge(ctx, header, a.outcome.ID); failure != "" {
			return Fail, failure + "; the service must store a charge under its Idempotency-Key header"
		}
		notes = append(notes, fmt.Sprintf("a new header with an earlier key in the body was a new charge %q", a.outcome.ID))
	}

	body := s.key(RuleKeyFromHeader)
	b := s.charge(ctx, key, req, &exchange{bodyKey: body})
	what = fmt.Sprintf("the request of charge %q sent again under its Idempotency-Key %q with the idempotencyKey %q in its body",
		first.outcome.ID, key, body)
	switch {
	case b.charged() && b.outcome.ID != first.outcome.ID:
		return Fail, fmt.Sprintf("charged twice: %s was answered %s: the service keys charges on the body's "+
			"idempotencyKey; %s", what, b, mustKeyOnHeader)
	case b.charged():
		notes = append(notes, "an earlier header with a new key in the body replayed its charge")
	case b.status == http.StatusBadRequest || b.status == http.StatusUnprocessableEntity:
		notes = append(notes, fmt.Sprintf("an earlier header with a new key in the body was refused with %d", b.status))
	default:
		return Fail, fmt.Sprintf("%s was answered %s, not a replay of charge %q (or 400, 422); %s",
			what, b, first.outcome.ID, mustKeyOnHeader)
	}
	failure, note := s.onlyCharge(ctx, key, first.outcome.ID)
	if failure != "" {
		return Fail, failure
	}
	return Pass, strings.Join(notes, "; ") + note
}

// checkInFlight: a request whose key's first request is still running is
// answered 409 at once, and nothing is charged twice.
func checkInFlight(ctx context.Context, s *session) (Status, string) {
	f := s.opts.InFlight
	if f == nil {
		return Skip, "Options.InFlight is not set: nothing keeps a charge in flight at the service " +
			"(set InFlight.Hold, or InFlight.PaymentMethod (--slow-payment-method) to one the service charges slowly)"
	}
	key, req := s.key(RuleInFlight), s.request(f.PaymentMethod)
	var entered <-chan string
	release := func() {}
	if f.Hold != nil {
		var rel func()
		entered, rel = f.Hold()
		release = sync.OnceFunc(rel)
	}
	defer release()

	firstDone := make(chan answer, 1)
	go func() { firstDone <- s.charge(ctx, key, req, nil) }()
	inFlight := time.After(f.After)
	if entered != nil {
		inFlight = nil
	}
	select {
	case <-entered:
	case <-inFlight:
	case first := <-firstDone:
		return Fail, fmt.Sprintf("the first request under key %q was answered %s before a second could be sent: "+
			"the InFlight option did not keep it in flight", key, first)
	case <-time.After(s.opts.Timeout):
		return Fail, fmt.Sprintf("InFlight.Hold did not report the first request under key %q in flight within %s",
			key, s.opts.Timeout)
	case <-ctx.Done():
		return Fail, "stopped while waiting for the first request to be in flight"
	}

	secondDone := make(chan answer, 1)
	go func() { secondDone <- s.charge(ctx, key, req, nil) }()
	var second answer
	answered, secondWait := true, min(s.opts.Timeout/3, maxSecondWait)
	select {
	case second = <-secondDone:
	case <-time.After(secondWait):
		answered = false
	}
	release()
	first := <-firstDone
	if !answered {
		second = <-secondDone
		return Fail, fmt.Sprintf("the second request under key %q, sent while the first was in flight, was not answered within %s; "+
			"after the first ended (%s) it was answered %s, where 409 Conflict is due at once",
			key, secondWait, first, second)
	}
	switch {
	case second.charged() && first.charged() && second.outcome.ID != first.outcome.ID:
		return Fail, fmt.Sprintf("charged twice: the second request under key %q, sent while the first was in flight, "+
			"was answered %s, and the first %s; the second must be answered 409 Conflict", key, second, first)
	case second.status != http.StatusConflict:
		return Fail, fmt.Sprintf("the second request under key %q, sent while the first was in flight, was answered %s, "+
			"not 409 Conflict", key, second)
	case !first.charged():
		return Fail, fmt.Sprintf("the first request under key %q was answered %s once it ended, not a charge", key, first)
	}
	retry := s.chargeUntilFinal(ctx, key, req)
	if msg := notReplayOf(fmt.Sprintf("after the 409, a retry under key %q", key), first.outcome.ID, retry); msg != "" {
		return Fail, msg
	}
	failure, note := s.onlyCharge(ctx, key, first.outcome.ID)
	if failure != "" {
		return Fail, failure
	}
	retryAfter := "without Retry-After"
	if v := second.header.Get("Retry-After"); v != "" {
		retryAfter = "with Retry-After: " + v
	}
	return Pass, fmt.Sprintf("a second request while the first was in flight was answered 409 %s; "+
		"the first charged %q and a retry replayed it%s", retryAfter, first.outcome.ID, note)
}

// notNewCharge returns a failure message unless a, the first answer under
// key, is a charge that is not marked as a replay.
func notNewCharge(key, paymentMethod string, a answer) string {
	switch {
	case !a.charged() && a.status >= 200 && a.status <= 299:
		return fmt.Sprintf("the first request under key %q was answered %s", key, a)
	case !a.charged():
		return fmt.Sprintf("the first request under key %q was answered %s, not a charge "+
			"(does the service charge payment method %q?)", key, a, paymentMethod)
	case a.outcome.Replayed:
		return fmt.Sprintf("the first request under key %q was answered %s: a new charge must not be marked as a replay", key, a)
	}
	return ""
}

// notReplayOf returns a failure message, starting with what, unless a
// replays the charge (or refund) id and is marked as a replay.
func notReplayOf(what, id string, a answer) string {
	e := a.endpoint()
	switch {
	case !a.charged():
		return fmt.Sprintf("%s was answered %s; it must replay %s %q", what, a, e.noun, id)
	case a.outcome.ID != id:
		return fmt.Sprintf("%s was %s again: answered %s instead of replaying %s %q", what, e.did, a, e.noun, id)
	case !a.outcome.Replayed:
		return fmt.Sprintf("%s was answered %s without Idempotent-Replayed: true (or \"replayed\": true): "+
			"a replay must say it is one", what, a)
	}
	return ""
}

// replayMark says how the answer a marked itself as a replay.
func replayMark(a answer) string {
	if strings.EqualFold(a.header.Get("Idempotent-Replayed"), "true") {
		return "Idempotent-Replayed: true"
	}
	return `"replayed": true in the body`
}

// chargeID is the id of a raw 2xx answer, "" when it has none.
func chargeID(a answer) string {
	var body struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(a.body, &body) != nil {
		return ""
	}
	return body.ID
}

// snippet is the start of a body, for a message.
func snippet(body []byte) string {
	const longest = 120
	if len(body) > longest {
		return string(body[:longest]) + "..."
	}
	return strings.TrimSpace(string(body))
}
