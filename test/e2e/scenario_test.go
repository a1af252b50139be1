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
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/childproc"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/sandboxproc"
)

const (
	// jobsPerScenario is the floor of jobs every scenario charges.
	jobsPerScenario = 300
	// namespacesPerScenario spreads each scenario's jobs.
	namespacesPerScenario = 3
	// providerName is the PaymentProvider that reaches the sandbox directly.
	providerName = "sandbox"
	// secretName holds the fake Stripe key in every namespace.
	secretName = "sandbox-credentials"
	// scenarioLabel marks every job with its scenario.
	scenarioLabel = "e2e.payments.idempotency.dev/scenario"
	// reasonCardDeclined is the failure reason of a declined card.
	reasonCardDeclined = "CardDeclined"
	// declinedCard and goodCard are the sandbox's test payment methods.
	declinedCard = "pm_card_chargeDeclined"
	goodCard     = "pm_card_visa"
)

// scenario is one chaos run: a fresh sandbox, three fresh namespaces with a
// PaymentProvider each, the manager processes and the planned jobs.
type scenario struct {
	t       *testing.T
	name    string
	dir     string
	cluster *cluster
	sandbox *sandboxproc.Sandbox
	// namespaces hold the scenario's jobs.
	namespaces []string
	// jobs are every job the scenario creates, by plan.
	jobs []plannedJob
	// started is when the scenario began, for its summary.
	started time.Time

	mu sync.Mutex
	// deleted are the jobs deleted for good, by key, with the phase of
	// their last state (the object of their DELETED watch event).
	deleted map[string]paymentsv1alpha1.PaymentJobPhase
}

// plannedJob is one PaymentJob to create.
type plannedJob struct {
	namespace, name, provider string
	amount                    int64
	declined                  bool
	// suspended creates the job with spec.suspend: true.
	suspended bool
	// method, when set, is the payment method instead of a card (a
	// sandbox bank debit), in euros.
	method string
}

// key is the idempotency key the operator sends for the job:
// <namespace>/<name>, as spec.idempotencyKey is left out.
func (j plannedJob) key() string { return j.namespace + "/" + j.name }

// object is the PaymentJob to create.
func (j plannedJob) object(scenario string) *paymentsv1alpha1.PaymentJob {
	pm := goodCard
	if j.declined {
		pm = declinedCard
	}
	currency := "usd"
	if j.method != "" {
		pm, currency = j.method, "eur"
	}
	var suspend *bool
	if j.suspended {
		suspend = &j.suspended
	}
	return &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: j.name, Namespace: j.namespace, Labels: map[string]string{scenarioLabel: scenario}},
		Spec: paymentsv1alpha1.PaymentJobSpec{
			Suspend:       suspend,
			ProviderRef:   paymentsv1alpha1.ProviderReference{Name: j.provider},
			Amount:        j.amount,
			Currency:      currency,
			PaymentMethod: pm,
			Description:   "e2e " + scenario,
			Metadata:      map[string]string{"scenario": scenario},
		},
	}
}

// newScenario starts a sandbox with the fault flags in sandboxArgs and
// creates the scenario's namespaces on the suite's control plane, each with
// the Secret and a PaymentProvider named "sandbox" that reaches the sandbox.
func newScenario(t *testing.T, name string, sandboxArgs ...string) *scenario {
	t.Helper()
	return newScenarioOn(t, sharedCluster(), name, sandboxArgs...)
}

// newScenarioOn is newScenario on the given cluster.
func newScenarioOn(t *testing.T, c *cluster, name string, sandboxArgs ...string) *scenario {
	t.Helper()
	dir := filepath.Join(suite.artifacts, name)
	NewWithT(t).Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	sb := startSandbox(t, dir, sandboxArgs...)
	t.Logf("scenario %s: sandbox at %s %v, logs in %s", name, sb.URL, sandboxArgs, dir)
	return newScenarioWith(t, c, name, dir, sb)
}

