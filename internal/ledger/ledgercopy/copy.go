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

// Package ledgercopy moves the outcome ledger between its backends: from the
// CRD ledger's PaymentLedger pages to PostgreSQL, and back, while managers
// run and record outcomes, and checks that every entry arrived.
//
// A copy is idempotent. It records at the destination the entries whose key
// the destination lacks, and nothing else: the first outcome of a key wins
// there as everywhere. An entry whose key the destination holds with another
// request fingerprint or another outcome is a conflict: it is reported,
// never overwritten, and a person decides (docs/postgres-ledger.md). Running a
// copy again records what came in since and reports the rest as already
// present.
//
// A copy reads the source a batch at a time (Options.Batch entries), asks the
// destination for the batch's keys in one request, records the missing ones
// all at once (the ledgers group-commit concurrent Records: a few statements
// or page writes a batch, not one round trip an entry), and reads them back
// to check that each arrived. Memory holds one batch.
//
// A copy reads what the source held when it started reading; entries a
// running manager records meanwhile are left for the next copy. Verify says
// whether every entry of the source is at the destination now, and names a
// few that are not. CheckMigrated is the manager's check at start on
// PostgreSQL.
package ledgercopy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
)

// DefaultBatch is how many entries a copy reads, looks up and records
// together: pgledger's DefaultMaxBatch, so that a batch is an INSERT.
const DefaultBatch = 500

// examples bounds the keys and conflicts a Result names.
const examples = 5

// Source is a ledger read from end to end: *pgledger.Ledger, or the CRD
// ledger's pages (Pages).
type Source interface {
	// Scan hands every entry to fn, in an order of its own, reading a
	// bounded number at a time; an error of fn ends it and is returned.
	Scan(ctx context.Context, fn func(ledger.Entry) error) error
}

// Destination is a ledger entries are copied to: *pgledger.Ledger, or a
// started *ledger.Ledger (StartCRD).
type Destination interface {
	// FindAll returns the entries recorded under keys, by key; a key
	// that is not recorded has none.
	FindAll(ctx context.Context, keys []string) (map[string]ledger.Entry, error)
	// Record stores an entry unless one is recorded under its key (the
	// first outcome stays, and a *ledger.ConflictError says when it is
	// another). Concurrent calls share writes.
	Record(ctx context.Context, e ledger.Entry) error
}

// Options configure Copy and Verify.
type Options struct {
	// Batch is how many entries are looked up and recorded together;
	// DefaultBatch when zero.
	Batch int
	// Progress, when set, is called after each batch with the counts so
	// far.
	Progress func(Result)
}

// Result is what a Copy or a Verify found. Every entry read from the source
// is counted once: Read = Copied + Present + Conflicts + Missing.
type Result struct {
	// Read is the entries read from the source.
	Read int
	// Copied is the entries this copy recorded at the destination.
	Copied int
	// Present is the entries the destination held already (Copy), or
	// holds (Verify), with the same fingerprint and outcome.
	Present int
	// Conflicts is the entries whose key the destination holds with
	// another fingerprint or outcome; the destination keeps its own.
	Conflicts int
	// Missing is the entries whose key the destination lacks (Verify), or
	// that were recorded and did not arrive (Copy).
	Missing int
	// MissingKeys names the first few Missing entries.
	MissingKeys []string
	// ConflictExamples are the first few Conflicts.
	ConflictExamples []Conflict
}

// Complete reports whether every entry read is at the destination with its
// fingerprint and outcome: nothing missing, no conflict.
func (r Result) Complete() bool {
	return r.Missing == 0 && r.Conflicts == 0
}

// Conflict is a key that the source and the destination record with
// another fingerprint or outcome.
type Conflict struct {
	// Source is the entry read from the source.
	Source ledger.Entry
	// Destination is the entry the destination holds, and keeps.
	Destination ledger.Entry
}

// String says what differs, for a person to decide.
func (c Conflict) String() string {
	return fmt.Sprintf("%s: %s at the source, %s at the destination", c.Source.Key, describe(c.Source), describe(c.Destination))
}

// describe is what a conflict shows of an entry: no secret is in one.
func describe(e ledger.Entry) string {
	s := fmt.Sprintf("%s (request %s", e.Outcome, e.Fingerprint)
	if e.Charge != "" {
		s += ", charge " + e.Charge
	}
	return s + ", " + e.At.UTC().Format(time.RFC3339) + ")"
}

// sameOutcome reports whether two entries of a key record the same payment
// with the same outcome.
func sameOutcome(a, b ledger.Entry) bool {
	return a.Fingerprint == b.Fingerprint && a.Outcome == b.Outcome
}

