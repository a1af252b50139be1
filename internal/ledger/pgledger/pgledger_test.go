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
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/gomega"
	clocktesting "k8s.io/utils/clock/testing"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger/pgledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/pgserver"
)

// statements counts what a pool sends, by the statement's first words.
type statements struct {
	inserts, deletes atomic.Int64
}

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	switch sql := strings.TrimSpace(data.SQL); {
	case strings.HasPrefix(sql, "INSERT INTO paymentjob_outcomes"):
		s.inserts.Add(1)
	case strings.HasPrefix(sql, "DELETE FROM paymentjob_outcomes"):
		s.deletes.Add(1)
	}
	return ctx
}

func (s *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// newPool connects to dsn, counting statements in counter when it is set.
func newPool(t *testing.T, dsn string, counter *statements) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("cannot parse %s: %v", dsn, err)
	}
	if counter != nil {
		cfg.ConnConfig.Tracer = counter
	}
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatalf("cannot connect: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// newLedger is a ledger on its own pool of the database at dsn.
func newLedger(t *testing.T, dsn string, opts pgledger.Options, counter *statements) *pgledger.Ledger {
	t.Helper()
	l, err := pgledger.New(t.Context(), newPool(t, dsn, counter), opts)
	if err != nil {
		t.Fatalf("cannot make the ledger: %v", err)
	}
	t.Cleanup(l.Close)
	return l
}

// entry is a finished charge under key.
func entry(key string, outcome paymentsv1alpha1.LedgerOutcome) ledger.Entry {
	return ledger.Entry{
		Key:         key,
		Fingerprint: "fp-" + key,
		Provider:    paymentsv1alpha1.ProviderIdentity{UID: "uid-1", Endpoint: "https://api.stripe.com", Account: "acct_1", Mode: "test"},
		Charge:      "pi_" + key,
		Outcome:     outcome,
		At:          time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
	}
}

func count(t *testing.T, pool *pgxpool.Pool, sql string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(t.Context(), sql).Scan(&n); err != nil {
		t.Fatalf("cannot run %q: %v", sql, err)
	}
	return n
}

func TestFirstOutcomeWins(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := pgserver.Start(t)
	l := newLedger(t, srv.CreateDatabase(t, "ledger"), pgledger.Options{Cluster: "east"}, nil)

	first := entry("ns/pay-1", paymentsv1alpha1.LedgerCompleted)
	g.Expect(l.Record(ctx, first)).To(Succeed())
	second := entry("ns/pay-1", paymentsv1alpha1.LedgerFailed)
	second.Fingerprint, second.Charge, second.Reason = "other", "", "card_declined"
	var conflict *ledger.ConflictError
	g.Expect(errors.As(l.Record(ctx, second), &conflict)).To(BeTrue(), "a second outcome is told what the key holds")
	g.Expect(conflict.Held).To(Equal(first))

	got, found, err := l.Find(ctx, "ns/pay-1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeTrue())
	g.Expect(got).To(Equal(first))
}

func TestFindAndHaveAMissingKey(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := pgserver.Start(t)
	l := newLedger(t, srv.CreateDatabase(t, "ledger"), pgledger.Options{}, nil)
	g.Expect(l.Record(ctx, entry("ns/there", paymentsv1alpha1.LedgerCompleted))).To(Succeed())

	got, found, err := l.Find(ctx, "ns/missing")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeFalse())
	g.Expect(got).To(Equal(ledger.Entry{}))
	g.Expect(l.Has(ctx, "ns/missing")).To(BeFalse())
	g.Expect(l.Has(ctx, "ns/there")).To(BeTrue())
}

// TestEveryFieldRoundTrips fails when a field is added to the entry or the
// provider identity and the table does not store it.
func TestEveryFieldRoundTrips(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := pgserver.Start(t)
	l := newLedger(t, srv.CreateDatabase(t, "ledger"), pgledger.Options{}, nil)

	e := ledger.Entry{Key: "ns/all", Outcome: paymentsv1alpha1.LedgerFailed,
		At: time.Date(2026, 2, 3, 4, 5, 6, 789_012_000, time.UTC)}
	fillStrings(reflect.ValueOf(&e).Elem(), "v")
	e.Key, e.Outcome = "ns/all", paymentsv1alpha1.LedgerFailed
	g.Expect(e.Provider.KeyScope).NotTo(BeEmpty(), "every string field, nested ones too, holds a value")
	g.Expect(l.Record(ctx, e)).To(Succeed())

	got, found, err := l.Find(ctx, "ns/all")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeTrue())
	g.Expect(got).To(Equal(e))
}

