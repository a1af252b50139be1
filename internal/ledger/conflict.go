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

// Package ledger keeps the operator's outcome ledger: the durable record of
// every finished payment, "<namespace>/<key> → fingerprint, provider
// account, charge, outcome, time", that outlives the PaymentJob, its
// PaymentProvider, its Secret and its namespace.
//
// The ledger is a sequence of cluster-scoped PaymentLedger pages. Entries are
// appended to the newest page with resourceVersion-guarded updates, so two
// replicas never lose or overwrite each other's entries; concurrent appends
// share one write (group commit). A full page is never written again, and
// retention deletes whole pages once their newest entry is older than the
// retention.
//
// The manager does not hold the entries: it keeps a 64-bit hash of every key
// (8 bytes an entry) and reads a page only when a key's hash is on it. New
// jobs are almost never in the ledger, so finding out costs no API request.
// Pages written by another replica are re-read when their resourceVersion
// moves past the one this process indexed.
package ledger

import (
	"context"
	"fmt"

	"github.com/idempotency-dev/paymentjob-operator/internal/teeth"
)

// The first outcome of a key wins: a Record of another outcome under a key
// the ledger holds says so, with what it holds.

// SameOutcome reports whether e and o record the same outcome of one
// payment: the same key, request fingerprint, outcome, charge and provider
// account. A Record of the entry a key holds already is that outcome
// recorded again (after a crash between the record and the finalizer), not
// a conflict; the time, the reason and the amounts are not compared.
func (e Entry) SameOutcome(o Entry) bool {
	return e.Key == o.Key && e.Fingerprint == o.Fingerprint && e.Outcome == o.Outcome &&
		e.Charge == o.Charge && e.Provider == o.Provider
}

// ConflictError is what Record returns when the ledger holds another
// outcome under the entry's key (SameOutcome is false): the first outcome
// of a key stays, and the caller's was not recorded. Match it with
// errors.As. Its message names the key only: Held may be another tenant's
// payment, for the manager's log, never for a user.
type ConflictError struct {
	// Held is the entry the ledger holds under the key, and keeps.
	Held Entry
}

// Error says that the key holds another outcome, without saying which.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("the outcome ledger holds another outcome under key %q; the first outcome recorded stays", e.Held.Key)
}

// CheckRecorded is the result of a Record of e once the ledger holds held
// under e's key: nil when held is the same outcome (SameOutcome), a
// *ConflictError naming held otherwise. Every backend returns it.
func CheckRecorded(e, held Entry) error {
	if e.SameOutcome(held) || teeth.On(teeth.RecordIgnoresLedger) {
		return nil
	}
	return &ConflictError{Held: held}
}

// Batch is the entries of the Record calls that share one write (group
// commit) and, once Finish ran, its result. Both backends, the pages and
// PostgreSQL, wait on it with Wait, so that Record's first-wins rule is
// written once.
type Batch struct {
	// Entries are the entries of the write, in the order they came.
	Entries []Entry
	done    chan struct{}
	// err is the write's error, set before done is closed.
	err error
	// held is, once done is closed without err, the entry the ledger holds
	// under each key of Entries: the one written, or the one found there.
	held map[string]Entry
}

// NewBatch returns an empty batch, not written yet.
func NewBatch() *Batch { return &Batch{done: make(chan struct{})} }

// Finish ends b's write and every Wait on it: held is the entry the ledger
// holds under each key of Entries, err the write's error. It is called once.
func (b *Batch) Finish(held map[string]Entry, err error) {
	b.held, b.err = held, err
	close(b.done)
}

// Wait is Record's result for e, which is in b: it wakes the writer through
// kick (without blocking: one wake-up pending is enough) and waits for
// Finish. It returns the write's error, or CheckRecorded of e against the
// entry held under its key (the first outcome stays). A ctx that ends
// returns ctx.Err() at once: the write goes on without this caller, and e
// may still be stored.
func (b *Batch) Wait(ctx context.Context, kick chan<- struct{}, e Entry) error {
	select {
	case kick <- struct{}{}:
	default:
	}
	select {
	case <-b.done:
		if b.err != nil {
			return b.err
		}
		if held, ok := b.held[e.Key]; ok {
			return CheckRecorded(e, held)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
