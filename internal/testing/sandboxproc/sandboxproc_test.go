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

package sandboxproc_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/testing/childproc"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/sandboxproc"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// serve runs the sandbox's own HTTP server in the test, on loopback.
func serve(t *testing.T) (*sandbox.Engine, *sandboxproc.Sandbox) {
	t.Helper()
	e := sandbox.NewEngine()
	srv := httptest.NewServer(sandbox.NewServer(e, sandbox.ServerOptions{}))
	t.Cleanup(srv.Close)
	return e, sandboxproc.ForURL(srv.URL)
}

func TestClientReadsAndSwitchesTheSandbox(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e, sb := serve(t)
	const key = "tenant-a/invoice-1"
	_, _, err := e.CreatePaymentIntent(key, sandbox.TaggedRequest(key, sandbox.PaymentIntentParams{
		Amount: 1250, Currency: "usd", PaymentMethod: sandbox.PaymentMethodVisa}))
	g.Expect(err).NotTo(HaveOccurred())

	st, err := sb.Stats(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Account).To(Equal(e.Account()))
	g.Expect(st.Requests).To(Equal(int64(1)))
	g.Expect(st.Charges).To(Equal(int64(1)))
	g.Expect(st.ChargesByKey).To(Equal(map[string]int{key: 1}))

	intents, err := sb.IntentsFor(ctx, key)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(intents).To(HaveLen(1))
	g.Expect(intents[0].Amount).To(Equal(int64(1250)))
	g.Expect(intents[0].Status).To(Equal(sandbox.StatusSucceeded))
	g.Expect(intents[0].ID).To(HavePrefix("pi_"))
	g.Expect(sb.IntentsFor(ctx, "tenant-a/other")).To(BeEmpty())

	g.Expect(sb.ForgetKeys(ctx)).To(Equal(1))
	after, err := sb.Stats(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after.Minus(st.Counters)).To(Equal(sandboxproc.Counters{Searches: 2, KeysForgotten: 1}))

	g.Expect(sb.SetLatency(ctx, 5*time.Millisecond)).To(Succeed())
	g.Expect(e.Faults().LatencyMin).To(Equal(5 * time.Millisecond))
	g.Expect(e.Faults().LatencyMax).To(Equal(5 * time.Millisecond))

	g.Expect(sb.SetLookup(ctx, false)).To(Succeed())
	g.Expect(e.LookupEnabled()).To(BeFalse())
	_, err = sb.IntentsFor(ctx, key)
	g.Expect(err).To(MatchError(ContainSubstring("404")), "search is off")
	g.Expect(sb.SetLookup(ctx, true)).To(Succeed())
	g.Expect(e.LookupEnabled()).To(BeTrue())
}

func TestClientSetsDebitsAndReadsWebhookCounters(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e, sb := serve(t)
	g.Expect(sb.SetDebitSettleDelay(ctx, 250*time.Millisecond)).To(Succeed())
	g.Expect(e.DebitSettleDelay()).To(Equal(250 * time.Millisecond))

	receiver := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(receiver.Close)
	t.Cleanup(e.Close)
	g.Expect(e.SetWebhooks(sandbox.WebhookConfig{URL: receiver.URL, Secret: "whsec_x", Faults: sandbox.WebhookFaults{Drop: 1}})).To(Succeed())
	_, _, err := e.CreatePaymentIntent("k", sandbox.PaymentIntentParams{Amount: 100, Currency: "eur",
		PaymentMethod: sandbox.PaymentMethodVisa})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() (sandbox.WebhookStats, error) { return sb.WebhookStats(ctx) }).WithTimeout(5 * time.Second).
		Should(Equal(sandbox.WebhookStats{Events: 1, Dropped: 1}))
}

func TestClientReportsTheSandboxRefusal(t *testing.T) {
	g := NewWithT(t)
	_, sb := serve(t)
	err := sb.SetLatency(context.Background(), -time.Second)
	g.Expect(err).To(MatchError(ContainSubstring("cannot set the sandbox latency: PUT /_sandbox/faults: 400")))
}

func TestCountersMinusAndPlus(t *testing.T) {
	g := NewWithT(t)
	before := sandboxproc.Counters{Requests: 1000, Charges: 1000, Searches: 120, Retrieves: 3, RateLimited: 2, Replays: 5, KeysForgotten: 7}
	after := sandboxproc.Counters{Requests: 2010, Charges: 2000, Searches: 220, Retrieves: 4, RateLimited: 12, Replays: 5, KeysForgotten: 7}
	d := after.Minus(before)
	g.Expect(d).To(Equal(sandboxproc.Counters{Requests: 1010, Charges: 1000, Searches: 100, Retrieves: 1, RateLimited: 10}))
	g.Expect(d.ProviderCalls()).To(Equal(int64(1111)), "creates, searches and retrieves")
	g.Expect(d.Plus(before)).To(Equal(after))
}

// fakeSandbox writes a shell script that stands in for bin/sandbox.
func fakeSandbox(t *testing.T, script string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sandbox")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"+script+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return bin
}

func TestStart(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		wantErr string
	}{
		{name: "not on loopback", script: `echo "sandbox listening on http://0.0.0.0:4242"; exec sleep 30`, wantErr: "not on 127.0.0.1"},
		{name: "exits first", script: `echo "cannot listen"; exit 3`, wantErr: "exit status 3"},
		{name: "silent", script: `echo "starting"; exec sleep 30`, wantErr: "did not print its address within 300ms"},
		{name: "on loopback", script: `echo "sandbox listening on http://127.0.0.1:4242"; exec sleep 30`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var started *childproc.Process
			sb, err := sandboxproc.Start(context.Background(), sandboxproc.Options{
				Bin:       fakeSandbox(t, tt.script),
				LogPath:   filepath.Join(t.TempDir(), "sandbox.log"),
				Register:  func(p *childproc.Process) { started = p },
				StartWait: 300 * time.Millisecond,
			})
			g.Expect(started).NotTo(BeNil(), "registered as soon as it runs")
			t.Cleanup(func() { started.Stop(5 * time.Second) })
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(started.Exited()).To(BeTrue(), "a sandbox that failed to start is stopped")
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sb.URL).To(Equal("http://127.0.0.1:4242"))
			g.Expect(sb.Proc).To(BeIdenticalTo(started))
			g.Expect(started.Exited()).To(BeFalse())
		})
	}
}

// TestStartRunsTheSandbox runs bin/sandbox itself, which make test builds
// and names in SANDBOX_BIN.
func TestStartRunsTheSandbox(t *testing.T) {
	g := NewWithT(t)
	bin := os.Getenv("SANDBOX_BIN")
	g.Expect(bin).NotTo(BeEmpty(), "SANDBOX_BIN is not set: run the tests with `make test`, which builds bin/sandbox")
	ctx := context.Background()
	sb, err := sandboxproc.Start(ctx, sandboxproc.Options{Bin: bin, LogPath: filepath.Join(t.TempDir(), "sandbox.log")})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { sb.Proc.Stop(10 * time.Second) })
	g.Expect(sb.URL).To(HavePrefix("http://127.0.0.1:"))
	st, err := sb.Stats(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Counters).To(Equal(sandboxproc.Counters{}))
	g.Expect(st.Account).To(HavePrefix("acct_"))
}
