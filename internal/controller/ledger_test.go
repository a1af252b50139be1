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
	"context"
	"errors"
	"fmt"
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
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controller"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// countingProvider charges at the sandbox and counts every call. It has no
// Lookup: a company's payment service that cannot look keys up.
type countingProvider struct {
	engine *sandbox.Engine
	calls  atomic.Int64
}

func (p *countingProvider) Charge(ctx context.Context, key string, req payment.ChargeRequest) (payment.Outcome, error) {
	p.calls.Add(1)
	return sandbox.NewProvider(p.engine).Charge(ctx, key, req)
}

// deleteJob deletes the job and waits until it is gone.
func deleteJob(t *testing.T, job *paymentsv1alpha1.PaymentJob) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, job))).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(job), &paymentsv1alpha1.PaymentJob{}))
	}, timeout).Should(BeTrue())
}

// ledgerEntries counts the entries of every ledger page by key, for the
// keys of namespace ns.
func ledgerEntries(g Gomega, ns string) map[string]int {
	var pages paymentsv1alpha1.PaymentLedgerList
	g.Expect(k8sClient.List(context.Background(), &pages)).To(Succeed())
	seen := map[string]int{}
	for _, p := range pages.Items {
		for _, e := range p.Entries {
			if strings.HasPrefix(e.Key, ns+"/") {
				seen[e.Key]++
			}
		}
	}
	return seen
}

// expectFoundInLedger checks that again was finished from the ledger as
// the first job's outcome.
func expectFoundInLedger(g Gomega, first, again *paymentsv1alpha1.PaymentJob) {
	g.Expect(again.Status.Phase).To(Equal(first.Status.Phase))
	g.Expect(condition(again, paymentsv1alpha1.ConditionReady).Reason).To(Equal(controller.ReasonFoundInLedger))
	g.Expect(again.Status.ProviderResponse.ID).To(Equal(first.Status.ProviderResponse.ID))
	g.Expect(again.Status.Attempts).To(BeZero(), "no claim, no provider call")
	g.Expect(again.Status.IdempotencyKey).To(Equal(first.Status.IdempotencyKey))
	g.Eventually(func(g Gomega) []string { return eventReasons(g, again.Namespace, again.Name) }, timeout).
		Should(ContainElement(controller.ReasonFoundInLedger))
}

// (a) A Completed job, deleted and created again after the provider forgot
// its keys, through a provider that cannot look keys up: finished from the
// ledger, with no provider call and no second charge.
func TestRecreatedJobIsFinishedFromTheLedger(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t, true)
	engine := sandbox.NewEngine()
	provider := &countingProvider{engine: engine}
	startManager(t, managerConfig{namespaces: []string{ns}, provider: provider})

	createJob(t, ns, "invoice")
	first := waitForFinished(t, ns, "invoice")
	g.Expect(first.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted))
	g.Expect(ledgerEntries(g, ns)).To(HaveKeyWithValue(first.Status.IdempotencyKey, 1))
	deleteJob(t, first)
	g.Expect(engine.ForgetKeys()).To(Equal(1))
	calls := provider.calls.Load()

	createJob(t, ns, "invoice")
	again := waitForFinished(t, ns, "invoice")
	expectFoundInLedger(g, first, again)
	g.Expect(provider.calls.Load()).To(Equal(calls), "no provider call for the re-created job")
	g.Expect(engine.Stats().Charges).To(Equal(int64(1)))
	g.Expect(ledgerEntries(g, ns)).To(HaveKeyWithValue(first.Status.IdempotencyKey, 1), "recorded once")
}

// A refused payment is recorded too: created again, it is Failed from the
// ledger, not sent again.
func TestRecreatedRefusedJobFailsFromTheLedger(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t, true)
	engine := sandbox.NewEngine()
	provider := &countingProvider{engine: engine}
	startManager(t, managerConfig{namespaces: []string{ns}, provider: provider})
	declined := func(s *paymentsv1alpha1.PaymentJobSpec) { s.PaymentMethod = "pm_card_chargeDeclined" }

	createJob(t, ns, "declined", declined)
	first := waitForFinished(t, ns, "declined")
	g.Expect(first.Status.Phase).To(Equal(paymentsv1alpha1.PhaseFailed))
	deleteJob(t, first)
	engine.ForgetKeys()
	calls := provider.calls.Load()

	createJob(t, ns, "declined", declined)
	again := waitForFinished(t, ns, "declined")
	g.Expect(again.Status.Phase).To(Equal(paymentsv1alpha1.PhaseFailed))
	g.Expect(condition(again, paymentsv1alpha1.ConditionReady).Reason).To(Equal(controller.ReasonFoundInLedger))
	g.Expect(again.Status.Failure.Reason).To(Equal(first.Status.Failure.Reason))
	g.Expect(provider.calls.Load()).To(Equal(calls))

	// The same key for another request is not this payment: it stalls.
	createJob(t, ns, "other", func(s *paymentsv1alpha1.PaymentJobSpec) { s.IdempotencyKey = "invoice-7" })
	waitForFinished(t, ns, "other")
	createJob(t, ns, "other-amount", func(s *paymentsv1alpha1.PaymentJobSpec) { s.IdempotencyKey = "invoice-7"; s.Amount = 999 })
	waitForStall(t, ns, "other-amount", controller.ReasonChargeMismatch)
	g.Expect(engine.Stats().Charges).To(Equal(int64(1)))
}

