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
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/testing/childproc"
)

// managerStopGrace is how long a manager may take to stop after SIGTERM.
const managerStopGrace = 15 * time.Second

// managerOptions are the command line of a manager process.
type managerOptions struct {
	bin        string
	kubeconfig string
	logPath    string
	workers    int
	qps        float64
	burst      int
	// pprof serves /debug/pprof; off for a binary without the flag.
	pprof bool
	// ledger passes --ledger=true; off for a binary without the flag.
	ledger bool
	// args are more flags, e.g. the PostgreSQL ledger's.
	args []string
}

// manager is a bin/manager process and its endpoints on 127.0.0.1.
type manager struct {
	proc    *process
	started time.Time
	// probe, metrics and pprof are host:port.
	probe, metrics, pprof string
	http                  *http.Client
}

// managerFlags returns the flags that bin/manager lists in its help, so that
// the benchmark runs a binary from before --pprof-bind-address too.
func managerFlags(bin string) (map[string]bool, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("manager binary missing (make bench builds it): %w", err)
	}
	// -help exits 0 with the standard flag package; the output is what
	// matters either way.
	out, _ := exec.Command(bin, "-help").CombinedOutput()
	flags := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if name, ok := strings.CutPrefix(line, "-"); ok {
			flags[strings.Fields(name + " ")[0]] = true
		}
	}
	if !flags["max-concurrent-reconciles"] {
		return nil, fmt.Errorf("%s -help does not list --max-concurrent-reconciles:\n%s", bin, out)
	}
	return flags, nil
}

// startManager starts a manager process; it does not wait for it to be
// ready.
func startManager(o managerOptions) (*manager, error) {
	m := &manager{http: &http.Client{Timeout: 30 * time.Second}}
	var err error
	for _, addr := range []*string{&m.probe, &m.metrics, &m.pprof} {
		if *addr, err = childproc.FreeLoopbackAddr(); err != nil {
			return nil, err
		}
	}
	args := []string{
		"--leader-elect=false",
		"--insecure-provider-hosts=127.0.0.1",
		"--metrics-bind-address=" + m.metrics,
		"--metrics-secure=false",
		"--health-probe-bind-address=" + m.probe,
		"--max-concurrent-reconciles=" + strconv.Itoa(o.workers),
		"--kube-api-qps=" + strconv.FormatFloat(o.qps, 'f', -1, 64),
		"--kube-api-burst=" + strconv.Itoa(o.burst),
	}
	if o.ledger {
		args = append(args, "--ledger=true")
	}
	if o.pprof {
		args = append(args, "--pprof-bind-address="+m.pprof)
	} else {
		m.pprof = ""
	}
	args = append(args, o.args...)
	m.started = time.Now()
	m.proc, err = startProcess("manager", o.bin, o.logPath, []string{"KUBECONFIG=" + o.kubeconfig}, nil, args...)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// waitReady polls /readyz until it answers 200 and returns the time since
// the process started.
func (m *manager) waitReady(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	deadline := time.Now().Add(timeout)
	url := "http://" + m.probe + "/readyz"
	short := &http.Client{Timeout: time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, err
		}
		if resp, err := short.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(m.started), nil
			}
		}
		if m.proc.Exited() {
			return 0, m.proc.ExitError()
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the manager was not ready within %s; log: %s", timeout, m.proc.Log)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return 0, err
		}
	}
}

// get returns the body of an endpoint of the manager.
func (m *manager) get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := m.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return body, nil
}

// heapAlloc returns the manager's live heap after a garbage collection, in
// bytes, or NaN without pprof.
func (m *manager) heapAlloc(ctx context.Context) (float64, error) {
	if m.pprof == "" {
		return notMeasured, nil
	}
	body, err := m.get(ctx, "http://"+m.pprof+"/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return notMeasured, fmt.Errorf("cannot read the manager's heap profile: %w", err)
	}
	v, err := parseHeapAlloc(bytes.NewReader(body))
	if err != nil {
		return notMeasured, err
	}
	return float64(v), nil
}