// fillStrings sets every string field under v to a value of its own.
func fillStrings(v reflect.Value, prefix string) {
	for i := range v.NumField() {
		f, name := v.Field(i), prefix+"."+v.Type().Field(i).Name
		switch f.Kind() {
		case reflect.String:
			f.SetString(name)
		case reflect.Struct:
			if f.Type() != reflect.TypeFor[time.Time]() {
				fillStrings(f, name)
			}
		default:
		}
	}
}

func TestConcurrentRecordsShareStatements(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := pgserver.Start(t)
	dsn := srv.CreateDatabase(t, "ledger")
	var counter statements
	l := newLedger(t, dsn, pgledger.Options{}, &counter)

	const records = 200
	var wg sync.WaitGroup
	errs := make(chan error, records)
	for i := range records {
		wg.Go(func() { errs <- l.Record(ctx, entry(fmt.Sprintf("ns/job-%03d", i), paymentsv1alpha1.LedgerCompleted)) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(count(t, newPool(t, dsn, nil), "SELECT count(*) FROM paymentjob_outcomes")).To(Equal(records))
	t.Logf("%d Records, %d INSERT statements", records, counter.inserts.Load())
	g.Expect(counter.inserts.Load()).To(BeNumerically("<=", records/10), "group commit: far fewer statements than Records")
}

func TestMaxBatchBoundsAStatement(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := pgserver.Start(t)
	dsn := srv.CreateDatabase(t, "ledger")
	var counter statements
	l := newLedger(t, dsn, pgledger.Options{MaxBatch: 10}, &counter)

	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			g.Expect(l.Record(ctx, entry(fmt.Sprintf("ns/job-%03d", i), paymentsv1alpha1.LedgerCompleted))).To(Succeed())
		})
	}
	wg.Wait()
	g.Expect(counter.inserts.Load()).To(BeNumerically(">=", 10), "no statement carries more than 10 entries")
	g.Expect(count(t, newPool(t, dsn, nil), "SELECT count(*) FROM paymentjob_outcomes")).To(Equal(100))
}

func TestTwoProcessesRecordTheSameKeysOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := pgserver.Start(t)
	dsn := srv.CreateDatabase(t, "fleet")
	// Two managers, in two clusters of a fleet, each with its own pool.
	east := newLedger(t, dsn, pgledger.Options{Cluster: "east"}, nil)
	west := newLedger(t, dsn, pgledger.Options{Cluster: "west"}, nil)
	admin := newPool(t, dsn, nil)

	const keys, rounds = 100, 6
	for round := range rounds {
		recordBoth(t, admin, east, west, fmt.Sprintf("ns/round-%d-", round), keys)
	}

	g.Expect(count(t, admin, "SELECT count(*) FROM paymentjob_outcomes")).To(Equal(rounds * (keys + 1)))
	g.Expect(count(t, admin, "SELECT count(*) FROM paymentjob_outcomes WHERE "+
		"(cluster = 'east' AND outcome = 'Completed') OR (cluster = 'west' AND outcome = 'Failed')")).To(Equal(rounds*(keys+1)),
		"each row is whole: the outcome of the cluster that recorded it first")
	for i := range rounds * keys {
		key := fmt.Sprintf("ns/round-%d-%03d", i/keys, i%keys)
		fromEast, found, err := east.Find(ctx, key)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(found).To(BeTrue())
		fromWest, _, err := west.Find(ctx, key)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(fromEast).To(Equal(fromWest), "both clusters read the one entry")
	}
}

