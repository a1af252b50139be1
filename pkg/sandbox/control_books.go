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

package sandbox

import (
	"cmp"
	"maps"
	"net/http"
	"slices"
)

// Books are the Engine's whole books at one moment: every PaymentIntent
// and refund with the idempotency key it was created with, and the
// counters. GET /_sandbox/books answers them, so that a test in another
// process (the process campaign) checks the provider's books whole, as an
// in-process test reads them with ListIntents, ListRefunds and Stats.
type Books struct {
	// Account is the account the Engine answers to.
	Account string
	// Intents are every PaymentIntent, oldest first.
	Intents []Intent
	// Refunds are every refund as it is now, oldest first.
	Refunds []Refund
	// Stats are the counters.
	Stats Stats
}

// Books returns the whole books, read under one lock: no request commits
// between the reads of the intents, the refunds and the counters. It
// counts no list.
func (e *Engine) Books() Books {
	e.lockSettled()
	defer e.mu.Unlock()
	b := Books{Account: e.account, Stats: e.stats,
		Intents: make([]Intent, 0, len(e.intents)), Refunds: make([]Refund, 0, len(e.refundOrder))}
	b.Stats.ChargesByKey = maps.Clone(e.stats.ChargesByKey)
	b.Stats.RefundsByKey = maps.Clone(e.stats.RefundsByKey)
	for _, in := range e.intents {
		b.Intents = append(b.Intents, in.clone())
	}
	slices.SortFunc(b.Intents, func(x, y Intent) int {
		return cmp.Or(x.Created.Compare(y.Created), cmp.Compare(x.ID, y.ID))
	})
	for _, id := range e.refundOrder {
		b.Refunds = append(b.Refunds, e.settleLocked(e.refunds[id]).clone())
	}
	return b
}

// getBooks answers the Engine's Books as its Go types marshal them (the
// field names of Books, Intent, Refund and Stats), which a client decodes
// into the same types.
func (s *server) getBooks(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.engine.Books())
}