// (b) The same after the namespace's PaymentProvider and Secret were deleted
// and created again: a new PaymentProvider object, the same account.
func TestRecreatedJobAfterProviderAndSecretAreRecreated(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, true)
	engine := sandbox.NewEngine()
	provider := &countingProvider{engine: engine}
	startManager(t, managerConfig{namespaces: []string{ns}, provider: provider})

	createJob(t, ns, "invoice")
	first := waitForFinished(t, ns, "invoice")
	deleteJob(t, first)
	var pp paymentsv1alpha1.PaymentProvider
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: providerName}, &pp)).To(Succeed())
	oldUID := pp.UID
	g.Expect(k8sClient.Delete(ctx, &pp)).To(Succeed())
	g.Expect(k8sClient.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sandbox-credentials"}})).To(Succeed())
	engine.ForgetKeys()
	calls := provider.calls.Load()

	createSecret(t, ns)
	g.Expect(k8sClient.Create(ctx, &paymentsv1alpha1.PaymentProvider{
		ObjectMeta: metav1.ObjectMeta{Name: providerName, Namespace: ns},
		Spec:       pp.Spec,
	})).To(Succeed())
	createJob(t, ns, "invoice")
	again := waitForFinished(t, ns, "invoice")
	expectFoundInLedger(g, first, again)
	g.Expect(again.Status.Provider.UID).To(Equal(string(oldUID)), "the account that was charged, as recorded")
	g.Expect(provider.calls.Load()).To(Equal(calls))
	g.Expect(engine.Stats().Charges).To(Equal(int64(1)))
}

// (c) The TTL deletes a finished job and the ledger keeps its record. A
// self-healing GitOps loop that creates the manifest again whenever it is
// missing brings it back once: it is finished from the ledger and kept, so
// the loop stops.
func TestTTLDeletesFinishedJobsAndSelfHealingDoesNotBounce(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, true)
	engine := sandbox.NewEngine()
	provider := &countingProvider{engine: engine}
	m := startManager(t, managerConfig{namespaces: []string{ns}, provider: provider})
	withTTL := func(s *paymentsv1alpha1.PaymentJobSpec) { s.TTLSecondsAfterFinished = ptr.To[int32](1) }

	first := createJob(t, ns, "invoice", withTTL)
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(first), &paymentsv1alpha1.PaymentJob{}))
	}, timeout).Should(BeTrue(), "deleted after its TTL")
	key := payment.SentKey(ns, "invoice")
	e, found, err := m.ledger.Find(ctx, key)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeTrue(), "the ledger keeps the deleted job's outcome")
	g.Expect(e.Outcome).To(Equal(paymentsv1alpha1.LedgerCompleted))
	g.Expect(engine.Stats().Charges).To(Equal(int64(1)))
	engine.ForgetKeys()
	before := m.counter.writes.Load()

	// The self-healing loop: whenever the manifest is missing, create it.
	var recreations atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			job := &paymentsv1alpha1.PaymentJob{ObjectMeta: metav1.ObjectMeta{Name: "invoice", Namespace: ns}, Spec: jobSpec()}
			withTTL(&job.Spec)
			if k8sClient.Create(ctx, job) == nil {
				recreations.Add(1)
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()

	again := waitForFinished(t, ns, "invoice")
	g.Expect(condition(again, paymentsv1alpha1.ConditionReady).Reason).To(Equal(controller.ReasonFoundInLedger))
	// The outcome and the finish, counted once the manager's client has
	// its answers (the test may read the job before that).
	g.Eventually(func() int64 { return m.counter.writes.Load() - before }, timeout).Should(Equal(int64(2)),
		"writes for the re-created job: the outcome, the finish; writes:\n%s", m.counter)
	writes := m.counter.writes.Load()
	// Five TTLs later: the same object, no more writes, no new charge.
	g.Consistently(func(g Gomega) {
		job := getJob(g, ns, "invoice")
		g.Expect(job.UID).To(Equal(again.UID))
	}, 5*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(recreations.Load()).To(Equal(int64(1)), "the loop created the manifest again once")
	g.Expect(m.counter.writes.Load()).To(Equal(writes), "a job finished from the ledger is left alone; writes:\n%s", m.counter)
	g.Expect(engine.Stats().Charges).To(Equal(int64(1)))
	t.Logf("self-healing loop: %d re-creation, %d job writes for it, none in the five TTLs after", recreations.Load(), writes-before)
}

// The manager's default TTL applies to jobs without one; the job's own
// TTL wins.
func TestDefaultTTLAppliesToJobsWithoutOne(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns, other := newNamespace(t, true), newNamespace(t, true)
	// Another team's jobs, finished by a manager of its own without a TTL.
	startManager(t, managerConfig{namespaces: []string{other}, provider: sandbox.NewProvider(sandbox.NewEngine())})
	theirs := createJob(t, other, "theirs")
	waitForFinished(t, other, "theirs")
	startManager(t, managerConfig{namespaces: []string{ns}, provider: sandbox.NewProvider(sandbox.NewEngine()), ttl: ttlZero})

	gone := createJob(t, ns, "gone")
	kept := createJob(t, ns, "kept", func(s *paymentsv1alpha1.PaymentJobSpec) { s.TTLSecondsAfterFinished = ptr.To[int32](3600) })
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(gone), &paymentsv1alpha1.PaymentJob{}))
	}, timeout).Should(BeTrue())
	job := waitForFinished(t, ns, kept.Name)
	g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted))
	// A manager restricted to namespaces sweeps only those.
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(theirs), &paymentsv1alpha1.PaymentJob{})).To(Succeed())
}

