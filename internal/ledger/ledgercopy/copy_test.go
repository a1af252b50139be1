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

package ledgercopy_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger/ledgercopy"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger/pgledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/pgserver"
)

// apiClient reads and writes straight to the API server.
func apiClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// noPages deletes every ledger page: the test starts with an empty CRD
// ledger.
func noPages(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	c := apiClient(t)
	g.Expect(c.DeleteAllOf(t.Context(), &paymentsv1alpha1.PaymentLedger{})).To(Succeed())
	g.Eventually(func() []paymentsv1alpha1.PaymentLedger { return pagesOf(t) }, 30*time.Second).Should(BeEmpty())
}

// pagesOf returns every page, read from the API server.
func pagesOf(t *testing.T) []paymentsv1alpha1.PaymentLedger {
	t.Helper()
	var list paymentsv1alpha1.PaymentLedgerList
	NewWithT(t).Expect(apiClient(t).List(t.Context(), &list)).To(Succeed())
	return list.Items
}

// writes is the writes the pages took: a page's generation counts its
// create and its updates.
func writes(t *testing.T) int64 {
	t.Helper()
	var n int64
	for _, p := range pagesOf(t) {
		n += p.Generation
	}
	return n
}

// inserts counts the INSERTs a pool sends.
type inserts struct{ n atomic.Int64 }

func (s *inserts) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.HasPrefix(strings.TrimSpace(data.SQL), "INSERT INTO paymentjob_outcomes") {
		s.n.Add(1)
	}
	return ctx
}

