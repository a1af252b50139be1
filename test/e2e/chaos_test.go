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
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// logWriteConflict is the reconciler's debug line per 409.
	logWriteConflict = "Write conflict"
)

// TestExactlyOnce runs the chaos scenarios one after the other, each on a
// fresh sandbox and fresh namespaces, each over jobsPerScenario jobs.
func TestExactlyOnce(t *testing.T) {
	scenarios := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"kill9", testKill9},
		{"split-brain", testSplitBrain},
		{"leader-failover", testLeaderFailover},
		{"sandbox-faults", testSandboxFaults},
		{"apiserver-restart", testAPIServerRestart},
		{"delete-and-recreate", testDeleteAndRecreate},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, sc.run)
	}
}

// testKill9 SIGKILLs the only manager at random moments while jobs are
// created and charged, and starts a new process (a new holder) each time.
func testKill9(t *testing.T) {
	g := NewWithT(t)
	s := newScenario(t, "kill9", "--latency-min=20ms", "--latency-max=200ms")
	jobs := s.planJobs(jobsPerScenario, nil)
	m := s.startManager(managerOptions{})
	created := s.createJobsAsync(jobs, 12)

	const kills = 6
	for k := range kills {
		// A timer picks the moment of the kill; nothing waits on state here.
		<-time.After(1500*time.Millisecond + rand.N(2*time.Second))
		done, err := s.countTerminal()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(done).To(BeNumerically("<", len(jobs)), "kill %d would come after the run", k+1)
		m.Kill()
		t.Logf("kill %d/%d: SIGKILL %s at %.1fs with %d/%d jobs terminal", k+1, kills, m.Name,
			time.Since(s.started).Seconds(), done, len(jobs))
		m = s.startManager(managerOptions{})
	}
	created()
	r := s.verify()

	takenOver := 0
	for _, j := range r.live {
		if j.Status.Attempts > 1 {
			takenOver++
		}
	}
	t.Logf("kill9: %d jobs needed more than one claim (takeovers after a kill)", takenOver)
	g.Expect(takenOver).To(BeNumerically(">", 0), "no kill landed on a claimed job")
}

// testSplitBrain runs two, then three managers at once without leader
// election: every job is fought over, and only claim writes decide.
func testSplitBrain(t *testing.T) {
	g := NewWithT(t)
	s := newScenario(t, "split-brain", "--latency-min=5ms", "--latency-max=50ms")
	jobs := s.planJobs(jobsPerScenario, nil)
	opts := managerOptions{logLevel: "debug"}
	managers := []*process{s.startManager(opts), s.startManager(opts)}
	created := s.createJobsAsync(jobs, 30)
	s.waitForTerminal(len(jobs)/3, 2*time.Minute)
	managers = append(managers, s.startManager(opts))
	created()
	s.verify()

	working, conflicts := 0, 0
	for _, m := range managers {
		log := m.ReadLog()
		n := strings.Count(log, logPaymentCompleted)
		c := strings.Count(log, logWriteConflict)
		conflicts += c
		if n > 0 {
			working++
		}
		t.Logf("split-brain: %s recorded %d payments and lost %d write races", m.Name, n, c)
	}
	g.Expect(working).To(BeNumerically(">=", 2), "the managers did not work at the same time")
	g.Expect(conflicts).To(BeNumerically(">", 0), "no claim race happened")
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
	proxy := startHoldingProxy(t, s.sandbox.base, held, providerTimeout+500*time.Millisecond)
	s.addProvider("slow", proxy.url)
	jobs := s.planJobs(jobsPerScenario, func(i int) string {
		if i%10 == 4 {
			return "slow"
		}
		return providerName
	})
	s.startManager(managerOptions{logLevel: "debug"})
	s.createJobs(jobs, 0)
	r := s.verify()

	t.Logf("sandbox-faults: %d faults, %d in-flight conflicts, %d replays; proxy held %d requests, %d charged after the manager gave up",
		r.stats.Faults, r.stats.InFlightConflicts, r.stats.Replays, proxy.held.Load(), proxy.chargedLate.Load())
	g.Expect(r.stats.Faults).To(BeNumerically(">", 0), "no fault was injected")
	g.Expect(r.replays).To(BeNumerically(">", 0), "no lost response was recovered by a replay")
	g.Expect(proxy.held.Load()).To(BeEquivalentTo(held))
	g.Expect(proxy.chargedLate.Load()).To(BeNumerically(">", 0), "no charge happened after a provider timeout")
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
	s.createJobs(first, 0)
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

	s.createJobs(second, 0)
	s.verify()
	g.Expect(m.Exited()).To(BeFalse(), "the manager exited:\n%s", m.ReadLog())
}

