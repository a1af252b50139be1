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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/discovery"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// The size gauges (paymentjob_ledger_bytes, _entries, _pages) against what
// etcd itself holds: its keys of the pages, read through etcd's JSON
// gateway, not through the API server.

// bytesPerEntry is the figure of docs/operations.md ("Sizing the ledger"):
// what an outcome shaped like stripeCharge's takes in etcd, pages full,
// their metadata and provider shared by 500 entries.
const bytesPerEntry = 249

// TestLedgerSizeAfterAppends: the gauges count what this process appends as
// soon as it is written, a scrape makes no API request, and the bytes are
// what etcd holds for the pages, to the byte. It measures bytesPerEntry.
func TestLedgerSizeAfterAppends(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	l, n, gets := startCountingGets(t, Options{})
	before := l.footprint()
	g.Expect(before).To(Equal(etcdHolds(t)), "the pages of earlier tests, as loaded")
	g.Expect(gauges(t)).To(Equal(before))

	const outcomes = 1000
	run := int(time.Now().UnixNano() % 1e6)
	var wg sync.WaitGroup
	errs := make(chan error, outcomes)
	for i := range outcomes {
		wg.Go(func() { errs <- l.Record(ctx, stripeCharge(run, i, time.Now())) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}

	after := l.footprint()
	g.Expect(after.entries - before.entries).To(Equal(outcomes))
	g.Expect(after).To(Equal(etcdHolds(t)), "the gauges are what etcd holds")
	read, writes := gets.Load(), n.writes.Load()
	for range 10 {
		g.Expect(gauges(t)).To(Equal(after))
	}
	g.Expect(gets.Load()).To(Equal(read), "a scrape reads no page")
	g.Expect(n.writes.Load()).To(Equal(writes))

	t.Logf("%d outcomes in %d writes: %d pages and %d bytes more", outcomes, writes, after.pages-before.pages, after.bytes-before.bytes)
	// The bytes an entry: a full page of these outcomes only (the second
	// one written at least), as etcd holds it, over its entries.
	ours := func(p storedPage) bool {
		for _, e := range p.Entries {
			if !strings.HasPrefix(e.Key, fmt.Sprintf("billing/invoice-%06d-", run)) {
				return false
			}
		}
		return len(p.Entries) == maxEntriesPerPage
	}
	var full []int
	for _, p := range etcdPages(t) {
		if ours(p) {
			full = append(full, p.bytes)
		}
	}
	g.Expect(full).NotTo(BeEmpty(), "a full page of these outcomes")
	for _, b := range full {
		perEntry := float64(b) / maxEntriesPerPage
		t.Logf("a full page of %d such outcomes: %d bytes, %.1f an entry", maxEntriesPerPage, b, perEntry)
		g.Expect(perEntry).To(BeNumerically("~", bytesPerEntry, 1), "docs/operations.md states %d bytes an entry", bytesPerEntry)
	}

	// One outcome at a time, as a quiet manager records them: each append
	// writes its page again, and etcd keeps every version of it until the
	// API server compacts (docs/operations.md, "Sizing the ledger").
	const single = 100
	dbBefore, before := etcdDBSize(t), after
	for i := range single {
		g.Expect(l.Record(ctx, stripeCharge(run, outcomes+i, time.Now()))).To(Succeed())
	}
	after = l.footprint()
	g.Expect(after).To(Equal(etcdHolds(t)))
	t.Logf("%d outcomes one at a time in %d writes: the pages grew by %d bytes, etcd's database by %d",
		single, n.writes.Load()-writes, after.bytes-before.bytes, etcdDBSize(t)-dbBefore)
}

// TestLedgerSizeAfterAnotherProcessAppends: a page another process wrote is
// counted once this process reads it again, which its watch makes it do
// before its next Find, with no request more than that read.
func TestLedgerSizeAfterAnotherProcessAppends(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	a, _, gets := startCountingGets(t, Options{})
	b, _ := start(t, Options{})
	before := a.footprint()
	g.Expect(b.footprint()).To(Equal(before))

	other := unique("other")
	run := int(time.Now().UnixNano() % 1e6)
	for i := range 3 {
		g.Expect(b.Record(ctx, stripeCharge(run, i, time.Now()))).To(Succeed())
	}
	g.Eventually(a.unread).WithTimeout(30*time.Second).Should(BeTrue(), "a's watch reports b's page")
	// Each Find of a reads again the pages its watch reported since; b's
	// writes may reach it in more than one report.
	read, rereads := gets.Load(), testutil.ToFloat64(pageRereadsTotal)
	g.Eventually(func(g Gomega) footprint {
		_, found, err := a.Find(ctx, other+"/new")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(found).To(BeFalse())
		return a.footprint()
	}).WithTimeout(30 * time.Second).Should(Equal(b.footprint()))
	g.Expect(gets.Load()-read).To(BeNumerically(">=", 1), "the page b wrote, read again")
	g.Expect(float64(gets.Load()-read)).To(Equal(testutil.ToFloat64(pageRereadsTotal)-rereads), "and nothing else")

	after := a.footprint()
	g.Expect(after.entries - before.entries).To(Equal(3))
	g.Expect(after.bytes).To(BeNumerically(">", before.bytes))
	g.Expect(after).To(Equal(etcdHolds(t)))
	g.Expect(gauges(t)).To(Equal(after), "both processes report the same, the largest")
}

// TestLedgerSizeAfterRetention: pages the retention deletes leave the
// gauges of the process that deleted them at once, and those of another
// process through its watch, with no API request.
func TestLedgerSizeAfterRetention(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	now := time.Now()
	clk := clocktesting.NewFakePassiveClock(now)
	l, _ := start(t, Options{MaxEntriesPerPage: 5, Retention: 24 * time.Hour, Clock: clk})
	watcher, _, gets := startCountingGets(t, Options{})
	// The newest page filled first, so that ten outcomes three days old
	// fill two pages of their own, and one recent outcome starts the
	// newest page, which retention keeps.
	var newest paymentsv1alpha1.PaymentLedger
	for _, p := range pagesOf(t) {
		if p.Name > newest.Name {
			newest = p
		}
	}
	fill := max(0, 5-len(newest.Entries))
	run := int(time.Now().UnixNano() % 1e6)
	for i := range fill + 10 {
		g.Expect(l.Record(ctx, stripeCharge(run, i, now.Add(-3*24*time.Hour)))).To(Succeed())
	}
	g.Expect(l.Record(ctx, stripeCharge(run, fill+10, now))).To(Succeed())
	before := l.footprint()
	g.Expect(before).To(Equal(etcdHolds(t)))
	// The watcher reads what l wrote once its watch reported it, as before
	// any Find.
	g.Eventually(func(g Gomega) footprint {
		_, _, err := watcher.Find(ctx, unique("retention")+"/new")
		g.Expect(err).NotTo(HaveOccurred())
		return watcher.footprint()
	}).WithTimeout(30 * time.Second).Should(Equal(before))

	clk.SetTime(now.Add(time.Hour))
	pruned := testutil.ToFloat64(prunedPagesTotal)
	g.Expect(l.Prune(ctx)).To(Succeed())
	g.Expect(testutil.ToFloat64(prunedPagesTotal) - pruned).To(BeNumerically(">=", 2))

	after := l.footprint()
	g.Expect(after).To(Equal(etcdHolds(t)))
	g.Expect(before.pages - after.pages).To(BeNumerically(">=", 2))
	g.Expect(before.entries - after.entries).To(BeNumerically(">=", 10))
	g.Expect(after.bytes).To(BeNumerically("<", before.bytes))
	read := gets.Load()
	g.Eventually(watcher.footprint).WithTimeout(30*time.Second).Should(Equal(after), "the watcher sees the pages deleted")
	g.Expect(gets.Load()).To(Equal(read), "and reads no page for it")
	g.Expect(gauges(t)).To(Equal(after))
}

// startCountingGets is start, with the pages the ledger reads one at a time
// (Get) counted apart: every 20 seconds it also lists the pages' metadata
// (verify), which a count of every read would catch at random.
func startCountingGets(t *testing.T, opts Options) (*Ledger, *counts, *atomic.Int64) {
	t.Helper()
	n, gets := &counts{}, &atomic.Int64{}
	c := interceptor.NewClient(newClient(t, n), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			gets.Add(1)
			return c.Get(ctx, key, obj, opts...)
		},
	})
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
	wg.Go(func() { _ = informers.Start(ctx) })
	wg.Go(func() { _ = l.Start(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	waitFor(t, "the ledger to load", func() bool { return l.Loaded() == nil })
	informers.WaitForCacheSync(ctx)
	return l, n, gets
}

// unread reports whether the watch reported a page this process has not
// read at that version.
func (l *Ledger) unread() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.pages {
		if newer(p.seen, p.indexed) {
			return true
		}
	}
	return false
}

// stripeCharge is an outcome shaped like the engine's record of a Stripe
// charge: a 28-character key (namespace billing, job key
// invoice-<run>-<i>), the request's fingerprint, a PaymentIntent id of 27
// characters and a live Stripe account.
func stripeCharge(run, i int, at time.Time) Entry {
	key := payment.SentKey("billing", fmt.Sprintf("invoice-%06d-%05d", run, i))
	return Entry{
		Key:         key,
		Fingerprint: payment.RequestHash(key, payment.ChargeRequest{Amount: 4999, Currency: "eur"}),
		Provider: paymentsv1alpha1.ProviderIdentity{UID: "6f1c0b52-93a4-4e8e-9d7e-0c5b1f2a7d41",
			Endpoint: "https://api.stripe.com", Account: "acct_1Pq2Rs3Tu4Vw5Xy6", Mode: "live"},
		Charge:   fmt.Sprintf("pi_3P%022d", i),
		Amount:   4999,
		Currency: "eur",
		Outcome:  paymentsv1alpha1.LedgerCompleted,
		At:       at,
	}
}

// gauges is the ledger's size as a scrape of the manager's registry reads
// it.
func gauges(t *testing.T) footprint {
	t.Helper()
	return footprint{
		bytes:   int(gathered(t, "paymentjob_ledger_bytes")),
		entries: int(gathered(t, "paymentjob_ledger_entries")),
		pages:   int(gathered(t, "paymentjob_ledger_pages")),
	}
}

// gathered is the value of the one series of the metric name in
// controller-runtime's registry.
func gathered(t *testing.T, name string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		NewWithT(t).Expect(f.GetMetric()).To(HaveLen(1), name)
		m := f.GetMetric()[0]
		if m.GetGauge() != nil {
			return m.GetGauge().GetValue()
		}
		return m.GetCounter().GetValue()
	}
	t.Fatalf("%s is not gathered", name)
	return 0
}

// etcdHolds is what etcd holds under the pages' keys: their bytes, their
// entries and their number.
func etcdHolds(t *testing.T) footprint {
	t.Helper()
	var f footprint
	for _, p := range etcdPages(t) {
		f.bytes += p.bytes
		f.entries += len(p.Entries)
		f.pages++
	}
	return f
}

// etcdPages are the pages as etcd holds them, read from etcd itself.
func etcdPages(t *testing.T) []storedPage {
	t.Helper()
	g := NewWithT(t)
	prefix := "/registry/" + paymentsv1alpha1.GroupVersion.Group + "/paymentledgers/"
	// The range of every key with the prefix ends at the prefix with its
	// last byte incremented: '/' + 1 is '0'.
	end := strings.TrimSuffix(prefix, "/") + "0"
	var r struct {
		Kvs []struct {
			Value []byte `json:"value"`
		} `json:"kvs"`
	}
	etcdCall(t, "/v3/kv/range", map[string]any{"key": []byte(prefix), "range_end": []byte(end)}, &r)
	pages := make([]storedPage, 0, len(r.Kvs))
	for _, kv := range r.Kvs {
		p := storedPage{bytes: len(kv.Value)}
		g.Expect(json.Unmarshal(kv.Value, &p.PaymentLedger)).To(Succeed())
		pages = append(pages, p)
	}
	return pages
}

// storedPage is a page as etcd holds it, and its size there.
type storedPage struct {
	paymentsv1alpha1.PaymentLedger
	bytes int
}

// etcdDBSize is the size of etcd's database file, what its quota limits.
func etcdDBSize(t *testing.T) int {
	t.Helper()
	var s struct {
		DBSize int `json:"dbSize,string"`
	}
	etcdCall(t, "/v3/maintenance/status", map[string]any{}, &s)
	return s.DBSize
}

// etcdCall posts req to etcd's JSON gateway at path and decodes the answer
// into resp.
func etcdCall(t *testing.T, path string, req, resp any) {
	t.Helper()
	g := NewWithT(t)
	body, err := json.Marshal(req)
	g.Expect(err).NotTo(HaveOccurred())
	r, err := http.Post(etcdURL(t)+path, "application/json", bytes.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = r.Body.Close() }()
	g.Expect(r.StatusCode).To(Equal(http.StatusOK), path)
	g.Expect(json.NewDecoder(r.Body).Decode(resp)).To(Succeed())
}

var (
	etcdOnce sync.Once
	etcdAddr string
)

// etcdURL is the client URL of the control plane's etcd, from the API
// server's --etcd-servers flag, which /flagz reports.
func etcdURL(t *testing.T) string {
	t.Helper()
	etcdOnce.Do(func() {
		dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
		if err != nil {
			return
		}
		raw, err := dc.RESTClient().Get().AbsPath("/flagz").
			SetHeader("Accept", "application/json;as=Flagz;v=v1beta1;g=config.k8s.io").DoRaw(context.Background())
		if err != nil {
			return
		}
		var z struct {
			Flags map[string]string `json:"flags"`
		}
		if json.Unmarshal(raw, &z) != nil {
			return
		}
		etcdAddr, _, _ = strings.Cut(strings.Trim(z.Flags["etcd-servers"], "[]"), ",")
	})
	if etcdAddr == "" {
		t.Fatal("cannot find etcd's address in the API server's /flagz")
	}
	return etcdAddr
}
