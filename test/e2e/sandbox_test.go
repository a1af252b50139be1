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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/childproc"
)

// searchAPIKey authenticates the suite's own reads at the sandbox, which
// accepts any sk_test_ key. It is not the scenarios' secret value.
const searchAPIKey = "sk_test_e2e"

// metadataKeyIdempotencyKey is the metadata entry the Stripe adapter puts
// on every PaymentIntent: the sent idempotency key.
const metadataKeyIdempotencyKey = "paymentjob_idempotency_key"

// sandbox is a bin/sandbox process.
type sandbox struct {
	proc *process
	// base is its URL, http://127.0.0.1:PORT.
	base string
	http *http.Client
}

// sandboxStats is GET /_sandbox/stats.
type sandboxStats struct {
	// Account is the account the sandbox answers to.
	Account string `json:"account"`
	// Requests counts create (charge) requests only.
	Requests          int64          `json:"requests"`
	Charges           int64          `json:"charges"`
	Replays           int64          `json:"replays"`
	InFlightConflicts int64          `json:"inFlightConflicts"`
	Declines          int64          `json:"declines"`
	Faults            int64          `json:"faults"`
	RateLimited       int64          `json:"rateLimited"`
	Searches          int64          `json:"searches"`
	Retrieves         int64          `json:"retrieves"`
	KeysForgotten     int64          `json:"keysForgotten"`
	ChargesByKey      map[string]int `json:"chargesByKey"`
}

// intent is the part of a PaymentIntent the suite checks.
type intent struct {
	ID       string            `json:"id"`
	Amount   int64             `json:"amount"`
	Status   string            `json:"status"`
	Metadata map[string]string `json:"metadata"`
}

// startSandbox runs bin/sandbox on a free loopback port with the fault
// flags in args, logging to dir, and stops it when the test ends.
func startSandbox(t *testing.T, dir string, args ...string) *sandbox {
	t.Helper()
	g := NewWithT(t)
	listening := childproc.NewLineSignal("sandbox listening on ")
	p, err := startProcess("sandbox", suite.sandboxBin, filepath.Join(dir, "sandbox.log"), nil, listening,
		append([]string{"--addr=127.0.0.1:0"}, args...)...)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { p.Stop(10 * time.Second) })

	var base string
	g.Eventually(listening.Found(), 30*time.Second).Should(Receive(&base),
		"the sandbox did not print its address; its log:\n%s", p.ReadLog())
	g.Expect(base).To(HavePrefix("http://127.0.0.1:"))
	return &sandbox{proc: p, base: base, http: &http.Client{Timeout: 10 * time.Second}}
}

// stats reads the sandbox's counters.
func (s *sandbox) stats() (sandboxStats, error) {
	var st sandboxStats
	err := s.get("/_sandbox/stats", &st)
	return st, err
}

// intentsFor returns the PaymentIntents whose metadata names the sent
// idempotency key, through the sandbox's Stripe search API.
func (s *sandbox) intentsFor(key string) ([]intent, error) {
	q := url.Values{
		"query": {fmt.Sprintf("metadata['%s']:'%s'", metadataKeyIdempotencyKey, key)},
		"limit": {"100"},
	}
	var page struct {
		Data    []intent `json:"data"`
		HasMore bool     `json:"has_more"`
	}
	if err := s.get("/v1/payment_intents/search?"+q.Encode(), &page); err != nil {
		return nil, err
	}
	if page.HasMore {
		return nil, fmt.Errorf("more than 100 intents for key %s", key)
	}
	return page.Data, nil
}

// forgetKeys makes the sandbox forget every decided idempotency key, as
// Stripe does after 24 hours; the intents stay, searchable. It returns how
// many keys it forgot.
func (s *sandbox) forgetKeys() (int, error) {
	var out struct {
		Forgotten int `json:"forgotten"`
	}
	err := s.do(http.MethodPost, "/_sandbox/forget-keys", &out)
	return out.Forgotten, err
}

func (s *sandbox) get(path string, into any) error {
	return s.do(http.MethodGet, path, into)
}

func (s *sandbox) do(method, path string, into any) error {
	req, err := http.NewRequestWithContext(context.Background(), method, s.base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+searchAPIKey)
	resp, err := s.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, body)
	}
	return json.Unmarshal(body, into)
}

// holdingProxy is a loopback HTTP proxy to the sandbox that holds its
// first requests for longer than the manager's provider timeout before it
// forwards them: the manager gives up, and the sandbox charges afterwards.
// Later requests are forwarded at once.
type holdingProxy struct {
	url    string
	target string
	hold   time.Duration
	client *http.Client

	// toHold counts down the requests still to hold.
	toHold atomic.Int64
	// held counts the requests held.
	held atomic.Int64
	// chargedLate counts the held requests that the sandbox charged (a
	// success that is not a replay) after the manager had given up.
	chargedLate atomic.Int64
}

// startHoldingProxy serves a holdingProxy to target on a free loopback
// port until the test ends.
func startHoldingProxy(t *testing.T, target string, n int, hold time.Duration) *holdingProxy {
	p := &holdingProxy{target: target, hold: hold, client: &http.Client{Timeout: 30 * time.Second}}
	p.toHold.Store(int64(n))
	srv := httptest.NewServer(p)
	// Close waits for the held requests to be forwarded.
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

func (p *holdingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	holding := r.Method == http.MethodPost && p.toHold.Add(-1) >= 0
	if holding {
		p.held.Add(1)
		// The fault itself: the manager's call times out meanwhile, and
		// the request is forwarded even though nobody waits for it.
		<-time.After(p.hold)
		ctx = context.WithoutCancel(ctx)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := p.client.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	if holding && resp.StatusCode == http.StatusOK && resp.Header.Get("Idempotent-Replayed") != "true" {
		p.chargedLate.Add(1)
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}
