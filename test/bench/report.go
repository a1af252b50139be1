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
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// kind says how a figure is printed.
type kind int

const (
	kindRatio kind = iota
	kindRate
	kindPerJob
	kindMillis
	kindSeconds
	kindBytes
	kindCount
	// kindByteCount is a small size, printed in bytes.
	kindByteCount
	// kindRefundRate is a throughput of refunds.
	kindRefundRate
)

// target is the value a figure must reach.
type target struct {
	// text describes the target in the table, e.g. ">= 0.80".
	text string
	// met judges the figure; nil for a target that the run does not
	// enforce, which is printed and never judged.
	met func(f figure) bool
}

// atLeast is met by a value of t or more.
func atLeast(t float64) *target {
	return &target{text: fmt.Sprintf(">= %.2f", t), met: func(f figure) bool { return f.value >= t }}
}

// atMost is met by a value of t or less.
func atMost(t float64, format string) *target {
	return &target{text: "<= " + fmt.Sprintf(format, t), met: func(f figure) bool { return f.value <= t }}
}

// maxReadsPerJob bounds the API reads per job of a window: about none,
// the manager reads from its cache.
const maxReadsPerJob = 0.05

// fewReads is met by fewer than maxReadsPerJob.
func fewReads() *target {
	return &target{text: fmt.Sprintf("~0 (< %.2f)", maxReadsPerJob), met: func(f figure) bool { return f.value < maxReadsPerJob }}
}

// zero is met by exactly 0: a whole count, or a per-job count of nothing.
func zero() *target {
	return &target{text: "= 0", met: func(f figure) bool { return f.value == 0 }}
}

// notEnforced is a target the run was told not to hold (a minimum of 0 on
// the command line): the figure is reported and never PASS or FAIL.
func notEnforced() *target {
	return &target{text: "not enforced"}
}

// atMostUnlessZero is atMost(t, format), or notEnforced for a t of 0: a
// maximum of 0 on the command line turns a target off.
func atMostUnlessZero(t float64, format string) *target {
	if t == 0 {
		return notEnforced()
	}
	return atMost(t, format)
}

// atLeastUnlessZero is atLeast(t), or notEnforced for a t of 0: a minimum
// of 0 on the command line turns a target off, it is not a target met by
// any value.
func atLeastUnlessZero(t float64) *target {
	if t == 0 {
		return notEnforced()
	}
	return atLeast(t)
}

// tally is a whole count of a window and the jobs it is divided by. A
// per-job target on a tally compares the integers, so no rounding of the
// ratio can turn one request too many into a PASS.
type tally struct {
	n, jobs int64
}

// perJobAtMost is met by a tally of at most hundredths/100 per job:
// n*100 <= hundredths*jobs, in integers.
func perJobAtMost(hundredths int64) *target {
	return &target{
		text: fmt.Sprintf("<= %d.%02d", hundredths/100, hundredths%100),
		met: func(f figure) bool {
			return f.tally != nil && f.tally.jobs > 0 && f.tally.n*100 <= hundredths*f.tally.jobs
		},
	}
}

// perJobExactly is met by a tally of exactly hundredths/100 per job:
// n*100 == hundredths*jobs, in integers.
func perJobExactly(hundredths int64) *target {
	return &target{
		text: fmt.Sprintf("= %d.%02d", hundredths/100, hundredths%100),
		met: func(f figure) bool {
			return f.tally != nil && f.tally.jobs > 0 && f.tally.n*100 == hundredths*f.tally.jobs
		},
	}
}

// onePerJob is met by a tally of exactly one per job: n == jobs.
func onePerJob() *target {
	return &target{text: "= 1.00", met: func(f figure) bool { return f.tally != nil && f.tally.jobs > 0 && f.tally.n == f.tally.jobs }}
}

// figure is one reported number. A NaN value was not measured; a figure
// with a target that was not measured fails.
type figure struct {
	key    string
	label  string
	value  float64
	kind   kind
	target *target
	// tally, when set, is the whole count behind a per-job value.
	tally *tally
	// jsonOnly figures explain others; they stay out of the tables.
	jsonOnly bool
}

// perJob is a figure of n per job, printed with its whole count and judged
// on it.
func perJob(key, label string, n, jobs int64, t *target) figure {
	v := notMeasured
	if jobs > 0 {
		v = float64(n) / float64(jobs)
	}
	return figure{key: key, label: label, value: v, kind: kindPerJob, tally: &tally{n: n, jobs: jobs}, target: t}
}

// notMeasured is the value of a figure that could not be measured.
var notMeasured = math.NaN()

// The results of a figure with a target.
const (
	resultPass = "PASS"
	resultFail = "FAIL"
)