func (s *inserts) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// newDB is the PostgreSQL ledger of a new database on srv, whose INSERTs
// are counted.
func newDB(t *testing.T, srv *pgserver.Server, name string) (*pgledger.Ledger, *inserts) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(srv.CreateDatabase(t, name))
	if err != nil {
		t.Fatal(err)
	}
	counter := &inserts{}
	cfg.ConnConfig.Tracer = counter
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	db, err := pgledger.New(t.Context(), pool, pgledger.Options{Cluster: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db, counter
}

// startCRD is a CRD ledger process, a manager's or a copy's, with pages of
// pageSize entries (the default when zero), until the test ends.
func startCRD(t *testing.T, pageSize int) *ledger.Ledger {
	t.Helper()
	l, err := ledgercopy.StartCRD(t.Context(), env.Config, ledger.Options{MaxEntriesPerPage: pageSize})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

var base = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// outcome is the i-th outcome under prefix, every field set: some failed,
// some resolved by a person, in two modes, recorded at a time with a
// fraction of a second.
func outcome(prefix string, i int) ledger.Entry {
	e := ledger.Entry{
		Key:         fmt.Sprintf("%s/invoice-%04d", prefix, i),
		Fingerprint: fmt.Sprintf("sha256:%064x", i),
		Provider: paymentsv1alpha1.ProviderIdentity{UID: "uid-" + prefix, Endpoint: "https://api.stripe.com",
			Account: "acct_1", Mode: []string{"live", "test"}[i%2], KeyScope: "shop"},
		Charge:  fmt.Sprintf("pi_%s_%d", prefix, i),
		Outcome: paymentsv1alpha1.LedgerCompleted,
		At:      base.Add(time.Duration(i)*1500*time.Millisecond + 123456789),
	}
	if i%4 == 3 {
		e.Outcome, e.Charge, e.Reason = paymentsv1alpha1.LedgerFailed, "", "card_declined"
	}
	if i%7 == 6 {
		e.Reason, e.ResolvedBy = "Resolved", "alice@example.com"
	}
	return e
}

func outcomes(prefix string, n int) []ledger.Entry {
	entries := make([]ledger.Entry, n)
	for i := range entries {
		entries[i] = outcome(prefix, i)
	}
	return entries
}

// recordAll records entries in l at once.
func recordAll(t *testing.T, l ledgercopy.Destination, entries []ledger.Entry) {
	t.Helper()
	g := NewWithT(t)
	var wg sync.WaitGroup
	for _, e := range entries {
		wg.Go(func() { g.Expect(l.Record(t.Context(), e)).To(Succeed()) })
	}
	wg.Wait()
}

// asStored is entries as both ledgers store them after the CRD ledger held
// them: in UTC, to the second, in key order.
func asStored(entries []ledger.Entry) []ledger.Entry {
	out := make([]ledger.Entry, len(entries))
	for i, e := range entries {
		e.At = e.At.UTC().Truncate(time.Second)
		out[i] = e
	}
	slices.SortFunc(out, func(a, b ledger.Entry) int { return cmp.Compare(a.Key, b.Key) })
	return out
}

// scanAll reads every entry of src, in UTC and in key order.
func scanAll(t *testing.T, src ledgercopy.Source) []ledger.Entry {
	t.Helper()
	var got []ledger.Entry
	NewWithT(t).Expect(src.Scan(t.Context(), func(e ledger.Entry) error {
		e.At = e.At.UTC()
		got = append(got, e)
		return nil
	})).To(Succeed())
	slices.SortFunc(got, func(a, b ledger.Entry) int { return cmp.Compare(a.Key, b.Key) })
	return got
}

func TestCopyToPostgresThenAgain(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	noPages(t)
	manager := startCRD(t, 50)
	want := outcomes("shop", 300)
	recordAll(t, manager, want)
	g.Expect(len(pagesOf(t))).To(BeNumerically(">=", 6), "several pages")
	db, inserted := newDB(t, pgserver.Start(t), "ledger")
	pages := ledgercopy.Pages(apiClient(t))

	var progress []int
	res, err := ledgercopy.Copy(ctx, pages, db, ledgercopy.Options{Batch: 100, Progress: func(r ledgercopy.Result) {
		progress = append(progress, r.Read)
	}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(ledgercopy.Result{Read: 300, Copied: 300}))
	g.Expect(progress).To(Equal([]int{100, 200, 300}))
	t.Logf("300 entries copied in %d INSERTs", inserted.n.Load())
	g.Expect(inserted.n.Load()).To(BeNumerically("<=", 15), "group commit: a few statements a batch, not one an entry")
	g.Expect(scanAll(t, db)).To(Equal(asStored(want)), "every field as the CRD ledger holds it, the time to the second")

	res, err = ledgercopy.Verify(ctx, pages, db, ledgercopy.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(ledgercopy.Result{Read: 300, Present: 300}))
	g.Expect(res.Complete()).To(BeTrue())

	// Again: nothing is written, everything is already present.
	before := inserted.n.Load()
	res, err = ledgercopy.Copy(ctx, pages, db, ledgercopy.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(ledgercopy.Result{Read: 300, Present: 300}))
	g.Expect(inserted.n.Load()).To(Equal(before), "no INSERT")
	g.Expect(scanAll(t, db)).To(Equal(asStored(want)))
}

func TestCopyWhileTheManagerRecords(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	noPages(t)
	manager := startCRD(t, 50)
	recordAll(t, manager, outcomes("before", 200))
	db, _ := newDB(t, pgserver.Start(t), "ledger")
	pages := ledgercopy.Pages(apiClient(t))

	// The running manager records an outcome after another, until told.
	var recorded atomic.Int64
	stop, stopped := make(chan struct{}), make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				stopped <- nil
				return
			default:
			}
			if err := manager.Record(ctx, outcome("during", i)); err != nil {
				stopped <- err
				return
			}
			recorded.Add(1)
		}
	}()
	g.Eventually(recorded.Load, 30*time.Second).Should(BeNumerically(">=", 10))

	first, err := ledgercopy.Copy(ctx, pages, db, ledgercopy.Options{Batch: 50})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first.Complete()).To(BeTrue())
	g.Expect(first.Copied).To(Equal(first.Read))
	g.Expect(first.Read).To(BeNumerically(">=", 210))
	// At least one more outcome comes after the copy read the pages.
	after := recorded.Load()
	g.Eventually(recorded.Load, 30*time.Second).Should(BeNumerically(">", after))
	close(stop)
	g.Expect(<-stopped).To(Succeed())
	total := 200 + int(recorded.Load())

	check, err := ledgercopy.Verify(ctx, pages, db, ledgercopy.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(check.Read).To(Equal(total))
	g.Expect(check.Present).To(Equal(first.Read))
	g.Expect(check.Missing).To(Equal(total-first.Read), "what came in after the copy read past it")
	g.Expect(check.Missing).To(BeNumerically(">", 0))
	g.Expect(check.MissingKeys).NotTo(BeEmpty())
	g.Expect(check.MissingKeys).To(HaveEach(HavePrefix("during/")))
	g.Expect(check.Complete()).To(BeFalse())

	second, err := ledgercopy.Copy(ctx, pages, db, ledgercopy.Options{Batch: 50})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second).To(Equal(ledgercopy.Result{Read: total, Copied: check.Missing, Present: first.Read}))

	check, err = ledgercopy.Verify(ctx, pages, db, ledgercopy.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(check).To(Equal(ledgercopy.Result{Read: total, Present: total}))
}

