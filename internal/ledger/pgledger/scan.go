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
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
)

// Reading the ledger in bulk, for a copy to another backend and its
// verification: every entry in key order (Scan), the entries of many keys
// (FindAll), the keys that have none (Missing). Each is a statement per
// batch of at most scanBatch rows or keys, a round trip of its own.

// scanBatch bounds the rows one statement of Scan reads and the keys one
// statement of FindAll or Missing asks for.
const scanBatch = 1000

// entryColumns are the columns of an entry, in the order scanEntry reads.
const entryColumns = `key, fingerprint, provider_uid, provider_endpoint, provider_account, provider_mode,
	provider_key_scope, charge, outcome, reason, resolved_by, at, amount, currency, refunded_charge`

// Scan reads the rows after a key in key order, by the primary key's
// index: keyset pagination, so a batch costs the same at any depth.
const (
	scanFirstQuery = `SELECT ` + entryColumns + ` FROM paymentjob_outcomes ORDER BY key LIMIT $1`
	scanNextQuery  = `SELECT ` + entryColumns + ` FROM paymentjob_outcomes WHERE key > $1 ORDER BY key LIMIT $2`
)

// Scan hands every entry to fn in key order, reading scanBatch rows a
// statement, each statement after the last key the one before it read;
// fn runs between statements, so a slow fn holds no connection and counts
// against no Timeout. Memory holds one batch. An error of fn ends it and is
// returned. Rows inserted meanwhile are read when their key comes after the
// last one read.
func (l *Ledger) Scan(ctx context.Context, fn func(ledger.Entry) error) error {
	if l.isClosed() {
		return ErrClosed
	}
	return l.pages(ctx, fn, func(last *ledger.Entry) (string, []any) {
		if last == nil {
			return scanFirstQuery, []any{scanBatch}
		}
		return scanNextQuery, []any{last.Key, scanBatch}
	})
}

// pages hands every entry of a keyset pagination to fn, in order: query
// names the statement of the first batch (last nil) and of each after
// last, the last entry the one before read; a batch of fewer than
// scanBatch rows is the last. fn runs between statements; an error of fn
// ends it and is returned.
func (l *Ledger) pages(ctx context.Context, fn func(ledger.Entry) error, query func(last *ledger.Entry) (string, []any)) error {
	var last *ledger.Entry
	for {
		sql, args := query(last)
		batch, err := collect(ctx, l, scanEntry, sql, args...)
		if err != nil {
			return wrapErr("read the outcome ledger", err)
		}
		for _, e := range batch {
			if err := fn(e); err != nil {
				return err
			}
		}
		if len(batch) < scanBatch {
			return nil
		}
		last = &batch[len(batch)-1]
	}
}

// collect runs one statement, a round trip of its own under do's timeout
// and retries, and reads its rows with to.
func collect[T any](ctx context.Context, l *Ledger, to pgx.RowToFunc[T], sql string, args ...any) ([]T, error) {
	var rows []T
	err := l.do(ctx, func(ctx context.Context) error {
		r, err := l.pool.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		rows, err = pgx.CollectRows(r, to)
		return err
	})
	return rows, err
}

// scanEntry reads a row of entryColumns.
func scanEntry(row pgx.CollectableRow) (ledger.Entry, error) {
	var e ledger.Entry
	var outcome string
	err := row.Scan(&e.Key, &e.Fingerprint, &e.Provider.UID, &e.Provider.Endpoint, &e.Provider.Account,
		&e.Provider.Mode, &e.Provider.KeyScope, &e.Charge, &outcome, &e.Reason, &e.ResolvedBy, &e.At, &e.Amount, &e.Currency,
		&e.RefundedCharge)
	e.Outcome = paymentsv1alpha1.LedgerOutcome(outcome)
	e.At = e.At.UTC()
	return e, err
}

// FindAll returns the entries recorded under keys, by key; a key that is
// not recorded has none. It is Find for many keys: a statement per
// scanBatch keys.
func (l *Ledger) FindAll(ctx context.Context, keys []string) (map[string]ledger.Entry, error) {
	if l.isClosed() {
		return nil, ErrClosed
	}
	return l.findAll(ctx, keys)
}

// findAll is FindAll, also while Close drains what is queued: Record reads
// the rows its statement kept with it.
func (l *Ledger) findAll(ctx context.Context, keys []string) (map[string]ledger.Entry, error) {
	found := make(map[string]ledger.Entry, len(keys))
	for chunk := range slices.Chunk(keys, scanBatch) {
		batch, err := collect(ctx, l, scanEntry, `SELECT `+entryColumns+` FROM paymentjob_outcomes WHERE key = ANY($1)`, chunk)
		if err != nil {
			return nil, wrapErr("read the outcome ledger", err)
		}
		for _, e := range batch {
			found[e.Key] = e
		}
	}
	return found, nil
}

// Missing returns the keys of keys that have no entry, in the order given
// and each once: a statement per scanBatch keys, which reads the keys only.
func (l *Ledger) Missing(ctx context.Context, keys []string) ([]string, error) {
	if l.isClosed() {
		return nil, ErrClosed
	}
	var missing []string
	reported := map[string]bool{}
	for chunk := range slices.Chunk(keys, scanBatch) {
		present, err := collect(ctx, l, pgx.RowTo[string], `SELECT key FROM paymentjob_outcomes WHERE key = ANY($1)`, chunk)
		if err != nil {
			return nil, wrapErr("read the outcome ledger", err)
		}
		there := make(map[string]bool, len(present))
		for _, key := range present {
			there[key] = true
		}
		for _, key := range chunk {
			if !there[key] && !reported[key] {
				reported[key] = true
				missing = append(missing, key)
			}
		}
	}
	return missing, nil
}

// KeyScopes returns the provider key scopes (ProviderIdentity.KeyScope)
// the entries were recorded under, sorted, without the empty one: what a
// reader needs to look a job's key up under every scope it may have been
// sent with (payment.ScopedKey). It is one statement that reads the whole
// table (the column has no index), for tools rather than the controllers.
func (l *Ledger) KeyScopes(ctx context.Context) ([]string, error) {
	if l.isClosed() {
		return nil, ErrClosed
	}
	scopes, err := collect(ctx, l, pgx.RowTo[string], `SELECT DISTINCT provider_key_scope FROM paymentjob_outcomes
	WHERE provider_key_scope <> '' ORDER BY provider_key_scope`)
	if err != nil {
		return nil, wrapErr("read the outcome ledger", err)
	}
	return scopes, nil
}

// Between reads the rows recorded at a time in [from, to), by the index on
// at, scanBatch rows a statement, each after the last (at, key) the one
// before it read: what a reconciliation reads of one slice of its window.
// fn runs between statements. An error of fn ends it and is returned.
func (l *Ledger) Between(ctx context.Context, from, to time.Time, fn func(ledger.Entry) error) error {
	if l.isClosed() {
		return ErrClosed
	}
	const (
		first = `SELECT ` + entryColumns + ` FROM paymentjob_outcomes WHERE at >= $1 AND at < $2
	ORDER BY at, key LIMIT $3`
		next = `SELECT ` + entryColumns + ` FROM paymentjob_outcomes WHERE at >= $1 AND at < $2
	AND (at, key) > ($3, $4) ORDER BY at, key LIMIT $5`
	)
	return l.pages(ctx, fn, func(last *ledger.Entry) (string, []any) {
		if last == nil {
			return first, []any{from, to, scanBatch}
		}
		return next, []any{from, to, last.At, last.Key, scanBatch}
	})
}