// recordBoth records the same keys from two ledgers at once, each with an
// outcome of its own and in an order of its own, as two batches sent at the
// same moment: batches that overlap in different orders must not deadlock.
// A gate holds both ledgers' first statement (another session's insert of
// its key, not committed) until both have queued every key.
func recordBoth(t *testing.T, admin *pgxpool.Pool, east, west *pgledger.Ledger, prefix string, keys int) {
	g := NewWithT(t)
	ctx := t.Context()
	gate := prefix + "gate"
	tx := hold(t, admin, gate)

	sides := []struct {
		l       *pgledger.Ledger
		outcome paymentsv1alpha1.LedgerOutcome
	}{{east, paymentsv1alpha1.LedgerCompleted}, {west, paymentsv1alpha1.LedgerFailed}}
	var wg sync.WaitGroup
	for _, side := range sides {
		wg.Go(func() { g.Expect(recordedOrHeld(side.l.Record(ctx, entry(gate, side.outcome)))).To(Succeed()) })
	}
	g.Eventually(func() int {
		return count(t, admin, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
	}, 5*time.Second, 10*time.Millisecond).Should(Equal(2), "both ledgers wait at the gate")
	for _, side := range sides {
		for _, i := range rand.Perm(keys) {
			wg.Go(func() {
				g.Expect(recordedOrHeld(side.l.Record(ctx, entry(fmt.Sprintf("%s%03d", prefix, i), side.outcome)))).To(Succeed())
			})
		}
	}
	for _, side := range sides {
		g.Eventually(func() int { return pgledger.Queued(side.l) }, 5*time.Second, time.Millisecond).Should(Equal(keys))
	}
	g.Expect(tx.Rollback(ctx)).To(Succeed())
	wg.Wait()
}

// recordedOrHeld is err, the result of a Record whose key the other side
// may have recorded first, without the *ledger.ConflictError that says so.
func recordedOrHeld(err error) error {
	var conflict *ledger.ConflictError
	if errors.As(err, &conflict) {
		return nil
	}
	return err
}

func TestRefundAndChargeKeysSideBySide(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := pgserver.Start(t)
	l := newLedger(t, srv.CreateDatabase(t, "ledger"), pgledger.Options{}, nil)

	charge := entry("shop/order-7", paymentsv1alpha1.LedgerCompleted)
	refund := entry("shop.refund/order-7", paymentsv1alpha1.LedgerCompleted)
	refund.Fingerprint, refund.Charge = "fp-refund", "re_1"
	g.Expect(l.Record(ctx, charge)).To(Succeed())
	g.Expect(l.Has(ctx, "shop.refund/order-7")).To(BeFalse(), "a charge does not record its refund")
	g.Expect(l.Record(ctx, refund)).To(Succeed())

	for _, want := range []ledger.Entry{charge, refund} {
		got, found, err := l.Find(ctx, want.Key)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(found).To(BeTrue())
		g.Expect(got).To(Equal(want))
	}
}

func TestPruneByDateInBoundedBatches(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := pgserver.Start(t)
	dsn := srv.CreateDatabase(t, "ledger")
	now := time.Date(2027, 6, 1, 0, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakePassiveClock(now)
	var counter statements
	l := newLedger(t, dsn, pgledger.Options{Retention: 30 * 24 * time.Hour, Clock: clock}, &counter)

	const old = 2500
	var wg sync.WaitGroup
	for i := range old + 10 {
		e := entry(fmt.Sprintf("ns/job-%04d", i), paymentsv1alpha1.LedgerCompleted)
		e.At = now.Add(-31 * 24 * time.Hour)
		if i >= old {
			e.At = now.Add(-24 * time.Hour)
		}
		wg.Go(func() { g.Expect(l.Record(ctx, e)).To(Succeed()) })
	}
	wg.Wait()

	deleted, err := l.Prune(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(deleted).To(BeEquivalentTo(old))
	g.Expect(counter.deletes.Load()).To(BeEquivalentTo(3), "1000 entries a statement")
	g.Expect(l.Has(ctx, "ns/job-0000")).To(BeFalse())
	g.Expect(l.Has(ctx, fmt.Sprintf("ns/job-%04d", old))).To(BeTrue(), "a day old: kept")

	deleted, err = l.Prune(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(deleted).To(BeZero())

	clock.SetTime(now.Add(30 * 24 * time.Hour))
	deleted, err = l.Prune(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(deleted).To(BeEquivalentTo(10))
}

func TestMigrateTwiceAndConcurrently(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := pgserver.Start(t)
	dsn := srv.CreateDatabase(t, "ledger")

	// Two processes start at once on an empty database.
	ledgers := make([]*pgledger.Ledger, 2)
	var wg sync.WaitGroup
	for i := range ledgers {
		wg.Go(func() {
			l, err := pgledger.New(ctx, newPool(t, dsn, nil), pgledger.Options{})
			g.Expect(err).NotTo(HaveOccurred())
			ledgers[i] = l
		})
	}
	wg.Wait()
	for _, l := range ledgers {
		t.Cleanup(l.Close)
		wg.Go(func() { g.Expect(l.Migrate(ctx)).To(Succeed()) })
	}
	wg.Wait()
	g.Expect(ledgers[0].Migrate(ctx)).To(Succeed())

	files, err := os.ReadDir("migrations")
	g.Expect(err).NotTo(HaveOccurred())
	admin := newPool(t, dsn, nil)
	g.Expect(count(t, admin, "SELECT count(*) FROM paymentjob_schema_migrations")).To(Equal(len(files)),
		"one row per migration")
	g.Expect(count(t, admin, "SELECT count(DISTINCT version) FROM paymentjob_schema_migrations")).To(Equal(len(files)))
	g.Expect(count(t, admin, "SELECT max(version) FROM paymentjob_schema_migrations")).To(Equal(len(files)))
	g.Expect(ledgers[1].Record(ctx, entry("ns/after", paymentsv1alpha1.LedgerCompleted))).To(Succeed())
}

func TestKilledServerIsUnavailableThenRecordsAgain(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := pgserver.Start(t)
	dsn := srv.CreateDatabase(t, "ledger")
	// trust authentication takes any password: the errors must not show it.
	l, err := pgledger.Open(ctx, strings.Replace(dsn, "postgres@", "postgres:s3cret-pw@", 1), pgledger.Options{Timeout: 5 * time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(l.Close)
	g.Expect(l.Record(ctx, entry("ns/before", paymentsv1alpha1.LedgerCompleted))).To(Succeed())

	srv.Kill(t)
	err = l.Record(ctx, entry("ns/during", paymentsv1alpha1.LedgerCompleted))
	g.Expect(err).To(MatchError(pgledger.ErrUnavailable))
	g.Expect(err.Error()).NotTo(ContainSubstring("s3cret-pw"))
	_, _, err = l.Find(ctx, "ns/before")
	g.Expect(err).To(MatchError(pgledger.ErrUnavailable), "a ledger that does not answer is not one without the key")
	_, err = l.Has(ctx, "ns/before")
	g.Expect(err).To(MatchError(pgledger.ErrUnavailable))
	_, err = l.Prune(ctx)
	g.Expect(err).To(MatchError(pgledger.ErrUnavailable))

	srv.Restart(t)
	g.Expect(l.Has(ctx, "ns/during")).To(BeFalse(), "nothing of the failed Record was stored")
	g.Expect(l.Record(ctx, entry("ns/during", paymentsv1alpha1.LedgerCompleted))).To(Succeed())
	for _, key := range []string{"ns/before", "ns/during"} {
		got, found, err := l.Find(ctx, key)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(found).To(BeTrue())
		g.Expect(got).To(Equal(entry(key, paymentsv1alpha1.LedgerCompleted)))
	}
}

// TestStaleConnectionsAreNotAnAnswer: after a restart or a failover, every
// pooled connection is dead, and the pool does not know yet.
func TestStaleConnectionsAreNotAnAnswer(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := pgserver.Start(t)
	dsn := srv.CreateDatabase(t, "ledger")
	cfg, err := pgxpool.ParseConfig(dsn)
	g.Expect(err).NotTo(HaveOccurred())
	cfg.MaxConns = 4
	// No ping before use: a connection idle for less than pgx's default
	// second is not pinged either.
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(pool.Close)
	l, err := pgledger.New(ctx, pool, pgledger.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(l.Close)
	g.Expect(l.Record(ctx, entry("ns/kept", paymentsv1alpha1.LedgerCompleted))).To(Succeed())

	for _, restart := range []struct {
		name string
		stop func(testing.TB)
	}{{"fast shutdown", srv.Stop}, {"kill", srv.Kill}} {
		conns := make([]*pgxpool.Conn, 0, cfg.MaxConns)
		for range cfg.MaxConns {
			c, err := pool.Acquire(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			conns = append(conns, c)
		}
		for _, c := range conns {
			c.Release()
		}
		g.Expect(pool.Stat().IdleConns()).To(BeEquivalentTo(cfg.MaxConns))

		restart.stop(t)
		srv.Restart(t)
		got, found, err := l.Find(ctx, "ns/kept")
		g.Expect(err).NotTo(HaveOccurred(), "after a %s: another connection answers", restart.name)
		g.Expect(found).To(BeTrue())
		g.Expect(got.Key).To(Equal("ns/kept"))
	}
}

func TestKillWithAStatementInFlightLeavesNothingHalfWritten(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := pgserver.Start(t)
	dsn := srv.CreateDatabase(t, "ledger")
	l := newLedger(t, dsn, pgledger.Options{Timeout: 10 * time.Second}, nil)
	admin := newPool(t, dsn, nil)
	waiting := func() int {
		return count(t, admin, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
	}

	// The first statement waits for another session's insert of its key;
	// the second collects 300 entries meanwhile, and a last one whose key
	// another session holds too: the second statement inserts the 300
	// (keys are sent in order) and waits there, when the server is killed.
	holdFirst := hold(t, admin, "ns/a-first")
	hold(t, admin, "ns/z-last") // held until the server dies
	first := make(chan error, 1)
	go func() { first <- l.Record(ctx, entry("ns/a-first", paymentsv1alpha1.LedgerCompleted)) }()
	g.Eventually(waiting, 5*time.Second, 10*time.Millisecond).Should(Equal(1))
	const inFlight = 300
	results := make([]error, inFlight+1)
	var wg sync.WaitGroup
	for i := range inFlight + 1 {
		key := fmt.Sprintf("ns/m-%03d", i)
		if i == inFlight {
			key = "ns/z-last"
		}
		wg.Go(func() { results[i] = l.Record(ctx, entry(key, paymentsv1alpha1.LedgerCompleted)) })
	}
	g.Eventually(func() int { return pgledger.Queued(l) }, 5*time.Second, time.Millisecond).Should(Equal(inFlight + 1))
	g.Expect(holdFirst.Rollback(ctx)).To(Succeed())
	g.Eventually(first, 5*time.Second).Should(Receive(BeNil()))
	g.Eventually(waiting, 5*time.Second, 10*time.Millisecond).Should(Equal(1), "the second statement waits at its last key")

	srv.Kill(t)
	wg.Wait()
	for _, err := range results {
		g.Expect(err).To(MatchError(pgledger.ErrUnavailable))
	}
	srv.Restart(t)
	admin = newPool(t, dsn, nil)
	g.Expect(count(t, admin, "SELECT count(*) FROM paymentjob_outcomes")).To(Equal(1),
		"the first statement's entry, and nothing of the statement the kill cut")
	got, found, err := l.Find(ctx, "ns/a-first")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeTrue())
	g.Expect(got).To(Equal(entry("ns/a-first", paymentsv1alpha1.LedgerCompleted)))
	g.Expect(l.Record(ctx, entry("ns/m-000", paymentsv1alpha1.LedgerCompleted))).To(Succeed(), "recording again after the restart")
}

// hold inserts an entry under key in a transaction it leaves open: the
// ledger's insert of the key waits for the transaction's end.
func hold(t *testing.T, admin *pgxpool.Pool, key string) pgx.Tx {
	t.Helper()
	tx, err := admin.Begin(t.Context())
	if err != nil {
		t.Fatalf("cannot begin: %v", err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	if _, err := tx.Exec(t.Context(), `INSERT INTO paymentjob_outcomes (key, fingerprint, provider_uid, provider_endpoint,
		provider_account, provider_mode, provider_key_scope, charge, outcome, reason, resolved_by, at, cluster)
		VALUES ($1, 'held', '', '', '', '', '', '', 'Failed', '', '', now(), 'elsewhere')`, key); err != nil {
		t.Fatalf("cannot hold %s: %v", key, err)
	}
	return tx
}

func TestReadOnlyServerIsUnavailable(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := pgserver.Start(t)
	dsn := srv.CreateDatabase(t, "ledger")
	l := newLedger(t, dsn, pgledger.Options{}, nil)
	g.Expect(l.Record(ctx, entry("ns/before", paymentsv1alpha1.LedgerCompleted))).To(Succeed())

	srv.SetReadOnly(t, true)
	err := l.Record(ctx, entry("ns/during", paymentsv1alpha1.LedgerCompleted))
	g.Expect(err).To(MatchError(pgledger.ErrUnavailable))
	var pgErr *pgconn.PgError
	g.Expect(errors.As(err, &pgErr)).To(BeTrue())
	g.Expect(pgErr.Code).To(Equal("25006"))
	_, found, err := l.Find(ctx, "ns/before")
	g.Expect(err).NotTo(HaveOccurred(), "a read-only server still answers lookups")
	g.Expect(found).To(BeTrue())
	// A process that starts now finds its schema there and needs no write.
	newLedger(t, dsn, pgledger.Options{}, nil)

	srv.SetReadOnly(t, false)
	g.Expect(l.Record(ctx, entry("ns/during", paymentsv1alpha1.LedgerCompleted))).To(Succeed())
}

func TestACallerThatGivesUpDoesNotCancelTheBatch(t *testing.T) {
	g := NewWithT(t)
	srv := pgserver.Start(t)
	dsn := srv.CreateDatabase(t, "ledger")
	l := newLedger(t, dsn, pgledger.Options{}, nil)

	// Another session inserts the key and does not commit yet: the
	// ledger's INSERT waits to learn whether that row stays.
	tx := hold(t, newPool(t, dsn, nil), "ns/held")

	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	mine := entry("ns/held", paymentsv1alpha1.LedgerCompleted)
	g.Expect(l.Record(ctx, mine)).To(MatchError(context.DeadlineExceeded))

	// The other session rolls back: the statement the caller left goes on
	// and stores the entry.
	g.Expect(tx.Rollback(t.Context())).To(Succeed())
	g.Eventually(func() (ledger.Entry, error) {
		got, _, err := l.Find(t.Context(), "ns/held")
		return got, err
	}, 5*time.Second, 20*time.Millisecond).Should(Equal(mine))
}

func TestOpenKeepsTheDSNOutOfErrors(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	_, err := pgledger.Open(ctx, "postgres://ledger:s3cret-pw@127.0.0.1:notaport/db", pgledger.Options{})
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).NotTo(ContainSubstring("s3cret-pw"))

	// Nothing listens on port 1 of 127.0.0.1.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = pgledger.Open(ctx, "postgres://ledger:s3cret-pw@127.0.0.1:1/db?sslmode=disable", pgledger.Options{})
	g.Expect(err).To(MatchError(pgledger.ErrUnavailable))
	g.Expect(err.Error()).NotTo(ContainSubstring("s3cret-pw"))
}

func TestClosedLedgerStoresWhatItWasHanded(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := pgserver.Start(t)
	dsn := srv.CreateDatabase(t, "ledger")
	l, err := pgledger.New(ctx, newPool(t, dsn, nil), pgledger.Options{})
	g.Expect(err).NotTo(HaveOccurred())

	var wg sync.WaitGroup
	results := make([]error, 50)
	for i := range results {
		wg.Go(func() {
			results[i] = l.Record(ctx, entry(fmt.Sprintf("ns/job-%02d", i), paymentsv1alpha1.LedgerCompleted))
		})
	}
	wg.Wait()
	l.Close()
	l.Close()
	g.Expect(l.Record(ctx, entry("ns/late", paymentsv1alpha1.LedgerCompleted))).To(MatchError(pgledger.ErrClosed))
	_, _, err = l.Find(ctx, "ns/job-00")
	g.Expect(err).To(MatchError(pgledger.ErrClosed))
	g.Expect(results).To(HaveEach(BeNil()))
	g.Expect(count(t, newPool(t, dsn, nil), "SELECT count(*) FROM paymentjob_outcomes")).To(Equal(50))
}
