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
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/childproc"
)

// sandbox is a bin/sandbox process on a free loopback port.
type sandbox struct {
	proc *process
	// base is its URL, http://127.0.0.1:PORT.
	base string
	http *http.Client
}

// sandboxStats is the part of GET /_sandbox/stats the benchmark reads. The
// counters only grow: a window's figures are the difference of two reads
// (minus), so runs against the same sandbox never count each other's
// requests.
type sandboxStats struct {
	// Requests are the create (charge) requests, refused ones included.
	Requests int64 `json:"requests"`
	Charges  int64 `json:"charges"`
	Replays  int64 `json:"replays"`
	Faults   int64 `json:"faults"`
	// Searches are the search (lookup) requests, refused ones included.
	Searches int64 `json:"searches"`
	// Retrieves are the reads of one payment intent.
	Retrieves int64 `json:"retrieves"`
	// RateLimited are the creates and searches refused with a 429 beyond
	// the sandbox's rate limits.
	RateLimited int64 `json:"rateLimited"`
}

// minus returns the counts added since before.
func (s sandboxStats) minus(before sandboxStats) sandboxStats {
	return sandboxStats{
		Requests:    s.Requests - before.Requests,
		Charges:     s.Charges - before.Charges,
		Replays:     s.Replays - before.Replays,
		Faults:      s.Faults - before.Faults,
		Searches:    s.Searches - before.Searches,
		Retrieves:   s.Retrieves - before.Retrieves,
		RateLimited: s.RateLimited - before.RateLimited,
	}
}

// plus adds the counts of two windows.
func (s sandboxStats) plus(o sandboxStats) sandboxStats {
	return sandboxStats{
		Requests:    s.Requests + o.Requests,
		Charges:     s.Charges + o.Charges,
		Replays:     s.Replays + o.Replays,
		Faults:      s.Faults + o.Faults,
		Searches:    s.Searches + o.Searches,
		Retrieves:   s.Retrieves + o.Retrieves,
		RateLimited: s.RateLimited + o.RateLimited,
	}
}

// providerCalls are the requests about payments: creates, searches and
// retrieves, refused ones included. The account read (GET /v1/account,
// once per provider and manager process, not per job) is not among the
// sandbox's counters and is not counted.
func (s sandboxStats) providerCalls() int64 {
	return s.Requests + s.Searches + s.Retrieves
}

// startSandbox runs the sandbox with flags and waits until it prints its
// address.
func startSandbox(ctx context.Context, bin, logPath string, flags ...string) (*sandbox, error) {
	listening := childproc.NewLineSignal("sandbox listening on ")
	p, err := startProcess("sandbox", bin, logPath, nil, listening, append([]string{"--addr=127.0.0.1:0"}, flags...)...)
	if err != nil {
		return nil, err
	}
	select {
	case base := <-listening.Found():
		if !strings.HasPrefix(base, "http://127.0.0.1:") {
			p.Stop(5 * time.Second)
			return nil, fmt.Errorf("the sandbox listens on %s, not on 127.0.0.1", base)
		}
		return &sandbox{proc: p, base: base, http: &http.Client{Timeout: 30 * time.Second}}, nil
	case <-p.Done():
		return nil, p.ExitError()
	case <-time.After(30 * time.Second):
		p.Stop(5 * time.Second)
		return nil, fmt.Errorf("the sandbox did not print its address within 30s; log: %s", p.Log)
	case <-ctx.Done():
		p.Stop(5 * time.Second)
		return nil, ctx.Err()
	}
}

// stats reads the sandbox's counters.
func (s *sandbox) stats(ctx context.Context) (sandboxStats, error) {
	var st sandboxStats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/_sandbox/stats", nil)
	if err != nil {
		return st, err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return st, fmt.Errorf("cannot read the sandbox stats: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("cannot read the sandbox stats: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return st, fmt.Errorf("cannot decode the sandbox stats: %w", err)
	}
	return st, nil
}

// setLatency replaces the sandbox's faults with a fixed latency for new
// keys, and nothing else.
func (s *sandbox) setLatency(ctx context.Context, d time.Duration) error {
	body, err := json.Marshal(map[string]string{"latencyMin": d.String(), "latencyMax": d.String()})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, s.base+"/_sandbox/faults", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot set the sandbox latency: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("cannot set the sandbox latency: %s: %s", resp.Status, msg)
	}
	return nil
}

// providerRequestsSince counts the provider API requests the sandbox logged
// after offset bytes of its log: charges, retrievals and searches alike.
func (s *sandbox) providerRequestsSince(offset int64) (int, error) {
	data, err := readFrom(s.proc.Log, offset)
	if err != nil {
		return 0, fmt.Errorf("cannot read the sandbox log: %w", err)
	}
	return countProviderRequests(data), nil
}
