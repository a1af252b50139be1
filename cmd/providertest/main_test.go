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
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/pkg/providertest"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// timeout bounds every run of these tests.
const timeout = time.Minute

// sandboxURLs are the urls of a sandbox's HTTP contract.
type sandboxURLs struct {
	charges, lookup, refunds, list string
}

// startSandbox serves a new Engine's HTTP contract on a loopback server
// closed with the test, and returns its urls.
func startSandbox(t *testing.T, opts ...sandbox.Option) (*sandbox.Engine, sandboxURLs) {
	t.Helper()
	e := sandbox.NewEngine(opts...)
	srv := httptest.NewServer(sandbox.NewServer(e, sandbox.ServerOptions{}))
	t.Cleanup(srv.Close)
	return e, sandboxURLs{charges: srv.URL + "/http/charges", lookup: srv.URL + "/http/charges/lookup",
		refunds: srv.URL + "/http/refunds", list: srv.URL + "/http/list"}
}

// refundRules are the refund rules.
var refundRules = []string{providertest.RuleRefundReplay, providertest.RuleRefundLostResponse,
	providertest.RuleRefundExceedsCharge, providertest.RuleRefundUnknownCharge, providertest.RuleRefundLookup}

// env is a getenv of the variables given.
func env(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

// runCommand runs the command and returns its exit code, stdout and stderr.
func runCommand(t *testing.T, args []string, vars map[string]string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, env(vars), &stdout, &stderr)
	t.Log(stdout.String(), stderr.String())
	return code, stdout.String(), stderr.String()
}

func TestRunPassesTheSandbox(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	// Every new charge takes 300ms, so that the slow payment method keeps
	// the in-flight rule's first request running.
	e, urls := startSandbox(t)
	g.Expect(e.SetFaults(sandbox.Faults{LatencyMin: 300 * time.Millisecond, LatencyMax: 300 * time.Millisecond})).To(Succeed())
	// Its bank debits settle two seconds after they are accepted.
	e.SetDebitSettleDelay(2 * time.Second)

	code, stdout, stderr := runCommand(t, []string{"--url", urls.charges, "--lookup-url", urls.lookup,
		"--refund-url", urls.refunds, "--list-url", urls.list, "--timeout", "5s",
		"--slow-payment-method", sandbox.PaymentMethodVisa, "--in-flight-after", "50ms",
		"--pending-payment-method", sandbox.PaymentMethodSEPADebit,
		"--pending-failing-payment-method", sandbox.PaymentMethodSEPADebitInsufficientFunds}, nil)

	g.Expect(code).To(Equal(0))
	g.Expect(stderr).To(BeEmpty())
	g.Expect(stdout).To(HavePrefix("RULE "))
	g.Expect(stdout).To(ContainSubstring("19 passed, 0 failed, 2 skipped"))
	for _, rule := range append([]string{providertest.RuleReplay, providertest.RuleLostResponse, providertest.RuleKeyReuse,
		providertest.RuleInFlight, providertest.RuleDecline, providertest.RuleLookup, providertest.RuleErrorBody,
		providertest.RuleKeyRequired, providertest.RuleListWindow, providertest.RuleListWindowEnd,
		providertest.RuleListBadParameter, providertest.RulePending}, refundRules...) {
		g.Expect(stdout).To(MatchRegexp(`(?m)^%s +PASS +\S`, rule))
	}
	g.Expect(stdout).To(MatchRegexp(`(?m)^%s +SKIP +\S`, providertest.RuleCredentials))
	g.Expect(stdout).To(MatchRegexp(`(?m)^%s +SKIP +.*the providertest command does not run it`, providertest.RuleEvents))
}

// TestRunSkipsTheRefundRulesWithoutARefundURL: a service checked without
// --refund-url passes no refund rule: each is skipped, saying why.
func TestRunSkipsTheRefundRulesWithoutARefundURL(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	_, urls := startSandbox(t)

	code, stdout, _ := runCommand(t, []string{"--url", urls.charges, "--lookup-url", urls.lookup, "--timeout", "5s"}, nil)

	g.Expect(code).To(Equal(0))
	for _, rule := range refundRules {
		g.Expect(stdout).To(MatchRegexp(`(?m)^%s +SKIP +.*--refund-url\) is not set`, rule))
	}
	g.Expect(stdout).To(MatchRegexp(`(?m)^%s +SKIP +.*--pending-payment-method\) is not set`, providertest.RulePending))
	g.Expect(stdout).To(ContainSubstring("9 passed, 0 failed, 12 skipped"))
}

