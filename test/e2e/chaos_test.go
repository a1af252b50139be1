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
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// Log lines the suite looks for in the managers' logs.
const (
	// logLeaseAcquired is client-go's leader election line, lower-cased.
	logLeaseAcquired = "successfully acquired lease"
	// logPaymentCompleted is the reconciler's line per recorded charge.
	logPaymentCompleted = "Payment completed"
)

// TestExactlyOnce runs the chaos scenarios one after the other, each on a
// fresh sandbox and fresh namespaces, each over jobsPerScenario jobs; the
// two on control planes of their own run side by side at the end.
func TestExactlyOnce(t *testing.T) {
	scenarios := []struct {
		name string
		run  func(t *testing.T)
		// ownClusters: the scenario runs on control planes of its own,
		// not on the shared one.
		ownClusters bool
	}{
		{"kill9", testKill9, false},
		{"split-brain", testSplitBrain, false},
		{"leader-failover", testLeaderFailover, false},
		{"sandbox-faults", testSandboxFaults, false},
		{"apiserver-restart", testAPIServerRestart, false},
		{"delete-and-recreate", testDeleteAndRecreate, false},
		{"rebuild-from-git", testRebuildFromGit, true},
		{"rebuild-from-git-postgres", testRebuildFromGitPostgres, true},
		{"upgrade", testUpgrade, false},
		{"rollback", testRollback, false},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			if sc.ownClusters {
				// Run side by side, after the scenarios on the shared
				// control plane (a parallel subtest waits for them).
				t.Parallel()
			}
			sc.run(t)
		})
	}
}

// testKill9 SIGKILLs the only manager while it has a charge in flight, and
// starts a new process (a new holder) each time. The sandbox holds every
// charge for 100 to 600 ms and commits it whether or not the caller is still
// there, so a kill lands between a charge and the write of its outcome: the
// next holder takes the claim over when it expires and must record the
// sandbox's replay of that charge, never a second one.
func testKill9(t *testing.T) {
	const (
		// minKills kill the manager; more follow, up to maxKills, until
		// one is seen to land between a charge and its outcome write.
		minKills, maxKills = 6, 12
		latencyMax         = 600 * time.Millisecond
	)
	g := NewWithT(t)
	s := newScenario(t, "kill9", "--latency-min=100ms", "--latency-max="+latencyMax.String())
	jobs := s.planJobs(jobsPerScenario, nil)
	claims := s.trackClaims()
	m := s.startManager(managerOptions{})
	created := s.createJobsAsync(jobs, 12)

	// caught are the jobs a kill interrupted after their charge reached the
	// sandbox and before their outcome was written, with the attempt that
	// was interrupted.
	caught := map[string]int32{}
	kills := 0
	for kills < minKills || (len(caught) == 0 && kills < maxKills) {
		// A timer spreads the kills over the run; nothing waits on state here.
		<-time.After(time.Second + rand.N(1500*time.Millisecond))
		// The kill itself waits until the process holds a claim: it has
		// just sent, or is about to send, that job's charge.
		g.Eventually(func() int { return claims.heldBy(m) }, 30*time.Second, 5*time.Millisecond).
			Should(BeNumerically(">", 0), "kill %d: %s holds no claim; the run ended before it could be killed", kills+1, m.Name)
		m.Kill()
		kills++
		killed := m
		done, err := s.countTerminal()
		g.Expect(err).NotTo(HaveOccurred())
		held, err := s.claimedBy(killed)
		g.Expect(err).NotTo(HaveOccurred())
		m = s.startManager(managerOptions{})
		found := s.chargedUnrecorded(held, latencyMax+2*time.Second)
		for key, attempt := range found {
			caught[key] = attempt
		}
		t.Logf("kill %d: SIGKILL %s at %.1fs with %d/%d jobs terminal; it held %d claims, %d of them seen charged at the sandbox without an outcome",
			kills, killed.Name, time.Since(s.started).Seconds(), done, len(jobs), len(held), len(found))
	}
	g.Expect(caught).NotTo(BeEmpty(), "none of %d kills landed between a charge and its outcome write", kills)
	created()
	r := s.verify()

	takenOver, replayedAfterKill := 0, 0
	for _, j := range r.live {
		if j.Status.Attempts > 1 {
			takenOver++
			if j.Status.ProviderResponse != nil && j.Status.ProviderResponse.Replayed {
				replayedAfterKill++
			}
		}
	}
	for key, attempt := range caught {
		j := r.live[key]
		g.Expect(j.Status.Attempts).To(BeNumerically(">", attempt), "%s: %s", key, describe(&j))
		g.Expect(j.Status.ProviderResponse).NotTo(BeNil(), "%s: %s", key, describe(&j))
		g.Expect(j.Status.ProviderResponse.Replayed).To(BeTrue(),
			"%s was charged before a kill; its next holder must record the sandbox's replay", key)
	}
	t.Logf("kill9: %d kills; %d jobs needed more than one claim, %d of them recorded a replay; %d caught between charge and outcome write",
		kills, takenOver, replayedAfterKill, len(caught))
	g.Expect(replayedAfterKill).To(BeNumerically(">", 0),
		"no job has attempts > 1 and a replayed providerResponse: no kill landed between a charge and its outcome write")
	s.reconcileBooks(r)
}

