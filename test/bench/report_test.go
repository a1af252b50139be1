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
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestFigureResultAndFormat(t *testing.T) {
	tests := []struct {
		name       string
		f          figure
		wantValue  string
		wantResult string
	}{
		{name: "ratio met", f: figure{value: 0.83, kind: kindRatio, target: atLeast(0.8)}, wantValue: "0.83", wantResult: "PASS"},
		{name: "ratio missed", f: figure{value: 0.79, kind: kindRatio, target: atLeast(0.8)}, wantValue: "0.79", wantResult: "FAIL"},
		{name: "no target", f: figure{value: 412.345, kind: kindRate}, wantValue: "412.3 jobs/s", wantResult: ""},
		{name: "not measured with a target fails", f: figure{value: notMeasured, kind: kindBytes, target: atMost(1.5, "%.1f")}, wantValue: "n/a", wantResult: "FAIL"},
		{name: "not measured without a target", f: figure{value: notMeasured, kind: kindBytes}, wantValue: "n/a", wantResult: ""},
		{name: "writes at the limit", f: figure{value: 4, kind: kindPerJob, target: atMost(4, "%.0f")}, wantValue: "4.000", wantResult: "PASS"},
		{name: "reads below", f: figure{value: 0.004, kind: kindPerJob, target: fewReads()}, wantValue: "0.004", wantResult: "PASS"},
		{name: "reads above", f: figure{value: 0.05, kind: kindPerJob, target: fewReads()}, wantValue: "0.050", wantResult: "FAIL"},
		{name: "no startup writes", f: figure{value: 0, kind: kindCount, target: zero()}, wantValue: "0", wantResult: "PASS"},
		{name: "one startup write", f: figure{value: 1, kind: kindCount, target: zero()}, wantValue: "1", wantResult: "FAIL"},
		{name: "ratio not enforced", f: figure{value: 0.12, kind: kindRatio, target: notEnforced()}, wantValue: "0.12", wantResult: ""},
		{name: "bytes", f: figure{value: 3 << 20, kind: kindBytes}, wantValue: "3.0 MiB"},
		{name: "millis", f: figure{value: 1234.6, kind: kindMillis}, wantValue: "1235 ms"},
		{name: "a few millis", f: figure{value: 12.64, kind: kindMillis}, wantValue: "12.6 ms"},
		{name: "seconds", f: figure{value: 1.234, kind: kindSeconds}, wantValue: "1.23 s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.f.formatted()).To(Equal(tt.wantValue))
			g.Expect(tt.f.result()).To(Equal(tt.wantResult))
		})
	}
}

func TestPerJobTargetsCompareWholeCounts(t *testing.T) {
	tests := []struct {
		name       string
		n, jobs    int64
		target     *target
		wantValue  string
		wantResult string
	}{
		{name: "one create per job", n: 5000, jobs: 5000, target: onePerJob(), wantValue: "1.000 (5000/5000)", wantResult: "PASS"},
		// 5001/5000 prints as 1.000 and is still one charge too many.
		{name: "one charge too many", n: 5001, jobs: 5000, target: onePerJob(), wantValue: "1.000 (5001/5000)", wantResult: "FAIL"},
		{name: "one charge missing", n: 4999, jobs: 5000, target: onePerJob(), wantValue: "1.000 (4999/5000)", wantResult: "FAIL"},
		{name: "calls at the limit", n: 5750, jobs: 5000, target: perJobAtMost(115), wantValue: "1.150 (5750/5000)", wantResult: "PASS"},
		// 5751/5000 = 1.1502 prints as 1.150: the integers decide.
		{name: "one call over the limit", n: 5751, jobs: 5000, target: perJobAtMost(115), wantValue: "1.150 (5751/5000)", wantResult: "FAIL"},
		{name: "calls of 1000 jobs at the limit", n: 1150, jobs: 1000, target: perJobAtMost(115), wantValue: "1.150 (1150/1000)", wantResult: "PASS"},
		{name: "lookups at the limit", n: 150, jobs: 1000, target: perJobAtMost(15), wantValue: "0.150 (150/1000)", wantResult: "PASS"},
		{name: "one lookup over", n: 151, jobs: 1000, target: perJobAtMost(15), wantValue: "0.151 (151/1000)", wantResult: "FAIL"},
		// 3 jobs: 0.15*3 = 0.45 lookups, so none is allowed.
		{name: "lookups of a few jobs", n: 1, jobs: 3, target: perJobAtMost(15), wantValue: "0.333 (1/3)", wantResult: "FAIL"},
		{name: "writes at the limit", n: 4000, jobs: 1000, target: perJobAtMost(400), wantValue: "4.000 (4000/1000)", wantResult: "PASS"},
		{name: "one write over", n: 4001, jobs: 1000, target: perJobAtMost(400), wantValue: "4.001 (4001/1000)", wantResult: "FAIL"},
		{name: "no lookups", n: 0, jobs: 1000, target: zero(), wantValue: "0.000 (0/1000)", wantResult: "PASS"},
		{name: "one lookup", n: 1, jobs: 1000, target: zero(), wantValue: "0.001 (1/1000)", wantResult: "FAIL"},
		{name: "no jobs is not a pass", n: 0, jobs: 0, target: onePerJob(), wantValue: "n/a", wantResult: "FAIL"},
		{name: "no target", n: 7, jobs: 1000, wantValue: "0.007 (7/1000)", wantResult: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := perJob("k", "label", tt.n, tt.jobs, tt.target)
			g.Expect(f.formatted()).To(Equal(tt.wantValue))
			g.Expect(f.result()).To(Equal(tt.wantResult))
		})
	}
}