func TestCopyToTheCRDLedgerAndBack(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	noPages(t)
	srv := pgserver.Start(t)
	db, _ := newDB(t, srv, "first")
	want := outcomes("pg", 300)
	recordAll(t, db, want)
	crd := startCRD(t, 0)

	res, err := ledgercopy.Copy(ctx, db, crd, ledgercopy.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(ledgercopy.Result{Read: 300, Copied: 300}))
	written := writes(t)
	t.Logf("300 entries copied in %d page writes", written)
	g.Expect(written).To(BeNumerically("<=", 10), "group commit: a few page writes, not one an entry")
	res, err = ledgercopy.Verify(ctx, db, crd, ledgercopy.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(ledgercopy.Result{Read: 300, Present: 300}))
	pages := ledgercopy.Pages(apiClient(t))
	g.Expect(scanAll(t, pages)).To(Equal(asStored(want)), "every field, the time to the second")

	// Again: nothing is written.
	res, err = ledgercopy.Copy(ctx, db, crd, ledgercopy.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(ledgercopy.Result{Read: 300, Present: 300}))
	g.Expect(writes(t)).To(Equal(written))

	// And back to another database: the same entries.
	other, _ := newDB(t, srv, "second")
	res, err = ledgercopy.Copy(ctx, pages, other, ledgercopy.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(ledgercopy.Result{Read: 300, Copied: 300}))
	g.Expect(scanAll(t, other)).To(Equal(asStored(want)))
}

func TestCopyToTheCRDLedgerWhileTheManagerRecordsThere(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	noPages(t)
	db, _ := newDB(t, pgserver.Start(t), "ledger")
	want := outcomes("pg", 300)
	recordAll(t, db, want)

	// The manager, back on the CRD ledger, records new outcomes, up to
	// 500, and now and then one the database holds too; small pages, so
	// that it and the copy also race to start pages.
	manager := startCRD(t, 50)
	var recorded atomic.Int64
	stop, stopped := make(chan struct{}), make(chan error, 1)
	go func() {
		for i := 0; i < 500; i++ {
			select {
			case <-stop:
				stopped <- nil
				return
			default:
			}
			e := outcome("during", i)
			if i%10 == 0 {
				e = want[(i/10)%len(want)]
			}
			if err := manager.Record(ctx, e); err != nil {
				stopped <- err
				return
			}
			recorded.Add(1)
		}
		<-stop
		stopped <- nil
	}()
	g.Eventually(recorded.Load, 30*time.Second).Should(BeNumerically(">=", 10))

	copier := startCRD(t, 50)
	copied, err := ledgercopy.Copy(ctx, db, copier, ledgercopy.Options{Batch: 50})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(copied.Complete()).To(BeTrue())
	g.Expect(copied.Copied + copied.Present).To(Equal(300))
	close(stop)
	g.Expect(<-stopped).To(Succeed())
	t.Logf("copied %d, %d already there, while the manager recorded %d outcomes", copied.Copied, copied.Present, recorded.Load())

	res, err := ledgercopy.Verify(ctx, db, copier, ledgercopy.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(ledgercopy.Result{Read: 300, Present: 300}))
	onPages := map[string]int{}
	g.Expect(ledger.ReadAll(ctx, apiClient(t), func(e ledger.Entry) error {
		onPages[e.Key]++
		return nil
	})).To(Succeed())
	for _, e := range want {
		g.Expect(onPages).To(HaveKeyWithValue(e.Key, 1), "every outcome once on the pages")
	}
	for i := range int(recorded.Load()) {
		if i%10 != 0 {
			g.Expect(onPages).To(HaveKeyWithValue(outcome("during", i).Key, 1), "the manager's outcomes are kept")
		}
	}
}

