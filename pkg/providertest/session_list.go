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
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// This file is the harness of the list rules: a page is read with the
// operator's own client, as a charge is (session.go), through the
// recorder, which asks for listLimit objects a page instead of the
// operator's 100, so that a few charges are enough to walk several pages.

const (
	// listLimit is the page size the list rules ask for.
	listLimit = 2
	// maxListPages bounds a walk: a window of the run holds a few charges,
	// unless the test account is busy.
	maxListPages = 500
	// listMargin widens a window around the run's charges by the run's
	// clock, so that the service's clock may be off by as much.
	listMargin = time.Hour
)

// listSkip is the message of a list rule's skip, "" when the service has a
// list endpoint.
func (s *session) listSkip() string {
	if s.lister == nil {
		return "Options.ListURL (--list-url) is not set: the service has no list endpoint"
	}
	return ""
}

// listPage reads one page of req with the operator's client, the
// parameters of query replacing the operator's; x is the raw answer.
func (s *session) listPage(ctx context.Context, req payment.ListRequest, query url.Values) (payment.ListPage, *exchange, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	x := &exchange{query: query}
	page, err := s.lister.List(context.WithValue(ctx, exchangeKey{}, x), req)
	return page, x, err
}

// walk lists every object of kind created in [from, to), listLimit a page,
// following next to the last page, and returns them in order; failure says
// what the service must change when a page is not the contract's.
func (s *session) walk(ctx context.Context, kind payment.ListKind, from, to time.Time) (listed []payment.Listed, failure string) {
	req := payment.ListRequest{Kind: kind, From: from, To: to}
	onPage := map[string]int{}
	limit := url.Values{"limit": {strconv.Itoa(listLimit)}}
	for n := 1; ; n++ {
		what := fmt.Sprintf("page %d of the list of %s (?kind=%s&createdFrom=%d&createdTo=%d&limit=%d)",
			n, kind, kind, from.Unix(), to.Unix(), listLimit)
		if n > maxListPages {
			return nil, fmt.Sprintf("%s: the window still has more after %d pages; point the run at a test account "+
				"that holds fewer objects, or at a service whose next cursor moves on", what, maxListPages)
		}
		page, x, err := s.listPage(ctx, req, limit)
		if err != nil {
			return nil, listAdvice(what, x, err)
		}
		if len(page.Objects) > listLimit {
			return nil, fmt.Sprintf("%s holds %d %s, more than limit=%d: the service must answer at most limit items a page",
				what, len(page.Objects), kind, listLimit)
		}
		for _, o := range page.Objects {
			if first, ok := onPage[o.ID]; ok {
				return nil, fmt.Sprintf("%s lists %q again, already listed on page %d: every object of a window must be on "+
					"exactly one page; the next cursor must start after the last object answered", what, o.ID, first)
			}
			onPage[o.ID] = n
		}
		listed = append(listed, page.Objects...)
		if page.Next == "" {
			return listed, ""
		}
		req.After = page.Next
	}
}

// listAdvice explains a page of a list, said by what, whose raw answer x
// the operator could not use (err), and says what the service must change.
func listAdvice(what string, x *exchange, err error) string {
	said := serviceSaid(x.body)
	switch {
	case x.status == 0:
		return fmt.Sprintf("%s got no answer (%v)", what, err)
	case x.status == http.StatusUnauthorized || x.status == http.StatusForbidden:
		return fmt.Sprintf("%s was answered %d%s: the service must accept the token it accepts for charges "+
			"(Options.Token, --token-file) for lists too", what, x.status, said)
	case x.status >= 300 && x.status <= 399:
		return fmt.Sprintf("%s was answered %d, a redirect to %q: the operator never follows a redirect; the list "+
			"endpoint must answer at its own url", what, x.status, x.header.Get("Location"))
	case x.status != http.StatusOK:
		return fmt.Sprintf("%s was answered %d%s: the service must answer every list of a valid window with 200 and "+
			`{"data": [...], "next": "..."}, and a window without objects with an empty data array, never 404 `+
			"(if the list endpoint is at another url, set Options.ListURL, --list-url)", what, x.status, said)
	}
	cause := err
	var t *payment.TransientError
	if errors.As(err, &t) && t.Err != nil {
		cause = t.Err
	}
	return fmt.Sprintf(`%s was answered 200 that the operator cannot read (%s): the service must answer {"data": [...], `+
		`"next": "..."} whose every item has "id", "status", "amount", "currency" and "created" (a refund "charge" too), `+
		`and a "next" that moves on, empty on the last page`, what,
		strings.TrimPrefix(cause.Error(), "payment service's list endpoint answered "))
}

// listedOnce checks that listed, a walk of what, holds each of made, the
// objects the rule made of kind, once, as they were made: amount,
// currency, a succeeded status, a created time, the key when the service
// lists keys, and a refund's charge. It returns a failure message, or ""
// and a note for the message of a pass.
func listedOnce(what string, kind payment.ListKind, listed, made []payment.Listed) (failure, note string) {
	byID := make(map[string]payment.Listed, len(listed))
	for _, l := range listed {
		byID[l.ID] = l
	}
	for _, m := range made {
		l, ok := byID[m.ID]
		switch {
		case !ok:
			return fmt.Sprintf("%s holds no %q, made under key %q just before: the service must list every object "+
				"created in the window", what, m.ID, m.Key), ""
		case l.Amount != m.Amount || l.Currency != m.Currency:
			return fmt.Sprintf("%s holds %q of %d %s, where %d %s was made: the service must list the amount and currency "+
				"made", what, m.ID, l.Amount, l.Currency, m.Amount, m.Currency), ""
		case l.State != payment.StateSucceeded:
			advice := statusAdvice
			if kind == payment.KindRefunds {
				advice = refundStatusAdvice
			}
			return fmt.Sprintf("%s holds %q with status %q, where it succeeded: %s", what, m.ID, l.Status, advice), ""
		case l.Created.IsZero():
			return fmt.Sprintf(`%s holds %q without "created": the service must list when it created each object, `+
				"unix seconds or an RFC 3339 time", what, m.ID), ""
		case l.Key != "" && l.Key != m.Key:
			return fmt.Sprintf("%s holds %q under the key %q, where it was made under %q: the service must list the key "+
				"exactly as sent in the Idempotency-Key header", what, m.ID, l.Key, m.Key), ""
		case l.Charge != m.Charge:
			return fmt.Sprintf(`%s holds refund %q of the charge %q, where it refunded %q: the service must name in "charge" `+
				"the charge a refund refunds", what, m.ID, l.Charge, m.Charge), ""
		case l.Key == "":
			note = `; without "idempotencyKey" (list it: the operator then tells its own charges from the others)`
		}
	}
	return "", note
}
