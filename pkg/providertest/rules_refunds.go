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
	"errors"
	"fmt"
	"strings"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// This file holds the rules of docs/providers.md, "Refunds": each charges
// first, then refunds (part of) that charge. They are skipped without
// Options.RefundURL. Each returns the status and message of its Result.

// checkRefundReplay: a refund sent again with the same key and body returns
// the saved refund, marked as a replay, and refunds nothing more.
func checkRefundReplay(ctx context.Context, s *session) (Status, string) {
	if skip := s.refundSkip(); skip != "" {
		return Skip, skip
	}
	charge, failure := s.paidCharge(ctx, RuleRefundReplay)
	if failure != "" {
		return Fail, failure
	}
	key, req := s.key(RuleRefundReplay), s.refundRequest(charge, s.partial())
	first := s.refund(ctx, key, req, nil)
	if msg := notNewRefund(key, req, first); msg != "" {
		return Fail, msg
	}
	second := s.refund(ctx, key, req, nil)
	if msg := notReplayOf(fmt.Sprintf("the same refund sent again under key %q", key), first.outcome.ID, second); msg != "" {
		return Fail, msg
	}
	failure, note := s.onlyRefund(ctx, charge, key, first.outcome.ID, req.Amount)
	if failure != "" {
		return Fail, failure
	}
	return Pass, fmt.Sprintf("the same refund sent again replayed refund %q (%s)%s", first.outcome.ID, replayMark(second), note)
}

// checkRefundLostResponse: a retry after the first answer to a refund was
// lost, whether the client threw it away or hung up before it came, ends
// with the one refund.
func checkRefundLostResponse(ctx context.Context, s *session) (Status, string) {
	if skip := s.refundSkip(); skip != "" {
		return Skip, skip
	}
	// The service answered, and the client never used the answer.
	charge, failure := s.paidCharge(ctx, RuleRefundLostResponse)
	if failure != "" {
		return Fail, failure
	}
	key, req := s.key(RuleRefundLostResponse), s.refundRequest(charge, s.partial())
	lost := s.refund(ctx, key, req, &exchange{throwAway: true})
	id := chargeID(lost)
	if lost.status < 200 || lost.status > 299 || id == "" {
		return Fail, fmt.Sprintf("the first refund under key %q was answered %d %q, not a 2xx refund with an id",
			key, lost.status, snippet(lost.body))
	}
	retry := s.refundUntilFinal(ctx, key, req)
	if msg := notReplayOf(fmt.Sprintf("after an answer the client threw away (refund %q), the retry under key %q", id, key),
		id, retry); msg != "" {
		return Fail, msg
	}
	if failure, _ := s.onlyRefund(ctx, charge, key, id, req.Amount); failure != "" {
		return Fail, "after an answer the client threw away: " + failure
	}

	// The client hung up once the request was written.
	if charge, failure = s.paidCharge(ctx, RuleRefundLostResponse); failure != "" {
		return Fail, failure
	}
	key, req = s.key(RuleRefundLostResponse), s.refundRequest(charge, s.partial())
	_ = s.refund(ctx, key, req, &exchange{cancelAfterWrite: true})
	when := "after the client hung up once the refund was sent"
	retry = s.refundUntilFinal(ctx, key, req)
	if !retry.charged() {
		return Fail, fmt.Sprintf("%s, the retries under key %q ended with %s, not a refund", when, key, retry)
	}
	again := s.refund(ctx, key, req, nil)
	if msg := notReplayOf(fmt.Sprintf("%s, a second retry under key %q", when, key), retry.outcome.ID, again); msg != "" {
		return Fail, msg
	}
	failure, note := s.onlyRefund(ctx, charge, key, retry.outcome.ID, req.Amount)
	if failure != "" {
		return Fail, when + ": " + failure
	}
	return Pass, "a retry after an answer thrown away replayed its refund; a retry after the client hung up found one refund" + note
}

