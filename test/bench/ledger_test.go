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
	"encoding/json"
	"fmt"
	"regexp"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/testing/sandboxproc"
)

func TestSeedPagesAreFullRealisticPages(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	keys := map[string]bool{}
	var last time.Time
	var bad []string
	fingerprint := regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	charge := regexp.MustCompile(`^pi_[A-Za-z0-9]{24}$`)
	key := regexp.MustCompile(`^tenant-\d{3}/invoice-\d{8}$`)
	for seq := 1; seq <= seedPages; seq++ {
		p := seedPage(seq, seedPages, seedEntriesPerPage, now)
		if seq == 1 || seq == seedPages {
			g.Expect(p.Name).To(Equal(map[int]string{1: "page-00000001", seedPages: "page-00000200"}[seq]))
		}
		g.Expect(p.Entries).To(HaveLen(seedEntriesPerPage))
		g.Expect(p.Summary.Entries).To(Equal(int32(seedEntriesPerPage)))
		g.Expect(p.Providers).To(HaveLen(1), "one provider account per page")
		g.Expect(p.Providers[0].Account).To(MatchRegexp(`^acct_[A-Za-z0-9]{16}$`))
		data, err := json.Marshal(p)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(len(data)).To(BeNumerically("<", 128<<10), "a page stays under the operator's 128 KiB")
		// Plain checks: 100,000 entries through matchers take minutes.
		for _, e := range p.Entries {
			if keys[e.Key] {
				bad = append(bad, "duplicate key "+e.Key)
			}
			keys[e.Key] = true
			if !key.MatchString(e.Key) || !fingerprint.MatchString(e.Fingerprint) || !charge.MatchString(e.Charge) || e.Provider != 0 {
				bad = append(bad, fmt.Sprintf("unrealistic entry %+v", e))
			}
			if e.At.Time.Before(last) {
				bad = append(bad, "not oldest first at "+e.Key)
			}
			last = e.At.Time
		}
		g.Expect(p.Summary.Oldest.Time).To(Equal(p.Entries[0].At.Time))
		g.Expect(p.Summary.Newest.Time).To(Equal(p.Entries[seedEntriesPerPage-1].At.Time))
	}
	g.Expect(bad).To(BeEmpty())
	g.Expect(keys).To(HaveLen(100000))
	g.Expect(last).To(BeTemporally("<=", now))
	g.Expect(seedPage(1, seedPages, seedEntriesPerPage, now).Entries[0].At.Time).To(BeTemporally(">", now.Add(-400*24*time.Hour)),
		"every entry is within the default retention: the manager deletes none")
	g.Expect(seedPage(7, seedPages, seedEntriesPerPage, now)).To(Equal(seedPage(7, seedPages, seedEntriesPerPage, now)), "deterministic")
}

func TestWritesPerJobIncludeTheLedger(t *testing.T) {
	g := NewWithT(t)
	b := &bench{rep: &report{}}
	r := runResult{n: 1000, elapsed: time.Second, latencies: []time.Duration{time.Millisecond},
		req:      requestFigures{jobWrites: 3000, ledgerWrites: 120, ledgerReads: 2, reads: 3},
		provider: sandboxproc.Counters{Requests: 1000, Charges: 1000}}
	b.addRun(r, "_0ms", "0 ms", 100, true)
	got := map[string]figure{}
	for _, f := range b.rep.figures {
		got[f.key] = f
	}
	g.Expect(got["writes_per_job"].tally).To(Equal(&tally{n: 3120, jobs: 1000}))
	g.Expect(got["writes_per_job"].result()).To(Equal("PASS"))
	g.Expect(got["ledger_writes_per_job"].value).To(Equal(0.12))
	g.Expect(got["ledger_reads_per_job"].value).To(Equal(0.002))
	g.Expect(got["reads_per_job"].value).To(Equal(0.003))

	b = &bench{rep: &report{}}
	r.req.ledgerWrites = 1001
	b.addRun(r, "_0ms", "0 ms", 100, true)
	g.Expect(b.rep.failed()).To(ContainElement("writes_per_job"), "4.001 writes a job, ledger included")
}

func TestLedgerFigures(t *testing.T) {
	g := NewWithT(t)
	b := &bench{rep: &report{}}
	empty := ledgerSide{run: runResult{n: 1000}, heap: 40 << 20}
	full := ledgerSide{run: runResult{n: 1000, req: requestFigures{jobWrites: 3000, ledgerWrites: 100, reads: 10, ledgerReads: 10}}, heap: 50 << 20}
	b.addLedgerFigures(empty, full)
	got := map[string]figure{}
	for _, f := range b.rep.figures {
		g.Expect(got).NotTo(HaveKey(f.key), "keys are unique")
		got[f.key] = f
	}
	g.Expect(got["heap_ratio_ledger"].value).To(Equal(1.25))
	g.Expect(got["heap_ratio_ledger"].result()).To(Equal("PASS"))
	g.Expect(got["writes_per_job_ledger_100k"].result()).To(Equal("PASS"))
	g.Expect(got["reads_per_job_ledger_100k"].result()).To(Equal("PASS"))
	g.Expect(got).To(HaveKey("heap_bytes_ledger_100k"))
	g.Expect(got).To(HaveKey("ledger_writes_per_job_ledger_100k"))

	b = &bench{rep: &report{}}
	full.heap = 61 << 20
	full.run.req.reads = 50
	b.addLedgerFigures(empty, full)
	g.Expect(b.rep.failed()).To(ConsistOf("heap_ratio_ledger", "reads_per_job_ledger_100k"))

	b = &bench{rep: &report{}}
	b.addLedgerFigures(ledgerSide{heap: notMeasured}, ledgerSide{heap: notMeasured})
	g.Expect(b.rep.failed()).To(ContainElement("heap_ratio_ledger"), "a heap not measured fails its target")
}

func TestStoredFigure(t *testing.T) {
	g := NewWithT(t)
	b := &bench{rep: &report{}}
	b.addStored(storedSize{objects: 1000, bytes: 3_512_400})
	f := b.rep.figures[0]
	g.Expect(f.key).To(Equal("etcd_bytes_per_finished_job"))
	g.Expect(f.formatted()).To(Equal("3512 B"))
	g.Expect(f.result()).To(Equal("PASS"))
	g.Expect(f.target.text).To(Equal("<= 4096"))

	b = &bench{rep: &report{}}
	b.addStored(storedSize{objects: 10, bytes: 40970})
	g.Expect(b.rep.failed()).To(Equal([]string{"etcd_bytes_per_finished_job"}))
	b = &bench{rep: &report{}}
	b.addStored(storedSize{})
	g.Expect(b.rep.failed()).To(Equal([]string{"etcd_bytes_per_finished_job"}), "no finished job found fails")
}
