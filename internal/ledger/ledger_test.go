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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/testenv"
)

// The ledger's tests run against the self-built API server, one test at a
// time: they share its pages, and each uses keys of its own.
var (
	env    *testenv.Env
	scheme = runtime.NewScheme()
)

func TestMain(m *testing.M) {
	if err := paymentsv1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// counts is the API requests one ledger made.
type counts struct{ reads, writes atomic.Int64 }

// newClient returns a client that counts the ledger's requests.
func newClient(t *testing.T, n *counts) client.WithWatch {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			n.reads.Add(1)
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			n.reads.Add(1)
			return c.List(ctx, list, opts...)
		},
		Create: countWrite(n, client.WithWatch.Create),
		Update: countWrite(n, client.WithWatch.Update),
		Delete: countWrite(n, client.WithWatch.Delete),
	})
}

// countWrite is an interceptor of write, a client's write of one object
// with options of type O, that counts each call in n.writes.
func countWrite[O any](n *counts, write func(client.WithWatch, context.Context, client.Object, ...O) error) func(context.Context, client.WithWatch, client.Object, ...O) error {
	return func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...O) error {
		n.writes.Add(1)
		return write(c, ctx, obj, opts...)
	}
}

// start runs a ledger, as one manager process would, watching the pages
// through a cache of their metadata, until the test ends.
func start(t *testing.T, opts Options) (*Ledger, *counts) {
	t.Helper()
	n := &counts{}
	c := newClient(t, n)
	l := New(c, c, opts)
	ctx, cancel := context.WithCancel(context.Background())
	informers, err := cache.New(env.Config, cache.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.WatchPages(ctx, informers); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = informers.Start(ctx) }()
	go func() { defer wg.Done(); _ = l.Start(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	waitFor(t, "the ledger to load", func() bool { return l.Loaded() == nil })
	informers.WaitForCacheSync(ctx)
	return l, n
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// unique returns a key prefix no other test run has used on this API server.
func unique(name string) string {
	return fmt.Sprintf("%s-%d", name, time.Now().UnixNano())
}

func entry(prefix string, i int, at time.Time) Entry {
	return Entry{
		Key:         fmt.Sprintf("%s/job-%d", prefix, i),
		Fingerprint: fmt.Sprintf("sha256:%064d", i),
		Provider:    paymentsv1alpha1.ProviderIdentity{UID: "uid-1", Endpoint: "http://127.0.0.1:1", Account: "acct_1"},
		Charge:      fmt.Sprintf("pi_%s_%d", prefix, i),
		Outcome:     paymentsv1alpha1.LedgerCompleted,
		At:          at,
	}
}

// pagesOf returns every page, read from the API server.
func pagesOf(t *testing.T) []paymentsv1alpha1.PaymentLedger {
	t.Helper()
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	var list paymentsv1alpha1.PaymentLedgerList
	if err := c.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// occurrences counts, over every page, the entries under each key with prefix.
func occurrences(t *testing.T, prefix string) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for _, p := range pagesOf(t) {
		for _, e := range p.Entries {
			if len(e.Key) > len(prefix) && e.Key[:len(prefix)+1] == prefix+"/" {
				seen[e.Key]++
			}
		}
	}
	return seen
}

func TestRecordAndFind(t *testing.T) {
	ctx := context.Background()
	l, n := start(t, Options{})
	find := unique("find")
	now := time.Now()
	want := entry(find, 1, now)
	want.Provider.Account = "acct_find"
	if err := l.Record(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, ok, err := l.Find(ctx, want.Key)
	if err != nil || !ok {
		t.Fatalf("Find after Record = %v, %v", ok, err)
	}
	if got.Fingerprint != want.Fingerprint || got.Charge != want.Charge || got.Outcome != want.Outcome ||
		got.Provider != want.Provider || !got.At.Equal(now.UTC().Truncate(time.Second)) {
		t.Fatalf("Find returned %+v, want %+v", got, want)
	}

	// A key that is not there costs no API request.
	before := n.reads.Load()
	for i := range 1000 {
		if _, ok, err := l.Find(ctx, fmt.Sprintf(find+"/absent-%d", i)); ok || err != nil {
			t.Fatalf("Find of an absent key = %v, %v", ok, err)
		}
	}
	if reads := n.reads.Load() - before; reads != 0 {
		t.Fatalf("1000 lookups of absent keys made %d API reads, want 0", reads)
	}

	// The first outcome stays: a second Record under the key is not written.
	again := want
	again.Charge = "pi_other"
	writes := n.writes.Load()
	var conflict *ConflictError
	if err := l.Record(ctx, again); !errors.As(err, &conflict) || conflict.Held.Charge != want.Charge {
		t.Fatalf("a second Record of another charge = %v; want a *ConflictError holding %s", err, want.Charge)
	}
	if err := l.Record(ctx, want); err != nil {
		t.Fatalf("recording the outcome the key holds again = %v; want nil", err)
	}
	if got, _, _ := l.Find(ctx, want.Key); got.Charge != want.Charge {
		t.Fatalf("a second Record replaced the entry: charge %s", got.Charge)
	}
	if w := n.writes.Load() - writes; w != 0 {
		t.Fatalf("recording a key already there made %d writes", w)
	}

	// A process that starts later finds it, from its own index.
	other, _ := start(t, Options{})
	if !other.has(want.Key) {
		t.Fatal("a new process does not know the key after loading the pages")
	}
	if got, ok, _ := other.Find(ctx, want.Key); !ok || got.Charge != want.Charge {
		t.Fatalf("a new process finds %+v, %v", got, ok)
	}
}

func TestConcurrentRecordsShareWrites(t *testing.T) {
	ctx := context.Background()
	l, n := start(t, Options{})
	group := unique("group")
	const jobs = 200
	var wg sync.WaitGroup
	errs := make(chan error, 2*jobs)
	// Pages left by earlier runs, filled to other sizes, are read once
	// when first asked about; after that only new writes could be a reason.
	if _, _, err := l.Find(ctx, group+"/warm-up"); err != nil {
		t.Fatal(err)
	}
	rereads := testutil.ToFloat64(pageRereadsTotal)
	for i := range jobs {
		wg.Go(func() { errs <- l.Record(ctx, entry(group, i, time.Now())) })
		// New jobs asking meanwhile: the process's own appends are no
		// reason to read a page again.
		wg.Go(func() {
			if _, ok, err := l.Find(ctx, fmt.Sprintf("%s/new-%d", group, i)); ok || err != nil {
				errs <- fmt.Errorf("Find of a new key = %v, %v", ok, err)
			}
		})
	}
	wg.Wait()
	if got := testutil.ToFloat64(pageRereadsTotal) - rereads; got != 0 {
		t.Fatalf("the process read its own pages again %v times", got)
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	writes := n.writes.Load()
	t.Logf("%d concurrent outcomes took %d ledger writes", jobs, writes)
	if writes >= jobs/2 {
		t.Fatalf("%d concurrent outcomes took %d writes; appends are not shared", jobs, writes)
	}
	seen := occurrences(t, group)
	if len(seen) != jobs {
		t.Fatalf("%d of %d entries on the pages", len(seen), jobs)
	}
	for k, c := range seen {
		if c != 1 {
			t.Fatalf("%s is on the pages %d times", k, c)
		}
	}
}

func TestTwoProcessesNeverLoseOrRepeatAnEntry(t *testing.T) {
	ctx := context.Background()
	// Small pages, so that the two processes also race to start pages.
	a, na := start(t, Options{MaxEntriesPerPage: 7})
	b, nb := start(t, Options{MaxEntriesPerPage: 7})
	pair := unique("pair")
	const jobs = 150
	var wg sync.WaitGroup
	errs := make(chan error, 3*jobs)
	for i := range jobs {
		wg.Go(func() { errs <- a.Record(ctx, entry(pair, i, time.Now())) })
		wg.Go(func() { errs <- b.Record(ctx, entry(pair, jobs+i, time.Now())) })
		if i%5 == 0 {
			// Both processes record the same outcome (a crash recovery).
			wg.Go(func() { errs <- b.Record(ctx, entry(pair, i, time.Now())) })
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	seen := occurrences(t, pair)
	if len(seen) != 2*jobs {
		t.Fatalf("%d of %d entries on the pages", len(seen), 2*jobs)
	}
	for k, c := range seen {
		if c != 1 {
			t.Fatalf("%s is on the pages %d times", k, c)
		}
	}
	for _, p := range pagesOf(t) {
		if raw, _ := json.Marshal(p); len(raw) > 1<<20 {
			t.Fatalf("page %s is %d bytes", p.Name, len(raw))
		}
	}
	t.Logf("writes: %d and %d for %d outcomes", na.writes.Load(), nb.writes.Load(), 2*jobs)
	// Each process finds what the other wrote.
	waitFor(t, "each process to see the other's pages", func() bool {
		_, okA, _ := a.Find(ctx, entry(pair, jobs, time.Time{}).Key)
		_, okB, _ := b.Find(ctx, entry(pair, 1, time.Time{}).Key)
		return okA && okB
	})
}

func TestRetentionDeletesOldPages(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	clk := clocktesting.NewFakePassiveClock(now)
	old := unique("old")
	l, _ := start(t, Options{MaxEntriesPerPage: 5, Retention: 24 * time.Hour, Clock: clk})
	// Retention deletes whole pages: fill the newest page with outcomes a
	// week old, so that each day below has a page of its own.
	var newest paymentsv1alpha1.PaymentLedger
	for _, p := range pagesOf(t) {
		if p.Name > newest.Name {
			newest = p
		}
	}
	for i := range max(0, 5-len(newest.Entries)) {
		if err := l.Record(ctx, entry(old, 100+i, now.Add(-7*24*time.Hour))); err != nil {
			t.Fatal(err)
		}
	}
	// Six days of outcomes, five a day: a page a day.
	for day := 6; day >= 1; day-- {
		for i := range 5 {
			if err := l.Record(ctx, entry(old, day*10+i, now.Add(-time.Duration(day)*24*time.Hour))); err != nil {
				t.Fatal(err)
			}
		}
	}
	recent := entry(old, 1, now)
	if err := l.Record(ctx, recent); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(now.Add(time.Hour))
	if err := l.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	for day := 6; day >= 1; day-- {
		if _, ok, _ := l.Find(ctx, entry(old, day*10, time.Time{}).Key); ok {
			t.Fatalf("an outcome %d days old is still in a ledger that keeps one day", day)
		}
	}
	if _, ok, _ := l.Find(ctx, recent.Key); !ok {
		t.Fatal("retention deleted a recent outcome")
	}
	if got := len(occurrences(t, old)); got != 1 {
		t.Fatalf("%d entries left, want the recent one", got)
	}
}

// The backup and restore of docs/operations.md: the pages exported with their
// name, labels and data only, every page deleted, then created again from
// the export. A running process finds the entries through its watch, and a
// process started afterwards from its load.
func TestLedgerSurvivesBackupAndRestore(t *testing.T) {
	ctx := context.Background()
	l, _ := start(t, Options{MaxEntriesPerPage: 50})
	kept := unique("kept")
	const n = 120
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := l.Record(ctx, entry(kept, i, time.Now())); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()

	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	pages := pagesOf(t)
	backup := make([]paymentsv1alpha1.PaymentLedger, 0, len(pages))
	bytes, entries := 0, 0
	for _, p := range pages {
		raw, _ := json.Marshal(p.Entries)
		bytes, entries = bytes+len(raw), entries+len(p.Entries)
		backup = append(backup, paymentsv1alpha1.PaymentLedger{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Labels: p.Labels},
			Summary:    p.Summary, Providers: p.Providers, Entries: p.Entries,
		})
	}
	t.Logf("%d pages, %d entries, %d bytes an entry", len(backup), entries, bytes/max(entries, 1))
	if per := bytes / max(entries, 1); per > 300 {
		t.Fatalf("an entry takes %d bytes of JSON; docs/operations.md sizes the ledger at 249 bytes an entry as stored (TestLedgerSizeAfterAppends)", per)
	}
	if err := c.DeleteAllOf(ctx, &paymentsv1alpha1.PaymentLedger{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pages to be gone", func() bool { return len(pagesOf(t)) == 0 })
	waitFor(t, "the running process to see them gone", func() bool { return !l.has(entry(kept, 0, time.Time{}).Key) })

	for i := range backup {
		if err := c.Create(ctx, &backup[i]); err != nil {
			t.Fatal(err)
		}
	}
	later, _ := start(t, Options{})
	for i := range n {
		key := entry(kept, i, time.Time{}).Key
		for _, p := range []*Ledger{l, later} {
			var found bool
			waitFor(t, "a restored entry", func() bool {
				_, found, err = p.Find(ctx, key)
				return found || err != nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	// Appends go on after the highest restored page.
	if err := later.Record(ctx, entry(kept, n, time.Now())); err != nil {
		t.Fatal(err)
	}
	if got := len(occurrences(t, kept)); got != n+1 {
		t.Fatalf("%d entries after the restore and one more outcome, want %d", got, n+1)
	}
}
