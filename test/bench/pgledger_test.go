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
	"math"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestStatementCounts(t *testing.T) {
	g := NewWithT(t)
	before := statementCounts{1: {query: "SELECT 1", calls: 10}, 2: {query: "INSERT ...", calls: 4}}
	after := statementCounts{
		1: {query: "SELECT key, fingerprint FROM paymentjob_outcomes WHERE key = $1", calls: 1010},
		2: {query: "INSERT ...", calls: 4},
		3: {query: "INSERT INTO paymentjob_outcomes (key, fingerprint, provider_uid, provider_endpoint,\n\tprovider_account)", calls: 37},
	}
	d := after.minus(before)
	g.Expect(d).To(HaveLen(2), "statements that did not run are left out")
	g.Expect(d.total()).To(Equal(1037.0))
	g.Expect(d.breakdown()).To(Equal(`"SELECT key, fingerprint FROM paymentjob_outcomes WHERE ke..."=1000, ` +
		`"INSERT INTO paymentjob_outcomes (key, fingerprint, provid..."=37`))
	g.Expect(statementCounts{}.breakdown()).To(Equal("none"))
	g.Expect(statementCounts{}.total()).To(BeZero())

	var none statementCounts
	g.Expect(none.minus(before)).To(BeNil(), "not counted stays not counted")
	g.Expect(none.total()).To(Satisfy(math.IsNaN))
	g.Expect(none.breakdown()).To(ContainSubstring("not counted"))
	g.Expect(statementsPerJob("k", "l", none, 10).result()).To(BeEmpty())
	g.Expect(statementsPerJob("k", "l", d, 1000).formatted()).To(Equal("1.037 (1037/1000)"))
}

func TestPerJobExactly(t *testing.T) {
	g := NewWithT(t)
	tg := perJobExactly(300)
	g.Expect(tg.text).To(Equal("= 3.00"))
	for _, tc := range []struct {
		n, jobs int64
		want    string
	}{
		{3000, 1000, resultPass},
		{3001, 1000, resultFail},
		{2999, 1000, resultFail},
		{0, 0, resultFail},
	} {
		f := perJob("w", "w", tc.n, tc.jobs, tg)
		g.Expect(f.result()).To(Equal(tc.want), "%d/%d", tc.n, tc.jobs)
	}
}

// pgSides are the sides of a phase 8 that meets every target.
func pgSides() (crd, empty, full pgSide, ttl pgTTL, load pgLoad) {
	crd = pgSide{run: runResult{n: 1000, elapsed: 10 * time.Second, req: requestFigures{jobWrites: 3000, ledgerWrites: 210}}}
	empty = pgSide{
		run:        runResult{n: 1000, elapsed: 9 * time.Second, req: requestFigures{jobWrites: 3000}},
		heap:       20 << 20,
		statements: statementCounts{1: {query: "SELECT", calls: 1000}, 2: {query: "INSERT", calls: 150}},
	}
	full = pgSide{run: runResult{n: 1000, elapsed: 10 * time.Second, req: requestFigures{jobWrites: 3000}}, heap: 21 << 20,
		statements: statementCounts{1: {query: "SELECT", calls: 1000}}}
	ttl = pgTTL{deleted: 1000, statements: statementCounts{3: {query: "SELECT true", calls: 1000}}}
	load = pgLoad{rows: 200000, elapsed: 3 * time.Second, bytes: 80 << 20}
	return crd, empty, full, ttl, load
}

func TestPGFigures(t *testing.T) {
	g := NewWithT(t)
	b := &bench{cfg: config{minPGRatio: 1}, rep: &report{}}
	b.addPGFigures(pgSides())
	got := map[string]figure{}
	for _, f := range b.rep.figures {
		g.Expect(got).NotTo(HaveKey(f.key), "keys are unique")
		got[f.key] = f
	}
	for _, k := range []string{"pg_writes_per_job", "pg_ratio_vs_crd", "pg_heap_ratio_10m", "pg_statements_per_job"} {
		g.Expect(got).To(HaveKey(k), "the issue's JSON keys")
	}
	g.Expect(got["pg_writes_per_job"].formatted()).To(Equal("3.000 (3000/1000)"))
	g.Expect(got["pg_ratio_vs_crd"].value).To(BeNumerically("~", 10.0/9, 1e-9))
	g.Expect(got["pg_heap_ratio_10m"].value).To(Equal(1.05))
	g.Expect(got["pg_heap_ratio_10m"].label).To(ContainSubstring("200000 rows"), "the key keeps its name, the label says the rows")
	g.Expect(got["pg_statements_per_job"].value).To(Equal(1.15))
	g.Expect(got["pg_statements_per_job_ttl"].value).To(Equal(1.0))
	g.Expect(got["pg_etcd_bytes_per_job_after_ttl"].value).To(BeZero())
	g.Expect(got["writes_per_job_pg_crd"].value).To(Equal(3.21))
	g.Expect(got).To(HaveKey("cpu_ms_per_job_total_pg"))
	for _, k := range []string{"pg_writes_per_job", "pg_ratio_vs_crd", "pg_heap_ratio_10m", "pg_etcd_bytes_per_job_after_ttl"} {
		g.Expect(got[k].result()).To(Equal(resultPass), k)
	}
	g.Expect(got["pg_statements_per_job"].target).To(BeNil(), "reported, not judged")
	g.Expect(b.rep.failed()).To(BeEmpty())
}