// Copy records at dst every entry of src whose key dst lacks, and returns
// what it found: how many it copied, how many dst held already, the
// conflicts, and the entries it recorded that did not arrive. It never
// changes an entry dst holds. An error (a ledger that did not answer) ends
// it; what it recorded stays, and a copy run again goes on.
func Copy(ctx context.Context, src Source, dst Destination, opts Options) (Result, error) {
	return run(ctx, src, dst, opts, true)
}

// Verify reads src and says which of its entries dst holds, with the same
// fingerprint and outcome, which it holds otherwise, and which it lacks. It
// writes nothing.
func Verify(ctx context.Context, src Source, dst Destination, opts Options) (Result, error) {
	return run(ctx, src, dst, opts, false)
}

// run reads src a batch at a time and hands each batch to a pass.
func run(ctx context.Context, src Source, dst Destination, opts Options, record bool) (Result, error) {
	if opts.Batch <= 0 {
		opts.Batch = DefaultBatch
	}
	p := &pass{dst: dst, record: record}
	batch := make([]ledger.Entry, 0, opts.Batch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := p.batch(ctx, batch); err != nil {
			return err
		}
		batch = batch[:0]
		if opts.Progress != nil {
			opts.Progress(p.res)
		}
		return nil
	}
	err := src.Scan(ctx, func(e ledger.Entry) error {
		batch = append(batch, e)
		if len(batch) < opts.Batch {
			return nil
		}
		return flush()
	})
	if err == nil {
		err = flush()
	}
	return p.res, err
}

// pass is one Copy or Verify.
type pass struct {
	dst    Destination
	record bool
	res    Result
}

// batch looks up the keys of entries at the destination, records those it
// lacks when the pass copies, and counts each entry.
func (p *pass) batch(ctx context.Context, entries []ledger.Entry) error {
	held, err := p.dst.FindAll(ctx, keysOf(entries))
	if err != nil {
		return fmt.Errorf("cannot read the destination ledger: %w", err)
	}
	// mine are the entries this pass records: the first of each key
	// the destination lacks.
	mine := map[string]bool{}
	if p.record {
		var todo []ledger.Entry
		for _, e := range entries {
			if _, ok := held[e.Key]; !ok && !mine[e.Key] {
				mine[e.Key] = true
				todo = append(todo, e)
			}
		}
		if err := recordAll(ctx, p.dst, todo); err != nil {
			return err
		}
		if len(todo) > 0 {
			// Read back: the check that each arrived, and what another
			// process may have recorded under the key first.
			arrived, err := p.dst.FindAll(ctx, keysOf(todo))
			if err != nil {
				return fmt.Errorf("cannot read the destination ledger: %w", err)
			}
			for k, e := range arrived {
				held[k] = e
			}
		}
	}
	for _, e := range entries {
		d, ok := held[e.Key]
		switch {
		case !ok:
			p.res.Missing++
			if len(p.res.MissingKeys) < examples {
				p.res.MissingKeys = append(p.res.MissingKeys, e.Key)
			}
		case !sameOutcome(e, d):
			p.res.Conflicts++
			if len(p.res.ConflictExamples) < examples {
				p.res.ConflictExamples = append(p.res.ConflictExamples, Conflict{Source: e, Destination: d})
			}
		case mine[e.Key]:
			// A key twice in the source is copied once.
			delete(mine, e.Key)
			p.res.Copied++
		default:
			p.res.Present++
		}
		p.res.Read++
	}
	return nil
}

// recordAll records entries at dst all at once, so that dst shares its
// writes among them, and waits for every one.
func recordAll(ctx context.Context, dst Destination, entries []ledger.Entry) error {
	errs := make([]error, len(entries))
	var wg sync.WaitGroup
	for i, e := range entries {
		wg.Go(func() { errs[i] = dst.Record(ctx, e) })
	}
	wg.Wait()
	// A write that failed fails each of its entries: the first error says it.
	// A key recorded meanwhile with another outcome (a manager's record
	// between the lookup and this one) is no error: the read-back counts
	// it as a conflict.
	for _, err := range errs {
		var conflict *ledger.ConflictError
		if err != nil && !errors.As(err, &conflict) {
			return fmt.Errorf("cannot record in the destination ledger: %w", err)
		}
	}
	return nil
}

func keysOf(entries []ledger.Entry) []string {
	keys := make([]string, len(entries))
	for i, e := range entries {
		keys[i] = e.Key
	}
	return keys
}
