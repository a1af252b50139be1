//go:build e2e

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

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Metrics of the manager that the scenarios read, per process.
const (
	// metricCharges counts provider answers by outcome. Every answer
	// follows one claim write that this process won (a claim that loses
	// its race calls nothing), so their sum is the claims it won.
	metricCharges = "paymentjob_charges_total"
	// metricClaimConflicts counts claim writes refused with a conflict.
	metricClaimConflicts = "paymentjob_claim_conflicts_total"
	// metricWriteConflicts counts refused writes of every kind.
	metricWriteConflicts = "paymentjob_write_conflicts_total"
	// metricLookupRequests counts lookup requests to providers.
	metricLookupRequests = "paymentjob_lookup_requests_total"
	// metricLookupKeys counts the keys looked up at the provider, by result.
	metricLookupKeys = "paymentjob_lookup_keys_total"
	// metricRESTRequests is client-go's count of API requests, by method
	// and code.
	metricRESTRequests = "rest_client_requests_total"
)

// manager is a bin/manager process.
type manager struct {
	*process
	// pod is its POD_NAME, the first part of its claim holder identity.
	pod string
	// metricsAddr is the host:port of its plain-HTTP /metrics.
	metricsAddr string
}

// holds reports whether a claim's holder is this process: claims name
// <POD_NAME>/<random id of the process>.
func (m *manager) holds(holder string) bool {
	return strings.HasPrefix(holder, m.pod+"/")
}

// scrape reads the manager's metrics; the process must be running.
func (m *manager) scrape() (metrics, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.metricsAddr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot scrape %s: %w", m.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("cannot scrape %s: %s", m.Name, resp.Status)
	}
	return parseMetrics(resp.Body)
}

// metrics are the samples of one scrape, by metric name.
type metrics map[string][]sample

// sample is one sample of a metric.
type sample struct {
	labels map[string]string
	value  float64
}

// sum adds the samples of the metric whose labels hold every pair in
// match.
func (ms metrics) sum(name string, match map[string]string) float64 {
	total := 0.0
	for _, smp := range ms[name] {
		ok := true
		for k, v := range match {
			ok = ok && smp.labels[k] == v
		}
		if ok {
			total += smp.value
		}
	}
	return total
}

// writes is the API writes (PUT and PATCH) that the API server accepted:
// job claims, outcomes, progress and finalizers, and PaymentProvider
// statuses.
func (ms metrics) writes() float64 {
	total := 0.0
	for _, smp := range ms[metricRESTRequests] {
		method := smp.labels["method"]
		if (method == http.MethodPut || method == http.MethodPatch) && strings.HasPrefix(smp.labels["code"], "2") {
			total += smp.value
		}
	}
	return total
}

// sampleLine is a sample in the Prometheus text format: the name, the
// labels in braces if any, the value and an optional timestamp.
var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?$`)
	labelPair  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

// parseMetrics reads the Prometheus text format.
func parseMetrics(r io.Reader) (metrics, error) {
	ms := metrics{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("cannot parse the metrics line %q", line)
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			return nil, fmt.Errorf("cannot parse the value of %q: %w", line, err)
		}
		smp := sample{labels: map[string]string{}, value: v}
		for _, l := range labelPair.FindAllStringSubmatch(m[2], -1) {
			value, err := strconv.Unquote(`"` + l[2] + `"`)
			if err != nil {
				return nil, fmt.Errorf("cannot parse the label %s of %q: %w", l[1], line, err)
			}
			smp.labels[l[1]] = value
		}
		ms[m[1]] = append(ms[m[1]], smp)
	}
	return ms, sc.Err()
}