// testDeleteAndRecreate deletes jobs while they are Processing (the sandbox
// holds every charge for a second): the finalizer keeps them until their
// outcome is recorded. Then it deletes Completed and Failed jobs and
// re-creates them with the same name and spec: the sandbox replays, and
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
	s.createJobs(jobs, 0)
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
	before, err := s.sandbox.stats()
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
	after, err := s.sandbox.stats()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after.Charges).To(Equal(before.Charges), "re-created jobs were charged again")
	g.Expect(after.Replays).To(BeNumerically(">=", before.Replays+int64(len(again))))
	t.Logf("delete-and-recreate: re-created %d Completed and %d Failed jobs: all replayed, no new charge", completed, failed)

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

// TestSecretNeverLeaks looks for the scenarios' Stripe key in every manager
// log of the run, every PaymentJob and PaymentProvider, and every Event of
// the scenarios' namespaces. Run alone, it first runs a small faulty
// workload of its own to have something to inspect.
func TestSecretNeverLeaks(t *testing.T) {
	g := NewWithT(t)
	suite.mu.Lock()
	logs, namespaces := append([]string(nil), suite.managerLogs...), append([]string(nil), suite.namespaces...)
	suite.mu.Unlock()
	if len(logs) == 0 {
		s := newScenario(t, "secret-leak", "--error-after-commit=0.3", "--rate-limit=0.1")
		m := s.startManager(managerOptions{logLevel: "debug"})
		s.createJobs(s.planJobs(60, nil), 0)
		s.verify()
		m.Stop(10 * time.Second)
		suite.mu.Lock()
		logs, namespaces = append([]string(nil), suite.managerLogs...), append([]string(nil), suite.namespaces...)
		suite.mu.Unlock()
	}

	needles := []string{suite.secretValue, base64.StdEncoding.EncodeToString([]byte(suite.secretValue))}
	leaks := func(what string, data []byte) {
		for _, n := range needles {
			g.Expect(strings.Contains(string(data), n)).To(BeFalse(), "the secret value appears in %s", what)
		}
	}
	var logBytes int
	for _, path := range logs {
		data, err := os.ReadFile(path)
		g.Expect(err).NotTo(HaveOccurred())
		logBytes += len(data)
		leaks(path, data)
	}

	ctx := context.Background()
	var jobs, providers, events int
	for _, ns := range namespaces {
		lists := []client.ObjectList{
			&paymentsv1alpha1.PaymentJobList{}, &paymentsv1alpha1.PaymentProviderList{},
			&corev1.EventList{}, &eventsv1.EventList{},
		}
		for _, l := range lists {
			g.Expect(suite.k8s.List(ctx, l, client.InNamespace(ns))).To(Succeed())
			data, err := json.Marshal(l)
			g.Expect(err).NotTo(HaveOccurred())
			leaks(fmt.Sprintf("a %T of namespace %s", l, ns), data)
		}
		jobs += len(lists[0].(*paymentsv1alpha1.PaymentJobList).Items)
		providers += len(lists[1].(*paymentsv1alpha1.PaymentProviderList).Items)
		events += len(lists[2].(*corev1.EventList).Items)
	}
	t.Logf("the secret value appears in none of %d manager logs (%d bytes), %d PaymentJobs, %d PaymentProviders and %d Events of %d namespaces",
		len(logs), logBytes, jobs, providers, events, len(namespaces))
	g.Expect(jobs).To(BeNumerically(">", 0))
	g.Expect(events).To(BeNumerically(">", 0))
}
