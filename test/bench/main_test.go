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
	"io"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/testing/sandboxproc"
	"github.com/idempotency-dev/paymentjob-operator/pkg/operator"
)

func TestParseFlags(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "/assets")
	tests := []struct {
		name    string
		args    []string
		check   func(g Gomega, c config)
		wantErr string
	}{
		{name: "defaults", args: nil, check: func(g Gomega, c config) {
			g.Expect(c.jobs).To(Equal(5000))
			g.Expect(c.workers).To(Equal(16))
			g.Expect(c.qps).To(Equal(float64(operator.DefaultKubeAPIQPS)))
			g.Expect(c.burst).To(Equal(operator.DefaultKubeAPIBurst))
			g.Expect(c.history).To(Equal(20000))
			g.Expect(c.scaleWorkers).To(Equal([]int{4, 16, 64}))
			g.Expect(c.scaleJobs).To(Equal(1000))
			g.Expect(c.ledgerJobs).To(Equal(1000))
			g.Expect(c.policyDir).To(Equal("config/policy"))
			g.Expect(c.assets).To(Equal("/assets"))
			g.Expect(c.results).To(Equal("docs/benchmarks.md"))
			g.Expect(c.jsonPath).To(BeEmpty())
			g.Expect(c.minRatio).To(Equal(0.8))
			g.Expect(c.minLookupRatio).To(Equal(0.9))
			g.Expect(c.minRefundRatio).To(Equal(0.85))
			g.Expect(c.minRefundRatioSlow).To(Equal(0.95))
			g.Expect(c.only).To(BeEmpty())
			g.Expect(c.pg).To(BeTrue())
			g.Expect(c.pgRows).To(Equal(10_000_000))
			g.Expect(c.minPGRatio).To(Equal(1.0))
			g.Expect(c.pgSideJobs()).To(Equal(5000), "-jobs")
		}},
		{name: "CI's short run", args: []string{"-jobs", "1000", "-min-ratio", "0", "-min-lookup-ratio", "0", "-min-refund-ratio", "0", "-min-refund-ratio-slow", "0", "-results="}, check: func(g Gomega, c config) {
			g.Expect(c.minRatio).To(BeZero())
			g.Expect(c.minLookupRatio).To(BeZero())
			g.Expect(c.minRefundRatio).To(BeZero())
			g.Expect(c.minRefundRatioSlow).To(BeZero())
			g.Expect(c.results).To(BeEmpty())
		}},
		{name: "small run", args: []string{"-jobs", "500", "-history", "2000", "-scale-jobs", "200", "-scale-workers", " 8, 32 ", "-json", "/tmp/b.json"}, check: func(g Gomega, c config) {
			g.Expect(c.jobs).To(Equal(500))
			g.Expect(c.scaleWorkers).To(Equal([]int{8, 32}))
			g.Expect(c.jsonPath).To(Equal("/tmp/b.json"))
		}},
		{name: "PostgreSQL phase, short", args: []string{"-jobs", "1000", "-pg-jobs", "600", "-pg-rows", "200000", "-min-pg-ratio", "0"}, check: func(g Gomega, c config) {
			g.Expect(c.pgSideJobs()).To(Equal(600))
			g.Expect(c.pgRows).To(Equal(200000))
			g.Expect(c.minPGRatio).To(BeZero())
		}},
		{name: "no PostgreSQL phase", args: []string{"-pg=false"}, check: func(g Gomega, c config) {
			g.Expect(c.pg).To(BeFalse())
		}},
		{name: "one PostgreSQL job cannot be halved", args: []string{"-pg-jobs", "1"}, wantErr: "at least 2"},
		{name: "no rows", args: []string{"-pg-rows", "0"}, wantErr: "-pg-rows at least 1"},
		{name: "PostgreSQL ratio not a number", args: []string{"-min-pg-ratio", "NaN"}, wantErr: "0 (not enforced) or more"},
		{name: "no sweep", args: []string{"-scale-workers", ""}, check: func(g Gomega, c config) {
			g.Expect(c.scaleWorkers).To(BeEmpty())
		}},
		{name: "bad sweep", args: []string{"-scale-workers", "4,x"}, wantErr: "invalid -scale-workers"},
		{name: "zero jobs", args: []string{"-jobs", "0"}, wantErr: "at least 1"},
		{name: "zero ledger jobs", args: []string{"-ledger-jobs", "0"}, wantErr: "at least 1"},
		{name: "one job cannot be halved", args: []string{"-jobs", "1"}, wantErr: "at least 2"},
		{name: "negative ratio", args: []string{"-min-ratio", "-0.1"}, wantErr: "0 (not enforced) or more"},
		{name: "lookup ratio not a number", args: []string{"-min-lookup-ratio", "NaN"}, wantErr: "0 (not enforced) or more"},
		{name: "negative refund ratio", args: []string{"-min-refund-ratio", "-1"}, wantErr: "0 (not enforced) or more"},
		{name: "slow refund ratio not a number", args: []string{"-min-refund-ratio-slow", "NaN"}, wantErr: "0 (not enforced) or more"},
		{name: "refunds alone", args: []string{"-only", "refunds", "-pg=false"}, check: func(g Gomega, c config) {
			g.Expect(c.only).To(Equal("refunds"))
		}},
		{name: "an unknown phase alone", args: []string{"-only", "sweep"}, wantErr: "recon, refunds and debits"},
		{name: "zero qps", args: []string{"-qps", "0"}, wantErr: "positive"},
		{name: "no assets", args: []string{"-assets", ""}, wantErr: "KUBEBUILDER_ASSETS"},
		{name: "stray argument", args: []string{"now"}, wantErr: "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c, err := parseFlags(tt.args, io.Discard)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			tt.check(g, c)
		})
	}
}

