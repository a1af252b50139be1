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

package controllers_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
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

// TestStripeAdapterThroughSandboxHTTP runs the real Stripe adapter against
// the sandbox's HTTP server in this process.
func TestStripeAdapterThroughSandboxHTTP(t *testing.T) {
	s := newScenario(t, overHTTP())
	ns := s.ns

	s.create("paid")
	s.create("declined", declinedCard)
	paid := s.waitForPhase("paid", paymentsv1alpha1.PhaseCompleted)
	declined := s.waitForPhase("declined", paymentsv1alpha1.PhaseFailed)

	intent, ok := s.engine.LookupByKey(ns + "/paid")
	s.Expect(ok).To(BeTrue())
	s.Expect(paid.Status.ProviderResponse.ID).To(Equal(intent.ID))
	s.Expect(paid.Status.ProviderResponse.Replayed).To(BeFalse())
	s.Expect(intent.Metadata).To(HaveKeyWithValue("invoice", "42"))
	s.Expect(declined.Status.Failure.Reason).To(Equal(paymentsv1alpha1.ReasonCardDeclined))
	s.Expect(declined.Status.Failure.Message).To(ContainSubstring("generic_decline"))

	// A response lost after the charge: the retry is a replay.
	s.engine.FailNext(sandbox.FaultAfterCommit, 1)
	lost := s.run("lost-response", paymentsv1alpha1.PhaseCompleted)
	s.Expect(lost.Status.ProviderResponse.Replayed).To(BeTrue())
	s.Expect(lost.Status.Attempts).To(Equal(int32(2)))

	stats := s.engine.Stats()
	s.Expect(stats.Charges).To(Equal(int64(2)), "paid and lost-response, once each")
	s.Expect(stats.ChargesByKey).To(Equal(map[string]int{ns + "/paid": 1, ns + "/lost-response": 1}))
	for _, j := range []*paymentsv1alpha1.PaymentJob{paid, declined, lost} {
		for _, c := range j.Status.Conditions {
			s.Expect(c.Message).NotTo(ContainSubstring(testSecretValue))
		}
	}
}

// TestSandboxProcessWithAfterCommitFaults runs the real Stripe adapter
// against the bin/sandbox process, with half the responses lost after the
// charge.
func TestSandboxProcessWithAfterCommitFaults(t *testing.T) {
	base := startSandboxProcess(t)
	s := newScenario(t, withoutManager(), withProvider(func(pp *paymentsv1alpha1.PaymentProvider) {
		pp.Spec.Stripe.APIBase = base
	}))
	s.start(managerConfig{build: loopbackAdapters(), concurrency: 8})

	first := s.run("first", paymentsv1alpha1.PhaseCompleted)
	s.Expect(first.Status.ProviderResponse.ID).To(HavePrefix("pi_"))
	stats := getStats(s, base)
	s.Expect(stats.Charges).To(Equal(int64(1)))
	s.Expect(stats.ChargesByKey).To(Equal(map[string]int{s.ns + "/first": 1}))

	putFaults(s, base, `{"errorAfterCommit": 0.5}`)
	const jobs = 100
	for i := range jobs {
		s.create(fmt.Sprintf("batch-%03d", i))
	}
	list := waitForJobs(t, s.ns, jobs+1, func(g Gomega, j *paymentsv1alpha1.PaymentJob) bool {
		g.Expect(j.Status.Phase).NotTo(Equal(paymentsv1alpha1.PhaseFailed), "job %s failed: %+v", j.Name, j.Status.Failure)
		return j.Status.Phase == paymentsv1alpha1.PhaseCompleted
	})

	stats = getStats(s, base)
	s.Expect(stats.Charges).To(Equal(int64(jobs+1)), "one charge per job despite lost responses")
	s.Expect(stats.ChargesByKey).To(HaveLen(jobs + 1))
	for key, n := range stats.ChargesByKey {
		s.Expect(n).To(Equal(1), "key %s charged %d times", key, n)
	}
	replayed := 0
	for _, j := range list {
		if j.Status.ProviderResponse.Replayed {
			replayed++
		}
	}
	s.Expect(stats.Faults).To(BeNumerically(">", 0), "the fault was injected")
	s.Expect(replayed).To(BeNumerically(">", 0), "lost responses were recovered by replays")
	t.Logf("sandbox process, 50%% after-commit faults: %d jobs, %d charges, %d replays, %d faults, %d requests",
		jobs+1, stats.Charges, stats.Replays, stats.Faults, stats.Requests)
}