// claimedBy returns the jobs Processing under a claim of the manager, by
// key.
func (s *scenario) claimedBy(m *manager) (map[string]paymentsv1alpha1.PaymentJob, error) {
	jobs, err := s.list()
	if err != nil {
		return nil, err
	}
	held := map[string]paymentsv1alpha1.PaymentJob{}
	for key, j := range jobs {
		if j.Status.Phase == paymentsv1alpha1.PhaseProcessing && j.Status.Claim != nil && m.holds(j.Status.Claim.Holder) {
			held[key] = j
		}
	}
	return held, nil
}

// chargedUnrecorded returns, among jobs a killed manager held, those the
// sandbox charged while the job still had no outcome and the same claim:
// the kill landed between the charge and the outcome write. It waits up to
// within for the charges in flight to commit, and returns as soon as one is
// found. The sandbox is read before the job, so the job's outcome cannot
// have been written after it was read; and the dead process's claim cannot
// expire within that time.
func (s *scenario) chargedUnrecorded(held map[string]paymentsv1alpha1.PaymentJob, within time.Duration) map[string]int32 {
	found := map[string]int32{}
	if len(held) == 0 {
		return found
	}
	quiet := NewGomega(func(string, ...int) {}) // not finding one is an answer, not a failure
	quiet.Eventually(func() bool {
		stats, err := s.sandbox.Stats(context.Background())
		if err != nil {
			return false
		}
		for key, was := range held {
			if stats.ChargesByKey[key] == 0 {
				continue
			}
			var now paymentsv1alpha1.PaymentJob
			if err := s.cluster.k8s.Get(context.Background(), client.ObjectKeyFromObject(&was), &now); err != nil {
				continue
			}
			if now.Status.Phase == paymentsv1alpha1.PhaseProcessing && now.Status.Claim != nil &&
				now.Status.Claim.Holder == was.Status.Claim.Holder && now.Status.Attempts == was.Status.Attempts {
				found[key] = now.Status.Attempts
			}
		}
		return len(found) > 0
	}, within, 50*time.Millisecond).Should(BeTrue())
	return found
}