func TestPerJobTargetsNeedATally(t *testing.T) {
	g := NewWithT(t)
	// A per-job target on a figure without its whole count cannot be
	// judged: it fails rather than pass on a rounded ratio.
	for _, tg := range []*target{onePerJob(), perJobAtMost(115)} {
		f := figure{key: "k", value: 1, kind: kindPerJob, target: tg}
		g.Expect(f.result()).To(Equal("FAIL"), tg.text)
	}
}

func TestTargetTexts(t *testing.T) {
	g := NewWithT(t)
	g.Expect(perJobAtMost(115).text).To(Equal("<= 1.15"))
	g.Expect(perJobAtMost(15).text).To(Equal("<= 0.15"))
	g.Expect(perJobAtMost(400).text).To(Equal("<= 4.00"))
	g.Expect(onePerJob().text).To(Equal("= 1.00"))
	g.Expect(zero().text).To(Equal("= 0"))
	g.Expect(atLeastUnlessZero(0.9).text).To(Equal(">= 0.90"))
	g.Expect(atLeastUnlessZero(0).text).To(Equal("not enforced"))
}

func TestAMinimumOfZeroIsNotEnforced(t *testing.T) {
	tests := []struct {
		name       string
		min, value float64
		wantResult string
	}{
		// The value that atLeast(0) passed: a ratio of 0.12 is no PASS.
		{name: "off, low value", min: 0, value: 0.12, wantResult: ""},
		{name: "off, high value", min: 0, value: 1.2, wantResult: ""},
		{name: "off, not measured", min: 0, value: notMeasured, wantResult: ""},
		{name: "on, met", min: 0.9, value: 0.9, wantResult: "PASS"},
		{name: "on, missed", min: 0.9, value: 0.89, wantResult: "FAIL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := figure{key: "ratio_lookup_vs_none", value: tt.value, kind: kindRatio, target: atLeastUnlessZero(tt.min)}
			g.Expect(f.result()).To(Equal(tt.wantResult))
			r := &report{}
			r.add(f)
			if tt.wantResult == "FAIL" {
				g.Expect(r.failed()).To(Equal([]string{"ratio_lookup_vs_none"}))
			} else {
				g.Expect(r.failed()).To(BeEmpty())
			}
			if tt.min == 0 {
				g.Expect(r.unenforced()).To(Equal([]string{"ratio_lookup_vs_none"}))
			} else {
				g.Expect(r.unenforced()).To(BeEmpty())
			}
			var table, md bytes.Buffer
			g.Expect(r.writeTable(&table)).To(Succeed())
			g.Expect(r.writeMarkdown(&md, time.Now())).To(Succeed())
			if tt.min == 0 {
				g.Expect(table.String()).To(ContainSubstring("not enforced"))
				g.Expect(table.String() + md.String()).NotTo(ContainSubstring("PASS"))
				g.Expect(table.String() + md.String()).NotTo(ContainSubstring("FAIL"))
			}
		})
	}
}

