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
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// This file holds the pure parts of the benchmark: parsers of the
// Prometheus text format, of pprof's heap profile, of /proc/<pid>/status,
// of the API server's audit log and of the sandbox's log, and the
// percentile (those of /proc/<pid>/stat are in cpu.go, the API request
// counts in requests.go). They are unit tested without a control plane.

// sample is one sample of a metric in the Prometheus text format.
type sample struct {
	labels map[string]string
	value  float64
}

// parseSamples returns the samples of the metric called name in a body in
// the Prometheus text exposition format. Comments, other metrics and
// timestamps are skipped.
func parseSamples(r io.Reader, name string) ([]sample, error) {
	var out []sample
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for line := 1; s.Scan(); line++ {
		text := s.Bytes()
		if len(text) == 0 || text[0] == '#' || !bytes.HasPrefix(text, []byte(name)) {
			continue
		}
		rest := text[len(name):]
		if len(rest) == 0 || (rest[0] != '{' && rest[0] != ' ' && rest[0] != '\t') {
			// A longer metric name that starts with name.
			continue
		}
		smp, err := parseSample(string(rest))
		if err != nil {
			return nil, fmt.Errorf("line %d of metric %s: %w", line, name, err)
		}
		out = append(out, smp)
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("cannot read the metrics: %w", err)
	}
	return out, nil
}

// parseSample parses what follows a metric name: optional labels in braces,
// the value and an optional timestamp.
func parseSample(s string) (sample, error) {
	smp := sample{labels: map[string]string{}}
	if strings.HasPrefix(s, "{") {
		i := 1
		for {
			for i < len(s) && (s[i] == ' ' || s[i] == ',') {
				i++
			}
			if i >= len(s) {
				return sample{}, errors.New("unterminated labels")
			}
			if s[i] == '}' {
				i++
				break
			}
			eq := strings.IndexByte(s[i:], '=')
			if eq < 0 {
				return sample{}, errors.New("label without a value")
			}
			key := strings.TrimSpace(s[i : i+eq])
			i += eq + 1
			if i >= len(s) || s[i] != '"' {
				return sample{}, fmt.Errorf("label %s: value is not quoted", key)
			}
			i++
			var v strings.Builder
			closed := false
			for i < len(s) {
				c := s[i]
				i++
				if c == '"' {
					closed = true
					break
				}
				if c == '\\' && i < len(s) {
					switch s[i] {
					case 'n':
						v.WriteByte('\n')
					default:
						v.WriteByte(s[i])
					}
					i++
					continue
				}
				v.WriteByte(c)
			}
			if !closed {
				return sample{}, fmt.Errorf("label %s: unterminated value", key)
			}
			smp.labels[key] = v.String()
		}
		s = s[i:]
	}
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return sample{}, errors.New("no value")
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return sample{}, fmt.Errorf("invalid value %q", fields[0])
	}
	smp.value = v
	return smp, nil
}

// sumSamples adds the samples whose labels match every key=value of match.
func sumSamples(samples []sample, match map[string]string) float64 {
	var sum float64
	for _, s := range samples {
		ok := true
		for k, v := range match {
			if s.labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			sum += s.value
		}
	}
	return sum
}

// parseHeapAlloc reads runtime.MemStats.HeapAlloc from the text of
// /debug/pprof/heap?debug=1, which ends with lines like "# HeapAlloc = 123".
func parseHeapAlloc(r io.Reader) (uint64, error) {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for s.Scan() {
		rest, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "# HeapAlloc = ")
		if !ok {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(rest), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("invalid HeapAlloc %q", rest)
		}
		return v, nil
	}
	if err := s.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no HeapAlloc in the heap profile (was it asked with debug=1?)")
}

// parseVMRSS reads the resident set size, in bytes, from the text of
// /proc/<pid>/status.
func parseVMRSS(r io.Reader) (uint64, error) {
	s := bufio.NewScanner(r)
	for s.Scan() {
		rest, ok := strings.CutPrefix(s.Text(), "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("unexpected VmRSS line %q", s.Text())
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("invalid VmRSS %q", f[0])
		}
		return kb * 1024, nil
	}
	if err := s.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no VmRSS in the process status")
}

// percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method, or 0 for no values.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// auditCounts are the requests of one user in the API server's audit log.
type auditCounts struct {
	// writes are the create, update, patch, delete and deletecollection
	// requests.
	writes int
	// reads are the get and list requests.
	reads int
	// byRequest counts "verb resource[/subresource]".
	byRequest map[string]int
}

// auditEvent is the part of an audit.k8s.io/v1 Event the benchmark reads.
type auditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
}

// parseAudit counts the completed requests of user in a JSON-lines audit
// log.
func parseAudit(r io.Reader, user string) (auditCounts, error) {
	c := auditCounts{byRequest: map[string]int{}}
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for s.Scan() {
		line := s.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var ev auditEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return auditCounts{}, fmt.Errorf("invalid audit event: %w", err)
		}
		if ev.User.Username != user || ev.Stage != "ResponseComplete" {
			continue
		}
		name := ev.Verb
		if ev.ObjectRef != nil {
			name += " " + ev.ObjectRef.Resource
			if ev.ObjectRef.Subresource != "" {
				name += "/" + ev.ObjectRef.Subresource
			}
		}
		c.byRequest[name]++
		switch ev.Verb {
		case "create", "update", "patch", "delete", "deletecollection":
			c.writes++
		case "get", "list":
			c.reads++
		}
	}
	return c, s.Err()
}

// String lists the counted requests, sorted.
func (c auditCounts) String() string {
	if len(c.byRequest) == 0 {
		return noneCounted
	}
	keys := make([]string, 0, len(c.byRequest))
	for k := range c.byRequest {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, c.byRequest[k]))
	}
	return strings.Join(parts, ", ")
}

// countProviderRequests counts the requests to the provider API (/v1/...)
// in sandbox log lines.
func countProviderRequests(log []byte) int {
	n := 0
	for line := range bytes.Lines(log) {
		if bytes.Contains(line, []byte("path=/v1/")) {
			n++
		}
	}
	return n
}

// providerRoutes counts the requests to the provider API (/v1/...) in
// sandbox log lines by method and route, the ids in a path replaced by
// {id}: "GET /v1/payment_intents/{id}", "POST /v1/refunds".
func providerRoutes(log []byte) map[string]float64 {
	routes := map[string]float64{}
	for line := range bytes.Lines(log) {
		var method, path string
		for _, f := range strings.Fields(string(line)) {
			if v, ok := strings.CutPrefix(f, "method="); ok {
				method = v
			} else if v, ok := strings.CutPrefix(f, "path="); ok {
				path = v
			}
		}
		if !strings.HasPrefix(path, "/v1/") {
			continue
		}
		// "", "v1", the collection, then an id or a verb (search).
		parts := strings.Split(path, "/")
		if len(parts) > 3 && parts[3] != "search" {
			parts[3] = "{id}"
		}
		routes[method+" "+strings.Join(parts, "/")]++
	}
	return routes
}

// routesString lists route counts as "route=N", the largest first.
func routesString(routes map[string]float64) string {
	if len(routes) == 0 {
		return noneCounted
	}
	keys := make([]string, 0, len(routes))
	for k := range routes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if routes[keys[i]] != routes[keys[j]] {
			return routes[keys[i]] > routes[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%.0f", k, routes[k]))
	}
	return strings.Join(parts, ", ")
}
