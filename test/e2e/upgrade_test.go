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
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// managerVersion is a manager binary and the name the logs give it.
type managerVersion struct {
	name, bin string
}

// testUpgrade runs the manager of the previous version (the commit in
// hack/upgrade-from), SIGKILLs it mid-run and lets the current manager take
// its claims over: see testVersionChange.
func testUpgrade(t *testing.T) {
	previous := previousManager(t)
	testVersionChange(t, "upgrade", previous, managerVersion{"current", suite.managerBin})
}

// testRollback is testUpgrade with the versions swapped: the current
// manager is killed and the previous one takes its claims over.
//
// The current Stripe adapter sends off_session=true, which the previous one
// does not: Stripe (and the sandbox) compares every parameter of a retried
// request, so a job whose charge the current version sent, and whose
// answer was lost, is refused to the previous version as a key reused
// (idempotency_error). The previous version never fails such a job (an
// earlier attempt may have charged): it stalls, Processing, with
// UncertainRefusal, as docs/operations.md says of a rollback across this
// change. The scenario checks exactly that, then rolls forward: the current
// version, started again beside the previous one, replays those charges.
func testRollback(t *testing.T) {
	previous := previousManager(t)
	testVersionChange(t, "rollback", managerVersion{"current", suite.managerBin}, previous, rollForwardStranded)
}

// rollForwardStranded waits until every job is finished or stranded by the
// rollback (Processing, UncertainRefusal after the previous version's retry
// was refused as a key reused), and starts the current manager again for
// the stranded ones. It returns that manager, or nil when none was needed.
func rollForwardStranded(s *scenario) *manager {
	s.t.Helper()
	var stranded []string
	NewWithT(s.t).Eventually(func(g Gomega) {
		jobs, err := s.list()
		g.Expect(err).NotTo(HaveOccurred())
		stranded = stranded[:0]
		var waiting []string
		for key, j := range jobs {
			if terminal(&j) {
				continue
			}
			ready := meta.FindStatusCondition(j.Status.Conditions, paymentsv1alpha1.ConditionReady)
			if ready != nil && ready.Reason == "UncertainRefusal" && strings.Contains(ready.Message, "IdempotencyKeyReused") {
				g.Expect(j.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing), "%s: never Failed", key)
				stranded = append(stranded, key)
				continue
			}
			waiting = append(waiting, key+" ("+describe(&j)+")")
		}
		g.Expect(waiting).To(BeEmpty(), "jobs neither finished nor stranded by the rollback")
	}, terminalTimeout, time.Second).Should(Succeed())
	s.t.Logf("rollback: %d jobs stranded by the previous version (UncertainRefusal, never Failed): %v", len(stranded), stranded)
	if len(stranded) == 0 {
		return nil
	}
	return s.startManager(managerOptions{bin: suite.managerBin})
}

// previousManager is the manager of the previous version, from
// PREVIOUS_MANAGER_BIN, which make test-e2e builds with
// hack/build-previous-manager.sh. Without it the scenario fails: an upgrade
// that is not tested must not pass for one that is.
func previousManager(t *testing.T) managerVersion {
	t.Helper()
	g := NewWithT(t)
	bin := suite.previousManagerBin
	g.Expect(bin).NotTo(BeEmpty(), "PREVIOUS_MANAGER_BIN is not set: run the suite with `make test-e2e`, which builds "+
		"the manager of the commit in hack/upgrade-from into bin/manager-previous (hack/build-previous-manager.sh) and sets it")
	previous, err := os.Stat(bin)
	g.Expect(err).NotTo(HaveOccurred(), "the previous manager is missing: run `make test-e2e`")
	current, err := os.Stat(suite.managerBin)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.SameFile(previous, current)).To(BeFalse(),
		"PREVIOUS_MANAGER_BIN is MANAGER_BIN: the scenario would not change versions")
	return managerVersion{"previous", bin}
}

