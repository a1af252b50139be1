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
	"strings"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// This file holds the rule of docs/providers.md, "Answers": a charge the
// service accepted and settles later (status processing, a bank debit) is
// one payment until it settles. It runs only with Options.Pending: a
// service that has no such payment method skips it.

// DefaultPendingWithin bounds how long the pending rule waits for a
// processing payment to settle when Pending.Within is zero.
const DefaultPendingWithin = 30 * time.Second

// Pending says how to make the service accept a charge as processing (a
// bank debit) and decide it later, for the pending rule.
type Pending struct {
	// PaymentMethod is a payment method the service answers processing and
	// later settles (succeeded). Required. The sandbox: "pm_success_de".
	PaymentMethod string
	// FailingPaymentMethod, when set, is one the service answers processing
	// and later fails, as a debit the bank returns; the rule then checks
	// that the failure is a refusal with a reason. The sandbox:
	// "pm_insufficientFunds_de".
	FailingPaymentMethod string
	// Settle, when set, makes the service decide the processing payments
	// now (a test hook); the rule calls it once it has seen them
	// processing. Without it the rule waits for the service to decide.
	Settle func()
	// Within bounds how long the rule waits for a payment to settle after
	// Settle; DefaultPendingWithin when zero.
	Within time.Duration
}

// pendingSkip is the message of the pending rule's skip.
const pendingSkip = "Options.Pending (--pending-payment-method) is not set: the service was not asked for " +
	"a payment that settles later (a bank debit); the rule was not run"

// checkPending: a charge answered processing is one payment. The same
// request sent again is answered processing with the same id (never a
// second payment), the lookup holds it processing under the key, and once
// the service decides it, the retry and the lookup say succeeded with that
// id (or, for Pending.FailingPaymentMethod, a refusal with a reason).
func checkPending(ctx context.Context, s *session) (Status, string) {
	p := s.opts.Pending
	if p == nil {
		return Skip, pendingSkip
	}
	type started struct {
		key string
		req payment.ChargeRequest
		id  string
	}
	methods := []string{p.PaymentMethod}
	if p.FailingPaymentMethod != "" {
		methods = append(methods, p.FailingPaymentMethod)
	}
	var runs []started
	for _, pm := range methods {
		key, req := s.key(RulePending), s.request(pm)
		id, failure := s.processing(ctx, key, req)
		if failure != "" {
			return Fail, failure
		}
		runs = append(runs, started{key, req, id})
	}
	if p.Settle != nil {
		p.Settle()
	}
	var notes []string
	for i, r := range runs {
		final, failure := s.settled(ctx, r.key, r.req, r.id)
		if failure != "" {
			return Fail, failure
		}
		fails := i == 1
		switch {
		case !fails && !final.charged():
			return Fail, fmt.Sprintf("payment %q (payment method %q, key %q) ended with %s, not succeeded",
				r.id, r.req.PaymentMethod, r.key, describe(final))
		case fails && final.charged():
			return Fail, fmt.Sprintf("payment %q (Pending.FailingPaymentMethod %q, key %q) ended succeeded (%s), not failed",
				r.id, r.req.PaymentMethod, r.key, describe(final))
		case fails && serviceReason(final.body, r.id) == "":
			refusal, _ := payment.IsRefusal(final.err)
			notes = append(notes, fmt.Sprintf("%q failed, but the service gave no reason, so the operator reports %q: "+
				`give the bank's, such as "reason": "InsufficientFunds"`, r.id, refusal.Reason))
		case fails:
			notes = append(notes, fmt.Sprintf("%q failed with reason %q", r.id, serviceReason(final.body, r.id)))
		default:
			notes = append(notes, fmt.Sprintf("%q succeeded", r.id))
		}
		if failure, _ := s.onlyCharge(ctx, r.key, r.id); !fails && failure != "" {
			return Fail, "after it settled: " + failure
		}
	}
	note := ""
	if s.looker == nil {
		note = " (no lookup endpoint to check the lookup)"
	}
	return Pass, fmt.Sprintf("processing payments were answered the same on a retry and settled once: %s%s",
		strings.Join(notes, ", "), note)
}

