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
	spans, err := ledger.Spans(ctx, p.reader)
	if err != nil {
		return nil, err
	}
	return pagesReader{pagesLedger: p, spans: spans}, nil
}

type pagesReader struct {
	pagesLedger
	spans []ledger.PageSpan
}

func (p pagesReader) Between(ctx context.Context, from, to time.Time, fn func(ledger.Entry) error) error {
	for _, s := range p.spans {
		if s.Newest.Before(from) || !s.Oldest.Before(to) {
			continue
		}
		err := ledger.ReadPage(ctx, p.reader, s.Name, func(e ledger.Entry) error {
			if e.At.Before(from) || !e.At.Before(to) {
				return nil
			}
			return fn(e)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (p pagesReader) FindAll(ctx context.Context, keys []string) (map[string]ledger.Entry, error) {
	return p.l.FindAll(ctx, keys)
}

// PostgresLedger is the Ledger of the PostgreSQL backend: each slice is one
// range query by the index on the outcome's time.
func PostgresLedger(l *pgledger.Ledger) Ledger { return postgresLedger{l} }

type postgresLedger struct{ *pgledger.Ledger }

func (p postgresLedger) Reader(context.Context) (LedgerReader, error) { return p.Ledger, nil }
