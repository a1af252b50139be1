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

package controller_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controller"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// sandboxStats is the part of GET /_sandbox/stats the tests read.
type sandboxStats struct {
	Requests     int64          `json:"requests"`
	Charges      int64          `json:"charges"`
	Replays      int64          `json:"replays"`
	Faults       int64          `json:"faults"`
	ChargesByKey map[string]int `json:"chargesByKey"`
}

func getStats(g Gomega, base string) sandboxStats {
	resp, err := http.Get(base + "/_sandbox/stats")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	var s sandboxStats
	g.Expect(json.NewDecoder(resp.Body).Decode(&s)).To(Succeed())
	return s
}

func putFaults(g Gomega, base, faults string) {
	req, err := http.NewRequest(http.MethodPut, base+"/_sandbox/faults", strings.NewReader(faults))
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))
}

// startSandboxProcess runs bin/sandbox (built by make test) on a free
// loopback port and stops it when the test ends.
func startSandboxProcess(t *testing.T) string {
	t.Helper()
	g := NewWithT(t)
	bin := os.Getenv("SANDBOX_BIN")
	g.Expect(bin).NotTo(BeEmpty(), "SANDBOX_BIN is not set: run the tests with `make test`, which builds bin/sandbox")
	cmd := exec.Command(bin, "--addr", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	g.Expect(err).NotTo(HaveOccurred())
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	g.Expect(cmd.Start()).To(Succeed())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
	})

	lines := make(chan string)
	go func() {
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			lines <- scanner.Text()
		}
		close(lines)
	}()
	const prefix = "sandbox listening on "
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the sandbox exited before listening: %s", stderr.String())
			}
			if addr, found := strings.CutPrefix(line, prefix); found {
				go func() {
					for range lines { // keep the pipe drained
					}
				}()
				return addr
			}
		case <-time.After(timeout):
			t.Fatalf("the sandbox did not start listening: %s", stderr.String())
		}
	}
}

// lockedBuffer collects a process's stderr while the test may read it.
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

// pointProviderAt makes the namespace's PaymentProvider use apiBase.
func pointProviderAt(t *testing.T, ns, apiBase string) {
	t.Helper()
	g := NewWithT(t)
	var pp paymentsv1alpha1.PaymentProvider
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: providerName}, &pp)).To(Succeed())
	pp.Spec.Stripe.APIBase = apiBase
	g.Expect(k8sClient.Update(context.Background(), &pp)).To(Succeed())
}

// newSandboxNamespace starts the sandbox's HTTP server in this process, on
// loopback until the test ends, and a namespace whose PaymentProvider
// reaches it through the real Stripe adapter (with loopbackAdapters).
func newSandboxNamespace(t *testing.T) (string, *sandbox.Engine) {
	t.Helper()
	engine := sandbox.NewEngine()
	server := httptest.NewServer(sandbox.NewServer(engine, sandbox.ServerOptions{}))
	t.Cleanup(server.Close)
	ns := newNamespace(t, true)
	pointProviderAt(t, ns, server.URL)
	return ns, engine
}