// checkRefundExceedsCharge: a refund of more than the charge, and one of
// more than what is left of it once it was refunded in full, are refused
// with RefundExceedsCharge and give nothing back.
func checkRefundExceedsCharge(ctx context.Context, s *session) (Status, string) {
	if skip := s.refundSkip(); skip != "" {
		return Skip, skip
	}
	charge, failure := s.paidCharge(ctx, RuleRefundExceedsCharge)
	if failure != "" {
		return Fail, failure
	}
	over := s.refundRequest(charge, s.opts.Amount+1)
	a := s.refund(ctx, s.key(RuleRefundExceedsCharge), over, nil)
	what := fmt.Sprintf("a refund of %d of charge %q of %d", over.Amount, charge, s.opts.Amount)
	if msg := notRefusedWith(payment.ReasonRefundExceedsCharge, what, a); msg != "" {
		return Fail, msg
	}
	key, whole := s.key(RuleRefundExceedsCharge), s.refundRequest(charge, s.opts.Amount)
	all := s.refund(ctx, key, whole, nil)
	if msg := notNewRefund(key, whole, all); msg != "" {
		return Fail, "after the refund of more than the charge was refused, " + msg
	}
	more := s.refund(ctx, s.key(RuleRefundExceedsCharge), s.refundRequest(charge, 1), nil)
	what = fmt.Sprintf("a refund of 1 of charge %q, after refund %q gave back all of its %d,", charge, all.outcome.ID, s.opts.Amount)
	if msg := notRefusedWith(payment.ReasonRefundExceedsCharge, what, more); msg != "" {
		return Fail, msg
	}
	failure, note := s.onlyRefund(ctx, charge, key, all.outcome.ID, whole.Amount)
	if failure != "" {
		return Fail, failure
	}
	return Pass, fmt.Sprintf("a refund of more than the charge, and one after the whole charge was refunded, "+
		"were refused with %d and %d (%s)%s", a.status, more.status, payment.ReasonRefundExceedsCharge, note)
}

// checkRefundUnknownCharge: a refund of a charge the service never made is
// refused with ChargeNotFound, and the lookup of that charge answers 200
// with no refunds.
func checkRefundUnknownCharge(ctx context.Context, s *session) (Status, string) {
	if skip := s.refundSkip(); skip != "" {
		return Skip, skip
	}
	charge := "ch_providertest_" + strings.ToLower(rand.Text())
	a := s.refund(ctx, s.key(RuleRefundUnknownCharge), s.refundRequest(charge, s.opts.Amount), nil)
	what := fmt.Sprintf("a refund of charge %q, which the service never made,", charge)
	if msg := notRefusedWith(payment.ReasonChargeNotFound, what, a); msg != "" {
		return Fail, msg
	}
	if s.looker == nil {
		return Pass, fmt.Sprintf("a refund of a charge the service never made was refused with %d (%s)",
			a.status, payment.ReasonChargeNotFound)
	}
	book, failure := s.refundBook(ctx, charge)
	switch {
	case failure != "":
		return Fail, failure
	case book.Refunded != 0 || len(book.Refunds) > 0:
		return Fail, fmt.Sprintf("the lookup of the refunds of charge %q (?charge=), which the service never made, "+
			"holds %d refunded: the service must answer only the refunds of the charge asked", charge, book.Refunded)
	}
	return Pass, fmt.Sprintf("a refund of a charge the service never made was refused with %d (%s), "+
		"and the lookup of that charge holds no refunds", a.status, payment.ReasonChargeNotFound)
}

// checkRefundLookup: the lookup endpoint finds the refund just answered by
// its key (?key=), as the operator settles a pending refund, and lists it
// among the refunds of its charge (?charge=), with its amount, currency and
// fingerprint.
func checkRefundLookup(ctx context.Context, s *session) (Status, string) {
	if skip := s.refundSkip(); skip != "" {
		return Skip, skip
	}
	if s.looker == nil {
		return Skip, "Options.LookupURL (--lookup-url) is not set: the service has no lookup endpoint"
	}
	charge, failure := s.paidCharge(ctx, RuleRefundLookup)
	if failure != "" {
		return Fail, failure
	}
	key, req := s.key(RuleRefundLookup), s.refundRequest(charge, s.partial())
	a := s.refund(ctx, key, req, nil)
	if msg := notNewRefund(key, req, a); msg != "" {
		return Fail, msg
	}
	id := a.outcome.ID
	byKey, failure := s.refundByKey(ctx, key, id)
	switch {
	case failure != "":
		return Fail, failure
	case byKey.Amount != req.Amount || byKey.Currency != req.Currency:
		return Fail, fmt.Sprintf("the lookup of key %q (?key=) holds refund %q of %d %s, but %d %s was refunded: "+
			"the service must answer the amount and currency refunded", key, id, byKey.Amount, byKey.Currency, req.Amount, req.Currency)
	}
	failure, note := s.listedWithItsCharge(ctx, key, id, req)
	if failure != "" {
		return Fail, failure
	}
	return Pass, fmt.Sprintf("found refund %q by its key, and among the refunds of its charge%s", id, note)
}

