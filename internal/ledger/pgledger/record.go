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

package pgledger

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
)

// Group commit: Record hands its entry to the newest batch of the queue and
// waits; one goroutine, the flusher, inserts the oldest batch with one
// statement while the next one fills.

// insertQuery inserts a batch of entries, given as one array per column,
// and keeps what is stored under a key already: first outcome wins. It
// returns the keys it inserted; the rows of the others are read after it.
const insertQuery = `INSERT INTO paymentjob_outcomes (key, fingerprint, provider_uid, provider_endpoint,
	provider_account, provider_mode, provider_key_scope, charge, outcome, reason, resolved_by, at, amount, currency,
	refunded_charge, cluster)
SELECT e.*, $16 FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
	$8::text[], $9::text[], $10::text[], $11::text[], $12::timestamptz[], $13::bigint[], $14::text[], $15::text[]) AS e
ON CONFLICT (key) DO NOTHING
RETURNING key`

// Record stores e and returns once it is stored, or once an entry under its
// key is stored: the first outcome stays, and Record returns nil when it is
// e's (ledger.Entry.SameOutcome: recorded again) and a
// *ledger.ConflictError holding it when it is another. Concurrent calls
// share one statement (and a second one, reading the rows kept, when a key
// was recorded already). A ctx that ends returns ctx.Err() at once, and leaves the
// statement to go on without this caller: the entry may still be stored.
// A read-only ledger (Options.ReadOnly) returns ErrReadOnly.
func (l *Ledger) Record(ctx context.Context, e ledger.Entry) error {
	if l.opts.ReadOnly {
		return ErrReadOnly
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	if n := len(l.queue); n == 0 || len(l.queue[n-1].Entries) >= l.opts.MaxBatch {
		l.queue = append(l.queue, ledger.NewBatch())
	}
	b := l.queue[len(l.queue)-1]
	b.Entries = append(b.Entries, e)
	l.mu.Unlock()
	return b.Wait(ctx, l.kick, e)
}

// flush is the flusher: it inserts the queued batches, one statement each,
// until Close, and then what is queued still.
func (l *Ledger) flush() {
	defer close(l.flushed)
	for {
		select {
		case <-l.kick:
			l.drain()
		case <-l.stop:
			l.drain()
			return
		}
	}
}

// drain inserts the queued batches, oldest first.
func (l *Ledger) drain() {
	for {
		l.mu.Lock()
		if len(l.queue) == 0 {
			l.mu.Unlock()
			return
		}
		b := l.queue[0]
		l.queue[0] = nil
		l.queue = l.queue[1:]
		l.mu.Unlock()
		// A statement of its own context: no caller's end cancels what
		// the others wait for.
		b.Finish(l.insert(context.Background(), b.Entries))
	}
}

// insert stores entries with one statement, and returns the entry the
// table holds under each of their keys: the one inserted, or the one found
// there, read with a second statement. A key whose row is found neither
// way (inserted by another process, then pruned) is inserted again.
func (l *Ledger) insert(ctx context.Context, entries []ledger.Entry) (map[string]ledger.Entry, error) {
	entries = firstPerKey(entries)
	held := make(map[string]ledger.Entry, len(entries))
	for range insertRounds {
		inserted, err := l.insertOnce(ctx, entries)
		if err != nil {
			return nil, err
		}
		var kept []string
		for _, e := range entries {
			if inserted[e.Key] {
				held[e.Key] = e
			} else {
				kept = append(kept, e.Key)
			}
		}
		if len(kept) == 0 {
			return held, nil
		}
		found, err := l.findAll(ctx, kept)
		if err != nil {
			return nil, err
		}
		var again []ledger.Entry
		for _, e := range entries {
			if h, ok := found[e.Key]; ok {
				held[e.Key] = h
			} else if !inserted[e.Key] {
				again = append(again, e)
			}
		}
		if len(again) == 0 {
			return held, nil
		}
		entries = again
	}
	return nil, fmt.Errorf("cannot record outcomes in the ledger: %d keys were neither inserted nor found after %d rounds",
		len(entries), insertRounds)
}

// insertRounds bounds the rounds of insert.
const insertRounds = 3

// insertOnce inserts entries, each of another key, with one statement and
// returns the keys it inserted.
func (l *Ledger) insertOnce(ctx context.Context, entries []ledger.Entry) (map[string]bool, error) {
	n := len(entries)
	keys, fingerprints, uids, endpoints := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	accounts, modes, scopes, charges := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	outcomes, reasons, resolvers, ats := make([]string, n), make([]string, n), make([]string, n), make([]time.Time, n)
	amounts, currencies, refunded := make([]int64, n), make([]string, n), make([]string, n)
	for i, e := range entries {
		keys[i], fingerprints[i], charges[i] = e.Key, e.Fingerprint, e.Charge
		uids[i], endpoints[i], accounts[i] = e.Provider.UID, e.Provider.Endpoint, e.Provider.Account
		modes[i], scopes[i] = e.Provider.Mode, e.Provider.KeyScope
		outcomes[i], reasons[i], resolvers[i], ats[i] = string(e.Outcome), e.Reason, e.ResolvedBy, e.At
		amounts[i], currencies[i], refunded[i] = e.Amount, e.Currency, e.RefundedCharge
	}
	inserted, err := collect(ctx, l, pgx.RowTo[string], insertQuery, keys, fingerprints, uids, endpoints, accounts, modes, scopes,
		charges, outcomes, reasons, resolvers, ats, amounts, currencies, refunded, l.opts.Cluster)
	if err != nil {
		return nil, wrapErr("record outcomes in the ledger", err)
	}
	set := make(map[string]bool, len(inserted))
	for _, k := range inserted {
		set[k] = true
	}
	return set, nil
}

// firstPerKey keeps the first entry of each key (first outcome wins within
// a batch too), sorted by key: two processes inserting overlapping batches
// then take the keys' locks in the same order, and cannot deadlock.
func firstPerKey(entries []ledger.Entry) []ledger.Entry {
	sorted := slices.Clone(entries)
	slices.SortStableFunc(sorted, func(a, b ledger.Entry) int { return cmp.Compare(a.Key, b.Key) })
	return slices.CompactFunc(sorted, func(a, b ledger.Entry) bool { return a.Key == b.Key })
}
