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
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// timeout bounds every wait of these tests.
const timeout = 10 * time.Second

func TestRunRefusesInvalidCommandLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "any address", args: []string{"--addr", "0.0.0.0:0"}, wantErr: "--allow-non-loopback"},
		{name: "all interfaces", args: []string{"--addr", ":0"}, wantErr: "not a loopback address"},
		{name: "IPv6 any address", args: []string{"--addr", "[::]:0"}, wantErr: "not a loopback address"},
		{name: "public IP", args: []string{"--addr", "192.0.2.10:12111"}, wantErr: "not a loopback address"},
		{name: "host name", args: []string{"--addr", "sandbox.example.com:12111"}, wantErr: "not a loopback address"},
		{name: "no port", args: []string{"--addr", "127.0.0.1"}, wantErr: "invalid --addr"},
		{name: "probability above 1", args: []string{"--rate-limit", "1.5"},
			wantErr: "--rate-limit must be a probability between 0 and 1, got 1.5"},
		{name: "negative probability", args: []string{"--error-after-commit", "-0.1"}, wantErr: "--error-after-commit"},
		{name: "NaN probability", args: []string{"--error-before-commit", "NaN"}, wantErr: "--error-before-commit"},
		{name: "probability not a number", args: []string{"--error-before-commit", "often"},
			wantErr: `invalid value "often" for flag -error-before-commit`},
		{name: "bad duration", args: []string{"--latency-max", "soon"}, wantErr: "-latency-max"},
		{name: "negative duration", args: []string{"--retry-after", "-1s"}, wantErr: "must not be negative"},
		{name: "latency min above max", args: []string{"--latency-min", "1s", "--latency-max", "5ms"},
			wantErr: "latencyMax 5ms is less than latencyMin 1s"},
		{name: "negative write rate", args: []string{"--write-rate", "-1"},
			wantErr: "--write-rate must be a finite number of requests per second, 0 or more, got -1"},
		{name: "NaN search rate", args: []string{"--search-rate", "NaN"}, wantErr: "--search-rate"},
		{name: "infinite search rate", args: []string{"--live-rate-limits", "--search-rate", "+Inf"}, wantErr: "--search-rate"},
		{name: "negative read rate", args: []string{"--read-rate", "-1"}, wantErr: "--read-rate"},
		{name: "negative search lag", args: []string{"--search-lag", "-1s"}, wantErr: "--search-lag must not be negative"},
		{name: "negative refund settle delay", args: []string{"--refund-settle-delay", "-1s"},
			wantErr: "--refund-settle-delay must not be negative"},
		{name: "idempotency not a bool", args: []string{"--idempotency=maybe"}, wantErr: "-idempotency"},
		{name: "unknown flag", args: []string{"--port", "12111"}, wantErr: "flag provided but not defined: -port"},
		{name: "positional argument", args: []string{"serve"}, wantErr: "unexpected arguments"},
		{name: "empty require-action", args: []string{"--require-action", "pm_a,"}, wantErr: `invalid payment method ""`},
		{name: "require-action not an identifier", args: []string{"--require-action", "pm card"},
			wantErr: `invalid payment method "pm card"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			var stdout bytes.Buffer

			err := run(ctx, tt.args, &stdout)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(exitCode(err)).To(Equal(2))
			g.Expect(stdout.String()).To(BeEmpty())
		})
	}
}

func TestParseFlagsShapesTheProvider(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		args            []string
		wantLimits      sandbox.RateLimits
		wantAccount     string
		wantIdempotency bool
		wantSearchLag   time.Duration
		wantNoCode      bool
		wantRefundDelay time.Duration
		wantRequire     []string
	}{
		{name: "defaults", wantIdempotency: true},
		{name: "live rate limits", args: []string{"--live-rate-limits"},
			wantLimits: sandbox.RateLimits{Writes: 100, Searches: 20, Reads: 100}, wantIdempotency: true},
		{name: "an explicit rate wins over the preset", args: []string{"--live-rate-limits", "--search-rate", "5"},
			wantLimits: sandbox.RateLimits{Writes: 100, Searches: 5, Reads: 100}, wantIdempotency: true},
		{name: "an explicit zero lifts its part of the preset", args: []string{"--write-rate=0", "--read-rate=0", "--live-rate-limits"},
			wantLimits: sandbox.RateLimits{Searches: 20}, wantIdempotency: true},
		{name: "rates", args: []string{"--write-rate", "2.5", "--search-rate", "1", "--read-rate", "50"},
			wantLimits: sandbox.RateLimits{Writes: 2.5, Searches: 1, Reads: 50}, wantIdempotency: true},
		{name: "account, idempotency off and lag",
			args:        []string{"--account-id", "acct_cli", "--idempotency=false", "--search-lag", "90s"},
			wantAccount: "acct_cli", wantSearchLag: 90 * time.Second},
		{name: "require action, comma-separated and repeated",
			args:            []string{"--require-action", "pm_card_visa, pm_forced", "--require-action=pm_more"},
			wantIdempotency: true, wantRequire: []string{"pm_card_visa", "pm_forced", "pm_more"}},
		{name: "pending refunds", args: []string{"--refund-settle-delay", "2s"},
			wantIdempotency: true, wantRefundDelay: 2 * time.Second},
		{name: "refunds beyond what is left refused without a code", args: []string{"--refund-amount-too-large-code=false"},
			wantIdempotency: true, wantNoCode: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			cfg, err := parseFlags(tt.args, io.Discard)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cfg.limits).To(Equal(tt.wantLimits))
			g.Expect(cfg.account).To(Equal(tt.wantAccount))
			g.Expect(cfg.idempotency).To(Equal(tt.wantIdempotency))
			g.Expect(cfg.searchLag).To(Equal(tt.wantSearchLag))
			g.Expect(cfg.requireAction).To(Equal(tt.wantRequire))
			g.Expect(cfg.refundDelay).To(Equal(tt.wantRefundDelay))
			g.Expect(cfg.amountTooLargeCode).To(Equal(!tt.wantNoCode))
		})
	}
}

func TestCheckLoopbackAcceptsLoopbackAddresses(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"127.0.0.1:12111", "127.0.0.2:0", "[::1]:0", "localhost:12111"} {
		NewWithT(t).Expect(checkLoopback(addr)).To(Succeed(), addr)
	}
}

func TestRunPrintsUsageOnHelp(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	var stdout bytes.Buffer
	g.Expect(run(context.Background(), []string{"-h"}, &stdout)).To(Succeed())
	g.Expect(stdout.String()).To(And(ContainSubstring("-addr"), ContainSubstring("-allow-non-loopback"),
		ContainSubstring("-rate-limit"), ContainSubstring("-account-id"), ContainSubstring("-idempotency"),
		ContainSubstring("-search-lag"), ContainSubstring("-write-rate"), ContainSubstring("-search-rate"),
		ContainSubstring("-live-rate-limits"), ContainSubstring("-refund-settle-delay"),
		ContainSubstring("-debit-settle-after"), ContainSubstring("-webhook-url"), ContainSubstring("-webhook-secret-file")))
}

func TestExitCodeOfOtherErrorsIsOne(t *testing.T) {
	t.Parallel()
	NewWithT(t).Expect(exitCode(io.ErrUnexpectedEOF)).To(Equal(1))
}

func TestRunServesUntilCancelled(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	defer pr.Close()

	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(pr)
		line, _ := r.ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, r)
	}()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--addr", "127.0.0.1:0", "--rate-limit", "0.25", "--latency-max", "2ms",
			"--account-id", "acct_cli", "--idempotency=false", "--live-rate-limits", "--refund-settle-delay", "1h",
			"--refund-amount-too-large-code=false"}, pw)
		_ = pw.Close()
	}()

	var line string
	g.Eventually(lines).WithTimeout(timeout).Should(Receive(&line))
	g.Expect(line).To(MatchRegexp(`^sandbox listening on http://127\.0\.0\.1:\d+\n$`))
	g.Expect(line).NotTo(ContainSubstring(":0\n"))
	base := strings.TrimSpace(strings.TrimPrefix(line, "sandbox listening on "))

	client := &http.Client{Timeout: timeout}
	// Idempotency is off: the same charge twice is two charges. The random
	// rate limit fault may refuse some; retry until two went through.
	charged := 0
	for range 100 {
		if charged == 2 {
			break
		}
		req, err := http.NewRequest(http.MethodPost, base+"/http/charges", strings.NewReader(
			`{"amount": 100, "currency": "eur", "paymentMethod": "pm_card_visa"}`))
		g.Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Idempotency-Key", "ns/twice")
		res, err := client.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Body.Close()).To(Succeed())
		if res.StatusCode == http.StatusCreated {
			charged++
		} else {
			g.Expect(res.StatusCode).To(Equal(http.StatusTooManyRequests))
		}
	}
	g.Expect(charged).To(Equal(2))

	res, err := client.Get(base + "/_sandbox/stats")
	g.Expect(err).NotTo(HaveOccurred())
	var stats map[string]any
	g.Expect(json.NewDecoder(res.Body).Decode(&stats)).To(Succeed())
	g.Expect(res.Body.Close()).To(Succeed())
	g.Expect(res.StatusCode).To(Equal(http.StatusOK))
	g.Expect(stats).To(HaveKeyWithValue("charges", BeEquivalentTo(2)))
	g.Expect(stats).To(HaveKeyWithValue("chargesByKey", HaveKeyWithValue("ns/twice", BeEquivalentTo(2))))
	g.Expect(stats).To(HaveKeyWithValue("account", "acct_cli"))

	res, err = client.Get(base + "/_sandbox/refunds")
	g.Expect(err).NotTo(HaveOccurred())
	var refunds map[string]any
	g.Expect(json.NewDecoder(res.Body).Decode(&refunds)).To(Succeed())
	g.Expect(res.Body.Close()).To(Succeed())
	g.Expect(refunds).To(HaveKeyWithValue("settleDelay", "1h0m0s"))
	g.Expect(refunds).To(HaveKeyWithValue("amountTooLargeCode", false))

	res, err = client.Get(base + "/_sandbox/faults")
	g.Expect(err).NotTo(HaveOccurred())
	var faults map[string]any
	g.Expect(json.NewDecoder(res.Body).Decode(&faults)).To(Succeed())
	g.Expect(res.Body.Close()).To(Succeed())
	g.Expect(faults).To(HaveKeyWithValue("rateLimit", 0.25))
	g.Expect(faults).To(HaveKeyWithValue("latencyMax", "2ms"))
	g.Expect(faults).To(HaveKeyWithValue("retryAfter", "1s"))

	cancel()
	var runErr error
	g.Eventually(done).WithTimeout(timeout).Should(Receive(&runErr))
	g.Expect(runErr).NotTo(HaveOccurred())

	_, err = client.Get(base + "/_sandbox/stats")
	g.Expect(err).To(HaveOccurred())
}