// listedWithItsCharge checks that the lookup of req's charge (?charge=)
// lists the refund id made under key, as it was answered, and no other. It
// returns a failure message, or "" and a note for the message of a pass.
func (s *session) listedWithItsCharge(ctx context.Context, key, id string, req payment.RefundRequest) (failure, note string) {
	book, failure := s.refundBook(ctx, req.Charge)
	if failure != "" {
		return failure, ""
	}
	what := fmt.Sprintf("the lookup of the refunds of charge %q (?charge=)", req.Charge)
	found := book.Refunds[key]
	if len(found) != 1 || found[0].ID != id {
		return fmt.Sprintf("%s holds %d refunds under key %q right after refund %q was answered, not that one: the service "+
			`must list every refund of the charge in "refunds", under the key it was made under`, what, len(found), key, id), ""
	}
	f, fingerprint := found[0], payment.RefundHash(key, req)
	switch {
	case f.State != payment.StateSucceeded:
		return fmt.Sprintf("%s holds refund %q with status %q, not succeeded, where the refund answered succeeded: %s",
			what, id, f.Status, refundStatusAdvice), ""
	case f.Amount != req.Amount || f.Currency != req.Currency:
		return fmt.Sprintf("%s holds refund %q of %d %s, but %d %s was refunded: the service must answer the amount "+
			"and currency refunded", what, id, f.Amount, f.Currency, req.Amount, req.Currency), ""
	case f.Fingerprint != "" && f.Fingerprint != fingerprint:
		return fmt.Sprintf("%s holds refund %q with fingerprint %q, not the %q sent: the service must store the "+
			"refund's fingerprint with it and answer it unchanged", what, id, f.Fingerprint, fingerprint), ""
	case book.Refunded != req.Amount:
		return fmt.Sprintf("%s holds %d refunded of the charge, where only refund %q of %d was made: the service must "+
			"count every refund of the charge that succeeded or is pending, and nothing else", what, book.Refunded, id, req.Amount), ""
	}
	if book.Charge.Key == "" {
		// The operator sends a refund only for a charge the provider holds
		// under the refunded payment's own key.
		return fmt.Sprintf(`%s lists no charge %q with the idempotency key it was made under in "charges": the operator `+
			"refunds only a charge the service shows under the payment's own key, so every refund would wait "+
			"(ChargeUnverified)", what, req.Charge), ""
	}
	if f.Fingerprint == "" {
		note += "; without a fingerprint (store it: the operator then compares amount and currency only)"
	}
	return "", note
}

// notNewRefund returns a failure message unless a, the first answer under
// key to the refund req, is a refund that is not marked as a replay.
func notNewRefund(key string, req payment.RefundRequest, a answer) string {
	switch {
	case !a.charged() && a.status >= 200 && a.status <= 299:
		return fmt.Sprintf("the first refund under key %q was answered %s", key, a)
	case !a.charged():
		return fmt.Sprintf("the first refund under key %q, of %d of charge %q, was answered %s, not a refund", key,
			req.Amount, req.Charge, a)
	case a.outcome.Replayed:
		return fmt.Sprintf("the first refund under key %q was answered %s: a new refund must not be marked as a replay", key, a)
	}
	return ""
}

// notRefusedWith returns a failure message, starting with what, unless a
// refuses the refund (402, 400, or a 2xx with a failed status) with reason.
func notRefusedWith(reason, what string, a answer) string {
	r, refused := payment.IsRefusal(a.err)
	must := fmt.Sprintf("the service must refuse it with 402 Payment Required and the reason %q", reason)
	switch {
	case a.charged():
		return fmt.Sprintf("%s was refunded: answered %s; %s", what, a, must)
	case !refused || errors.Is(r, payment.ErrKeyReused):
		return fmt.Sprintf("%s was answered %s, not a refusal; %s", what, a, must)
	case r.Reason != reason:
		said := "without a reason"
		if raw := rawReason(a.body); raw != "" {
			said = fmt.Sprintf("with the reason %q", raw)
		}
		return fmt.Sprintf("%s was refused %s (%d): the service must give the reason %q, so that the operator reports "+
			"the same reason whatever the service", what, said, a.status, reason)
	}
	return ""
}

// rawReason is the reason of an error body, "" when it has none.
func rawReason(body []byte) string {
	var b struct {
		Reason string `json:"reason"`
	}
	if json.Unmarshal(body, &b) != nil {
		return ""
	}
	return strings.TrimSpace(b.Reason)
}