func TestPGFiguresFail(t *testing.T) {
	tests := []struct {
		name  string
		cfg   config
		spoil func(crd, empty, full *pgSide, ttl *pgTTL)
		want  []string
	}{
		{name: "a conflict is one write too many", cfg: config{minPGRatio: 1},
			spoil: func(_, empty, _ *pgSide, _ *pgTTL) { empty.run.req.jobWrites++ }, want: []string{"pg_writes_per_job"}},
		{name: "a ledger page write", cfg: config{minPGRatio: 1},
			spoil: func(_, empty, _ *pgSide, _ *pgTTL) { empty.run.req.ledgerWrites = 1 }, want: []string{"pg_writes_per_job"}},
		{name: "slower than the CRD ledger", cfg: config{minPGRatio: 1},
			spoil: func(_, empty, _ *pgSide, _ *pgTTL) { empty.run.elapsed = 11 * time.Second }, want: []string{"pg_ratio_vs_crd"}},
		{name: "slower, not enforced", cfg: config{minPGRatio: 0},
			spoil: func(_, empty, _ *pgSide, _ *pgTTL) { empty.run.elapsed = 11 * time.Second }},
		{name: "the heap grows with the table", cfg: config{minPGRatio: 1},
			spoil: func(_, _, full *pgSide, _ *pgTTL) { full.heap = 23 << 20 }, want: []string{"pg_heap_ratio_10m"}},
		{name: "heap not measured", cfg: config{minPGRatio: 1},
			spoil: func(_, empty, full *pgSide, _ *pgTTL) { empty.heap, full.heap = notMeasured, notMeasured }, want: []string{"pg_heap_ratio_10m"}},
		{name: "a ledger page in etcd", cfg: config{minPGRatio: 1},
			spoil: func(_, _, _ *pgSide, ttl *pgTTL) { ttl.pages = storedSize{objects: 1, bytes: 500} }, want: []string{"pg_etcd_bytes_per_job_after_ttl"}},
		{name: "no job deleted after its TTL", cfg: config{minPGRatio: 1},
			spoil: func(_, _, _ *pgSide, ttl *pgTTL) { ttl.deleted = 0 }, want: []string{"pg_etcd_bytes_per_job_after_ttl"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			crd, empty, full, ttl, load := pgSides()
			tc.spoil(&crd, &empty, &full, &ttl)
			b := &bench{cfg: tc.cfg, rep: &report{}}
			b.addPGFigures(crd, empty, full, ttl, load)
			if tc.want == nil {
				g.Expect(b.rep.failed()).To(BeEmpty())
				return
			}
			g.Expect(b.rep.failed()).To(Equal(tc.want))
		})
	}
}

func TestLoadRowsQueryShapesRealKeys(t *testing.T) {
	g := NewWithT(t)
	// The query runs on a server in the bench only; what it must keep is
	// checked here: every column of the table, the key's shape, and the
	// parameters typed where they are used.
	for _, col := range []string{"key", "fingerprint", "provider_uid", "provider_endpoint", "provider_account", "provider_mode",
		"provider_key_scope", "charge", "outcome", "reason", "resolved_by", "at", "cluster"} {
		g.Expect(loadRowsQuery).To(ContainSubstring(col))
	}
	g.Expect(loadRowsQuery).To(ContainSubstring(`'tenant-' || lpad(t::text, 3, '0') || '/invoice-'`))
	g.Expect(strings.Count(loadRowsQuery, "$1::bigint")).To(Equal(strings.Count(loadRowsQuery, "$1")), "every $1 cast")
	g.Expect(loadRowsQuery).To(ContainSubstring("make_interval(days => 300)"), "within the default retention of 400 days")
}
