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
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// cliSecret is the webhook secret of these tests.
const cliSecret = "whsec_cli_secret_do_not_print"

// secretFile writes cliSecret to a file of the test's temporary directory.
func secretFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "webhook-secret")
	if err := os.WriteFile(path, []byte(cliSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunRefusesInvalidWebhookFlags(t *testing.T) {
	t.Parallel()
	file := secretFile(t)
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "secret on the command line", args: []string{"--webhook-secret", cliSecret},
			wantErr: "flag provided but not defined: -webhook-secret"},
		{name: "url without a secret", args: []string{"--webhook-url", "http://127.0.0.1:9/hooks"},
			wantErr: "--webhook-url needs a secret"},
		{name: "secret file without a url", args: []string{"--webhook-secret-file", file},
			wantErr: "--webhook-secret-file needs --webhook-url"},
		{name: "missing secret file", args: []string{"--webhook-url", "http://127.0.0.1:9/hooks",
			"--webhook-secret-file", file + ".missing"}, wantErr: "cannot read --webhook-secret-file"},
		{name: "unknown format", args: []string{"--webhook-url", "http://127.0.0.1:9/hooks", "--webhook-secret-file", file,
			"--webhook-format", "xml"}, wantErr: `unknown webhook format "xml"`},
		{name: "not a url", args: []string{"--webhook-url", "127.0.0.1:9", "--webhook-secret-file", file},
			wantErr: "absolute http or https URL"},
		{name: "drop above 100%", args: []string{"--webhook-drop", "120%"}, wantErr: "-webhook-drop"},
		{name: "duplicate not a number", args: []string{"--webhook-duplicate", "often"}, wantErr: "-webhook-duplicate"},
		{name: "negative debit delay", args: []string{"--debit-settle-after", "-1s"},
			wantErr: "--debit-settle-after must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			var stdout, stderr bytes.Buffer
			err := runLogging(context.Background(), tt.args, &stdout, &stderr)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(err.Error()).NotTo(ContainSubstring(cliSecret))
			g.Expect(exitCode(err)).To(Equal(2))
			g.Expect(stdout.String() + stderr.String()).To(BeEmpty())
		})
	}
}

func TestParseFlagsReadsTheWebhookSecretFromTheEnvironment(t *testing.T) {
	t.Setenv(webhookSecretEnv, " "+cliSecret+" ")
	g := NewWithT(t)
	cfg, err := parseFlags([]string{"--webhook-url", "http://127.0.0.1:9/hooks", "--webhook-drop", "20%",
		"--webhook-reorder", "0.5", "--webhook-seed", "7", "--debit-settle-after", "3s"}, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.webhooks.debitDelay).To(Equal(3 * time.Second))
	g.Expect(cfg.webhooks.hooks.Secret).To(Equal(cliSecret))
	g.Expect(cfg.webhooks.hooks.Format).To(Equal(sandbox.WebhookFormatStripe))
	g.Expect(cfg.webhooks.hooks.Seed).To(BeEquivalentTo(7))
	g.Expect(cfg.webhooks.hooks.Faults).To(Equal(sandbox.WebhookFaults{Drop: 0.2, Reorder: 0.5}))
}

// lockedBuffer is a buffer written by the server's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestRunSendsSignedWebhooksOfBankDebits(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	var mu sync.Mutex
	var got []*http.Request
	var bodies [][]byte
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r), append(bodies, body)
		mu.Unlock()
	}))
	defer receiver.Close()
	types := func() []string {
		mu.Lock()
		defer mu.Unlock()
		types := make([]string, 0, len(bodies))
		for _, b := range bodies {
			var ev struct {
				Type string `json:"type"`
			}
			g.Expect(json.Unmarshal(b, &ev)).To(Succeed())
			types = append(types, ev.Type)
		}
		return types
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- runLogging(ctx, []string{"--addr", "127.0.0.1:0", "--debit-settle-after", "200ms",
			"--webhook-url", receiver.URL + "/hooks", "--webhook-secret-file", secretFile(t), "--webhook-format", "http",
			"--webhook-seed", "1", "--webhook-duplicate", "100%"}, stdout, stderr)
	}()
	listening := regexp.MustCompile(`sandbox listening on (http://\S+)`)
	g.Eventually(stdout.String).WithTimeout(timeout).Should(MatchRegexp(listening.String()))
	base := listening.FindStringSubmatch(stdout.String())[1]

	client := &http.Client{Timeout: timeout}
	req, err := http.NewRequest(http.MethodPost, base+"/http/charges", strings.NewReader(
		`{"amount": 100, "currency": "eur", "paymentMethod": "pm_insufficientFunds_de"}`))
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Idempotency-Key", "ns/debit")
	res, err := client.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	var charge map[string]any
	g.Expect(json.NewDecoder(res.Body).Decode(&charge)).To(Succeed())
	g.Expect(res.Body.Close()).To(Succeed())
	g.Expect(charge).To(And(HaveKeyWithValue("status", "processing"), HaveKeyWithValue("method", "sepa_debit")))

	g.Eventually(types).WithTimeout(timeout).Should(Equal([]string{"payment.processing", "payment.processing",
		"payment.failed", "payment.failed"}))
	mu.Lock()
	for i, r := range got {
		g.Expect(r.URL.Path).To(Equal("/hooks"))
		ts, sig, _ := strings.Cut(strings.TrimPrefix(r.Header.Get("Paymentjob-Signature"), "t="), ",v1=")
		mac := hmac.New(sha256.New, []byte(cliSecret))
		mac.Write([]byte(ts + "." + string(bodies[i])))
		g.Expect(sig).To(Equal(hex.EncodeToString(mac.Sum(nil))))
	}
	mu.Unlock()

	res, err = client.Get(base + "/_sandbox/webhooks")
	g.Expect(err).NotTo(HaveOccurred())
	var hooks struct {
		URL       string               `json:"url"`
		HasSecret bool                 `json:"hasSecret"`
		Stats     sandbox.WebhookStats `json:"stats"`
	}
	g.Expect(json.NewDecoder(res.Body).Decode(&hooks)).To(Succeed())
	g.Expect(res.Body.Close()).To(Succeed())
	g.Expect(hooks.URL).To(Equal(receiver.URL + "/hooks"))
	g.Expect(hooks.HasSecret).To(BeTrue())
	g.Expect(hooks.Stats.Duplicated).To(BeEquivalentTo(2))

	cancel()
	g.Eventually(done).WithTimeout(timeout).Should(Receive(BeNil()))
	g.Expect(stderr.String()).To(And(ContainSubstring("webhookURL="+receiver.URL+"/hooks"),
		ContainSubstring("debitSettleAfter=200ms")))
	g.Expect(stdout.String() + stderr.String()).NotTo(ContainSubstring(cliSecret))
}