// newScenarioWith is a scenario on the given cluster, with its logs in dir,
// whose PaymentProviders reach a sandbox that is already running: scenarios
// of the same name on two clusters, with one sandbox, apply the same
// manifests to both.
func newScenarioWith(t *testing.T, c *cluster, name, dir string, sb *sandboxproc.Sandbox) *scenario {
	t.Helper()
	s := &scenario{t: t, name: name, dir: dir, cluster: c, sandbox: sb, started: time.Now(),
		deleted: map[string]paymentsv1alpha1.PaymentJobPhase{}}
	NewWithT(t).Expect(os.MkdirAll(s.dir, 0o755)).To(Succeed())
	for i := range namespacesPerScenario {
		s.namespaces = append(s.namespaces, fmt.Sprintf("e2e-%s-%c", name, 'a'+i))
	}
	s.setUpNamespaces()
	s.dumpOnFailure()
	return s
}

// dumpOnFailure dumps and releases the jobs of the scenario's cluster when
// the test fails. It runs after the managers started later are stopped and
// before a cluster started earlier is (cleanups run last registered first).
func (s *scenario) dumpOnFailure() {
	c := s.cluster
	s.t.Cleanup(func() {
		if s.t.Failed() && s.cluster == c && !c.cp.stopped {
			s.dumpAndRelease()
		}
	})
}

// dumpAndRelease, after a failed scenario, writes its jobs to jobs.json in
// its folder and deletes the unfinished ones, finalizers included, so that
// the next scenario's managers do not retry them against a sandbox that is
// gone.
func (s *scenario) dumpAndRelease() {
	ctx := context.Background()
	var all []paymentsv1alpha1.PaymentJob
	for _, ns := range s.namespaces {
		var l paymentsv1alpha1.PaymentJobList
		if err := s.cluster.k8s.List(ctx, &l, client.InNamespace(ns)); err != nil {
			s.t.Logf("cannot list the jobs of %s: %v", ns, err)
			return
		}
		all = append(all, l.Items...)
	}
	if data, err := json.MarshalIndent(all, "", "  "); err == nil {
		path := filepath.Join(s.dir, "jobs.json")
		if err := os.WriteFile(path, data, 0o644); err == nil {
			s.t.Logf("scenario %s: the jobs are in %s", s.name, path)
		}
	}
	released := 0
	for i := range all {
		j := &all[i]
		if terminal(j) {
			continue
		}
		patch := client.MergeFrom(j.DeepCopy())
		j.Finalizers = nil
		if err := s.cluster.k8s.Patch(ctx, j, patch); client.IgnoreNotFound(err) != nil {
			s.t.Logf("cannot release %s/%s: %v", j.Namespace, j.Name, err)
			continue
		}
		if err := s.cluster.k8s.Delete(ctx, j); client.IgnoreNotFound(err) != nil {
			s.t.Logf("cannot delete %s/%s: %v", j.Namespace, j.Name, err)
			continue
		}
		released++
	}
	s.t.Logf("scenario %s: deleted %d unfinished jobs", s.name, released)
}

// setUpNamespaces creates the scenario's namespaces on its cluster, each
// with the Secret and a PaymentProvider named "sandbox" that reaches the
// sandbox.
func (s *scenario) setUpNamespaces() {
	s.t.Helper()
	g := NewWithT(s.t)
	for _, ns := range s.namespaces {
		s.createNamespace(g, ns)
		if s.cluster.shared {
			recordNamespace(ns)
		}
	}
	s.addProvider(providerName, s.sandbox.URL)
}

// createNamespace creates the namespace ns with the Secret of the
// scenario's providers.
func (s *scenario) createNamespace(g Gomega, ns string) {
	ctx := context.Background()
	g.Expect(s.cluster.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(s.cluster.k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: ns,
			Labels: map[string]string{paymentsv1alpha1.LabelCredentials: "true"}},
		StringData: map[string]string{"apiKey": suite.secretValue},
	})).To(Succeed())
}

// addProvider creates a Stripe PaymentProvider with the API base in each of
// the scenario's namespaces. It leaves timeoutSeconds out, so calls are
// bounded by the manager's --provider-timeout.
func (s *scenario) addProvider(name, apiBase string) {
	g := NewWithT(s.t)
	for _, ns := range s.namespaces {
		g.Expect(s.cluster.k8s.Create(context.Background(), &paymentsv1alpha1.PaymentProvider{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: paymentsv1alpha1.PaymentProviderSpec{Stripe: &paymentsv1alpha1.StripeProvider{
				APIBase:      apiBase,
				SecretKeyRef: paymentsv1alpha1.SecretKeyReference{Name: secretName, Key: "apiKey"},
			}},
		})).To(Succeed())
	}
}