// testSplitBrain runs two, then three managers at once without leader
// election, against a sandbox that ignores idempotency keys: every create
// request is a new charge, so only the exclusivity of claim writes keeps
// the count of charges at one per job. A third of the jobs are created
// suspended and released all at once, so that every manager reaches the
// claim of the same jobs at the same moment.
func testSplitBrain(t *testing.T) {
	g := NewWithT(t)
	// No fault of any kind: one create request per job, and nothing else.
	s := newScenario(t, "split-brain", "--idempotency=false")
	jobs := s.planJobs(jobsPerScenario, func(i int, j *plannedJob) { j.suspended = i%3 == 2 })
	// A takeover sends the charge again under the same key, which only an
	// idempotent provider absorbs: the lease is long enough that no claim
	// of this run expires, so every second request would be a lost race.
	opts := managerOptions{lease: 60 * time.Second}
	managers := make([]*manager, 0, 3)
	managers = append(managers, s.startManager(opts), s.startManager(opts))
	created := s.createJobsAsync(jobs, 30)
	s.waitForTerminal(len(jobs)/3, 2*time.Minute)
	managers = append(managers, s.startManager(opts))
	created()

	var suspended []plannedJob
	for _, j := range jobs {
		if j.suspended {
			suspended = append(suspended, j)
		}
	}
	s.waitSuspended(suspended, 2*time.Minute)
	s.release(suspended)
	r := s.verify()

	charged := 0
	for _, j := range jobs {
		if !j.declined {
			charged++
		}
	}
	t.Logf("split-brain: %d jobs, %d create requests, %d charges, %d in-flight conflicts",
		len(jobs), r.stats.Requests, r.stats.Charges, r.stats.InFlightConflicts)
	g.Expect(r.stats.Requests).To(BeEquivalentTo(len(jobs)), "create requests == jobs: a job was sent twice")
	g.Expect(r.stats.Charges).To(BeEquivalentTo(charged), "charges == jobs with a good card")
	g.Expect(r.stats.InFlightConflicts).To(BeZero(), "in-flight conflicts")

	var won, claimConflicts float64
	for _, m := range managers {
		var ms metrics
		g.Eventually(func() (err error) {
			ms, err = m.scrape()
			return err
		}, 30*time.Second, 500*time.Millisecond).Should(Succeed())
		n, c := ms.sum(metricCharges, nil), ms.sum(metricClaimConflicts, nil)
		won += n
		claimConflicts += c
		t.Logf("split-brain: %s won %.0f claims (each followed by one provider call), lost %.0f claim races, "+
			"had %.0f writes of any kind refused and %.0f accepted", m.Name, n, c, ms.sum(metricWriteConflicts, nil), ms.writes())
		g.Expect(n).To(BeNumerically(">", 0), "%s won no claim: the managers did not work at the same time", m.Name)
	}
	g.Expect(won).To(BeEquivalentTo(len(jobs)), "claims won by all managers == jobs: a job was claimed twice")
	g.Expect(claimConflicts).To(BeNumerically(">", 0), "no claim race happened")
	s.reconcileBooks(r)
}

// waitSuspended waits until every suspended job is Pending with its
// finalizer: every manager has seen it, and only its claim is left to race
// for.
func (s *scenario) waitSuspended(jobs []plannedJob, timeout time.Duration) {
	s.t.Helper()
	NewWithT(s.t).Eventually(func(g Gomega) {
		live, err := s.list()
		g.Expect(err).NotTo(HaveOccurred())
		waiting := 0
		for _, p := range jobs {
			j := live[p.key()]
			if j.Status.Phase != paymentsv1alpha1.PhasePending || len(j.Finalizers) == 0 {
				waiting++
			}
		}
		g.Expect(waiting).To(BeZero(), "suspended jobs not Pending with their finalizer yet")
	}, timeout, 500*time.Millisecond).Should(Succeed())
}