// stallJob makes a job whose every attempt has an uncertain outcome stall
// after its first attempt.
func stallJob(t *testing.T, ns, name string) *paymentsv1alpha1.PaymentJob {
	t.Helper()
	createJob(t, ns, name, func(s *paymentsv1alpha1.PaymentJobSpec) { s.BackoffLimit = ptr.To[int32](0) })
	var job *paymentsv1alpha1.PaymentJob
	NewWithT(t).Eventually(func(g Gomega) {
		job = getJob(g, ns, name)
		g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
		c := condition(job, paymentsv1alpha1.ConditionStalled)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	}, timeout).Should(Succeed())
	return job
}

func annotateResolve(t *testing.T, ns, name, value string) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func() error {
		job := getJob(g, ns, name)
		if job.Annotations == nil {
			job.Annotations = map[string]string{}
		}
		job.Annotations[paymentsv1alpha1.AnnotationResolve] = value
		return k8sClient.Update(context.Background(), job)
	}, timeout).Should(Succeed())
}

// eventMessages lists the messages of the job's events with reason.
func eventMessages(g Gomega, ns, name, reason string) []string {
	var list eventsv1.EventList
	g.Expect(k8sClient.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	var msgs []string
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			msgs = append(msgs, e.Note)
		}
	}
	return msgs
}

