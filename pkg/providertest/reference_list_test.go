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

package providertest_test

import (
	"net/http"
	"slices"
	"strconv"
	"testing"

	"github.com/idempotency-dev/paymentjob-operator/pkg/providertest"
)

// The reference service's list endpoint, written from docs/providers.md,
// "The list endpoint": the charges or refunds created in [createdFrom,
// createdTo), newest first, limit a page, the cursor being the id of the
// last object answered. Its switches break it on purpose, each in one way
// a list rule checks.

// refListSwitches break the reference service's list.
type refListSwitches struct {
	// ignoreLimit answers the whole window on one page.
	ignoreLimit bool
	// cursorInclusive starts the next page at the cursor's object, which
	// is then listed twice.
	cursorInclusive bool
	// toInclusive lists what was created at createdTo too.
	toInclusive bool
	// anyKind lists charges whatever kind names.
	anyKind bool
}

// refListed is one object of a list answer.
type refListed struct {
	ID       string `json:"id"`
	Key      string `json:"idempotencyKey"`
	Status   string `json:"status"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	Created  int64  `json:"created"`
	Charge   string `json:"charge,omitempty"`
}

// list answers a page of a list.
func (s *refService) list(w http.ResponseWriter, r *http.Request) {
	q, sw := r.URL.Query(), s.lists
	from, errFrom := strconv.ParseInt(q.Get("createdFrom"), 10, 64)
	to, errTo := strconv.ParseInt(q.Get("createdTo"), 10, 64)
	limit, errLimit := strconv.Atoi(q.Get("limit"))
	kind := q.Get("kind")
	if sw.anyKind && kind != "refunds" {
		kind = "charges"
	}
	if errFrom != nil || errTo != nil || errLimit != nil || limit < 1 || limit > 100 || (kind != "charges" && kind != "refunds") {
		refError(w, http.StatusBadRequest, "InvalidRequest", "kind, createdFrom, createdTo and limit are required")
		return
	}
	in := func(created int64) bool {
		return created >= from && (created < to || (sw.toInclusive && created == to))
	}

	s.mu.Lock()
	var all []refListed
	if kind == "charges" {
		for _, c := range s.charges {
			if in(c.Created) {
				all = append(all, refListed{c.ID, c.Key, c.Status, c.Amount, c.Currency, c.Created, ""})
			}
		}
	} else {
		for _, rf := range s.refunded {
			if in(rf.Created) {
				all = append(all, refListed{rf.ID, rf.Key, rf.Status, rf.Amount, rf.Currency, rf.Created, rf.Charge})
			}
		}
	}
	s.mu.Unlock()
	slices.Reverse(all)

	start := 0
	if after := q.Get("after"); after != "" {
		i := slices.IndexFunc(all, func(l refListed) bool { return l.ID == after })
		if i < 0 {
			refError(w, http.StatusBadRequest, "InvalidRequest", "unknown cursor")
			return
		}
		start = i + 1
		if sw.cursorInclusive {
			start = i
		}
	}
	page, next := all[start:], ""
	if len(page) > limit && !sw.ignoreLimit {
		page, next = page[:limit], page[limit-1].ID
	}
	refJSON(w, http.StatusOK, map[string]any{"account": "acct_ref", "data": append([]refListed{}, page...), "next": next})
}

// groupOf returns the refund rules, the list rules, or the pending or the
// events rule alone, when rule is one of them; nil otherwise.
func groupOf(rule string) []string {
	for _, group := range [][]string{refundRules, listRules, {providertest.RulePending}, {providertest.RuleEvents}} {
		if slices.Contains(group, rule) {
			return group
		}
	}
	return nil
}

// listBroken returns the Options of a reference service whose list is
// broken by sw.
func listBroken(sw refListSwitches) func(t *testing.T) providertest.Options {
	return func(t *testing.T) providertest.Options { return refOptions(t, &refService{lists: sw}) }
}