func TestJobIndex(t *testing.T) {
	g := NewWithT(t)
	i, ok := jobIndex(jobName(4217))
	g.Expect(ok).To(BeTrue())
	g.Expect(i).To(Equal(4217))
	for _, name := range []string{"other", "job-", "job-x", "job--1", refundName(3)} {
		_, ok := jobIndex(name)
		g.Expect(ok).To(BeFalse(), name)
	}
	i, ok = refundIndex(refundName(17))
	g.Expect(ok).To(BeTrue())
	g.Expect(i).To(Equal(17))
	_, ok = refundIndex(jobName(17))
	g.Expect(ok).To(BeFalse(), "a job is not a refund")
}

func TestRunWorkers(t *testing.T) {
	g := NewWithT(t)
	var calls atomic.Int64
	seen := make([]atomic.Bool, 100)
	g.Expect(runWorkers(context.Background(), 8, 100, func(_ context.Context, i int) error {
		calls.Add(1)
		seen[i].Store(true)
		return nil
	})).To(Succeed())
	g.Expect(calls.Load()).To(Equal(int64(100)))
	for i := range seen {
		g.Expect(seen[i].Load()).To(BeTrue(), "job %d", i)
	}

	boom := errors.New("boom")
	calls.Store(0)
	err := runWorkers(context.Background(), 4, 1000, func(ctx context.Context, i int) error {
		calls.Add(1)
		if i == 10 {
			return boom
		}
		return ctx.Err()
	})
	g.Expect(err).To(MatchError(boom))
	g.Expect(calls.Load()).To(BeNumerically("<", 1000), "the first error stops the others")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g.Expect(runWorkers(ctx, 4, 10, func(context.Context, int) error { return nil })).To(MatchError(context.Canceled))
}

