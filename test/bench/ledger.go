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

package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentjob"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
)

// This file holds the outcome ledger's side of the benchmark: the ledger the
// baseline and the history record into (the operator's own internal/ledger),
// the 100,000 entries seeded for the heap comparison, and that phase.

const (
	// seedPages and seedEntriesPerPage make the seeded ledger: 100,000
	// entries on full pages.
	seedPages          = 200
	seedEntriesPerPage = 500
	// seedSpan is how far back the seeded entries go, well within the
	// default retention (400 days), so that the manager prunes nothing.
	seedSpan = 300 * 24 * time.Hour
	// ledgerLoadWait bounds the wait for a ledger to read its pages.
	ledgerLoadWait = time.Minute
	// seedWriters create the seeded pages.
	seedWriters = 4
)

// Namespaces of the ledger phase.
const (
	nsLedgerEmpty = "bench-ledger-empty"
	nsLedgerFull  = "bench-ledger-100k"
)

// recorder is the operator's ledger run by the benchmark, for the jobs the
// benchmark finishes itself (the baseline, the history).
type recorder struct {
	l      *ledger.Ledger
	cancel context.CancelFunc
	done   chan struct{}
}

// startLedger starts a ledger that writes and reads through c and waits
// until it has read its pages.
func startLedger(ctx context.Context, c client.Client) (*recorder, error) {
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &recorder{l: ledger.New(c, c, ledger.Options{}), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		_ = r.l.Start(lctx)
	}()
	deadline := time.Now().Add(ledgerLoadWait)
	for r.l.Loaded() != nil {
		if time.Now().After(deadline) {
			r.stop()
			return nil, fmt.Errorf("the benchmark's ledger did not read its pages within %s", ledgerLoadWait)
		}
		if err := sleep(ctx, 10*time.Millisecond); err != nil {
			r.stop()
			return nil, err
		}
	}
	return r, nil
}

// record appends the outcome of a finished job, as the operator does
// before its finish write, with the operator's own entry
// (paymentjob.LedgerEntry).
func (r *recorder) record(ctx context.Context, job *paymentsv1alpha1.PaymentJob) error {
	if err := r.l.Record(ctx, paymentjob.LedgerEntry(job, time.Now())); err != nil {
		return fmt.Errorf("cannot record %s in the ledger: %w", job.Name, err)
	}
	return nil
}

// stop stops the ledger and waits for it.
func (r *recorder) stop() {
	r.cancel()
	<-r.done
}

// providerUID is the uid of the PaymentProvider of ns.
func (c *cluster) providerUID(ctx context.Context, ns string) (string, error) {
	var pp paymentsv1alpha1.PaymentProvider
	if err := c.creator.Get(ctx, types.NamespacedName{Namespace: ns, Name: providerName}, &pp); err != nil {
		return "", fmt.Errorf("cannot get the payment provider of %s: %w", ns, err)
	}
	return string(pp.UID), nil
}

// sandboxIdentity is the identity the operator records for a provider with
// uid that reaches the sandbox without rate limits: its uid, the sandbox's
// URL and the account the sandbox answers to.
func (b *bench) sandboxIdentity(ctx context.Context, uid string) (paymentsv1alpha1.ProviderIdentity, error) {
	st, err := b.sb.Stats(ctx)
	if err != nil {
		return paymentsv1alpha1.ProviderIdentity{}, err
	}
	return paymentsv1alpha1.ProviderIdentity{UID: uid, Endpoint: b.sb.URL, Account: st.Account}, nil
}

