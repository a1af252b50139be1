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
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// This file holds the rules of docs/providers.md, "The list endpoint": each
// charges first, then lists the charges (and refunds) of a window with the
// operator's own client, listLimit a page. They are skipped without
// Options.ListURL. Each returns the status and message of its Result.

// listCharges is how many charges the window rule makes: more than one
// page of listLimit.
const listCharges = 3

// checkListWindow: the charges the rule made, and a refund of one when the
// service refunds, are each listed exactly once in a window around them,
// walked listLimit a page.
func checkListWindow(ctx context.Context, s *session) (Status, string) {
	if skip := s.listSkip(); skip != "" {
		return Skip, skip
	}
	var charges, refunds []payment.Listed
	for range listCharges {
		key, req := s.key(RuleListWindow), s.succeeding()
		a := s.charge(ctx, key, req, nil)
		if msg := notNewCharge(key, req.PaymentMethod, a); msg != "" {
			return Fail, "before any list, " + msg
		}
		charges = append(charges, payment.Listed{ID: a.outcome.ID, Key: key, Amount: req.Amount, Currency: req.Currency})
	}
	if s.refunder != nil {
		key, req := s.key(RuleListWindow), s.refundRequest(charges[0].ID, s.partial())
		a := s.refund(ctx, key, req, nil)
		if msg := notNewRefund(key, req, a); msg != "" {
			return Fail, "before any list, " + msg
		}
		refunds = append(refunds, payment.Listed{ID: a.outcome.ID, Key: key, Amount: req.Amount, Currency: req.Currency,
			Charge: req.Charge})
	}

	now := time.Now()
	from, to := now.Add(-listMargin), now.Add(listMargin)
	note := ""
	for _, kind := range []payment.ListKind{payment.KindCharges, payment.KindRefunds} {
		made := charges
		if kind == payment.KindRefunds {
			made = refunds
		}
		if len(made) == 0 {
			continue
		}
		listed, failure := s.walk(ctx, kind, from, to)
		if failure != "" {
			return Fail, failure
		}
		what := fmt.Sprintf("the list of %s created from %d to %d", kind, from.Unix(), to.Unix())
		failure, n := listedOnce(what, kind, listed, made)
		if failure != "" {
			return Fail, failure
		}
		note += n
	}
	made := fmt.Sprintf("the %d charges", len(charges))
	if len(refunds) > 0 {
		made += " and the refund"
	}
	return Pass, fmt.Sprintf("%s the rule made were each listed once in a window around them, walked %d a page%s",
		made, listLimit, note)
}

// checkListWindowEnd: a window that ends at the first of the run's charges,
// by the service's clock, holds none of them (createdTo is exclusive), and
// the window of the second a charge was created holds it (createdFrom is
// inclusive).
func checkListWindowEnd(ctx context.Context, s *session) (Status, string) {
	if skip := s.listSkip(); skip != "" {
		return Skip, skip
	}
	key, req := s.key(RuleListWindowEnd), s.succeeding()
	a := s.charge(ctx, key, req, nil)
	if msg := notNewCharge(key, req.PaymentMethod, a); msg != "" {
		return Fail, "before any list, " + msg
	}
	id := a.outcome.ID
	now := time.Now()
	around, failure := s.walk(ctx, payment.KindCharges, now.Add(-listMargin), now.Add(listMargin))
	if failure != "" {
		return Fail, failure
	}
	made := payment.Listed{ID: id, Key: key, Amount: req.Amount, Currency: req.Currency}
	what := fmt.Sprintf("the list of charges created from %d to %d", now.Add(-listMargin).Unix(), now.Add(listMargin).Unix())
	if failure, _ := listedOnce(what, payment.KindCharges, around, []payment.Listed{made}); failure != "" {
		return Fail, failure
	}

	// The run's charges: this one, and those the service lists under a
	// key of the run.
	ours, first := map[string]bool{id: true}, payment.Listed{}
	for _, l := range around {
		if l.ID == id || strings.HasPrefix(l.Key, s.opts.KeyPrefix) {
			ours[l.ID] = true
			if !l.Created.IsZero() && (first.ID == "" || l.Created.Before(first.Created)) {
				first = l
			}
		}
	}
	before, failure := s.walk(ctx, payment.KindCharges, first.Created.Add(-listMargin), first.Created)
	if failure != "" {
		return Fail, failure
	}
	for _, l := range before {
		if ours[l.ID] {
			return Fail, fmt.Sprintf("the list of charges created from %d to %d, which ends at the run's first charge "+
				"(%q, created %d), holds the run's charge %q, created %d: createdTo is exclusive, and the service must list "+
				"only what it created at createdFrom or later and before createdTo", first.Created.Add(-listMargin).Unix(),
				first.Created.Unix(), first.ID, first.Created.Unix(), l.ID, l.Created.Unix())
		}
	}

	var created time.Time
	for _, l := range around {
		if l.ID == id {
			created = l.Created
		}
	}
	at, failure := s.walk(ctx, payment.KindCharges, created, created.Add(time.Second))
	if failure != "" {
		return Fail, failure
	}
	if failure, _ := listedOnce(fmt.Sprintf("the list of the second charge %q was created in (createdFrom=%d, createdTo=%d)",
		id, created.Unix(), created.Unix()+1), payment.KindCharges, at, []payment.Listed{made}); failure != "" {
		return Fail, failure + "; createdFrom is inclusive"
	}
	return Pass, fmt.Sprintf("a window that ends at the run's first charge holds none of the %d charges of the run the "+
		"service listed; the window of the second a charge was created holds it", len(ours))
}

// checkListBadParameter: a list with a kind the contract does not name,
// or a createdFrom that is not unix seconds, is refused with a status other
// than 2xx: answered as a window, it would read as one without charges.
func checkListBadParameter(ctx context.Context, s *session) (Status, string) {
	if skip := s.listSkip(); skip != "" {
		return Skip, skip
	}
	now := time.Now()
	req := payment.ListRequest{Kind: payment.KindCharges, From: now.Add(-listMargin), To: now.Add(listMargin)}
	var codes []int
	for _, bad := range []url.Values{{"kind": {"everything"}}, {"createdFrom": {"yesterday"}}} {
		_, x, err := s.listPage(ctx, req, bad)
		switch {
		case x.status == 0:
			return Fail, fmt.Sprintf("a list with %s got no answer (%v)", bad.Encode(), err)
		case x.status >= http.StatusOK && x.status <= 299:
			return Fail, fmt.Sprintf("a list with %s was answered %d: the service must refuse a parameter it does not "+
				"understand with 400, never answer it as a window, which would read as one without charges", bad.Encode(), x.status)
		}
		codes = append(codes, x.status)
	}
	return Pass, fmt.Sprintf("a list with kind=everything was refused with %d, one with createdFrom=yesterday with %d",
		codes[0], codes[1])
}