// result is resultPass, resultFail, or empty for a figure without a target
// or with a target that is not enforced.
func (f figure) result() string {
	switch {
	case f.target == nil || f.target.met == nil:
		return ""
	case math.IsNaN(f.value):
		return resultFail
	case f.target.met(f):
		return resultPass
	default:
		return resultFail
	}
}

// formatted prints the value with its unit.
func (f figure) formatted() string {
	v := f.value
	if math.IsNaN(v) {
		return "n/a"
	}
	switch f.kind {
	case kindRatio:
		return fmt.Sprintf("%.2f", v)
	case kindRate:
		return fmt.Sprintf("%.1f jobs/s", v)
	case kindRefundRate:
		return fmt.Sprintf("%.1f refunds/s", v)
	case kindPerJob:
		if f.tally != nil {
			return fmt.Sprintf("%.3f (%d/%d)", v, f.tally.n, f.tally.jobs)
		}
		return fmt.Sprintf("%.3f", v)
	case kindMillis:
		if v < 100 {
			return fmt.Sprintf("%.1f ms", v)
		}
		return fmt.Sprintf("%.0f ms", v)
	case kindSeconds:
		return fmt.Sprintf("%.2f s", v)
	case kindBytes:
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	case kindByteCount:
		return fmt.Sprintf("%.0f B", v)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

// report is every figure of a run, in table order, and the run's setting.
type report struct {
	figures []figure
	// meta are the settings and the machine, as strings, in order.
	meta []metaEntry
	// notes are remarks printed under the table (what was not measured and
	// why).
	notes []string
}

// metaEntry is one setting of the run.
type metaEntry struct {
	key, label string
	value      any
}

func (r *report) add(f figure) { r.figures = append(r.figures, f) }

func (r *report) addMeta(key, label string, value any) {
	r.meta = append(r.meta, metaEntry{key: key, label: label, value: value})
}

func (r *report) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// failed returns the keys of the figures that miss their target.
func (r *report) failed() []string {
	var keys []string
	for _, f := range r.figures {
		if f.result() == resultFail {
			keys = append(keys, f.key)
		}
	}
	return keys
}

// unenforced returns the keys of the figures whose target is not enforced.
func (r *report) unenforced() []string {
	var keys []string
	for _, f := range r.figures {
		if f.target != nil && f.target.met == nil {
			keys = append(keys, f.key)
		}
	}
	return keys
}

// writeTable prints the figures as an aligned text table.
func (r *report) writeTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIGURE\tVALUE\tTARGET\tRESULT")
	for _, f := range r.figures {
		if f.jsonOnly {
			continue
		}
		t := ""
		if f.target != nil {
			t = f.target.text
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.label, f.formatted(), t, f.result())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range r.notes {
		if _, err := fmt.Fprintf(w, "note: %s\n", n); err != nil {
			return err
		}
	}
	return nil
}

// writeMarkdown prints the run's settings and figures as a Markdown
// section headed with the date.
func (r *report) writeMarkdown(w io.Writer, date time.Time) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "\n## %s\n\n", date.UTC().Format("2006-01-02 15:04 MST"))
	for _, m := range r.meta {
		fmt.Fprintf(b, "- %s: %v\n", m.label, m.value)
	}
	b.WriteString("\n| figure | value | target | result |\n|---|---|---|---|\n")
	for _, f := range r.figures {
		if f.jsonOnly {
			continue
		}
		t := ""
		if f.target != nil {
			t = strings.ReplaceAll(f.target.text, "|", `\|`)
		}
		res := f.result()
		if res != "" {
			res = "**" + res + "**"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", f.label, f.formatted(), t, res)
	}
	if len(r.notes) > 0 {
		b.WriteString("\n")
		for _, n := range r.notes {
			fmt.Fprintf(b, "- %s\n", n)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeJSON writes every figure and setting as one flat JSON object; a
// figure that was not measured is null.
func (r *report) writeJSON(w io.Writer) error {
	out := map[string]any{}
	for _, m := range r.meta {
		out[m.key] = m.value
	}
	for _, f := range r.figures {
		if math.IsNaN(f.value) || math.IsInf(f.value, 0) {
			out[f.key] = nil
		} else {
			out[f.key] = f.value
		}
	}
	failed := r.failed()
	out["targets_failed"] = len(failed)
	out["targets_not_enforced"] = len(r.unenforced())
	out["pass"] = len(failed) == 0
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// cpuModel returns the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	return parseCPUModel(f)
}

// parseCPUModel returns the first "model name" of a /proc/cpuinfo text.
func parseCPUModel(r io.Reader) string {
	s := bufio.NewScanner(r)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