// deleteLedger deletes every ledger page and waits until they are gone.
func (c *cluster) deleteLedger(ctx context.Context) error {
	if err := c.creator.DeleteAllOf(ctx, &paymentsv1alpha1.PaymentLedger{}); err != nil {
		return fmt.Errorf("cannot delete the ledger: %w", err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var l metav1.PartialObjectMetadataList
		l.SetGroupVersionKind(paymentsv1alpha1.GroupVersion.WithKind("PaymentLedgerList"))
		if err := c.creator.List(ctx, &l, client.Limit(1)); err != nil {
			return fmt.Errorf("cannot list the ledger: %w", err)
		}
		if len(l.Items) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the ledger pages are not gone a minute after their deletion")
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
}

// seedLedger creates pages ledger pages of perPage entries, page-00000001
// first, as the operator leaves them when they are full.
func (c *cluster) seedLedger(ctx context.Context, pages, perPage int, now time.Time) error {
	return runWorkers(ctx, seedWriters, pages, func(ctx context.Context, i int) error {
		p := seedPage(i+1, pages, perPage, now)
		if err := c.creator.Create(ctx, p); err != nil {
			return fmt.Errorf("cannot create ledger page %s: %w", p.Name, err)
		}
		return nil
	})
}

// seedPage is page seq of a ledger of pages full pages of perPage entries
// each, spread evenly over seedSpan up to now, oldest first: realistic
// entries (the keys and request fingerprints paymentjob.ChargeOf derives
// for jobs invoice-<n> of 250 tenants, 24-character charge ids, one
// declined payment in fifty) from one provider account per page. The same
// arguments give the same page.
func seedPage(seq, pages, perPage int, now time.Time) *paymentsv1alpha1.PaymentLedger {
	rnd := rand.New(rand.NewPCG(uint64(seq), 0x6c6564676572))
	total := pages * perPage
	step := seedSpan / time.Duration(total)
	first := now.Add(-seedSpan).UTC().Truncate(time.Second)
	p := &paymentsv1alpha1.PaymentLedger{
		ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("page-%08d", seq),
			Labels: map[string]string{"app.kubernetes.io/managed-by": "paymentjob-operator"},
		},
		Providers: []paymentsv1alpha1.ProviderIdentity{{
			UID:      fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rnd.Uint32(), rnd.IntN(1<<16), rnd.IntN(1<<12), rnd.IntN(1<<12), rnd.Uint64()&(1<<48-1)),
			Endpoint: "https://api.stripe.com",
			Account:  "acct_" + randomText(rnd, 16),
		}},
	}
	for j := range perPage {
		n := (seq-1)*perPage + j
		ns := fmt.Sprintf("tenant-%03d", rnd.IntN(250))
		c := paymentjob.ChargeOf(&paymentsv1alpha1.PaymentJob{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("invoice-%08d", n), Namespace: ns},
			Spec: paymentsv1alpha1.PaymentJobSpec{
				Amount:        int64(100 + rnd.IntN(99900)),
				Currency:      benchCurrency,
				PaymentMethod: benchPaymentMethod,
				Description:   fmt.Sprintf("Invoice %08d", n),
			},
		})
		at := metav1.NewTime(first.Add(time.Duration(n) * step).Truncate(time.Second))
		e := paymentsv1alpha1.LedgerEntry{
			Key:         c.Key,
			Fingerprint: c.Fingerprint,
			Charge:      "pi_" + randomText(rnd, 24),
			Outcome:     paymentsv1alpha1.LedgerCompleted,
			At:          at,
		}
		if rnd.IntN(50) == 0 {
			e.Outcome, e.Reason = paymentsv1alpha1.LedgerFailed, "card_declined"
		}
		p.Entries = append(p.Entries, e)
	}
	if len(p.Entries) > 0 {
		p.Summary = paymentsv1alpha1.LedgerSummary{
			Entries: int32(len(p.Entries)),
			Oldest:  &p.Entries[0].At,
			Newest:  &p.Entries[len(p.Entries)-1].At,
		}
	}
	return p
}

// randomText is n letters and digits.
func randomText(rnd *rand.Rand, n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rnd.IntN(len(alphabet))]
	}
	return string(b)
}

// ledgerSide is one run of the ledger phase.
type ledgerSide struct {
	run  runResult
	heap float64
	rss  float64
}