func TestAConflictResolvedByHandIsCopied(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	noPages(t)
	e := outcome("hand", 1)
	recordAll(t, startCRD(t, 0), []ledger.Entry{e})
	srv := pgserver.Start(t)
	db, _ := newDB(t, srv, "ledger")
	other := e
	other.Fingerprint = "sha256:" + strings.Repeat("e", 64)
	g.Expect(db.Record(ctx, other)).To(Succeed())
	pages := ledgercopy.Pages(apiClient(t))

	res, err := ledgercopy.Copy(ctx, pages, db, ledgercopy.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Conflicts).To(Equal(1))

	// A person finds the CRD ledger's entry right, and deletes the row.
	admin, err := pgxpool.New(ctx, srv.DSN("ledger"))
	g.Expect(err).NotTo(HaveOccurred())
	defer admin.Close()
	_, err = admin.Exec(ctx, "DELETE FROM paymentjob_outcomes WHERE key = $1", e.Key)
	g.Expect(err).NotTo(HaveOccurred())

	res, err = ledgercopy.Copy(ctx, pages, db, ledgercopy.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(ledgercopy.Result{Read: 1, Copied: 1}))
	got, found, err := db.Find(ctx, e.Key)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeTrue())
	g.Expect(got.Fingerprint).To(Equal(e.Fingerprint))
}

func TestTheCopysCRDLedgerDeletesNoPage(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	noPages(t)
	// Outcomes older than the default retention, on a full page and the
	// page after it.
	old := outcomes("old", 60)
	for i := range old {
		old[i].At = time.Now().Add(-500 * 24 * time.Hour)
	}
	recordAll(t, startCRD(t, 50), old)
	g.Expect(pagesOf(t)).To(HaveLen(2))

	// A copy's ledger process applies no retention: once it records, the
	// pruning it would do at start is behind it.
	copier := startCRD(t, 50)
	g.Expect(copier.Record(ctx, outcome("new", 1))).To(Succeed())
	g.Expect(pagesOf(t)).To(HaveLen(2), "the full page of old outcomes stays")

	// A manager's ledger, with the default retention, deletes that page.
	c := apiClient(t)
	manager := ledger.New(c, c, ledger.Options{MaxEntriesPerPage: 50})
	go func() { _ = manager.Start(ctx) }()
	g.Eventually(manager.Loaded, 30*time.Second).Should(Succeed())
	g.Expect(manager.Record(ctx, outcome("new", 2))).To(Succeed())
	g.Expect(pagesOf(t)).To(HaveLen(1))
}