// saveHeapProfile writes the manager's heap profile (after a garbage
// collection) to path, for `go tool pprof`. It does nothing without pprof.
func (m *manager) saveHeapProfile(ctx context.Context, path string) error {
	if m.pprof == "" {
		return nil
	}
	body, err := m.get(ctx, "http://"+m.pprof+"/debug/pprof/heap?gc=1")
	if err != nil {
		return fmt.Errorf("cannot read the manager's heap profile: %w", err)
	}
	return os.WriteFile(path, body, 0o644)
}

// rss returns the manager's resident set size in bytes.
func (m *manager) rss() (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", m.proc.Pid()))
	if err != nil {
		return notMeasured, fmt.Errorf("cannot read the manager's RSS: %w", err)
	}
	defer f.Close()
	v, err := parseVMRSS(f)
	if err != nil {
		return notMeasured, err
	}
	return float64(v), nil
}

// metricSamples returns the samples of one metric of the manager.
func (m *manager) metricSamples(ctx context.Context, name string) ([]sample, error) {
	body, err := m.get(ctx, "http://"+m.metrics+"/metrics")
	if err != nil {
		return nil, fmt.Errorf("cannot scrape the manager's metrics: %w", err)
	}
	return parseSamples(bytes.NewReader(body), name)
}

// reconciles returns how many reconciles the manager's controller (e.g.
// paymentjob, paymentrefund) ran.
func (m *manager) reconciles(ctx context.Context, controller string) (float64, error) {
	s, err := m.metricSamples(ctx, "controller_runtime_reconcile_total")
	if err != nil {
		return 0, err
	}
	return sumSamples(s, map[string]string{"controller": controller}), nil
}

// idleControllers are the controllers whose queues waitIdle waits for.
var idleControllers = []string{jobsKind.controller, refundsKind.controller}

// ledgerCounters are the manager's counters of its outcome ledger, all 0
// for a manager without one.
type ledgerCounters struct {
	// appends are the writes that appended entries; rereads the pages read
	// again because the watch reported a newer version than the one
	// indexed.
	appends, rereads float64
}

// ledgerCounters reads the manager's ledger counters.
func (m *manager) ledgerCounters(ctx context.Context) (ledgerCounters, error) {
	var c ledgerCounters
	for _, x := range []struct {
		name string
		v    *float64
	}{
		{"paymentjob_ledger_appends_total", &c.appends},
		{"paymentjob_ledger_page_rereads_total", &c.rereads},
	} {
		s, err := m.metricSamples(ctx, x.name)
		if err != nil {
			return c, err
		}
		*x.v = sumSamples(s, nil)
	}
	return c, nil
}

// lookupKeys returns how many keys the manager looked up at providers,
// whatever the answer.
func (m *manager) lookupKeys(ctx context.Context) (float64, error) {
	s, err := m.metricSamples(ctx, "paymentjob_lookup_keys_total")
	if err != nil {
		return 0, err
	}
	return sumSamples(s, nil), nil
}

// ttlDeletions returns how many finished jobs the manager's collector
// deleted after their TTL.
func (m *manager) ttlDeletions(ctx context.Context) (float64, error) {
	s, err := m.metricSamples(ctx, "paymentjob_ttl_deletions_total")
	if err != nil {
		return 0, err
	}
	return sumSamples(s, nil), nil
}

// waitIdle waits until the PaymentJob and PaymentRefund controllers have
// nothing queued and no worker busy, twice in a row.
func (m *manager) waitIdle(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	quiet := 0
	for quiet < 2 {
		depth, err := m.metricSamples(ctx, "workqueue_depth")
		if err != nil {
			return err
		}
		active, err := m.metricSamples(ctx, "controller_runtime_active_workers")
		if err != nil {
			return err
		}
		busy := 0.0
		for _, c := range idleControllers {
			sel := map[string]string{"controller": c}
			busy += sumSamples(depth, sel) + sumSamples(active, sel)
		}
		if busy == 0 {
			quiet++
		} else {
			quiet = 0
		}
		if m.proc.Exited() {
			return m.proc.ExitError()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the manager's work queue did not drain within %s", timeout)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// stop stops the manager.
func (m *manager) stop() {
	if m != nil {
		m.proc.Stop(managerStopGrace)
	}
}