// planJobs plans n jobs round-robin over the namespaces, through the
// PaymentProvider "sandbox"; one in twenty has a card that is declined.
// adjust, when not nil, changes job i before it is planned.
func (s *scenario) planJobs(n int, adjust func(i int, j *plannedJob)) []plannedJob {
	jobs := make([]plannedJob, 0, n)
	for i := range n {
		j := plannedJob{
			namespace: s.namespaces[i%len(s.namespaces)],
			name:      fmt.Sprintf("job-%04d", i),
			provider:  providerName,
			amount:    int64(100 + i),
			declined:  i%20 == 13,
		}
		if adjust != nil {
			adjust(i, &j)
		}
		jobs = append(jobs, j)
	}
	s.jobs = append(s.jobs, jobs...)
	return jobs
}

// createJobs creates the jobs, all at once, and returns when they all
// exist.
func (s *scenario) createJobs(jobs []plannedJob) {
	s.createJobsAsync(jobs, 0)()
}

// createJobsAsync creates the jobs in the background, like createJobs, and
// returns a function that waits until they all exist.
func (s *scenario) createJobsAsync(jobs []plannedJob, perSecond float64) (wait func()) {
	const workers = 8
	todo := make(chan plannedJob)
	errs := make(chan error, len(jobs))
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := range todo {
				errs <- s.createJob(j)
			}
		})
	}
	go func() {
		start := time.Now()
		for i, j := range jobs {
			if perSecond > 0 {
				// Pacing the creations is a schedule, not a wait on state.
				<-time.After(time.Until(start.Add(time.Duration(float64(i) / perSecond * float64(time.Second)))))
			}
			todo <- j
		}
		close(todo)
	}()
	return func() {
		s.t.Helper()
		wg.Wait()
		close(errs)
		for err := range errs {
			NewWithT(s.t).Expect(err).NotTo(HaveOccurred())
		}
	}
}

// createJob creates one job, retrying over API hiccups for a bounded time.
func (s *scenario) createJob(j plannedJob) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := s.cluster.k8s.Create(context.Background(), j.object(s.name))
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cannot create job %s: %w", j.key(), err)
		}
		<-time.After(200 * time.Millisecond)
	}
}

// managerOptions are the flags that differ between scenarios.
type managerOptions struct {
	// bin is the manager binary; suite.managerBin when empty.
	bin         string
	leaderElect bool
	// concurrency is --max-concurrent-reconciles; 10 when 0.
	concurrency int
	// logLevel is --zap-log-level; info when empty.
	logLevel string
	// lease is --claim-lease-duration; claimLease when 0.
	lease time.Duration
	// args are more flags, such as --ledger=false.
	args []string
	// postgres, when set, is the database of the manager's outcome ledger
	// (--ledger-backend=postgres), and clusterName the
	// --ledger-cluster-name it records its rows under. The CRD ledger
	// when nil.
	postgres    *ledgerDatabase
	clusterName string
}