func TestRunFailsABrokenService(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	_, urls := startSandbox(t, sandbox.WithIdempotency(false))

	code, stdout, _ := runCommand(t, []string{"--url", urls.charges, "--lookup-url", urls.lookup,
		"--refund-url", urls.refunds, "--timeout", "5s"}, nil)

	g.Expect(code).To(Equal(1))
	g.Expect(stdout).To(MatchRegexp(`(?m)^%s +FAIL +.*charged again`, providertest.RuleReplay))
	g.Expect(stdout).To(MatchRegexp(`(?m)^%s +FAIL `, providertest.RuleKeyReuse))
	g.Expect(stdout).To(MatchRegexp(`(?m)^%s +FAIL +.*refunded again`, providertest.RuleRefundReplay))
	g.Expect(stdout).To(MatchRegexp(`\d passed, [1-9] failed, \d skipped`))
}

func TestRunNeverPrintsTheToken(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token-value"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		vars map[string]string
	}{
		{name: "from the environment", vars: map[string]string{tokenEnv: token}},
		{name: "from a file", args: []string{"--token-file", file}},
		{name: "the file wins", args: []string{"--token-file", file}, vars: map[string]string{tokenEnv: "other"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			_, urls := startSandbox(t)

			code, stdout, stderr := runCommand(t, append([]string{"--url", urls.charges, "--timeout", "5s"}, tt.args...), tt.vars)

			// The sandbox accepts any token or none: the rule fails.
			g.Expect(code).To(Equal(1))
			g.Expect(stdout).To(MatchRegexp(`(?m)^%s +FAIL +a charge without a token`, providertest.RuleCredentials))
			g.Expect(stdout + stderr).NotTo(ContainSubstring(token))
		})
	}
}

func TestRunRefusesInvalidCommandLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "no url", args: nil, wantErr: "--url is required"},
		{name: "not http", args: []string{"--url", "ftp://127.0.0.1/charges"}, wantErr: "scheme must be http or https"},
		{name: "refund url not http", args: []string{"--url", "http://127.0.0.1/c", "--refund-url", "ftp://127.0.0.1/refunds"},
			wantErr: "refund url"},
		{name: "list url not http", args: []string{"--url", "http://127.0.0.1/c", "--list-url", "ftp://127.0.0.1/list"},
			wantErr: "list url"},
		{name: "unknown flag", args: []string{"--url", "http://127.0.0.1/c", "--port", "1"}, wantErr: "-port"},
		{name: "positional argument", args: []string{"--url", "http://127.0.0.1/c", "now"}, wantErr: "unexpected arguments"},
		{name: "zero timeout", args: []string{"--url", "http://127.0.0.1/c", "--timeout", "0s"}, wantErr: "--timeout"},
		{name: "negative amount", args: []string{"--url", "http://127.0.0.1/c", "--amount", "-5"}, wantErr: "--amount"},
		{name: "missing token file", args: []string{"--url", "http://127.0.0.1/c", "--token-file", "/nonexistent/token"},
			wantErr: "cannot read --token-file"},
		{name: "a failing debit without a settling one", args: []string{"--url", "http://127.0.0.1/c",
			"--pending-failing-payment-method", "pm_failed_de"}, wantErr: "needs --pending-payment-method"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			code, stdout, stderr := runCommand(t, tt.args, nil)
			g.Expect(code).To(Equal(2))
			g.Expect(stdout).To(BeEmpty())
			g.Expect(stderr).To(ContainSubstring(tt.wantErr))
		})
	}
}

func TestRunPrintsHelp(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	code, stdout, _ := runCommand(t, []string{"--help"}, nil)
	g.Expect(code).To(Equal(0))
	g.Expect(stdout).To(ContainSubstring("Usage: providertest --url URL"))
	g.Expect(stdout).To(ContainSubstring("-refund-url"))
	g.Expect(stdout).To(ContainSubstring("-list-url"))
	g.Expect(stdout).To(ContainSubstring(tokenEnv))
}