// sampleReport has a met target, a missed one, an unmeasured one, a plain
// figure and a JSON-only one.
func sampleReport() *report {
	r := &report{}
	r.addMeta("jobs", "jobs per phase", 5000)
	r.addMeta("cpu", "CPU", "Test CPU")
	r.add(figure{key: "ratio_0ms", label: "0 ms: throughput / baseline", value: 0.91, kind: kindRatio, target: atLeast(0.8)})
	r.add(figure{key: "writes_per_job", label: "0 ms: job writes/job", value: 5, kind: kindPerJob, target: atMost(4, "%.0f")})
	r.add(figure{key: "heap_ratio_history", label: "heap ratio", value: notMeasured, kind: kindRatio, target: atMost(1.5, "%.1f")})
	r.add(figure{key: "jobs_per_sec_50ms_w4", label: "50ms sweep: throughput, 4 workers", value: 40.25, kind: kindRate})
	r.add(figure{key: "ratio_lookup_vs_none", label: "live limits: throughput, lookups / no lookups", value: 0.5, kind: kindRatio, target: notEnforced()})
	r.add(perJob("lookups_per_job", "live limits, lookups: lookup requests/job", 101, 1000, perJobAtMost(15)))
	r.add(figure{key: "cpu_ms_per_job_etcd_0ms", label: "CPU of etcd", value: 1.5, kind: kindMillis, jsonOnly: true})
	r.note("something was not measured")
	return r
}

func TestReportFailed(t *testing.T) {
	NewWithT(t).Expect(sampleReport().failed()).To(Equal([]string{"writes_per_job", "heap_ratio_history"}))
}

func TestWriteJSON(t *testing.T) {
	g := NewWithT(t)
	var buf bytes.Buffer
	g.Expect(sampleReport().writeJSON(&buf)).To(Succeed())
	var got map[string]any
	g.Expect(json.Unmarshal(buf.Bytes(), &got)).To(Succeed())
	g.Expect(got).To(Equal(map[string]any{
		"jobs":                    5000.0,
		"cpu":                     "Test CPU",
		"ratio_0ms":               0.91,
		"writes_per_job":          5.0,
		"heap_ratio_history":      nil,
		"jobs_per_sec_50ms_w4":    40.25,
		"ratio_lookup_vs_none":    0.5,
		"lookups_per_job":         0.101,
		"cpu_ms_per_job_etcd_0ms": 1.5,
		"targets_failed":          2.0,
		"targets_not_enforced":    1.0,
		"pass":                    false,
	}))
}

func TestWriteTable(t *testing.T) {
	g := NewWithT(t)
	var buf bytes.Buffer
	g.Expect(sampleReport().writeTable(&buf)).To(Succeed())
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	g.Expect(lines).To(HaveLen(8))
	g.Expect(strings.Fields(lines[0])).To(Equal([]string{"FIGURE", "VALUE", "TARGET", "RESULT"}))
	g.Expect(lines[1]).To(MatchRegexp(`^0 ms: throughput / baseline +0\.91 +>= 0\.80 +PASS$`))
	g.Expect(lines[2]).To(MatchRegexp(`^0 ms: job writes/job +5\.000 +<= 4 +FAIL$`))
	g.Expect(lines[3]).To(MatchRegexp(`^heap ratio +n/a +<= 1\.5 +FAIL$`))
	g.Expect(strings.TrimSpace(lines[4])).To(MatchRegexp(`^50ms sweep: throughput, 4 workers +40\.2 jobs/s$`))
	g.Expect(lines[5]).To(MatchRegexp(`^live limits: throughput, lookups / no lookups +0\.50 +not enforced *$`))
	g.Expect(lines[6]).To(MatchRegexp(`^live limits, lookups: lookup requests/job +0\.101 \(101/1000\) +<= 0\.15 +PASS$`))
	g.Expect(lines[7]).To(Equal("note: something was not measured"))
	g.Expect(buf.String()).NotTo(ContainSubstring("etcd"), "JSON-only figures stay out of the table")
}

func TestWriteMarkdown(t *testing.T) {
	g := NewWithT(t)
	var buf bytes.Buffer
	date := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	g.Expect(sampleReport().writeMarkdown(&buf, date)).To(Succeed())
	g.Expect(buf.String()).To(Equal(`
## 2026-03-04 05:06 UTC

- jobs per phase: 5000
- CPU: Test CPU

| figure | value | target | result |
|---|---|---|---|
| 0 ms: throughput / baseline | 0.91 | >= 0.80 | **PASS** |
| 0 ms: job writes/job | 5.000 | <= 4 | **FAIL** |
| heap ratio | n/a | <= 1.5 | **FAIL** |
| 50ms sweep: throughput, 4 workers | 40.2 jobs/s |  |  |
| live limits: throughput, lookups / no lookups | 0.50 | not enforced |  |
| live limits, lookups: lookup requests/job | 0.101 (101/1000) | <= 0.15 | **PASS** |

- something was not measured
`))
}

func TestParseCPUModel(t *testing.T) {
	g := NewWithT(t)
	g.Expect(parseCPUModel(strings.NewReader("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n"))).To(Equal("AMD EPYC 7B13"))
	g.Expect(parseCPUModel(strings.NewReader("processor\t: 0\n"))).To(Equal("unknown"))
}
