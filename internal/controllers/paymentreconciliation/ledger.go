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

package paymentreconciliation

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger/pgledger"
)

// Ledger is the outcome ledger as reconciliation reads it.
type Ledger interface {
	// Reader prepares the reads of one run.
	Reader(ctx context.Context) (LedgerReader, error)
}

// LedgerReader reads the ledger for one run: the entries of a slice of the
// window, and the entries of keys the provider listed but the cluster
// recorded outside it.
type LedgerReader interface {
	// Between hands fn every entry recorded at a time in [from, to).
	Between(ctx context.Context, from, to time.Time, fn func(ledger.Entry) error) error
	// FindAll returns the entries recorded under keys.
	FindAll(ctx context.Context, keys []string) (map[string]ledger.Entry, error)
}

// PagesLedger is the Ledger of the PaymentLedger pages. A run lists the
// pages' time spans once (the manager keeps only their keys' hashes), and
// each slice of its window reads the pages that overlap it.
func PagesLedger(l *ledger.Ledger, reader client.Reader) Ledger {
	return pagesLedger{l: l, reader: reader}
}

type pagesLedger struct {
	l      *ledger.Ledger
	reader client.Reader
}

func (p pagesLedger) Reader(ctx context.Context) (LedgerReader, error) {
	// The manager's index knows every page's span; a list of the pages
	// only when it cannot be trusted.
	spans, ok := p.l.IndexedSpans()
	if !ok {
		var err error
		if spans, err = ledger.Spans(ctx, p.reader); err != nil {
			return nil, err
		}
	}
	return &pagesReader{pagesLedger: p, spans: spans}, nil
}

type pagesReader struct {
	pagesLedger
	spans []ledger.PageSpan
	// kept are the entries of the pages the last slice read: the slices
	// of a window go from its end to its start, and a page that overlaps
	// two of them is read once.
	kept map[string][]ledger.Entry
}

func (p *pagesReader) Between(ctx context.Context, from, to time.Time, fn func(ledger.Entry) error) error {
	kept := map[string][]ledger.Entry{}
	for _, s := range p.spans {
		if s.Newest.Before(from) || !s.Oldest.Before(to) {
			continue
		}
		entries, ok := p.kept[s.Name]
		if !ok {
			err := ledger.ReadPage(ctx, p.reader, s.Name, func(e ledger.Entry) error {
				entries = append(entries, e)
				return nil
			})
			if err != nil {
				return err
			}
		}
		// The slices go from the window's end to its start: only the
		// entries older than this one are kept for the next.
		var older []ledger.Entry
		for _, e := range entries {
			if e.At.Before(from) {
				older = append(older, e)
				continue
			}
			if !e.At.Before(to) {
				continue
			}
			if err := fn(e); err != nil {
				return err
			}
		}
		kept[s.Name] = older
	}
	p.kept = kept
	return nil
}

func (p *pagesReader) FindAll(ctx context.Context, keys []string) (map[string]ledger.Entry, error) {
	return p.l.FindAll(ctx, keys)
}

// PostgresLedger is the Ledger of the PostgreSQL backend: each slice is one
// range query by the index on the outcome's time.
func PostgresLedger(l *pgledger.Ledger) Ledger { return postgresLedger{l} }

type postgresLedger struct{ *pgledger.Ledger }

func (p postgresLedger) Reader(context.Context) (LedgerReader, error) { return p.Ledger, nil }

// ledgerError marks an error of reading the ledger: its text (a database's
// error names its user, database, host and port) goes to the manager's log,
// never to the run's status.
type ledgerError struct{ error }

func (e ledgerError) Unwrap() error { return e.error }