// (d) A person resolves a Stalled job: each value, a refused one, and one on
// a job that is not Stalled. Nothing is ever charged by a resolution.
func TestResolvingAStalledJob(t *testing.T) {
	t.Parallel()

	t.Run("charged=<id> that the provider holds", func(t *testing.T) {
		t.Parallel()
		g := NewWithT(t)
		ns := newNamespace(t, true)
		engine := sandbox.NewEngine()
		// Every answer is lost after the charge: the job cannot know.
		engine.FailNextAny(sandbox.FaultAfterCommit, 1_000_000)
		m := startManager(t, managerConfig{namespaces: []string{ns}, provider: sandbox.NewProvider(engine)})
		stallJob(t, ns, "lost")
		intent, ok := engine.LookupByKey(payment.SentKey(ns, "lost"))
		g.Expect(ok).To(BeTrue())
		charges := engine.Stats().Charges

		annotateResolve(t, ns, "lost", "charged="+intent.ID)
		job := waitForFinished(t, ns, "lost")
		g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted))
		g.Expect(job.Status.ProviderResponse.ID).To(Equal(intent.ID))
		g.Expect(job.Status.Resolution).NotTo(BeNil())
		g.Expect(job.Status.Resolution.Value).To(Equal("charged=" + intent.ID))
		g.Expect(job.Status.Resolution.Verified).To(BeTrue())
		g.Expect(job.Status.Resolution.By).NotTo(BeEmpty())
		g.Expect(condition(job, paymentsv1alpha1.ConditionReady).Reason).To(Equal(controller.ReasonResolved))
		g.Eventually(func(g Gomega) []string { return eventReasons(g, ns, "lost") }, timeout).
			Should(ContainElement(controller.ReasonResolved))
		e, found, err := m.ledger.Find(context.Background(), payment.SentKey(ns, "lost"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(found).To(BeTrue())
		g.Expect(e.Charge).To(Equal(intent.ID))
		g.Expect(e.ResolvedBy).To(Equal(job.Status.Resolution.By))
		g.Expect(engine.Stats().Charges).To(Equal(charges), "a resolution never charges")
	})

	t.Run("not-charged, when the provider holds nothing", func(t *testing.T) {
		t.Parallel()
		g := NewWithT(t)
		ns := newNamespace(t, true)
		engine := sandbox.NewEngine()
		engine.FailNextAny(sandbox.FaultBeforeCommit, 1_000_000)
		m := startManager(t, managerConfig{namespaces: []string{ns}, provider: sandbox.NewProvider(engine)})
		stallJob(t, ns, "never")

		annotateResolve(t, ns, "never", "not-charged")
		job := waitForFinished(t, ns, "never")
		g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseFailed))
		g.Expect(job.Status.Failure.Reason).To(Equal(controller.ReasonResolved))
		g.Expect(job.Status.Resolution.Verified).To(BeTrue())
		e, found, err := m.ledger.Find(context.Background(), payment.SentKey(ns, "never"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(found).To(BeTrue())
		g.Expect(e.Outcome).To(Equal(paymentsv1alpha1.LedgerFailed))
		g.Expect(engine.Stats().Charges).To(BeZero())
	})

	t.Run("refused: a charge the provider does not know, and not-charged when it holds one", func(t *testing.T) {
		t.Parallel()
		g := NewWithT(t)
		ns := newNamespace(t, true)
		engine := sandbox.NewEngine()
		engine.FailNextAny(sandbox.FaultAfterCommit, 1_000_000)
		startManager(t, managerConfig{namespaces: []string{ns}, provider: sandbox.NewProvider(engine)})
		stallJob(t, ns, "lost")
		charges := engine.Stats().Charges

		annotateResolve(t, ns, "lost", "charged=pi_nobody_knows")
		g.Eventually(func(g Gomega) []string { return eventMessages(g, ns, "lost", controller.ReasonResolutionRefused) }, timeout).
			Should(ContainElement(ContainSubstring("does not know a charge pi_nobody_knows")))
		annotateResolve(t, ns, "lost", "not-charged")
		g.Eventually(func(g Gomega) []string { return eventMessages(g, ns, "lost", controller.ReasonResolutionRefused) }, timeout).
			Should(ContainElement(ContainSubstring("the provider holds charge")))
		annotateResolve(t, ns, "lost", "maybe")
		g.Eventually(func(g Gomega) []string { return eventMessages(g, ns, "lost", controller.ReasonResolutionRefused) }, timeout).
			Should(ContainElement(ContainSubstring("is not a resolution")))
		job := getJob(g, ns, "lost")
		g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing), "still uncertain")
		g.Expect(job.Status.Resolution).To(BeNil())
		g.Expect(engine.Stats().Charges).To(Equal(charges))
	})

	t.Run("refused on a job that is not Stalled", func(t *testing.T) {
		t.Parallel()
		g := NewWithT(t)
		ns := newNamespace(t, true)
		engine := sandbox.NewEngine()
		engine.FailNextAny(sandbox.FaultBeforeCommit, 1_000_000)
		startManager(t, managerConfig{namespaces: []string{ns}, provider: sandbox.NewProvider(engine)})
		createJob(t, ns, "retrying", func(s *paymentsv1alpha1.PaymentJobSpec) { s.BackoffLimit = ptr.To[int32](100) })
		waitForPhase(t, ns, "retrying", paymentsv1alpha1.PhaseProcessing)

		annotateResolve(t, ns, "retrying", "not-charged")
		g.Eventually(func(g Gomega) []string { return eventMessages(g, ns, "retrying", controller.ReasonResolutionRefused) }, timeout).
			Should(ContainElement(ContainSubstring("not Stalled")))
		job := getJob(g, ns, "retrying")
		g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
		g.Expect(job.Status.Resolution).To(BeNil())
	})
}