// startManager runs bin/manager (or o.bin) against the scenario's control
// plane as POD_NAME e2e-<n>, with its log in the scenario's folder and its
// metrics on a loopback port, until the test ends.
func (s *scenario) startManager(o managerOptions) *manager {
	s.t.Helper()
	if o.bin == "" {
		o.bin = suite.managerBin
	}
	if o.concurrency == 0 {
		o.concurrency = 10
	}
	if o.logLevel == "" {
		o.logLevel = "info"
	}
	if o.lease == 0 {
		o.lease = claimLease
	}
	metricsAddr, err := childproc.FreeLoopbackAddr()
	NewWithT(s.t).Expect(err).NotTo(HaveOccurred())
	pod := fmt.Sprintf("e2e-%d", nextManagerID())
	// The upgrade and rollback scenarios start the previous version's
	// manager (hack/upgrade-from) with these flags too: each must be one
	// that version knows. A flag newer than it belongs in o.args.
	args := []string{
		"--metrics-bind-address=" + metricsAddr,
		"--metrics-secure=false",
		// No health probes (the suite reads none): the kernel could give a
		// probe server on port 0 the very port just found free for the
		// metrics, and the manager would exit at once.
		"--health-probe-bind-address=0",
		fmt.Sprintf("--leader-elect=%t", o.leaderElect),
		fmt.Sprintf("--max-concurrent-reconciles=%d", o.concurrency),
		"--claim-lease-duration=" + o.lease.String(),
		// The sandbox listens on loopback over plain http.
		"--insecure-provider-hosts=127.0.0.1",
		"--provider-timeout=" + providerTimeout.String(),
		"--kube-api-qps=200",
		"--kube-api-burst=400",
		"--zap-log-level=" + o.logLevel,
	}
	if o.leaderElect {
		args = append(args, "--leader-election-namespace="+leaderElectionNamespace)
	}
	if o.bin == suite.managerBin {
		// A reconciliation runs as soon as its window ends: the scenarios
		// reconcile books they have just proved (the previous version has
		// no reconciliation and no such flag).
		args = append(args, "--reconciliation-settle-margin=0s")
	}
	args = append(args, o.args...)
	if o.postgres != nil {
		args = append(args, s.postgresFlags(o.postgres, o.clusterName)...)
	}
	logPath := filepath.Join(s.dir, "manager-"+pod+".log")
	p, err := startProcess("manager "+pod, o.bin, logPath,
		[]string{"KUBECONFIG=" + s.cluster.cp.kubeconfig, "POD_NAME=" + pod}, nil, args...)
	NewWithT(s.t).Expect(err).NotTo(HaveOccurred())
	recordManagerLog(logPath)
	s.t.Cleanup(func() { p.Stop(10 * time.Second) })
	s.t.Logf("scenario %s: started manager %s (pid %d, %s)", s.name, pod, p.Pid(), strings.Join(args, " "))
	return &manager{process: p, pod: pod, metricsAddr: metricsAddr}
}

// list returns the scenario's live jobs by key.
func (s *scenario) list() (map[string]paymentsv1alpha1.PaymentJob, error) {
	jobs := map[string]paymentsv1alpha1.PaymentJob{}
	for _, ns := range s.namespaces {
		var l paymentsv1alpha1.PaymentJobList
		if err := s.cluster.k8s.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		for _, j := range l.Items {
			jobs[j.Namespace+"/"+j.Name] = j
		}
	}
	return jobs, nil
}

// terminal reports whether the job reached its outcome.
func terminal(j *paymentsv1alpha1.PaymentJob) bool {
	return j.Status.Phase == paymentsv1alpha1.PhaseCompleted || j.Status.Phase == paymentsv1alpha1.PhaseFailed
}

// countTerminal returns how many of the planned jobs are terminal now.
func (s *scenario) countTerminal() (int, error) {
	jobs, err := s.list()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, j := range jobs {
		if terminal(&j) {
			n++
		}
	}
	return n, nil
}

// waitForTerminal waits until at least n live jobs are terminal.
func (s *scenario) waitForTerminal(n int, timeout time.Duration) {
	s.t.Helper()
	NewWithT(s.t).Eventually(func(g Gomega) {
		done, err := s.countTerminal()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(done).To(BeNumerically(">=", n))
	}, timeout, 500*time.Millisecond).Should(Succeed())
}

// waitAllTerminal waits until every planned job that was not deleted exists
// and is Completed or Failed, and every deleted job is gone; it returns the
// live jobs by key.
func (s *scenario) waitAllTerminal() map[string]paymentsv1alpha1.PaymentJob {
	s.t.Helper()
	var jobs map[string]paymentsv1alpha1.PaymentJob
	NewWithT(s.t).Eventually(func(g Gomega) {
		var err error
		jobs, err = s.list()
		g.Expect(err).NotTo(HaveOccurred())
		var waiting []string
		for _, p := range s.jobs {
			_, deleted := s.deletedPhase(p.key())
			j, live := jobs[p.key()]
			switch {
			case deleted && live && !j.DeletionTimestamp.IsZero():
				waiting = append(waiting, p.key()+" (deleting, "+describe(&j)+")")
			case deleted && live:
				// Re-created with the same name: it must end too.
				if !terminal(&j) {
					waiting = append(waiting, p.key()+" (re-created, "+describe(&j)+")")
				}
			case deleted:
			case !live:
				waiting = append(waiting, p.key()+" (missing)")
			case !terminal(&j):
				waiting = append(waiting, p.key()+" ("+describe(&j)+")")
			}
		}
		sort.Strings(waiting)
		g.Expect(waiting).To(BeEmpty(), "%d jobs not terminal yet, first ones: %s",
			len(waiting), strings.Join(waiting[:min(len(waiting), 8)], "; "))
	}, terminalTimeout, time.Second).Should(Succeed())
	return jobs
}

