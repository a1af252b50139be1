//go:build postgres

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

package pgledger_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/gomega"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger/pgledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/pgserver"
)

// reads records the SELECTs of the table that a pool sends.
type reads struct {
	mu  sync.Mutex
	sql []string
}

func (r *reads) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if sql := strings.TrimSpace(data.SQL); strings.HasPrefix(sql, "SELECT") && strings.Contains(sql, "FROM paymentjob_outcomes") {
		r.mu.Lock()
		r.sql = append(r.sql, sql)
		r.mu.Unlock()
	}
	return ctx
}

func (r *reads) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// statements returns the SELECTs sent since the last call.
func (r *reads) statements() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	sql := r.sql
	r.sql = nil
	return sql
}

// tracedLedger is a ledger on the database at dsn whose SELECTs r records.
func tracedLedger(t *testing.T, dsn string, r *reads) *pgledger.Ledger {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("cannot parse %s: %v", dsn, err)
	}
	cfg.ConnConfig.Tracer = r
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatalf("cannot connect: %v", err)
	}
	t.Cleanup(pool.Close)
	l, err := pgledger.New(t.Context(), pool, pgledger.Options{})
	if err != nil {
		t.Fatalf("cannot make the ledger: %v", err)
	}
	t.Cleanup(l.Close)
	return l
}

// recordShuffled records n entries under prefix, in a random order, and
// returns them in key order.
func recordShuffled(t *testing.T, l *pgledger.Ledger, prefix string, n int) []ledger.Entry {
	t.Helper()
	g := NewWithT(t)
	entries := make([]ledger.Entry, n)
	var wg sync.WaitGroup
	for _, i := range rand.Perm(n) {
		entries[i] = entry(fmt.Sprintf("%s%04d", prefix, i), paymentsv1alpha1.LedgerCompleted)
		e := entries[i]
		wg.Go(func() { g.Expect(l.Record(t.Context(), e)).To(Succeed()) })
	}
	wg.Wait()
	return entries
}

func TestScanReadsEveryRowInKeyOrderInBoundedBatches(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := pgserver.Start(t)
	var r reads
	l := tracedLedger(t, srv.CreateDatabase(t, "ledger"), &r)
	want := recordShuffled(t, l, "ns/job-", 2500)
	r.statements()

	var got []ledger.Entry
	g.Expect(l.Scan(ctx, func(e ledger.Entry) error {
		got = append(got, e)
		return nil
	})).To(Succeed())
	g.Expect(got).To(Equal(want), "every row once, in key order, every field as recorded")

	sql := r.statements()
	g.Expect(sql).To(HaveLen(3), "1000 rows a statement")
	for _, s := range sql {
		g.Expect(s).To(ContainSubstring("LIMIT"))
		g.Expect(s).NotTo(ContainSubstring("OFFSET"), "each batch starts after the last key read, by the index")
	}
}

func TestScanReadsRowsInsertedAfterWhereItIs(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := pgserver.Start(t)
	l := newLedger(t, srv.CreateDatabase(t, "ledger"), pgledger.Options{}, nil)
	recordShuffled(t, l, "ns/m-", 1500)

	// While the scan is in its first batch, one entry is recorded before
	// where it is and one after.
	var got []string
	g.Expect(l.Scan(ctx, func(e ledger.Entry) error {
		if len(got) == 0 {
			g.Expect(l.Record(ctx, entry("ns/a-before", paymentsv1alpha1.LedgerCompleted))).To(Succeed())
			g.Expect(l.Record(ctx, entry("ns/z-after", paymentsv1alpha1.LedgerCompleted))).To(Succeed())
		}
		got = append(got, e.Key)
		return nil
	})).To(Succeed())
	g.Expect(got).To(HaveLen(1501))
	g.Expect(got).NotTo(ContainElement("ns/a-before"), "left for the next scan")
	g.Expect(got[len(got)-1]).To(Equal("ns/z-after"))
	g.Expect(slices.IsSorted(got)).To(BeTrue())
}

func TestScanStopsAtAnErrorOfItsCaller(t *testing.T) {
	g := NewWithT(t)
	srv := pgserver.Start(t)
	l := newLedger(t, srv.CreateDatabase(t, "ledger"), pgledger.Options{}, nil)
	recordShuffled(t, l, "ns/job-", 20)

	stop := errors.New("enough")
	calls := 0
	err := l.Scan(t.Context(), func(ledger.Entry) error {
		calls++
		if calls == 5 {
			return stop
		}
		return nil
	})
	g.Expect(err).To(MatchError(stop))
	g.Expect(calls).To(Equal(5))
}

