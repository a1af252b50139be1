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
		{name: "reads below", f: figure{value: 0.004, kind: kindPerJob, target: below(0.05)}, wantValue: "0.004", wantResult: "PASS"},
		{name: "reads above", f: figure{value: 0.05, kind: kindPerJob, target: below(0.05)}, wantValue: "0.050", wantResult: "FAIL"},
		{name: "one provider call", f: figure{value: 1.0004, kind: kindPerJob, target: exactly(1, "%.2f", 0.005)}, wantValue: "1.000", wantResult: "PASS"},
		{name: "a replayed call too many", f: figure{value: 1.01, kind: kindPerJob, target: exactly(1, "%.2f", 0.005)}, wantValue: "1.010", wantResult: "FAIL"},
		{name: "no startup writes", f: figure{value: 0, kind: kindCount, target: exactly(0, "%.0f", 0.5)}, wantValue: "0", wantResult: "PASS"},
		{name: "one startup write", f: figure{value: 1, kind: kindCount, target: exactly(0, "%.0f", 0.5)}, wantValue: "1", wantResult: "FAIL"},
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
		"cpu_ms_per_job_etcd_0ms": 1.5,
		"targets_failed":          2.0,
		"pass":                    false,
	}))
}

func TestWriteTable(t *testing.T) {
	g := NewWithT(t)
	var buf bytes.Buffer
	g.Expect(sampleReport().writeTable(&buf)).To(Succeed())
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	g.Expect(lines).To(HaveLen(6))
	g.Expect(strings.Fields(lines[0])).To(Equal([]string{"FIGURE", "VALUE", "TARGET", "RESULT"}))
	g.Expect(lines[1]).To(MatchRegexp(`^0 ms: throughput / baseline +0\.91 +>= 0\.80 +PASS$`))
	g.Expect(lines[2]).To(MatchRegexp(`^0 ms: job writes/job +5\.000 +<= 4 +FAIL$`))
	g.Expect(lines[3]).To(MatchRegexp(`^heap ratio +n/a +<= 1\.5 +FAIL$`))
	g.Expect(strings.TrimSpace(lines[4])).To(MatchRegexp(`^50ms sweep: throughput, 4 workers +40\.2 jobs/s$`))
	g.Expect(lines[5]).To(Equal("note: something was not measured"))
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

- something was not measured
`))
}

func TestParseCPUModel(t *testing.T) {
	g := NewWithT(t)
	g.Expect(parseCPUModel(strings.NewReader("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n"))).To(Equal("AMD EPYC 7B13"))
	g.Expect(parseCPUModel(strings.NewReader("processor\t: 0\n"))).To(Equal("unknown"))
}
