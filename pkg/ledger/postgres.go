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

package ledger

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	internalledger "github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger/pgledger"
)

// ErrSchema is wrapped by the error of OpenPostgres when the database does
// not hold the ledger's tables, or holds an older version of them than this
// program reads: the operator has not run on it, or is older. OpenPostgres
// creates and changes nothing.
var ErrSchema = pgledger.ErrSchema

// endOfTime is after any entry's time, and a time PostgreSQL stores.
var endOfTime = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)

// PostgresReader is a Reader of the ledger in a PostgreSQL database. It is
// safe for concurrent use; Close releases its connections.
type PostgresReader struct {
	l *pgledger.Ledger
}

var _ Reader = (*PostgresReader)(nil)

// OpenPostgres connects to the ledger's database at dsn, a URL
// (postgres://user:password@host:5432/db?sslmode=verify-full&sslrootcert=ca.pem)
// or libpq's keyword/value form, as the operator's ledger Secret holds it.
// It only reads: it checks that the operator's schema is there (an error
// wrapping ErrSchema otherwise), runs no migration, and its sessions are
// read-only unless the DSN says otherwise. A database that cannot be
// reached is an error wrapping ErrUnavailable. No error holds the DSN. Each
// statement is bounded by ten seconds.
func OpenPostgres(ctx context.Context, dsn string) (*PostgresReader, error) {
	l, err := pgledger.Open(ctx, dsn, pgledger.Options{ReadOnly: true, MaxConns: 2})
	if err != nil {
		return nil, pgErr(err)
	}
	return &PostgresReader{l: l}, nil
}

// Close closes the connections. The reader returns errors afterwards.
func (r *PostgresReader) Close() {
	r.l.Close()
}

// Find returns the entries recorded under key: one statement for the key
// scopes the ledger holds (which reads the whole table), and one that
// looks the key up under each of them by the primary key. The entries are
// in the order of their time, then key.
func (r *PostgresReader) Find(ctx context.Context, key string) ([]Entry, error) {
	scopes, err := r.l.KeyScopes(ctx)
	if err != nil {
		return nil, pgErr(err)
	}
	m := newKeyMatch(key)
	byKey, err := r.l.FindAll(ctx, m.candidates(scopes))
	if err != nil {
		return nil, pgErr(err)
	}
	var found []Entry
	for _, e := range byKey {
		if m.matches(e) {
			found = append(found, entryOf(e))
		}
	}
	slices.SortFunc(found, func(a, b Entry) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	return found, nil
}

// Each hands fn the entries that pass f in the order of their time, then
// key (as bytes), a thousand rows a statement, each after the last one
// read: an entry recorded meanwhile is handed over when it comes after
// that. Since bounds the statements (the time column is indexed); the
// namespace is chosen among the rows read. fn runs between statements and
// holds no connection.
func (r *PostgresReader) Each(ctx context.Context, f Filter, fn func(Entry) error) error {
	var fnErr error
	err := r.l.Between(ctx, f.Since, endOfTime, func(e internalledger.Entry) error {
		if !f.passes(e) {
			return nil
		}
		fnErr = fn(entryOf(e))
		return fnErr
	})
	if err != nil && fnErr == nil {
		return pgErr(err)
	}
	return err
}

// pgErr marks an error of pgledger that means the database did not answer.
func pgErr(err error) error {
	if errors.Is(err, pgledger.ErrUnavailable) {
		return &unavailableError{err: err}
	}
	return err
}