// processing charges req under key and returns the id of the payment the
// service answers processing, after checking that a retry is answered
// processing with the same id and that the lookup holds it processing; or
// a failure message.
func (s *session) processing(ctx context.Context, key string, req payment.ChargeRequest) (id, failure string) {
	first := s.charge(ctx, key, req, nil)
	settling, ok := payment.IsSettling(first.err)
	if !ok {
		return "", fmt.Sprintf("the first request under key %q with Pending payment method %q was answered %s, "+
			`not a 2xx with status "processing" and an id: a payment accepted and settled later must say so`,
			key, req.PaymentMethod, describe(first))
	}
	id = settling.ID
	retry := s.charge(ctx, key, req, nil)
	if again, ok := payment.IsSettling(retry.err); !ok || again.ID != id {
		return "", fmt.Sprintf("the same request sent again under key %q, while payment %q was processing, was answered %s: "+
			"it must be answered processing with the same id, never as a second payment", key, id, describe(retry))
	}
	if s.looker == nil {
		return id, ""
	}
	found, failure := s.lookup(ctx, []string{key})
	if failure != "" {
		return "", failure
	}
	all := found[key]
	if len(all) != 1 || all[0].ID != id || all[0].State != payment.StatePending ||
		!strings.EqualFold(all[0].Status, "processing") {
		return "", fmt.Sprintf("the lookup of key %q, while payment %q was processing, holds %s: "+
			`it must hold that one payment with status "processing"`, key, id, describeFound(all))
	}
	return id, ""
}

// settled waits, within Pending.Within, until the service decides
// payment id and returns how the operator reads it then: by its id through
// the lookup endpoint (the operator's own read of a settling payment), or
// without one by the same request sent again. Every retry meanwhile must
// name payment id, processing or final; otherwise, or when it never
// settles, it returns a failure message.
func (s *session) settled(ctx context.Context, key string, req payment.ChargeRequest, id string) (answer, string) {
	within := s.opts.Pending.Within
	if within <= 0 {
		within = DefaultPendingWithin
	}
	deadline := time.Now().Add(within)
	wait := minRetryWait
	for {
		final := s.charge(ctx, key, req, nil)
		if msg := secondPayment(key, id, final); msg != "" {
			return final, msg
		}
		read := "the same request sent again"
		if s.looker != nil {
			read = "the lookup of the payment by its key"
			final = s.send(ctx, nil, func(ctx context.Context) (payment.Outcome, error) { return s.looker.Settle(ctx, key, id) })
		}
		_, processing := payment.IsSettling(final.err)
		switch {
		case final.charged() && final.outcome.ID != id:
			return final, fmt.Sprintf("after payment %q settled, %s under key %q found %s instead", id, read, key, describe(final))
		case !processing && !final.uncertain():
			return final, ""
		case time.Now().After(deadline):
			return final, fmt.Sprintf("payment %q under key %q was still %s by %s after %s: it did not settle "+
				"(does Pending.Settle decide it?); once decided, %s must say succeeded, or failed with a reason",
				id, key, describe(final), read, within, read)
		}
		select {
		case <-ctx.Done():
			return final, fmt.Sprintf("payment %q under key %q: %v", id, key, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, maxRetryWait)
	}
}

// secondPayment returns a failure message when a, an answer to the same
// request under key, names another payment than id, processing or charged.
func secondPayment(key, id string, a answer) string {
	if settling, ok := payment.IsSettling(a.err); ok && settling.ID != id {
		return fmt.Sprintf("the same request sent again under key %q was answered processing payment %q "+
			"instead of payment %q: a second payment", key, settling.ID, id)
	}
	if a.charged() && a.outcome.ID != id {
		return fmt.Sprintf("the same request sent again under key %q was answered %s: "+
			"a second payment instead of payment %q", key, describe(a), id)
	}
	return ""
}

// describe says what the service answered, as answer.String does, and
// names a processing payment as such: the operator waits for it.
func describe(a answer) string {
	if settling, ok := payment.IsSettling(a.err); ok {
		if a.status == 0 {
			return fmt.Sprintf("processing payment %q", settling.ID)
		}
		return fmt.Sprintf("%d with processing payment %q", a.status, settling.ID)
	}
	return a.String()
}

// describeFound lists charges found by the lookup, for a message.
func describeFound(found []payment.Found) string {
	if len(found) == 0 {
		return "no payment"
	}
	parts := make([]string, 0, len(found))
	for _, f := range found {
		parts = append(parts, fmt.Sprintf("%q (status %q)", f.ID, f.Status))
	}
	return strings.Join(parts, ", ")
}

// serviceReason is the reason the service gave for payment id in body, a
// charge answer or a lookup answer; "" when it gave none.
func serviceReason(body []byte, id string) string {
	var b struct {
		ID      string `json:"id"`
		Reason  string `json:"reason"`
		Charges []struct {
			ID     string `json:"id"`
			Reason string `json:"reason"`
		} `json:"charges"`
	}
	if json.Unmarshal(body, &b) != nil {
		return ""
	}
	for _, c := range b.Charges {
		if c.ID == id {
			return c.Reason
		}
	}
	if b.ID == id || b.ID == "" {
		return b.Reason
	}
	return ""
}