// describe is a job's phase, attempts, Ready condition and claim, for
// failure messages.
func describe(j *paymentsv1alpha1.PaymentJob) string {
	phase := string(j.Status.Phase)
	if phase == "" {
		phase = "New"
	}
	s := fmt.Sprintf("%s, attempts %d", phase, j.Status.Attempts)
	if c := meta.FindStatusCondition(j.Status.Conditions, paymentsv1alpha1.ConditionReady); c != nil {
		s += fmt.Sprintf(", Ready=%s %s: %s", c.Status, c.Reason, c.Message)
	}
	if c := j.Status.Claim; c != nil {
		s += fmt.Sprintf(", claim %s until %s", c.Holder, c.ExpiresAt.UTC().Format(time.RFC3339Nano))
	}
	return s
}

// watchJobs calls handle, from one goroutine, for every watch event of the
// scenario's jobs until the test ends. When the API server ends a watch it
// watches again from the last resourceVersion it saw, so no event is missed.
func (s *scenario) watchJobs(handle func(watch.EventType, *paymentsv1alpha1.PaymentJob)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.t.Cleanup(func() {
		cancel()
		<-done
	})
	watchOnce := func(rv string) (watch.Interface, error) {
		return s.cluster.k8s.Watch(ctx, &paymentsv1alpha1.PaymentJobList{}, &client.ListOptions{
			LabelSelector: labels.SelectorFromSet(labels.Set{scenarioLabel: s.name}),
			Raw:           &metav1.ListOptions{ResourceVersion: rv},
		})
	}
	// The first watch must be open before the jobs are created.
	var w watch.Interface
	NewWithT(s.t).Eventually(func() (err error) {
		w, err = watchOnce("")
		return err
	}, time.Minute, 500*time.Millisecond).Should(Succeed(), "cannot watch the scenario's jobs")

	go func() {
		defer close(done)
		rv := ""
		for {
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					if ctx.Err() != nil {
						return
					}
					// An expired resourceVersion: events may be lost, and
					// the waits on them will say which.
					s.t.Logf("scenario %s: the job watch failed: %v", s.name, apierrors.FromObject(ev.Object))
					rv = ""
					break
				}
				if j, ok := ev.Object.(*paymentsv1alpha1.PaymentJob); ok {
					rv = j.ResourceVersion
					handle(ev.Type, j)
				}
			}
			w.Stop()
			for {
				if ctx.Err() != nil {
					return
				}
				var err error
				if w, err = watchOnce(rv); err == nil {
					break
				}
				s.t.Logf("scenario %s: cannot watch jobs, trying again: %v", s.name, err)
				select {
				case <-ctx.Done():
				case <-time.After(500 * time.Millisecond):
				}
			}
		}
	}()
}

// recordDeleted remembers that a job is gone, with the phase of its last
// state.
func (s *scenario) recordDeleted(key string, phase paymentsv1alpha1.PaymentJobPhase) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleted[key] = phase
}

func (s *scenario) deletedPhase(key string) (paymentsv1alpha1.PaymentJobPhase, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.deleted[key]
	return p, ok
}

// result is what verify counted.
type result struct {
	jobs, completed, failed int
	charges, duplicates     int
	lost, failedCharged     int
	replays                 int64
	stats                   sandboxproc.Stats
	live                    map[string]paymentsv1alpha1.PaymentJob
}