func TestConflictsAreReportedNotOverwritten(t *testing.T) {
	entries := outcomes("conflict", 10)
	otherRequest := entries[3]
	otherRequest.Fingerprint = "sha256:" + strings.Repeat("f", 64)
	otherOutcome := entries[5]
	otherOutcome.Outcome, otherOutcome.Charge, otherOutcome.Reason = paymentsv1alpha1.LedgerFailed, "", "card_declined"
	held := []ledger.Entry{otherRequest, otherOutcome, entries[7]}

	tests := []struct {
		name string
		// ledgers returns the source, holding entries, and the
		// destination, holding held.
		ledgers func(t *testing.T) (ledgercopy.Source, ledgercopy.Destination)
	}{{
		name: "to PostgreSQL",
		ledgers: func(t *testing.T) (ledgercopy.Source, ledgercopy.Destination) {
			recordAll(t, startCRD(t, 0), entries)
			db, _ := newDB(t, pgserver.Start(t), "ledger")
			recordAll(t, db, held)
			return ledgercopy.Pages(apiClient(t)), db
		},
	}, {
		name: "to the CRD ledger",
		ledgers: func(t *testing.T) (ledgercopy.Source, ledgercopy.Destination) {
			db, _ := newDB(t, pgserver.Start(t), "ledger")
			recordAll(t, db, entries)
			crd := startCRD(t, 0)
			recordAll(t, crd, held)
			return db, crd
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := t.Context()
			noPages(t)
			src, dst := tt.ledgers(t)

			res, err := ledgercopy.Copy(ctx, src, dst, ledgercopy.Options{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Read).To(Equal(10))
			g.Expect(res.Copied).To(Equal(7))
			g.Expect(res.Present).To(Equal(1), "the same outcome under the key")
			g.Expect(res.Conflicts).To(Equal(2))
			g.Expect(res.Missing).To(BeZero())
			var shown []string
			for _, c := range res.ConflictExamples {
				shown = append(shown, c.String())
			}
			g.Expect(shown).To(ConsistOf(
				And(HavePrefix(entries[3].Key+": "), ContainSubstring(entries[3].Fingerprint), ContainSubstring(otherRequest.Fingerprint)),
				And(HavePrefix(entries[5].Key+": "), ContainSubstring("Completed"), ContainSubstring("Failed")),
			))

			stored, err := dst.FindAll(ctx, []string{entries[3].Key, entries[5].Key})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(stored[entries[3].Key].Fingerprint).To(Equal(otherRequest.Fingerprint), "the destination keeps its entry")
			g.Expect(stored[entries[5].Key].Outcome).To(Equal(paymentsv1alpha1.LedgerFailed))

			res, err = ledgercopy.Verify(ctx, src, dst, ledgercopy.Options{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Read).To(Equal(10))
			g.Expect(res.Present).To(Equal(8))
			g.Expect(res.Conflicts).To(Equal(2))
			g.Expect(res.Complete()).To(BeFalse())
		})
	}
}

func TestCheckMigrated(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	noPages(t)
	srv := pgserver.Start(t)
	db, _ := newDB(t, srv, "ledger")
	reader := apiClient(t)
	g.Expect(ledgercopy.CheckMigrated(ctx, reader, db)).To(Succeed(), "no pages: nothing to copy")

	manager := startCRD(t, 50)
	want := outcomes("check", 120)
	recordAll(t, manager, want)
	err := ledgercopy.CheckMigrated(ctx, reader, db)
	var notMigrated *ledgercopy.NotMigratedError
	g.Expect(errors.As(err, &notMigrated)).To(BeTrue(), "%v", err)
	g.Expect(notMigrated.Missing).To(Equal(120))
	g.Expect(notMigrated.Entries).To(Equal(120))
	g.Expect(notMigrated.Keys).To(HaveLen(5))
	g.Expect(notMigrated.Keys).To(HaveEach(HavePrefix("check/invoice-")))
	g.Expect(err.Error()).To(ContainSubstring("lacks 120 of the 120 outcomes"))
	g.Expect(err.Error()).To(ContainSubstring(notMigrated.Keys[0]))
	g.Expect(err.Error()).To(ContainSubstring("manager ledger copy --from=crd --to=postgres"))
	g.Expect(err.Error()).To(ContainSubstring("--ledger-postgres-skip-migration-check"))

	_, err = ledgercopy.Copy(ctx, ledgercopy.Pages(reader), db, ledgercopy.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ledgercopy.CheckMigrated(ctx, reader, db)).To(Succeed())

	// An outcome the manager records on the CRD ledger after the copy.
	late := outcome("check", 500)
	g.Expect(manager.Record(ctx, late)).To(Succeed())
	err = ledgercopy.CheckMigrated(ctx, reader, db)
	g.Expect(errors.As(err, &notMigrated)).To(BeTrue(), "%v", err)
	g.Expect(notMigrated.Missing).To(Equal(1))
	g.Expect(notMigrated.Entries).To(Equal(121))
	g.Expect(notMigrated.Keys).To(Equal([]string{late.Key}))

	// A database that does not answer is not one that holds everything.
	srv.Kill(t)
	err = ledgercopy.CheckMigrated(ctx, reader, db)
	g.Expect(err).To(MatchError(pgledger.ErrUnavailable))
	g.Expect(errors.As(err, &notMigrated)).To(BeFalse())
}
