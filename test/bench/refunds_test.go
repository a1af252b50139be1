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
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/testing/sandboxproc"
)

func TestNewRefundRefundsPartOfItsJob(t *testing.T) {
	g := NewWithT(t)
	for _, i := range []int{0, 1, 9899, 9900, 12345} {
		job, refund := newJob("ns", i), newRefund("ns", i)
		g.Expect(refund.Namespace).To(Equal("ns"))
		g.Expect(refund.Spec.PaymentJobRef.Name).To(Equal(job.Name))
		g.Expect(refund.Spec.ProviderRef).To(Equal(job.Spec.ProviderRef))
		g.Expect(refund.Spec.Amount).NotTo(BeNil())
		g.Expect(*refund.Spec.Amount).To(And(BeNumerically(">=", 1), BeNumerically("<", job.Spec.Amount)), "a partial refund")
		g.Expect(refund.Spec.IdempotencyKey).To(BeEmpty(), "keyed by its name, like the jobs")
		i2, ok := refundIndex(refund.Name)
		g.Expect(ok).To(BeTrue())
		g.Expect(i2).To(Equal(i))
	}
}

// refundWindow is a refund window of 1000 refunds with writes API writes
// to refunds (the creates taken off) and 200 ledger page writes, in
// 25 s, beside a jobs window of 1000 jobs in 20 s.
func refundWindow(writes float64) (refunds, jobs runResult) {
	refunds = runResult{
		n: 1000, elapsed: 25 * time.Second, latencies: []time.Duration{time.Second},
		req:     requestFigures{refundWrites: writes, ledgerWrites: 200, reads: 2000, eventPosts: 1000},
		refunds: refundCounters{Requests: 1000, Refunds: 1000},
		routes:  map[string]float64{"GET /v1/payment_intents/{id}": 1000, "GET /v1/refunds": 1000, "POST /v1/refunds": 1000},
	}
	jobs = runResult{n: 1000, elapsed: 20 * time.Second}
	return refunds, jobs
}

func TestRefundFigures(t *testing.T) {
	tests := []struct {
		name      string
		writes    float64
		minRatio  float64
		jobWrites float64
		made      int64
		failed    []string
		off       []string
	}{
		{name: "three writes and the ledger's share", writes: 3000, minRatio: 0.8, made: 1000},
		{name: "at the target", writes: 3100, minRatio: 0.8, made: 1000},
		{name: "one write too many", writes: 3101, minRatio: 0.8, made: 1000, failed: []string{"refund_writes_per_refund"}},
		{name: "the finalizer written by the manager", writes: 4000, minRatio: 0.8, made: 1000, failed: []string{"refund_writes_per_refund"}},
		{name: "a write to the refunded job counts", writes: 3000, jobWrites: 101, minRatio: 0.8, made: 1000, failed: []string{"refund_writes_per_refund"}},
		{name: "slower than the target", writes: 3000, minRatio: 0.9, made: 1000, failed: []string{"ratio_refunds_vs_jobs"}},
		{name: "ratio not enforced", writes: 3000, minRatio: 0, made: 1000, off: []string{"ratio_refunds_vs_jobs"}},
		{name: "a refund made twice", writes: 3000, minRatio: 0.8, made: 1001, failed: []string{"refunded_per_refund"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			b := &bench{cfg: config{minRefundRatio: tt.minRatio, maxRefundWrites: maxRefundWritesPerRefund}, rep: &report{}}
			refunds, jobs := refundWindow(tt.writes)
			refunds.req.jobWrites = tt.jobWrites
			refunds.refunds.Refunds = tt.made
			b.addRefundRun(refunds, jobs)
			got := map[string]figure{}
			for _, f := range b.rep.figures {
				g.Expect(got).NotTo(HaveKey(f.key), "keys are unique")
				got[f.key] = f
			}
			g.Expect(got["refunds_per_sec_0ms"].formatted()).To(Equal("40.0 refunds/s"))
			g.Expect(got["ratio_refunds_vs_jobs"].value).To(BeNumerically("~", 0.8, 1e-9))
			g.Expect(got["refund_writes_per_refund"].tally).To(Equal(&tally{n: whole(tt.writes + tt.jobWrites + 200), jobs: 1000}))
			g.Expect(got["refund_ledger_writes_per_refund"].value).To(Equal(0.2))
			g.Expect(got["refund_guarded_at_create_per_refund"].tally).To(Equal(&tally{n: 0, jobs: 1000}))
			g.Expect(got["refund_reads_per_refund"].value).To(Equal(2.0))
			g.Expect(got["refund_reads_per_refund"].target).To(BeNil(), "reported: a refund reads its job from the API server")
			g.Expect(got["refund_provider_calls_per_refund"].tally).To(Equal(&tally{n: 3000, jobs: 1000}))
			g.Expect(got["refund_requests_per_refund"].value).To(Equal(1.0))
			g.Expect(got).To(HaveKey("cpu_ms_per_refund_total_refunds"))
			g.Expect(got).To(HaveKey("p99_ms_refunds"))
			g.Expect(b.rep.failed()).To(ConsistOf(tt.failed))
			g.Expect(b.rep.unenforced()).To(ConsistOf(tt.off))
		})
	}
}

