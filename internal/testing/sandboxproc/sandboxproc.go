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

// Package sandboxproc runs bin/sandbox as a process on a free loopback port
// and is the one client of its HTTP routes that the e2e suite and the
// benchmark share: its counters (GET /_sandbox/stats), its fault and lookup
// switches, the keys it forgets, and the PaymentIntents it holds for a key.
package sandboxproc

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/testing/childproc"
)

// Defaults of Options.
const (
	// DefaultStartWait bounds the wait for the sandbox to print its address.
	DefaultStartWait = 30 * time.Second
	// DefaultRequestTimeout bounds each request of the client.
	DefaultRequestTimeout = 30 * time.Second
	// stopGrace is the SIGTERM grace of a sandbox that failed to start.
	stopGrace = 5 * time.Second
)

// listeningPrefix starts the line the sandbox prints on stdout once it
// listens: "sandbox listening on http://127.0.0.1:PORT".
const listeningPrefix = "sandbox listening on "

// Options says how to run the sandbox.
type Options struct {
	// Bin is the sandbox binary (bin/sandbox).
	Bin string
	// LogPath receives the process's standard output and error.
	LogPath string
	// Flags follow --addr=127.0.0.1:0: fault switches, --live-rate-limits.
	Flags []string
	// Env is added to the process's environment, such as
	// SANDBOX_WEBHOOK_SECRET=... for --webhook-url: a secret never goes in
	// Flags, which anyone on the machine can read.
	Env []string
	// Register, when set, is called with the process as soon as it runs,
	// before its address is known, so that the caller can stop it whatever
	// happens next (a test's Cleanup, a process registry).
	Register func(*childproc.Process)
	// StartWait bounds the wait for the address; DefaultStartWait when zero.
	StartWait time.Duration
	// RequestTimeout bounds each request of the client;
	// DefaultRequestTimeout when zero.
	RequestTimeout time.Duration
}

// Sandbox is a running bin/sandbox process and the client of its routes.
type Sandbox struct {
	// Proc is the process; its Log holds the sandbox's request lines.
	Proc *childproc.Process
	// URL is its address, http://127.0.0.1:PORT.
	URL  string
	http *http.Client
}

// Start runs the sandbox on a free loopback port and waits until it prints
// its address. On any failure the process is stopped and the error says
// why, with the end of its log.
func Start(ctx context.Context, o Options) (*Sandbox, error) {
	wait := o.StartWait
	if wait <= 0 {
		wait = DefaultStartWait
	}
	timeout := o.RequestTimeout
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	listening := childproc.NewLineSignal(listeningPrefix)
	p, err := childproc.Start("sandbox", o.Bin, o.LogPath, o.Env, listening, append([]string{"--addr=127.0.0.1:0"}, o.Flags...)...)
	if err != nil {
		return nil, err
	}
	if o.Register != nil {
		o.Register(p)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case url := <-listening.Found():
		if !strings.HasPrefix(url, "http://127.0.0.1:") {
			p.Stop(stopGrace)
			return nil, fmt.Errorf("the sandbox listens on %s, not on 127.0.0.1", url)
		}
		return &Sandbox{Proc: p, URL: url, http: &http.Client{Timeout: timeout}}, nil
	case <-p.Done():
		return nil, p.ExitError()
	case <-timer.C:
		p.Stop(stopGrace)
		return nil, fmt.Errorf("the sandbox did not print its address within %s; last lines of %s:\n%s",
			wait, p.Log, childproc.Tail(p.Log, 20))
	case <-ctx.Done():
		p.Stop(stopGrace)
		return nil, ctx.Err()
	}
}

// ForURL is a client of a sandbox that is already running at url, with
// DefaultRequestTimeout; its Proc is nil.
func ForURL(url string) *Sandbox {
	return &Sandbox{URL: url, http: &http.Client{Timeout: DefaultRequestTimeout}}
}
