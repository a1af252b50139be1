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
	"maps"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// refundManager is the options of the refund scenarios' managers, with the
// claim lease (claimLease when 0). They run twice the default workers, as
// every job and refund spends most of its pass waiting on the sandbox or the
// API server, not on the CPU.
func refundManager(lease time.Duration) managerOptions {
	return managerOptions{concurrency: 20, lease: lease}
}

// Metrics of the manager that the refund scenarios read, per process.
const (
	// metricRefunds counts provider refund calls by outcome; every call
	// follows one claim write this process won.
	metricRefunds = "paymentjob_refunds_total"
	// metricRefundReplays counts refund calls answered with the saved
	// outcome of an earlier request under the same key.
	metricRefundReplays = "paymentjob_refund_replays_total"
)

// TestRefundsExactlyOnce refunds the charges of jobsPerScenario jobs while
// they are made, through the faults of the chaos suite: kill -9 of the
// manager, answers lost after the sandbox committed, and two managers at
// once against a sandbox that ignores idempotency keys. Each scenario ends
// with the jobs' proof (verify) and the refunds' (verifyRefunds).
func TestRefundsExactlyOnce(t *testing.T) {
	t.Run("kill9", testRefundsKill9)
	t.Run("afterCommit", testRefundsAfterCommit)
	t.Run("splitBrain", testRefundsSplitBrain)
}

// The kill9 refund scenario kills the manager minRefundKills times, and
// more, up to maxRefundKills, until a kill is seen to land between a refund
// and its outcome write; the sandbox holds each request up to
// refundLatencyMax.
const (
	minRefundKills, maxRefundKills = 3, 8
	refundLatencyMax               = 200 * time.Millisecond
)

// testRefundsKill9 SIGKILLs the only manager while it holds the claims of
// refunds, and starts a new one each time. The sandbox holds every request
// for up to refundLatencyMax and commits it whether or not the caller is
// still there, so a kill lands between a refund and the write of its
// outcome: the next holder takes the claim over when it expires and must
// record the sandbox's replay of that refund, never make a second one.
func testRefundsKill9(t *testing.T) {
	r := newRefundRun(t, "kill9", "--latency-min=20ms", "--latency-max="+refundLatencyMax.String())
	claims := r.trackRefundClaims()
	m := r.startManager(refundManager(0))
	r.start()
	// caught are the refunds a kill interrupted after the sandbox made
	// them and before their outcome was written, with that attempt.
	caught := map[string]int32{}
	kills := 0
	for ; kills < minRefundKills || len(caught) == 0 && kills < maxRefundKills; kills++ {
		m = r.killWhileRefunding(m, claims, caught)
	}
	g := NewWithT(t)
	g.Expect(caught).NotTo(BeEmpty(), "none of %d kills landed between a refund and its outcome write", kills)
	res := r.verifyAll()

	for key, attempt := range caught {
		rf := res.live[key]
		g.Expect(rf.Status.Attempts).To(BeNumerically(">", attempt),
			"%s was refunded before a kill; its next holder must claim it again: %s", key, describeRefund(&rf))
		g.Expect(rf.Status.ProviderResponse.Replayed).To(BeTrue(),
			"%s was refunded before a kill; its next holder must record the sandbox's replay", key)
	}
	t.Logf("refunds-kill9: %d kills; %d refunds caught between the refund and its outcome write, all recorded with their one provider refund",
		kills, len(caught))
}

// killWhileRefunding SIGKILLs m once it holds two refund claims or more (so
// that one is likely at the sandbox), starts its successor, and adds to
// caught the refunds the sandbox made while their claim was still m's and
// their outcome unwritten. It returns the successor.
func (r *refundRun) killWhileRefunding(m *manager, claims *claims, caught map[string]int32) *manager {
	NewWithT(r.t).Eventually(func() int { return claims.heldBy(m) }, 30*time.Second, 5*time.Millisecond).
		Should(BeNumerically(">=", 2), "%s holds fewer than two refund claims: the refunds ended before it could be killed", m.Name)
	m.Kill()
	held := r.refundsHeldBy(m)
	next := r.startManager(refundManager(0))
	found := r.refundedUnrecorded(held, refundLatencyMax+2*time.Second)
	maps.Copy(caught, found)
	r.t.Logf("SIGKILL %s at %.1fs; it held %d refund claims, %d of them seen refunded at the sandbox without an outcome",
		m.Name, time.Since(r.started).Seconds(), len(held), len(found))
	return next
}

// testRefundsAfterCommit runs against a sandbox that loses the answer of a
// sixth of the requests after it committed them, and fails or rate-limits a
// few before: every lost refund must be recovered under its key, never made
// again.
func testRefundsAfterCommit(t *testing.T) {
	g := NewWithT(t)
	r := newRefundRun(t, "after-commit", "--error-after-commit=0.15", "--error-before-commit=0.05",
		"--rate-limit=0.03", "--latency-min=5ms", "--latency-max=50ms")
	m := r.startManager(refundManager(0))
	r.start()
	res := r.verifyAll()

	ms, err := m.scrape()
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("refunds-after-commit: %d faults at the sandbox; %d refunds recorded a replay; the manager counted %.0f refund replays",
		res.stats.Faults, res.replays, ms.sum(metricRefundReplays, nil))
	g.Expect(res.stats.Faults).To(BeNumerically(">", 0), "no fault was injected")
	g.Expect(res.replays).To(BeNumerically(">", 0), "no refund whose answer was lost was recovered by a replay")
}

// testRefundsSplitBrain runs two managers at once without leader election
// against a sandbox that ignores idempotency keys: every refund request is
// a new refund, so only the claim, written on the resourceVersion, keeps
// one refund per key. The refunds created before their job completed wake
// in both managers at the same moment, when the job does.
func testRefundsSplitBrain(t *testing.T) {
	g := NewWithT(t)
	// No fault of any kind: one request per refund, and nothing else.
	r := newRefundRun(t, "split-brain", "--idempotency=false")
	// No claim of this run expires: a takeover would send the refund again,
	// which only an idempotent provider absorbs.
	opts := refundManager(60 * time.Second)
	managers := []*manager{r.startManager(opts), r.startManager(opts)}
	r.start()
	res := r.verifyAll()

	sent := int64(r.sentRefunds())
	g.Expect(res.stats.RefundRequests).To(Equal(sent), "refund requests == refunds sent: a refund was sent twice")
	g.Expect(res.stats.Requests).To(BeEquivalentTo(len(r.jobs)), "create requests == jobs: a job was sent twice")
	var won float64
	for _, m := range managers {
		ms, err := m.scrape()
		g.Expect(err).NotTo(HaveOccurred())
		n := ms.sum(metricRefunds, nil)
		won += n
		t.Logf("refunds-split-brain: %s won %.0f refund claims (each followed by one provider call); %.0f claim races lost, all kinds",
			m.Name, n, ms.sum(metricClaimConflicts, nil))
		g.Expect(n).To(BeNumerically(">", 0), "%s won no refund claim: the managers did not work at the same time", m.Name)
	}
	g.Expect(won).To(BeEquivalentTo(sent), "refund claims won by both managers == refunds sent: a refund was claimed twice")
}