func TestRefundKeysLeaveTheJobKeysAlone(t *testing.T) {
	g := NewWithT(t)
	b := &bench{cfg: config{minRatio: 0.8, minRefundRatio: 0.9, maxRefundWrites: maxRefundWritesPerRefund}, rep: &report{}}
	refunds, jobs := refundWindow(3000)
	jobs.req = requestFigures{jobWrites: 3000, ledgerWrites: 200}
	jobs.provider = sandboxproc.Counters{Requests: 1000, Charges: 1000}
	b.addRun(jobs, "_0ms", "0 ms", 40, true)
	before := map[string]float64{}
	for _, f := range b.rep.figures {
		before[f.key] = f.value
	}
	b.addRefundRun(refunds, jobs)
	seen := map[string]bool{}
	for _, f := range b.rep.figures {
		g.Expect(seen).NotTo(HaveKey(f.key), "keys are unique")
		seen[f.key] = true
	}
	g.Expect(len(seen)).To(BeNumerically(">", len(before)))
	for _, key := range []string{"writes_per_job", "jobs_per_sec_0ms", "ratio_0ms", "cpu_ms_per_job_total_0ms", "refund_writes_per_refund", "ratio_refunds_vs_jobs"} {
		g.Expect(seen).To(HaveKey(key))
	}
}

func TestSlowRefundFigures(t *testing.T) {
	tests := []struct {
		name    string
		minSlow float64
		failed  []string
		off     []string
	}{
		{name: "below the 50 ms target", minSlow: 0.95, failed: []string{"ratio_refunds_vs_jobs_50ms"}},
		{name: "at the target", minSlow: 0.8},
		{name: "not enforced", minSlow: 0, off: []string{"ratio_refunds_vs_jobs_50ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			b := &bench{cfg: config{minRefundRatio: 0.85, minRefundRatioSlow: tt.minSlow, maxRefundWrites: maxRefundWritesPerRefund}, rep: &report{}}
			refunds, jobs := refundWindow(3000)
			b.addRefundRun(refunds, jobs)
			b.addSlowRefundRun(refunds, jobs, "50ms")
			got := map[string]figure{}
			for _, f := range b.rep.figures {
				g.Expect(got).NotTo(HaveKey(f.key), "keys are unique")
				got[f.key] = f
			}
			g.Expect(got["ratio_refunds_vs_jobs"].target.text).To(Equal(">= 0.85"))
			g.Expect(got["refunds_per_sec_50ms"].formatted()).To(Equal("40.0 refunds/s"))
			slow := got["ratio_refunds_vs_jobs_50ms"]
			g.Expect(slow.value).To(BeNumerically("~", 0.8, 1e-9))
			g.Expect(slow.label).To(Equal("50ms: throughput, refunds / jobs (same manager)"))
			var table strings.Builder
			g.Expect(b.rep.writeTable(&table)).To(Succeed())
			g.Expect(table.String()).To(MatchRegexp(`0 ms: throughput, refunds / jobs \(same manager\) +0\.80 +>= 0\.85 +FAIL`))
			g.Expect(b.rep.failed()).To(ConsistOf(append([]string{"ratio_refunds_vs_jobs"}, tt.failed...)))
			g.Expect(b.rep.unenforced()).To(ConsistOf(tt.off))
		})
	}
}

func TestCheckRefunds(t *testing.T) {
	once := map[string]int{"ns.refund/refund-000000": 1, "ns.refund/refund-000001": 1}
	tests := []struct {
		name    string
		r       runResult
		wantErr string
	}{
		{name: "each refunded once", r: runResult{refunds: refundCounters{Requests: 3, Refunds: 2, ByKey: once}}},
		{name: "a charge", r: runResult{provider: sandboxproc.Counters{Charges: 1}, refunds: refundCounters{Refunds: 2, ByKey: once}}, wantErr: "charged 1 times"},
		{name: "one missing", r: runResult{refunds: refundCounters{Refunds: 1, ByKey: map[string]int{"a": 1}}}, wantErr: "1 refunds for 2"},
		{name: "one key twice", r: runResult{refunds: refundCounters{Refunds: 2, ByKey: map[string]int{"a": 2}}}, wantErr: "under 1 keys"},
		{name: "twice under a key", r: runResult{refunds: refundCounters{Refunds: 2, ByKey: map[string]int{"a": 2, "b": 1}}}, wantErr: "2 times under key a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := checkRefunds("refunds", 2, tt.r)
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

func TestRefundCountersOfAWindow(t *testing.T) {
	g := NewWithT(t)
	before := refundCounters{Requests: 5, Refunds: 4, Refusals: 1, ByKey: map[string]int{"old": 1, "again": 1}}
	after := refundCounters{Requests: 9, Refunds: 7, Refusals: 1, Failed: 1, ByKey: map[string]int{"old": 1, "again": 2, "new": 1, "new2": 1}}
	d := after.minus(before)
	g.Expect(d).To(Equal(refundCounters{Requests: 4, Refunds: 3, Failed: 1, ByKey: map[string]int{"again": 1, "new": 1, "new2": 1}}),
		"only the keys refunded in the window")
	g.Expect(d.plus(d)).To(Equal(refundCounters{Requests: 8, Refunds: 6, Failed: 2, ByKey: map[string]int{"again": 2, "new": 2, "new2": 2}}))
	g.Expect(refundCounters{}.minus(refundCounters{}).ByKey).To(BeNil())
}