// release sets spec.suspend to false on the jobs, all at once.
func (s *scenario) release(jobs []plannedJob) {
	s.t.Helper()
	const workers = 16
	todo := make(chan plannedJob)
	errs := make(chan error, len(jobs))
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for p := range todo {
				j := p.object(s.name)
				errs <- s.cluster.k8s.Patch(context.Background(), j,
					client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`)))
			}
		})
	}
	for _, p := range jobs {
		todo <- p
	}
	close(todo)
	wg.Wait()
	close(errs)
	for err := range errs {
		NewWithT(s.t).Expect(err).NotTo(HaveOccurred())
	}
	s.t.Logf("scenario %s: released %d suspended jobs", s.name, len(jobs))
}

// testLeaderFailover SIGKILLs the leader of two managers with leader
// election mid-run; the standby must acquire the lease and finish.
func testLeaderFailover(t *testing.T) {
	g := NewWithT(t)
	err := suite.k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaderElectionNamespace}})
	if !apierrors.IsAlreadyExists(err) {
		g.Expect(err).NotTo(HaveOccurred())
	}
	s := newScenario(t, "leader-failover", "--latency-min=20ms", "--latency-max=100ms")
	jobs := s.planJobs(jobsPerScenario, nil)
	opts := managerOptions{leaderElect: true}
	leader := s.startManager(opts)
	g.Eventually(func() bool { return leader.logContainsFold(logLeaseAcquired) }, time.Minute, 200*time.Millisecond).
		Should(BeTrue(), "the first manager did not become leader:\n%s", leader.ReadLog())
	standby := s.startManager(opts)

	created := s.createJobsAsync(jobs, 30)
	s.waitForTerminal(len(jobs)/3, 2*time.Minute)
	done, err := s.countTerminal()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(done).To(BeNumerically("<", len(jobs)), "the run ended before the leader could be killed")
	g.Expect(standby.logContainsFold(logLeaseAcquired)).To(BeFalse(), "the standby led while the leader was alive")
	g.Expect(standby.Exited()).To(BeFalse(), "the standby exited:\n%s", standby.ReadLog())

	leader.Kill()
	killed := time.Now()
	t.Logf("leader-failover: SIGKILL leader %s at %.1fs with %d/%d jobs terminal", leader.Name,
		time.Since(s.started).Seconds(), done, len(jobs))
	g.Eventually(func() bool { return standby.logContainsFold(logLeaseAcquired) }, time.Minute, 200*time.Millisecond).
		Should(BeTrue(), "the standby did not take the lease over:\n%s", standby.ReadLog())
	t.Logf("leader-failover: %s acquired the lease %.1fs after the kill", standby.Name, time.Since(killed).Seconds())

	created()
	s.verify()
	log := strings.ToLower(standby.ReadLog())
	acquired, paid := strings.Index(log, logLeaseAcquired), strings.Index(log, strings.ToLower(logPaymentCompleted))
	g.Expect(paid).To(BeNumerically(">", acquired), "the standby charged before it led")
}

// testSandboxFaults runs against a sandbox that fails before and after it
// commits and rate-limits, and, for a tenth of the jobs, through a proxy
// that holds the first requests past the provider timeout before the
// sandbox charges them.
func testSandboxFaults(t *testing.T) {
	g := NewWithT(t)
	s := newScenario(t, "sandbox-faults", "--error-after-commit=0.1", "--error-before-commit=0.05",
		"--rate-limit=0.05", "--latency-min=5ms", "--latency-max=100ms")
	const held = 12
	proxy := startHoldingProxy(t, s.sandbox.URL, held, providerTimeout+500*time.Millisecond)
	s.addProvider("slow", proxy.url)
	jobs := s.planJobs(jobsPerScenario, func(i int, j *plannedJob) {
		if i%10 == 4 {
			j.provider = "slow"
		}
	})
	s.startManager(managerOptions{logLevel: "debug"})
	s.createJobs(jobs)
	r := s.verify()

	t.Logf("sandbox-faults: %d faults, %d in-flight conflicts, %d replays; proxy held %d requests, %d charged after the manager gave up",
		r.stats.Faults, r.stats.InFlightConflicts, r.stats.Replays, proxy.held.Load(), proxy.chargedLate.Load())
	g.Expect(r.stats.Faults).To(BeNumerically(">", 0), "no fault was injected")
	g.Expect(r.replays).To(BeNumerically(">", 0), "no lost response was recovered by a replay")
	g.Expect(proxy.held.Load()).To(BeEquivalentTo(held))
	g.Expect(proxy.chargedLate.Load()).To(BeNumerically(">", 0), "no charge happened after a provider timeout")
	s.reconcileBooks(r)
}

// testAPIServerRestart stops kube-apiserver for 10 s mid-run and starts it
// again on the same etcd, port and certificates; the same manager process
// must recover by itself.
func testAPIServerRestart(t *testing.T) {
	const outage = 10 * time.Second
	g := NewWithT(t)
	s := newScenario(t, "apiserver-restart", "--latency-min=20ms", "--latency-max=100ms")
	jobs := s.planJobs(jobsPerScenario, nil)
	m := s.startManager(managerOptions{})
	first, second := jobs[:2*len(jobs)/3], jobs[2*len(jobs)/3:]
	s.createJobs(first)
	s.waitForTerminal(len(first)/5, 2*time.Minute)
	done, err := s.countTerminal()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(done).To(BeNumerically("<", len(first)), "the run ended before the API server could be stopped")

	down := true
	t.Cleanup(func() {
		if down { // leave a working control plane to the next test
			_ = suite.cp.startAPIServer()
		}
	})
	stopping := time.Now()
	killed, err := suite.cp.stopAPIServer()
	g.Expect(err).NotTo(HaveOccurred())
	stopped := time.Now()
	how := "SIGTERM"
	if killed {
		how = fmt.Sprintf("SIGKILL after %s of SIGTERM", apiServerStopGrace)
	}
	t.Logf("apiserver-restart: kube-apiserver stopped (%s) in %.1fs at %.1fs with %d/%d jobs terminal",
		how, stopped.Sub(stopping).Seconds(), time.Since(s.started).Seconds(), done, len(first))
	// The outage itself, 10 s from SIGTERM (kube-apiserver stops
	// listening at once): a schedule, not a wait on state.
	<-time.After(time.Until(stopping.Add(outage)))
	g.Expect(suite.cp.startAPIServer()).To(Succeed())
	down = false
	t.Logf("apiserver-restart: kube-apiserver down for %.1fs, serving again on the same port and etcd",
		time.Since(stopping).Seconds())
	g.Expect(m.Exited()).To(BeFalse(), "the manager exited during the outage:\n%s", m.ReadLog())

	s.createJobs(second)
	s.verify()
	g.Expect(m.Exited()).To(BeFalse(), "the manager exited:\n%s", m.ReadLog())
}

// testDeleteAndRecreate deletes jobs while they are Processing (the sandbox
// holds every charge for a second): the finalizer keeps them until their
// outcome is recorded. Then it deletes Completed and Failed jobs and
// re-creates them with the same name and spec: a Completed one is found at
// the sandbox by its key before any charge request, a declined one (which
// left no charge to find) is sent again and the sandbox replays its decline;
// nothing is charged again.
func testDeleteAndRecreate(t *testing.T) {
	g := NewWithT(t)
	s := newScenario(t, "delete-and-recreate", "--latency-min=1s", "--latency-max=1500ms")
	jobs := s.planJobs(jobsPerScenario, nil)
	toDelete := map[string]bool{}
	for i, j := range jobs {
		// A tenth of the jobs, among them half of the declined cards.
		if i%10 == 5 || i%40 == 13 {
			toDelete[j.key()] = true
		}
	}

	ctx := context.Background()
	var (
		deletes             sync.WaitGroup
		heldWhileProcessing atomic.Int64
		deleteErrs          = make(chan error, len(toDelete))
		requested           = map[string]bool{}
	)
	s.watchJobs(func(ev watch.EventType, j *paymentsv1alpha1.PaymentJob) {
		key := j.Namespace + "/" + j.Name
		if !toDelete[key] {
			return
		}
		switch ev {
		case watch.Added, watch.Modified:
			if j.Status.Phase == paymentsv1alpha1.PhaseProcessing && !requested[key] {
				requested[key] = true
				deletes.Go(func() {
					held, err := deleteWhileProcessing(j)
					if held {
						heldWhileProcessing.Add(1)
					}
					deleteErrs <- err
				})
			}
		case watch.Deleted:
			s.recordDeleted(key, j.Status.Phase)
		}
	})

	s.startManager(managerOptions{concurrency: 40})
	s.createJobs(jobs)
	g.Eventually(func(g Gomega) {
		var missing []string
		for key := range toDelete {
			if _, ok := s.deletedPhase(key); !ok {
				missing = append(missing, key)
			}
		}
		g.Expect(missing).To(BeEmpty(), "jobs deleted while Processing that are not gone yet")
	}, terminalTimeout, time.Second).Should(Succeed())
	deletes.Wait()
	close(deleteErrs)
	for err := range deleteErrs {
		g.Expect(err).NotTo(HaveOccurred())
	}
	t.Logf("delete-and-recreate: %d jobs deleted while Processing, %d of them still held by the finalizer right after the delete",
		len(toDelete), heldWhileProcessing.Load())
	g.Expect(heldWhileProcessing.Load()).To(BeNumerically(">", 0), "no deletion landed while a charge was in flight")

	// Delete Completed and Failed jobs and re-create them, as a GitOps tool
	// would: same name, same spec.
	live := s.waitAllTerminal()
	before, err := s.sandbox.Stats(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	var again []plannedJob
	completed, failed := 0, 0
	for _, p := range jobs {
		j, ok := live[p.key()]
		switch {
		case !ok || toDelete[p.key()]:
		case j.Status.Phase == paymentsv1alpha1.PhaseCompleted && completed < 8:
			completed++
			again = append(again, p)
		case j.Status.Phase == paymentsv1alpha1.PhaseFailed && failed < 2:
			failed++
			again = append(again, p)
		}
	}
	for _, p := range again {
		old := live[p.key()]
		g.Expect(suite.k8s.Delete(ctx, &old)).To(Succeed())
		g.Eventually(func() bool {
			return apierrors.IsNotFound(suite.k8s.Get(ctx, client.ObjectKeyFromObject(&old), &paymentsv1alpha1.PaymentJob{}))
		}, time.Minute, 200*time.Millisecond).Should(BeTrue(), "%s was not deleted", p.key())
		g.Expect(suite.k8s.Create(ctx, p.object(s.name))).To(Succeed())
	}
	for _, p := range again {
		old := live[p.key()]
		g.Eventually(func(g Gomega) {
			var j paymentsv1alpha1.PaymentJob
			g.Expect(suite.k8s.Get(ctx, client.ObjectKeyFromObject(&old), &j)).To(Succeed())
			g.Expect(j.UID).NotTo(Equal(old.UID))
			g.Expect(j.Status.Phase).To(Equal(old.Status.Phase), describe(&j))
			if old.Status.Phase == paymentsv1alpha1.PhaseCompleted {
				g.Expect(j.Status.ProviderResponse.ID).To(Equal(old.Status.ProviderResponse.ID))
				g.Expect(j.Status.ProviderResponse.Replayed).To(BeTrue())
			} else {
				g.Expect(j.Status.Failure.Reason).To(Equal(reasonCardDeclined))
			}
		}, time.Minute, 500*time.Millisecond).Should(Succeed(), "re-created %s", p.key())
	}
	after, err := s.sandbox.Stats(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after.Charges).To(Equal(before.Charges), "re-created jobs were charged again")
	g.Expect(after.Requests-before.Requests).To(BeZero(),
		"create requests for the re-created jobs: none, Completed or Failed, the ledger answers")
	g.Expect(after.Replays-before.Replays).To(BeZero(), "nothing for the sandbox to replay")
	for _, p := range again {
		var j paymentsv1alpha1.PaymentJob
		g.Expect(suite.k8s.Get(ctx, client.ObjectKeyFromObject(p.object(s.name)), &j)).To(Succeed())
		ready := meta.FindStatusCondition(j.Status.Conditions, paymentsv1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal("FoundInLedger"), describe(&j))
	}
	t.Logf("delete-and-recreate: re-created %d Completed jobs and %d Failed jobs, all finished from the ledger "+
		"with no provider request: no new charge", completed, failed)

	s.verify()
}

// deleteWhileProcessing deletes a job seen Processing and reports whether
// it was then still there, held by the finalizer, with its outcome not yet
// recorded.
func deleteWhileProcessing(j *paymentsv1alpha1.PaymentJob) (bool, error) {
	ctx := context.Background()
	if err := suite.k8s.Delete(ctx, j, client.Preconditions{UID: &j.UID}); err != nil {
		return false, fmt.Errorf("cannot delete %s/%s: %w", j.Namespace, j.Name, err)
	}
	var now paymentsv1alpha1.PaymentJob
	if err := suite.k8s.Get(ctx, client.ObjectKeyFromObject(j), &now); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil // its outcome was recorded in between
		}
		return false, err
	}
	return !now.DeletionTimestamp.IsZero() && now.Status.Phase == paymentsv1alpha1.PhaseProcessing &&
		len(now.Finalizers) > 0, nil
}