func TestRunResultPlusAddsWindows(t *testing.T) {
	g := NewWithT(t)
	ms := func(v ...int) []time.Duration {
		l := make([]time.Duration, 0, len(v))
		for _, x := range v {
			l = append(l, time.Duration(x)*time.Millisecond)
		}
		return l
	}
	a := runResult{
		n: 100, elapsed: time.Second, latencies: ms(10, 20, 30),
		req: requestFigures{jobWrites: 400, reads: 1}, provider: sandboxproc.Counters{Requests: 100, Charges: 100},
		reconciles: 200, cpu: cpuUsage{"manager": 1}, finalizersLeft: 1,
		refunds: refundCounters{Requests: 2, Refunds: 1, ByKey: map[string]int{"k": 1}}, routes: map[string]float64{"POST /v1/refunds": 2},
		guardedAtCreate: 100,
	}
	b := runResult{
		n: 300, elapsed: 4 * time.Second, latencies: ms(5, 25),
		req: requestFigures{jobWrites: 1200}, provider: sandboxproc.Counters{Requests: 300, Charges: 300, Searches: 30},
		reconciles: 600, cpu: cpuUsage{"manager": 2, "etcd": 1},
	}
	sum := a.plus(b)
	g.Expect(sum.n).To(Equal(400))
	g.Expect(sum.elapsed).To(Equal(5 * time.Second))
	g.Expect(sum.jobsPerSec()).To(Equal(80.0), "all jobs over both windows, not the mean of the two rates")
	g.Expect(sum.latencies).To(Equal(ms(5, 10, 20, 25, 30)))
	g.Expect(sum.latency(50)).To(Equal(20 * time.Millisecond))
	g.Expect(sum.req).To(Equal(requestFigures{jobWrites: 1600, reads: 1}))
	g.Expect(sum.provider).To(Equal(sandboxproc.Counters{Requests: 400, Charges: 400, Searches: 30}))
	g.Expect(sum.reconciles).To(Equal(800.0))
	g.Expect(sum.cpu).To(Equal(cpuUsage{"manager": 3, "etcd": 1}))
	g.Expect(sum.finalizersLeft).To(Equal(1))
	g.Expect(sum.refunds).To(Equal(a.refunds))
	g.Expect(sum.routes).To(Equal(a.routes))
	g.Expect(sum.guardedAtCreate).To(Equal(100))
	g.Expect(a.latencies).To(Equal(ms(10, 20, 30)), "the windows are left as they were")
	g.Expect(runResult{}.plus(a).jobsPerSec()).To(Equal(a.jobsPerSec()), "the zero result adds nothing")
}

func TestLookupRunFigures(t *testing.T) {
	g := NewWithT(t)
	b := &bench{cfg: config{minLookupRatio: 0.9}, rep: &report{}}
	lookup := runResult{n: 1000, elapsed: 11 * time.Second, latencies: []time.Duration{time.Second},
		provider: sandboxproc.Counters{Requests: 1000, Charges: 1000, Searches: 101}, reconciles: 3000}
	none := runResult{n: 1000, elapsed: 10 * time.Second, latencies: []time.Duration{time.Second},
		provider: sandboxproc.Counters{Requests: 1000, Charges: 1000}, reconciles: 2000}
	b.addLookupRuns(lookup, none)
	got := map[string]figure{}
	for _, f := range b.rep.figures {
		g.Expect(got).NotTo(HaveKey(f.key), "keys are unique")
		got[f.key] = f
	}
	g.Expect(got["ratio_lookup_vs_none"].value).To(BeNumerically("~", 100.0/110.0, 1e-9))
	g.Expect(got["ratio_lookup_vs_none"].result()).To(Equal("PASS"))
	g.Expect(got["lookups_per_job"].value).To(Equal(0.101))
	g.Expect(got["lookups_per_job"].result()).To(Equal("PASS"))
	g.Expect(got["provider_calls_per_job_live_lookup"].tally).To(Equal(&tally{n: 1101, jobs: 1000}))
	g.Expect(got["provider_calls_per_job_live_lookup"].result()).To(Equal("PASS"))
	g.Expect(got["charges_per_job_live_lookup"].result()).To(Equal("PASS"))
	g.Expect(got["lookups_per_job_live_none"].result()).To(Equal("PASS"))
	g.Expect(got["charges_per_job_live_none"].result()).To(Equal("PASS"))
	g.Expect(b.rep.failed()).To(BeEmpty())

	b = &bench{cfg: config{minLookupRatio: 0}, rep: &report{}}
	none.provider.Searches = 1 // policy Never looked a key up
	lookup.provider.Charges = 1001
	b.addLookupRuns(lookup, none)
	g.Expect(b.rep.failed()).To(ConsistOf("lookups_per_job_live_none", "charges_per_job_live_lookup"))
	g.Expect(b.rep.unenforced()).To(Equal([]string{"ratio_lookup_vs_none"}))
}