// TestStripeAdapterThroughSandboxHTTP runs the real Stripe adapter against
// the sandbox's HTTP server in this process.
func TestStripeAdapterThroughSandboxHTTP(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns, engine := newSandboxNamespace(t)
	startManager(t, managerConfig{namespaces: []string{ns}, build: loopbackAdapters()})

	createJob(t, ns, "paid")
	createJob(t, ns, "declined", func(s *paymentsv1alpha1.PaymentJobSpec) { s.PaymentMethod = "pm_card_chargeDeclined" })
	paid := waitForPhase(t, ns, "paid", paymentsv1alpha1.PhaseCompleted)
	declined := waitForPhase(t, ns, "declined", paymentsv1alpha1.PhaseFailed)

	intent, ok := engine.LookupByKey(ns + "/paid")
	g.Expect(ok).To(BeTrue())
	g.Expect(paid.Status.ProviderResponse.ID).To(Equal(intent.ID))
	g.Expect(paid.Status.ProviderResponse.Replayed).To(BeFalse())
	g.Expect(intent.Metadata).To(HaveKeyWithValue("invoice", "42"))
	g.Expect(declined.Status.Failure.Reason).To(Equal(controller.ReasonCardDeclined))
	g.Expect(declined.Status.Failure.Message).To(ContainSubstring("generic_decline"))

	// A response lost after the charge: the retry is a replay.
	engine.FailNext(sandbox.FaultAfterCommit, 1)
	createJob(t, ns, "lost-response")
	lost := waitForPhase(t, ns, "lost-response", paymentsv1alpha1.PhaseCompleted)
	g.Expect(lost.Status.ProviderResponse.Replayed).To(BeTrue())
	g.Expect(lost.Status.Attempts).To(Equal(int32(2)))

	stats := engine.Stats()
	g.Expect(stats.Charges).To(Equal(int64(2)), "paid and lost-response, once each")
	g.Expect(stats.ChargesByKey).To(Equal(map[string]int{ns + "/paid": 1, ns + "/lost-response": 1}))
	for _, j := range []*paymentsv1alpha1.PaymentJob{paid, declined, lost} {
		for _, c := range j.Status.Conditions {
			g.Expect(c.Message).NotTo(ContainSubstring(testSecretValue))
		}
	}
}

// TestSandboxProcessWithAfterCommitFaults runs the real Stripe adapter
// against the bin/sandbox process, with half the responses lost after the
// charge.
func TestSandboxProcessWithAfterCommitFaults(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	base := startSandboxProcess(t)
	ns := newNamespace(t, true)
	pointProviderAt(t, ns, base)
	startManager(t, managerConfig{namespaces: []string{ns}, build: loopbackAdapters(), concurrency: 8})

	createJob(t, ns, "first")
	first := waitForPhase(t, ns, "first", paymentsv1alpha1.PhaseCompleted)
	g.Expect(first.Status.ProviderResponse.ID).To(HavePrefix("pi_"))
	stats := getStats(g, base)
	g.Expect(stats.Charges).To(Equal(int64(1)))
	g.Expect(stats.ChargesByKey).To(Equal(map[string]int{ns + "/first": 1}))

	putFaults(g, base, `{"errorAfterCommit": 0.5}`)
	const jobs = 100
	for i := range jobs {
		job := &paymentsv1alpha1.PaymentJob{Spec: jobSpec()}
		job.Name, job.Namespace = fmt.Sprintf("batch-%03d", i), ns
		g.Expect(k8sClient.Create(ctx, job)).To(Succeed())
	}
	var list paymentsv1alpha1.PaymentJobList
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		done := 0
		for _, j := range list.Items {
			g.Expect(j.Status.Phase).NotTo(Equal(paymentsv1alpha1.PhaseFailed), "job %s failed: %+v", j.Name, j.Status.Failure)
			if j.Status.Phase == paymentsv1alpha1.PhaseCompleted {
				done++
			}
		}
		g.Expect(done).To(Equal(jobs + 1))
	}, 3*timeout, 200*time.Millisecond).Should(Succeed())

	stats = getStats(g, base)
	g.Expect(stats.Charges).To(Equal(int64(jobs+1)), "one charge per job despite lost responses")
	g.Expect(stats.ChargesByKey).To(HaveLen(jobs + 1))
	for key, n := range stats.ChargesByKey {
		g.Expect(n).To(Equal(1), "key %s charged %d times", key, n)
	}
	replayed := 0
	for _, j := range list.Items {
		if j.Status.ProviderResponse.Replayed {
			replayed++
		}
	}
	g.Expect(stats.Faults).To(BeNumerically(">", 0), "the fault was injected")
	g.Expect(replayed).To(BeNumerically(">", 0), "lost responses were recovered by replays")
	t.Logf("sandbox process, 50%% after-commit faults: %d jobs, %d charges, %d replays, %d faults, %d requests",
		jobs+1, stats.Charges, stats.Replays, stats.Faults, stats.Requests)
}
