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
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/testing/childproc"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/sandboxproc"
)

// sandboxRequestTimeout bounds each of the suite's requests to a sandbox.
const sandboxRequestTimeout = 10 * time.Second

// startSandbox runs bin/sandbox on a free loopback port with the fault
// flags in args, logging to dir, registered with the suite, and stops it
// when the test ends.
func startSandbox(t *testing.T, dir string, args ...string) *sandboxproc.Sandbox {
	t.Helper()
	sb, err := sandboxproc.Start(context.Background(), sandboxproc.Options{
		Bin:     suite.sandboxBin,
		LogPath: filepath.Join(dir, "sandbox.log"),
		Flags:   args,
		Register: func(p *childproc.Process) {
			register(&process{Process: p})
			t.Cleanup(func() { p.Stop(10 * time.Second) })
		},
		RequestTimeout: sandboxRequestTimeout,
	})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return sb
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
