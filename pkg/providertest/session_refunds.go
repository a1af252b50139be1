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
	"slices"
	"strings"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// This file is the harness of the refund rules: a refund is sent with the
// operator's own client, as a charge is (session.go), and what the service
// holds on a charge is read with the operator's own lookups: ?charge=,
// which it sends before a refund's first attempt, and ?key=, with which it
// settles a pending refund.

// refundReason is the reason of every refund the rules send.
const refundReason = "requested_by_customer"

// refundSkip is the message of a refund rule's skip, "" when the service
// has a refund endpoint.
func (s *session) refundSkip() string {
	if s.refunder == nil {
		return "Options.RefundURL (--refund-url) is not set: the service has no refund endpoint"
	}
	return ""
}

// paidCharge charges the succeeding request under a new key of the rule
// named rule, and returns the charge's id or a failure message.
func (s *session) paidCharge(ctx context.Context, rule string) (id, failure string) {
	key, req := s.key(rule), s.succeeding()
	a := s.charge(ctx, key, req, nil)
	if msg := notNewCharge(key, req.PaymentMethod, a); msg != "" {
		return "", "before any refund, " + msg
	}
	return a.outcome.ID, ""
}

// refundRequest is the rules' refund of amount of charge.
func (s *session) refundRequest(charge string, amount int64) payment.RefundRequest {
	return payment.RefundRequest{Charge: charge, Amount: amount, Currency: s.opts.Currency, Reason: refundReason}
}

// partial is the amount of a partial refund of one of the rules' charges:
// half of it, at least 1.
func (s *session) partial() int64 { return max(s.opts.Amount/2, 1) }

// refund sends req under key to the refund endpoint and returns the
// answer, within the request timeout; x may ask the transport to tamper.
func (s *session) refund(ctx context.Context, key string, req payment.RefundRequest, x *exchange) answer {
	a := s.send(ctx, x, func(ctx context.Context) (payment.Outcome, error) { return s.refunder.Refund(ctx, key, req) })
	a.refund = true
	return a
}

// refundUntilFinal sends req under key until the operator would stop
// retrying, as chargeUntilFinal does.
func (s *session) refundUntilFinal(ctx context.Context, key string, req payment.RefundRequest) answer {
	return untilFinal(ctx, func() answer { return s.refund(ctx, key, req, nil) })
}

// refundBook reads what the service holds on charge with the operator's
// lookup of ?charge=; failure says what the service must change when the
// operator cannot use the answer, "" otherwise.
func (s *session) refundBook(ctx context.Context, charge string) (book payment.RefundBook, failure string) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	x := &exchange{}
	book, err := s.looker.LookupRefunds(context.WithValue(ctx, exchangeKey{}, x), charge)
	if err != nil {
		return book, refundLookupAdvice(fmt.Sprintf("the lookup of the refunds of charge %q (?charge=)", charge), x, err)
	}
	return book, ""
}

// refundByKey reads the refund id made under key with the operator's
// lookup of ?key=, until it is final, as the operator settles a pending
// refund; failure is as for refundBook.
func (s *session) refundByKey(ctx context.Context, key, id string) (out payment.Outcome, failure string) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	x := &exchange{}
	out, err := s.looker.SettleRefund(context.WithValue(ctx, exchangeKey{}, x), key, id)
	what := fmt.Sprintf("the lookup of key %q (?key=)", key)
	switch {
	case err == nil:
		return out, ""
	case x.status == http.StatusOK && hasRefunds(x.body) && !listsRefund(x.body, key, id):
		return out, fmt.Sprintf(`%s holds no refund %q under the key right after it was answered: the service must list, `+
			`in "refunds", every refund made under an asked key, with the key exactly as sent in the Idempotency-Key header`, what, id)
	}
	if _, refused := payment.IsRefusal(err); refused {
		return out, fmt.Sprintf("%s holds refund %q as one that gave no money back (%v), where the refund endpoint "+
			"answered that it succeeded: %s", what, id, err, refundStatusAdvice)
	}
	return out, refundLookupAdvice(what, x, err)
}

// listsRefund reports whether the lookup answer body lists the refund id
// under key.
func listsRefund(body []byte, key, id string) bool {
	var b struct {
		Refunds []struct {
			Key string `json:"idempotencyKey"`
			ID  string `json:"id"`
		} `json:"refunds"`
	}
	if json.Unmarshal(body, &b) != nil {
		return false
	}
	for _, r := range b.Refunds {
		if r.Key == key && r.ID == id {
			return true
		}
	}
	return false
}

// onlyRefund checks with the lookup, when there is one, that the refund id
// of amount, made under key, is the only refund of charge: the only one
// under key that gave money back or may still, and all that the lookup
// holds refunded of the charge. It returns a failure message, or "" and a
// note for the message of a pass.
func (s *session) onlyRefund(ctx context.Context, charge, key, id string, amount int64) (failure, note string) {
	if s.looker == nil {
		return "", " (no lookup endpoint to count the refunds)"
	}
	book, failure := s.refundBook(ctx, charge)
	if failure != "" {
		return failure, ""
	}
	var ids []string
	for _, f := range book.Refunds[key] {
		if f.State != payment.StateNotCharged {
			ids = append(ids, fmt.Sprintf("%q (%s)", f.ID, f.Status))
		}
	}
	slices.Sort(ids)
	what := fmt.Sprintf("the lookup of the refunds of charge %q (?charge=)", charge)
	switch {
	case len(ids) != 1 || !strings.HasPrefix(ids[0], fmt.Sprintf("%q ", id)):
		return fmt.Sprintf("%s holds %d refunds under key %q, [%s], where only %q was answered: the service must save "+
			"the key with the refund, in one transaction, and answer every retry under it with that refund",
			what, len(ids), key, strings.Join(ids, ", "), id), ""
	case book.Refunded != amount:
		return fmt.Sprintf("%s holds %d refunded of the charge, where only refund %q of %d was made: the service must "+
			"list every refund of the charge, and refund nothing but what it answers", what, book.Refunded, id, amount), ""
	}
	return "", "; the lookup holds that one refund of the charge"
}