// (e) Two managers without leader election complete 200 jobs: every
// outcome is in the ledger exactly once.
func TestTwoManagersRecordEveryOutcomeOnce(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t, true)
	provider := sandbox.NewProvider(sandbox.NewEngine())
	startManager(t, managerConfig{namespaces: []string{ns}, provider: provider, concurrency: 8})
	startManager(t, managerConfig{namespaces: []string{ns}, provider: provider, concurrency: 8})
	const jobs = 200
	for i := range jobs {
		createJob(t, ns, fmt.Sprintf("job-%03d", i))
	}
	g.Eventually(func(g Gomega) {
		var list paymentsv1alpha1.PaymentJobList
		g.Expect(k8sClient.List(context.Background(), &list, client.InNamespace(ns),
			client.MatchingLabels{paymentsv1alpha1.LabelFinished: "true"})).To(Succeed())
		g.Expect(len(list.Items)).To(Equal(jobs))
	}, 3*timeout).Should(Succeed(), func() string { return unfinishedJobs(ns) })
	entries := ledgerEntries(g, ns)
	g.Expect(entries).To(HaveLen(jobs))
	for i := range jobs {
		g.Expect(entries).To(HaveKeyWithValue(payment.SentKey(ns, fmt.Sprintf("job-%03d", i)), 1))
	}
}

// A crash between the outcome write and the ledger record: the outcome is
// in the job, the ledger append failed. The finalizer stays on until a later
// pass (here, another manager) has recorded it; only then is the job
// finished, so it cannot be deleted before the ledger holds it.
func TestOutcomeIsRecordedBeforeTheFinalizerComesOff(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, true)
	engine := sandbox.NewEngine()
	ledgerDown := errors.New("the ledger cannot be written")
	var refused atomic.Int64
	refuse := func(obj client.Object) bool {
		if _, ok := obj.(*paymentsv1alpha1.PaymentLedger); ok {
			refused.Add(1)
			return true
		}
		return false
	}
	broken := startManager(t, managerConfig{namespaces: []string{ns}, provider: sandbox.NewProvider(engine),
		intercept: interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if refuse(obj) {
					return ledgerDown
				}
				return c.Create(ctx, obj, opts...)
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				if refuse(obj) {
					return ledgerDown
				}
				return c.Update(ctx, obj, opts...)
			},
		}})
	job := createJob(t, ns, "invoice")
	waitForPhase(t, ns, "invoice", paymentsv1alpha1.PhaseCompleted)
	g.Eventually(refused.Load, timeout).Should(BeNumerically(">", 0))
	g.Consistently(func(g Gomega) {
		j := getJob(g, ns, "invoice")
		g.Expect(j.Finalizers).To(ContainElement(paymentsv1alpha1.Finalizer), "finished before the ledger held it")
		g.Expect(j.Labels).NotTo(HaveKey(paymentsv1alpha1.LabelFinished))
	}, 2*time.Second, 100*time.Millisecond).Should(Succeed())
	// Deleting it now does not lose the record: the finalizer holds it.
	g.Expect(k8sClient.Delete(ctx, job)).To(Succeed())
	broken.stop()

	m := startManager(t, managerConfig{namespaces: []string{ns}, provider: sandbox.NewProvider(engine)})
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(job), &paymentsv1alpha1.PaymentJob{}))
	}, timeout).Should(BeTrue(), "released once recorded")
	e, found, err := m.ledger.Find(ctx, payment.SentKey(ns, "invoice"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeTrue())
	g.Expect(e.Outcome).To(Equal(paymentsv1alpha1.LedgerCompleted))
	g.Expect(engine.Stats().Charges).To(Equal(int64(1)))
}

// unfinishedJobs describes the jobs of ns that are not finished, for the
// message of a test that timed out waiting for them.
func unfinishedJobs(ns string) string {
	var list paymentsv1alpha1.PaymentJobList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, j := range list.Items {
		if j.Labels[paymentsv1alpha1.LabelFinished] == "true" {
			continue
		}
		reason := ""
		if c := condition(&j, paymentsv1alpha1.ConditionReady); c != nil {
			reason = c.Reason + ": " + c.Message
		}
		fmt.Fprintf(&b, "%s: phase %q, attempts %d, finalizers %v, deleting %t, %s\n",
			j.Name, j.Status.Phase, j.Status.Attempts, j.Finalizers, !j.DeletionTimestamp.IsZero(), reason)
	}
	return b.String()
}