func TestFindAllAndMissingAskAStatementPerBatch(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := pgserver.Start(t)
	var r reads
	l := tracedLedger(t, srv.CreateDatabase(t, "ledger"), &r)
	recorded := recordShuffled(t, l, "ns/job-", 1200)

	// 1200 keys there, 1300 not (one of them asked twice), shuffled.
	keys := make([]string, 0, len(recorded)+1300+1)
	for _, e := range recorded {
		keys = append(keys, e.Key)
	}
	absent := make([]string, 1300)
	for i := range absent {
		absent[i] = fmt.Sprintf("ns/absent-%04d", i)
	}
	keys = append(keys, absent...)
	rand.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	keys = append(keys, absent[7])
	var order []string
	for _, k := range keys {
		if strings.HasPrefix(k, "ns/absent-") && !slices.Contains(order, k) {
			order = append(order, k)
		}
	}
	r.statements()

	missing, err := l.Missing(ctx, keys)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(missing).To(Equal(order), "the keys without a row, in the order given, each once")
	sql := r.statements()
	g.Expect(sql).To(HaveLen(3), "1000 keys a statement")
	g.Expect(sql).To(HaveEach(ContainSubstring("key = ANY($1)")))

	found, err := l.FindAll(ctx, keys)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(HaveLen(len(recorded)))
	for _, e := range recorded {
		g.Expect(found).To(HaveKeyWithValue(e.Key, e))
	}
	g.Expect(r.statements()).To(HaveLen(3))

	missing, err = l.Missing(ctx, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(missing).To(BeEmpty())
	g.Expect(r.statements()).To(BeEmpty(), "no keys, no statement")
}

func TestBulkReadsOfAServerDownAreUnavailable(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := pgserver.Start(t)
	l := newLedger(t, srv.CreateDatabase(t, "ledger"), pgledger.Options{}, nil)
	recordShuffled(t, l, "ns/job-", 10)

	srv.Kill(t)
	g.Expect(l.Scan(ctx, func(ledger.Entry) error { return nil })).To(MatchError(pgledger.ErrUnavailable))
	_, err := l.Missing(ctx, []string{"ns/job-0001"})
	g.Expect(err).To(MatchError(pgledger.ErrUnavailable), "a database that does not answer lacks nothing")
	_, err = l.FindAll(ctx, []string{"ns/job-0001"})
	g.Expect(err).To(MatchError(pgledger.ErrUnavailable))

	l.Close()
	g.Expect(l.Scan(ctx, func(ledger.Entry) error { return nil })).To(MatchError(pgledger.ErrClosed))
	_, err = l.Missing(ctx, []string{"ns/job-0001"})
	g.Expect(err).To(MatchError(pgledger.ErrClosed))
}

// Between reads the rows of a time window, each once, by the index on at,
// in batches that go on after the last (at, key) read: rows recorded in the
// same second (2,500 of them here, over two seconds) are neither lost nor
// read twice at a batch's end.
func TestBetweenReadsTheRowsOfAWindowOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := pgserver.Start(t)
	var r reads
	l := tracedLedger(t, srv.CreateDatabase(t, "ledger"), &r)
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var want []string
	var wg sync.WaitGroup
	for i := range 3000 {
		e := entry(fmt.Sprintf("ns/job-%04d", i), paymentsv1alpha1.LedgerCompleted)
		// 500 an hour before the window, 2,500 in its first two seconds.
		e.At = base.Add(time.Duration(i%2) * time.Second)
		if i < 500 {
			e.At = base.Add(-time.Hour)
		} else {
			want = append(want, e.Key)
		}
		wg.Go(func() { g.Expect(l.Record(ctx, e)).To(Succeed()) })
	}
	wg.Wait()
	r.statements()

	var got []string
	g.Expect(l.Between(ctx, base, base.Add(time.Minute), func(e ledger.Entry) error {
		got = append(got, e.Key)
		return nil
	})).To(Succeed())
	g.Expect(got).To(ConsistOf(want), "every row of the window once")
	g.Expect(r.statements()).To(HaveLen(3), "1000 rows a statement")

	got = nil
	g.Expect(l.Between(ctx, base.Add(-2*time.Hour), base, func(e ledger.Entry) error {
		got = append(got, e.Key)
		return nil
	})).To(Succeed())
	g.Expect(got).To(HaveLen(500), "the window's end is exclusive")
}