// ledgerPhase measures what the ledger's size costs the manager: the same
// jobs run twice, each time by a manager started on its own ledger, first
// an empty one and then seedPages full pages; after each run, the post-GC
// heap. Their ratio is heap_ratio_ledger. The API requests of the run
// beside the seeded ledger show that the manager does not read pages for
// new jobs.
func (b *bench) ledgerPhase(ctx context.Context) error {
	n := b.cfg.ledgerJobs
	entries := seedPages * seedEntriesPerPage
	var empty, full ledgerSide
	for _, side := range []struct {
		name, ns string
		seed     bool
		out      *ledgerSide
	}{
		{"ledger empty", nsLedgerEmpty, false, &empty},
		{fmt.Sprintf("ledger %dk", entries/1000), nsLedgerFull, true, &full},
	} {
		b.stopManager()
		if err := b.cl.deleteLedger(ctx); err != nil {
			return err
		}
		if side.seed {
			start := time.Now()
			if err := b.cl.seedLedger(ctx, seedPages, seedEntriesPerPage, time.Now()); err != nil {
				return err
			}
			step("%s: %d ledger pages of %d entries created in %s", side.name, seedPages, seedEntriesPerPage, time.Since(start).Round(time.Millisecond))
		}
		startup, err := b.startManager(ctx, userManager, b.cfg.workers)
		if err != nil {
			return err
		}
		// The ledger reads its pages after the manager is ready: the
		// settle keeps those reads out of the window, as in phase 2.
		step("%s: manager ready after %s; settling for %s", side.name, startup.Round(time.Millisecond), b.cfg.settle)
		if err := b.settle(ctx, b.cfg.settle); err != nil {
			return err
		}
		pctx, cancel := context.WithTimeout(ctx, b.cfg.timeout)
		side.out.run, err = b.runJobs(pctx, side.name, side.ns, n, b.sb)
		cancel()
		if err != nil {
			return err
		}
		side.out.heap, side.out.rss, err = b.memory(ctx, "ledger-"+side.ns)
		if err != nil {
			return err
		}
		step("%s: heap %.1f MiB, RSS %.1f MiB after %d jobs", side.name, side.out.heap/(1<<20), side.out.rss/(1<<20), n)
	}
	b.addLedgerFigures(empty, full)
	return nil
}

// addLedgerFigures reports the ledger phase: an empty ledger, then the
// seeded one.
func (b *bench) addLedgerFigures(empty, full ledgerSide) {
	entries := seedPages * seedEntriesPerPage
	k := fmt.Sprintf("%dk", entries/1000)
	title := fmt.Sprintf("beside a %d-entry ledger", entries)
	jobs := int64(full.run.n)
	b.rep.add(figure{key: "heap_bytes_ledger_empty", label: fmt.Sprintf("heap after %d jobs, empty ledger", empty.run.n), value: empty.heap, kind: kindBytes})
	b.rep.add(figure{key: "heap_bytes_ledger_" + k, label: fmt.Sprintf("heap after %d jobs, %s", full.run.n, title), value: full.heap, kind: kindBytes})
	b.rep.add(figure{key: "rss_bytes_ledger_empty", label: "RSS, empty ledger", value: empty.rss, kind: kindBytes, jsonOnly: true})
	b.rep.add(figure{key: "rss_bytes_ledger_" + k, label: "RSS, " + title, value: full.rss, kind: kindBytes, jsonOnly: true})
	b.rep.add(figure{key: "heap_ratio_ledger", label: fmt.Sprintf("heap ratio, %d-entry ledger / empty ledger", entries), value: full.heap / empty.heap, kind: kindRatio, target: atMost(1.5, "%.1f")})
	b.rep.add(perJob("writes_per_job_ledger_"+k, title+": API writes/job (jobs and ledger pages)",
		whole(full.run.req.jobWrites+full.run.req.ledgerWrites), jobs, perJobAtMost(maxJobWritesPerJob)))
	b.rep.add(perJob("ledger_writes_per_job_ledger_"+k, title+": of which ledger page writes/job", whole(full.run.req.ledgerWrites), jobs, nil))
	b.rep.add(figure{key: "reads_per_job_ledger_" + k, label: title + ": API reads/job (GET, LIST)", value: full.run.req.reads / float64(full.run.n), kind: kindPerJob, target: fewReads()})
	b.rep.add(perJob("ledger_reads_per_job_ledger_"+k, title+": of which ledger page reads/job", whole(full.run.req.ledgerReads), jobs, nil))
}