// testVersionChange is a version change in the middle of a run, as a
// rolling update or its rollback does it at its worst. Jobs are created
// at a steady pace against a sandbox that drops a tenth of its responses
// after it has charged; the manager of version from works until a third of
// them are terminal, and is SIGKILLed while it holds claims; a manager of
// version to starts at once, waits for those claims to expire, takes them
// over with the same idempotency keys and finishes the run. Both versions
// must have finished jobs, the new one every job the old one held, and
// every job is charged exactly once: the claim and its key mean the same to
// both versions.
//
// Both managers get startManager's common flags and nothing more: each of
// them must be known to the previous version (no managerOptions.args).
//
// after, when set, runs once the manager of version to works; it may start
// another manager, whose finished jobs count with those of version to.
func testVersionChange(t *testing.T, name string, from, to managerVersion, after ...func(*scenario) *manager) {
	g := NewWithT(t)
	s := newScenario(t, name, "--error-after-commit=0.1", "--latency-min=50ms", "--latency-max=300ms")
	jobs := s.planJobs(jobsPerScenario, nil)
	h := s.trackClaims()
	old := s.startManager(managerOptions{bin: from.bin})
	created := s.createJobsAsync(jobs, 15)

	s.waitForTerminalFrom(old, len(jobs)/3, 2*time.Minute)
	// The kill waits until the old version holds claims, charges in
	// flight or retried after a dropped response, for the new one to take
	// over.
	g.Eventually(func() int { return h.heldBy(old) }, 30*time.Second, 5*time.Millisecond).
		Should(BeNumerically(">=", 3), "%s (%s) holds no claims; the run ended before it could be killed", old.Name, from.name)
	old.Kill()
	done, err := s.countTerminal()
	g.Expect(err).NotTo(HaveOccurred())
	held, err := s.claimedBy(old)
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("%s: SIGKILL %s (%s) at %.1fs with %d/%d jobs terminal; it held %d claims",
		name, old.Name, from.name, time.Since(s.started).Seconds(), done, len(jobs), len(held))
	g.Expect(done).To(BeNumerically("<", len(jobs)), "the run ended before %s could be killed", old.Name)
	g.Expect(held).NotTo(BeEmpty(), "%s held no claim when it was killed: nothing to take over", old.Name)

	cur := s.startManager(managerOptions{bin: to.bin})
	// Fails at once, rather than at the end of verify's wait, if the new
	// version cannot start (a flag it does not know, say).
	s.waitForTerminalFrom(cur, done+1, 2*time.Minute)
	created()
	var forward *manager
	for _, f := range after {
		forward = f(s)
	}
	r := s.verify()

	// The watch may trail the List that verify ended on.
	g.Eventually(h.finished, 30*time.Second, 200*time.Millisecond).Should(Equal(len(jobs)),
		"terminal jobs seen by the watch")
	byOld, byNew, byForward := h.finishedBy(old), h.finishedBy(cur), 0
	if forward != nil {
		byForward = h.finishedBy(forward)
		t.Logf("%s: %s (current, rolled forward) finished the %d stranded jobs", name, forward.Name, byForward)
	}
	replayed := 0
	for key, was := range held {
		j := r.live[key]
		g.Expect(cur.holds(h.finisher(key)) || (forward != nil && forward.holds(h.finisher(key)))).To(BeTrue(),
			"%s, claimed by %s when it was killed, was finished under the claim of %q", key, old.Name, h.finisher(key))
		g.Expect(j.Status.Attempts).To(BeNumerically(">", was.Status.Attempts), "%s: %s", key, describe(&j))
		if j.Status.ProviderResponse != nil && j.Status.ProviderResponse.Replayed {
			replayed++
		}
	}
	t.Logf("%s: %s (%s) finished %d jobs, %s (%s) %d; %d claims taken over, %d of them recorded as the sandbox's replay "+
		"of a charge made before the kill; %d responses dropped after their charge, %d replays in all",
		name, old.Name, from.name, byOld, cur.Name, to.name, byNew, len(held), replayed, r.stats.Faults, r.replays)
	g.Expect(byOld).To(BeNumerically(">", 0), "the %s version finished no job before it was killed", from.name)
	g.Expect(byNew).To(BeNumerically(">", 0), "the %s version finished no job", to.name)
	g.Expect(byOld+byNew+byForward).To(Equal(len(jobs)), "jobs finished by one of the managers")
	g.Expect(r.stats.Faults).To(BeNumerically(">", 0), "no fault was injected")
	g.Expect(r.replays).To(BeNumerically(">", 0), "no dropped response was recovered by a replay")
	g.Expect(cur.Exited()).To(BeFalse(), "%s exited:\n%s", cur.Name, cur.ReadLog())
}

// waitForTerminalFrom waits, like waitForTerminal, until at least n jobs
// are terminal, and fails at once with the end of its log if the manager m
// exits meanwhile.
func (s *scenario) waitForTerminalFrom(m *manager, n int, timeout time.Duration) {
	s.t.Helper()
	NewWithT(s.t).Eventually(func(g Gomega) {
		if m.Exited() {
			StopTrying(m.ExitError().Error()).Now()
		}
		done, err := s.countTerminal()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(done).To(BeNumerically(">=", n))
	}, timeout, 200*time.Millisecond).Should(Succeed(), "%s did not finish jobs", m.Name)
}