// verify is the proof every scenario ends with: every job terminal within a
// bounded time; at least one Completed; one sandbox charge per Completed job
// and none for a Failed one; no key charged twice; every Completed job's
// providerResponse.id is the sandbox's charge for its key; every job's
// status.provider names the sandbox's account; declined cards Failed with
// CardDeclined.
// A job deleted for good counts by the phase of its last state: its key may
// hold one charge (Completed) and no object. It prints the scenario's
// summary line.
func (s *scenario) verify() result {
	s.t.Helper()
	g := NewWithT(s.t)
	live := s.waitAllTerminal()
	stats, err := s.sandbox.Stats(context.Background())
	g.Expect(err).NotTo(HaveOccurred())

	r := result{jobs: len(s.jobs), replays: stats.Replays, stats: stats, live: live}
	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	outcome := map[string]paymentsv1alpha1.PaymentJobPhase{}
	for _, p := range s.jobs {
		key := p.key()
		charged := stats.ChargesByKey[key]
		j, isLive := live[key]
		if phase, deleted := s.deletedPhase(key); deleted && !isLive {
			outcome[key] = phase
			switch phase {
			case paymentsv1alpha1.PhaseCompleted:
				if charged == 0 {
					r.lost++
					problem("%s was deleted Completed but the sandbox has no charge for it", key)
				}
			case paymentsv1alpha1.PhaseFailed:
				if charged > 0 {
					r.failedCharged++
					problem("%s was deleted Failed but the sandbox charged it %d times", key, charged)
				}
			default:
				problem("%s disappeared in phase %q, before its outcome was recorded (sandbox charges: %d)", key, phase, charged)
			}
			continue
		}
		if !isLive {
			problem("%s does not exist", key)
			continue
		}
		outcome[key] = j.Status.Phase
		if j.Status.IdempotencyKey != key {
			problem("%s sent the key %q", key, j.Status.IdempotencyKey)
		}
		if id := j.Status.Provider; id == nil || id.Account != stats.Account {
			problem("%s records the provider %+v, want the sandbox's account %s", key, id, stats.Account)
		}
		switch j.Status.Phase {
		case paymentsv1alpha1.PhaseCompleted:
			if p.declined {
				problem("%s has a declined card but is Completed", key)
			}
			if charged == 0 {
				r.lost++
				problem("%s is Completed (charge %v) but the sandbox has no charge for its key", key, j.Status.ProviderResponse)
				continue
			}
			intents, err := s.sandbox.IntentsFor(context.Background(), key)
			switch {
			case err != nil:
				problem("cannot search the sandbox for %s: %v", key, err)
			case j.Status.ProviderResponse == nil:
				problem("%s is Completed without a providerResponse", key)
			case len(intents) != 1 || intents[0].ID != j.Status.ProviderResponse.ID:
				problem("%s records charge %s, the sandbox holds %+v for its key", key, j.Status.ProviderResponse.ID, intents)
			case intents[0].Amount != p.amount || intents[0].Metadata[payment.MetadataKeyIdempotencyKey] != key:
				problem("%s: the sandbox charged %+v, want amount %d", key, intents[0], p.amount)
			}
		case paymentsv1alpha1.PhaseFailed:
			if charged > 0 {
				r.failedCharged++
				problem("%s is Failed but the sandbox charged its key %d times", key, charged)
			}
			switch {
			case !p.declined:
				problem("%s has a good card but Failed: %+v", key, j.Status.Failure)
			case j.Status.Failure == nil || j.Status.Failure.Reason != reasonCardDeclined:
				problem("%s failed with %+v, want reason %s", key, j.Status.Failure, reasonCardDeclined)
			}
		}
	}
	for key, n := range stats.ChargesByKey {
		if n > 1 {
			r.duplicates += n - 1
			problem("%s was charged %d times", key, n)
		}
		if outcome[key] != paymentsv1alpha1.PhaseCompleted {
			r.lost++
			problem("%s was charged %d times but no Completed job records it (outcome %q)", key, n, outcome[key])
		}
	}
	for _, phase := range outcome {
		switch phase {
		case paymentsv1alpha1.PhaseCompleted:
			r.completed++
		case paymentsv1alpha1.PhaseFailed:
			r.failed++
		}
	}
	r.charges = int(stats.Charges)

	fmt.Printf("e2e scenario=%s jobs=%d completed=%d failed=%d charges=%d duplicates=%d lost=%d replays=%d seconds=%.1f\n",
		s.name, r.jobs, r.completed, r.failed, r.charges, r.duplicates, r.lost, r.replays, time.Since(s.started).Seconds())

	sort.Strings(problems)
	g.Expect(problems).To(BeEmpty(), "exactly-once violated in scenario %s (logs in %s)", s.name, s.dir)
	g.Expect(r.duplicates).To(BeZero(), "duplicate charges")
	g.Expect(r.lost).To(BeZero(), "lost jobs")
	g.Expect(r.failedCharged).To(BeZero(), "Failed jobs that were charged")
	g.Expect(r.charges).To(Equal(r.completed), "sandbox charges == Completed jobs")
	g.Expect(r.completed + r.failed).To(Equal(r.jobs))
	g.Expect(r.completed).To(BeNumerically(">", 0), "no job was completed: the scenario proved nothing")
	return r
}
