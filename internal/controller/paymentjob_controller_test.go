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
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controller"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

func TestHappyPath(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t, true)
	engine := sandbox.NewEngine()
	startManager(t, managerConfig{namespaces: []string{ns}, provider: sandbox.NewProvider(engine)})

	createJob(t, ns, "invoice-42")
	job := waitForPhase(t, ns, "invoice-42", paymentsv1alpha1.PhaseCompleted)

	// One charge at the provider, under the namespace-scoped key.
	stats := engine.Stats()
	g.Expect(stats.Charges).To(Equal(int64(1)))
	g.Expect(stats.ChargesByKey).To(Equal(map[string]int{ns + "/invoice-42": 1}))
	intent, ok := engine.LookupByKey(ns + "/invoice-42")
	g.Expect(ok).To(BeTrue())

	// The status is the record of what happened.
	g.Expect(job.Status.IdempotencyKey).To(Equal(ns + "/invoice-42"))
	g.Expect(job.Status.RequestHash).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
	g.Expect(job.Status.Attempts).To(Equal(int32(1)))
	g.Expect(job.Status.Claim).To(BeNil(), "a finished job holds no claim")
	g.Expect(job.Status.StartedAt).NotTo(BeNil())
	g.Expect(job.Status.CompletedAt).NotTo(BeNil())
	g.Expect(job.Status.Failure).To(BeNil())
	g.Expect(job.Status.ProviderResponse).NotTo(BeNil())
	g.Expect(*job.Status.ProviderResponse).To(MatchFields(intent.ID, "succeeded", 2000, "usd", false))
	g.Expect(job.Status.ObservedGeneration).To(Equal(job.Generation))

	// kstatus conditions.
	g.Expect(condition(job, paymentsv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(condition(job, paymentsv1alpha1.ConditionReady).Reason).To(Equal(controller.ReasonSucceeded))
	g.Expect(condition(job, paymentsv1alpha1.ConditionReconciling).Status).To(Equal(metav1.ConditionFalse))
	g.Expect(condition(job, paymentsv1alpha1.ConditionStalled).Status).To(Equal(metav1.ConditionFalse))
	for _, c := range job.Status.Conditions {
		g.Expect(c.ObservedGeneration).To(Equal(job.Generation))
		g.Expect(c.Message).NotTo(ContainSubstring(testSecretValue))
	}

	// Nothing in flight, so nothing blocks deletion: the finalizer goes
	// right after the outcome is recorded.
	g.Eventually(func(g Gomega) {
		g.Expect(getJob(g, ns, "invoice-42").Finalizers).NotTo(ContainElement(paymentsv1alpha1.Finalizer))
	}, timeout).Should(Succeed())

	// Finished: out of the manager's cache, with nothing left to do.
	g.Expect(getJob(g, ns, "invoice-42").Labels).To(HaveKeyWithValue(paymentsv1alpha1.LabelFinished, "true"))

	// The outcome's event tells the story of a job that went well (the job
	// may also have waited for its provider); a first claim has no event.
	g.Eventually(func(g Gomega) []string {
		return eventReasons(g, ns, "invoice-42")
	}, timeout).Should(And(ContainElement(controller.ReasonSucceeded), Not(ContainElement(controller.ReasonClaimed))))

	// The metrics are served from controller-runtime's registry.
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
		if f.GetName() == "paymentjob_charges_total" {
			var succeeded float64
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "outcome" && l.GetValue() == "succeeded" {
						succeeded = m.GetCounter().GetValue()
					}
				}
			}
			g.Expect(succeeded).To(BeNumerically(">=", 1))
		}
	}
	g.Expect(names).To(HaveKey("paymentjob_charges_total"))
	g.Expect(names).To(HaveKey("paymentjob_reconcile_duration_seconds"))
}

// MatchFields compares the fields of a ProviderResponse that the provider set.
func MatchFields(id, status string, amount int64, currency string, replayed bool) OmegaMatcher {
	return And(
		WithTransform(func(r paymentsv1alpha1.ProviderResponse) string { return r.ID }, Equal(id)),
		WithTransform(func(r paymentsv1alpha1.ProviderResponse) string { return r.Status }, Equal(status)),
		WithTransform(func(r paymentsv1alpha1.ProviderResponse) int64 { return r.Amount }, Equal(amount)),
		WithTransform(func(r paymentsv1alpha1.ProviderResponse) string { return r.Currency }, Equal(currency)),
		WithTransform(func(r paymentsv1alpha1.ProviderResponse) bool { return r.Replayed }, Equal(replayed)),
		WithTransform(func(r paymentsv1alpha1.ProviderResponse) bool { return r.Created != nil }, BeTrue()),
	)
}

func TestCompletedJobIsNeverChargedOrWrittenAgain(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, true)
	engine := sandbox.NewEngine()
	provider := sandbox.NewProvider(engine)
	m := startManager(t, managerConfig{namespaces: []string{ns}, provider: provider})

	// A finished job has the finished label, no finalizer, and leaves the
	// manager's cache.
	createJob(t, ns, "done")
	waitForFinished(t, ns, "done")
	g.Eventually(func() error {
		return m.cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: "done"}, &paymentsv1alpha1.PaymentJob{})
	}, timeout).Should(Satisfy(apierrors.IsNotFound))
	// The manager counts its finishing write once its client has the
	// answer, which may come after the test sees the label.
	g.Eventually(m.counter.String, timeout).Should(MatchRegexp(
		`write done phase=Completed .* finalizers=\[\] labels=map\[` + regexp.QuoteMeta(paymentsv1alpha1.LabelFinished)))
	callsBefore, writesBefore := provider.Calls(), m.counter.writes.Load()

	// 100 updates of the finished job reach no reconcile.
	var job *paymentsv1alpha1.PaymentJob
	for i := range 100 {
		job = getJob(g, ns, "done")
		if job.Annotations == nil {
			job.Annotations = map[string]string{}
		}
		job.Annotations["touch"] = fmt.Sprint(i)
		g.Expect(k8sClient.Update(ctx, job)).To(Succeed())
	}
	lastTouch := job.ResourceVersion
	// The watch delivers events in resourceVersion order: once a later job
	// is finished, the manager has seen all that the touches could cause.
	createJob(t, ns, "later")
	waitForFinished(t, ns, "later")
	g.Expect(provider.Calls()).To(Equal(callsBefore+1), "one provider call, for the later job only")
	// Counted once the manager's client has its answer: the test may see
	// the finished job before that.
	g.Eventually(func() int64 { return m.counter.writes.Load() - writesBefore }, timeout).Should(Equal(int64(4)),
		"four writes for the later job (finalizer, claim, outcome, finish), none for the Completed one; all writes:\n%s", m.counter)
	g.Expect(getJob(g, ns, "done").ResourceVersion).To(Equal(lastTouch), "the API server saw no write after the last touch")

	// Taking the label away brings the job back into the cache: it is
	// labelled again, with one write, and never charged. The first time, the
	// spec changes too, as when config/policy's mutating policy takes the
	// label off a finished job whose spec.suspend a GitOps patch changed:
	// one more write acknowledges the new generation.
	for i := range 20 {
		job = getJob(g, ns, "done")
		delete(job.Labels, paymentsv1alpha1.LabelFinished)
		if i == 0 {
			job.Spec.Suspend = ptr.To(true)
		}
		g.Expect(k8sClient.Update(ctx, job)).To(Succeed())
		waitForFinished(t, ns, "done")
	}
	g.Expect(provider.Calls()).To(Equal(callsBefore + 1))
	g.Eventually(func() int64 { return m.counter.writes.Load() - writesBefore }, timeout).Should(Equal(int64(4+20+1)),
		"all writes:\n%s", m.counter)
	g.Expect(engine.Stats().Charges).To(Equal(int64(2)))
	job = getJob(g, ns, "done")
	g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted))
	g.Expect(job.Status.ObservedGeneration).To(Equal(job.Generation), "the new generation is acknowledged")
	g.Expect(condition(job, paymentsv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
}

// waitForFinished waits until the job is released: the finished label set
// and the finalizer gone, in the same write.
func waitForFinished(t *testing.T, ns, name string) *paymentsv1alpha1.PaymentJob {
	t.Helper()
	var job *paymentsv1alpha1.PaymentJob
	NewWithT(t).Eventually(func(g Gomega) {
		job = getJob(g, ns, name)
		g.Expect(job.Labels).To(HaveKeyWithValue(paymentsv1alpha1.LabelFinished, "true"))
		g.Expect(job.Finalizers).To(BeEmpty())
	}, timeout, 20*time.Millisecond).Should(Succeed(), "job %s/%s was never finished", ns, name)
	return job
}

// TestCrashWindows kills the claim holder at each point where the naive
// pattern would charge twice, and lets a fresh process, with a new holder
// id, finish the job.
func TestCrashWindows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// crashingProvider is the provider of the first process: it crashes
		// its process at the window under test.
		crashingProvider func(p *sandbox.Provider, crash func()) payment.Provider
		wantReplayed     bool
	}{
		{
			name: "after the claim, before the charge",
			crashingProvider: func(_ *sandbox.Provider, crash func()) payment.Provider {
				return providerFunc(func(ctx context.Context, _ string, _ payment.ChargeRequest) (payment.Outcome, error) {
					crash()
					<-ctx.Done()
					return payment.Outcome{}, payment.Transient(errCrashed, 0)
				})
			},
			wantReplayed: false,
		},
		{
			name: "after the charge, before the outcome is written",
			crashingProvider: func(p *sandbox.Provider, crash func()) payment.Provider {
				return providerFunc(func(ctx context.Context, key string, req payment.ChargeRequest) (payment.Outcome, error) {
					if _, err := p.Charge(ctx, key, req); err != nil {
						return payment.Outcome{}, err
					}
					// The sandbox committed the charge; the response is lost.
					crash()
					<-ctx.Done()
					return payment.Outcome{}, payment.Transient(errCrashed, 0)
				})
			},
			wantReplayed: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			ns := newNamespace(t, true)
			engine := sandbox.NewEngine()
			real := sandbox.NewProvider(engine)
			const lease = 3 * time.Second

			var first *testManager
			first = startManager(t, managerConfig{
				namespaces: []string{ns},
				provider:   tt.crashingProvider(real, func() { first.crash() }),
				lease:      lease, timeout: 2 * time.Second,
			})
			createJob(t, ns, "crash")
			job := waitForPhase(t, ns, "crash", paymentsv1alpha1.PhaseProcessing)
			<-first.done
			job = getJob(g, ns, "crash")
			g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing), "the dead process recorded no outcome")
			g.Expect(job.Status.Claim.Holder).To(Equal(first.holder))
			g.Expect(job.Finalizers).To(ContainElement(paymentsv1alpha1.Finalizer))

			startManager(t, managerConfig{namespaces: []string{ns}, provider: real, lease: lease, timeout: 2 * time.Second})
			job = waitForPhase(t, ns, "crash", paymentsv1alpha1.PhaseCompleted)

			stats := engine.Stats()
			g.Expect(stats.Charges).To(Equal(int64(1)), "exactly one charge")
			g.Expect(job.Status.Attempts).To(Equal(int32(2)), "the second process took the claim over")
			g.Expect(job.Status.ProviderResponse.Replayed).To(Equal(tt.wantReplayed))
			intent, _ := engine.LookupByKey(ns + "/crash")
			g.Expect(job.Status.ProviderResponse.ID).To(Equal(intent.ID))
			g.Expect(job.Status.CompletedAt.Time).To(BeTemporally(">=", job.Status.StartedAt.Add(lease)),
				"the takeover waited for the claim to expire")
			g.Eventually(func(g Gomega) []string {
				return eventReasons(g, ns, "crash")
			}, timeout).Should(ContainElement(controller.ReasonClaimTakenOver))
		})
	}

	t.Run("the outcome write conflicts", func(t *testing.T) {
		t.Parallel()
		g := NewWithT(t)
		ns := newNamespace(t, true)
		engine := sandbox.NewEngine()
		var conflicted atomic.Bool
		startManager(t, managerConfig{
			namespaces: []string{ns},
			provider:   sandbox.NewProvider(engine),
			intercept: onFirstOutcomeWrite(&conflicted, func(ctx context.Context, job *paymentsv1alpha1.PaymentJob) error {
				// A GitOps tool labels the job at the worst moment.
				touch := &paymentsv1alpha1.PaymentJob{}
				if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(job), touch); err != nil {
					return err
				}
				touch.Labels = map[string]string{"argocd.argoproj.io/instance": "billing"}
				return k8sClient.Update(ctx, touch)
			}),
		})
		createJob(t, ns, "conflict")
		job := waitForPhase(t, ns, "conflict", paymentsv1alpha1.PhaseCompleted)

		g.Expect(conflicted.Load()).To(BeTrue(), "the outcome write met a conflict")
		stats := engine.Stats()
		g.Expect(stats.Charges).To(Equal(int64(1)), "exactly one charge")
		// The claim was still this attempt's, so the outcome was written on
		// the fresh copy: no second provider call was needed.
		g.Expect(stats.Requests).To(Equal(int64(1)))
		g.Expect(job.Status.Attempts).To(Equal(int32(1)))
		g.Expect(job.Status.ProviderResponse.Replayed).To(BeFalse(), "the recorded response is the first call's")
		g.Expect(job.Labels).To(HaveKey("argocd.argoproj.io/instance"), "the user's write was kept")
	})
	t.Run("the outcome write fails", func(t *testing.T) {
		t.Parallel()
		g := NewWithT(t)
		ns := newNamespace(t, true)
		engine := sandbox.NewEngine()
		var failed atomic.Bool
		startManager(t, managerConfig{
			namespaces: []string{ns},
			provider:   sandbox.NewProvider(engine),
			intercept: onFirstOutcomeWrite(&failed, func(context.Context, *paymentsv1alpha1.PaymentJob) error {
				return apierrors.NewServiceUnavailable("etcd leader changed")
			}),
		})
		createJob(t, ns, "lost")
		job := waitForPhase(t, ns, "lost", paymentsv1alpha1.PhaseCompleted)

		g.Expect(failed.Load()).To(BeTrue(), "the first outcome write failed")
		stats := engine.Stats()
		g.Expect(stats.Charges).To(Equal(int64(1)), "exactly one charge")
		g.Expect(stats.Replays).To(Equal(int64(1)), "the retry was answered from the provider's saved outcome")
		g.Expect(job.Status.Attempts).To(Equal(int32(2)))
		g.Expect(job.Status.ProviderResponse.Replayed).To(BeTrue(), "the recorded response is the provider's replay")
	})
}

// onFirstOutcomeWrite runs before ahead of the first status write that
// records Completed; an error from it replaces the write.
func onFirstOutcomeWrite(done *atomic.Bool, before func(context.Context, *paymentsv1alpha1.PaymentJob) error) interceptor.Funcs {
	return interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			job, ok := obj.(*paymentsv1alpha1.PaymentJob)
			if ok && job.Status.Phase == paymentsv1alpha1.PhaseCompleted && done.CompareAndSwap(false, true) {
				if err := before(ctx, job); err != nil {
					return err
				}
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	}
}

// TestTwoManagersAtOnceChargeEachJobOnce runs two managers on the same
// jobs against a sandbox WITHOUT idempotency: every create request is a new
// charge, so only exclusive claims keep charges equal to jobs. Remove the
// claim write's resourceVersion check and this test fails.
func TestTwoManagersAtOnceChargeEachJobOnce(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, true)
	engine := sandbox.NewEngine(sandbox.WithIdempotency(false))
	provider := sandbox.NewProvider(engine)
	a := startManager(t, managerConfig{namespaces: []string{ns}, provider: provider, concurrency: 8})
	b := startManager(t, managerConfig{namespaces: []string{ns}, provider: provider, concurrency: 8})

	const jobs = 200
	for i := range jobs {
		job := &paymentsv1alpha1.PaymentJob{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("job-%03d", i), Namespace: ns},
			Spec:       jobSpec(),
		}
		job.Spec.Amount = int64(100 + i)
		g.Expect(k8sClient.Create(ctx, job)).To(Succeed())
	}

	var list paymentsv1alpha1.PaymentJobList
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		completed := 0
		for _, j := range list.Items {
			if j.Status.Phase == paymentsv1alpha1.PhaseCompleted {
				completed++
			}
		}
		g.Expect(completed).To(Equal(jobs))
	}, 3*timeout, 100*time.Millisecond).Should(Succeed(), func() string { return unfinishedJobs(ns) })

	stats := engine.Stats()
	g.Expect(stats.Charges).To(Equal(int64(jobs)), "exactly one charge per job")
	g.Expect(stats.Requests).To(Equal(int64(jobs)), "exactly one create request per job: claims are exclusive")
	g.Expect(stats.InFlightConflicts).To(BeZero())
	g.Expect(a.counter.writes.Load()).To(BeNumerically(">", 0), "manager a took part")
	g.Expect(b.counter.writes.Load()).To(BeNumerically(">", 0), "manager b took part")
	g.Expect(stats.ChargesByKey).To(HaveLen(jobs))
	for key, n := range stats.ChargesByKey {
		g.Expect(n).To(Equal(1), "key %s charged %d times", key, n)
	}
	for _, j := range list.Items {
		intent, ok := engine.LookupByKey(j.Status.IdempotencyKey)
		g.Expect(ok).To(BeTrue())
		g.Expect(j.Status.ProviderResponse.ID).To(Equal(intent.ID), "job %s records the sandbox's charge", j.Name)
		g.Expect(j.Status.ProviderResponse.Amount).To(Equal(j.Spec.Amount))
	}
	t.Logf("200 jobs, 2 managers: %d charges, %d replays, %d in-flight conflicts; writes a=%d b=%d",
		stats.Charges, stats.Replays, stats.InFlightConflicts, a.counter.writes.Load(), b.counter.writes.Load())
}

func TestDefinitiveRefusalsFail(t *testing.T) {
	t.Parallel()

	t.Run("declined card", func(t *testing.T) {
		t.Parallel()
		g := NewWithT(t)
		ns := newNamespace(t, true)
		engine := sandbox.NewEngine()
		provider := sandbox.NewProvider(engine)
		startManager(t, managerConfig{namespaces: []string{ns}, provider: provider})

		createJob(t, ns, "declined", func(s *paymentsv1alpha1.PaymentJobSpec) { s.PaymentMethod = "pm_card_chargeDeclined" })
		job := waitForPhase(t, ns, "declined", paymentsv1alpha1.PhaseFailed)

		g.Expect(job.Status.Failure.Reason).To(Equal(controller.ReasonCardDeclined))
		g.Expect(job.Status.Failure.Message).To(ContainSubstring("generic_decline"))
		g.Expect(job.Status.ProviderResponse).To(BeNil())
		g.Expect(condition(job, paymentsv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
		g.Expect(condition(job, paymentsv1alpha1.ConditionStalled).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(condition(job, paymentsv1alpha1.ConditionStalled).Reason).To(Equal(controller.ReasonCardDeclined))
		g.Expect(engine.Stats().Charges).To(BeZero())
		// No retry: the one call that was refused is the only one.
		g.Consistently(provider.Calls, time.Second, 50*time.Millisecond).Should(Equal(int64(1)))
		g.Eventually(func(g Gomega) []string {
			return eventReasons(g, ns, "declined")
		}, timeout).Should(ContainElement(controller.ReasonCardDeclined))
	})

	// The lookup before the first charge finds the first job's charge under
	// the key, made for another request: the second job stalls without a
	// request. Without lookups, the provider refuses the reused key.
	t.Run("key reused with another amount", func(t *testing.T) {
		t.Parallel()
		g := NewWithT(t)
		ns := newNamespace(t, true)
		engine := sandbox.NewEngine()
		startManager(t, managerConfig{namespaces: []string{ns}, provider: sandbox.NewProvider(engine)})

		createJob(t, ns, "first", func(s *paymentsv1alpha1.PaymentJobSpec) { s.IdempotencyKey = "invoice-7" })
		waitForPhase(t, ns, "first", paymentsv1alpha1.PhaseCompleted)
		createJob(t, ns, "second", func(s *paymentsv1alpha1.PaymentJobSpec) {
			s.IdempotencyKey = "invoice-7"
			s.Amount = 9999
		})
		job := waitForStall(t, ns, "second", controller.ReasonChargeMismatch)

		g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhasePending))
		g.Expect(engine.Stats().Charges).To(Equal(int64(1)), "only the first job charged")
		g.Expect(engine.Stats().Requests).To(Equal(int64(1)), "the second job sent nothing")
	})

	// The provider's own answer: without lookups and without the ledger
	// (which stalls the second job like the lookup does, once it holds the
	// first one's outcome: TestRecreatedRefusedJobFailsFromTheLedger).
	t.Run("key reused with another amount, lookups off", func(t *testing.T) {
		t.Parallel()
		g := NewWithT(t)
		ns := newNamespace(t, true)
		setLookupPolicy(t, ns, paymentsv1alpha1.LookupNever)
		engine := sandbox.NewEngine()
		startManager(t, managerConfig{namespaces: []string{ns}, provider: sandbox.NewProvider(engine), noLedger: true})

		createJob(t, ns, "first", func(s *paymentsv1alpha1.PaymentJobSpec) { s.IdempotencyKey = "invoice-7" })
		waitForPhase(t, ns, "first", paymentsv1alpha1.PhaseCompleted)
		createJob(t, ns, "second", func(s *paymentsv1alpha1.PaymentJobSpec) {
			s.IdempotencyKey = "invoice-7"
			s.Amount = 9999
		})
		job := waitForPhase(t, ns, "second", paymentsv1alpha1.PhaseFailed)

		g.Expect(job.Status.Failure.Reason).To(Equal(controller.ReasonKeyReused))
		g.Expect(engine.Stats().Charges).To(Equal(int64(1)), "only the first job charged")
	})

	t.Run("same key and same request is one payment", func(t *testing.T) {
		t.Parallel()
		g := NewWithT(t)
		ns := newNamespace(t, true)
		engine := sandbox.NewEngine()
		startManager(t, managerConfig{namespaces: []string{ns}, provider: sandbox.NewProvider(engine)})

		first := createJob(t, ns, "march", func(s *paymentsv1alpha1.PaymentJobSpec) { s.IdempotencyKey = "invoice-8" })
		done := waitForPhase(t, ns, "march", paymentsv1alpha1.PhaseCompleted)
		// GitOps re-creates the manifest under another name.
		createJob(t, ns, "march-again", func(s *paymentsv1alpha1.PaymentJobSpec) { *s = first.Spec })
		again := waitForPhase(t, ns, "march-again", paymentsv1alpha1.PhaseCompleted)

		g.Expect(again.Status.ProviderResponse.Replayed).To(BeTrue())
		g.Expect(again.Status.ProviderResponse.ID).To(Equal(done.Status.ProviderResponse.ID))
		g.Expect(engine.Stats().Charges).To(Equal(int64(1)))
	})
}

func TestTransientErrors(t *testing.T) {
	t.Parallel()

	t.Run("five in a row, then success", func(t *testing.T) {
		t.Parallel()
		g := NewWithT(t)
		ns := newNamespace(t, true)
		engine := sandbox.NewEngine()
		engine.FailNext(sandbox.FaultBeforeCommit, 5)
		startManager(t, managerConfig{namespaces: []string{ns}, provider: sandbox.NewProvider(engine)})

		createJob(t, ns, "flaky")
		job := waitForPhase(t, ns, "flaky", paymentsv1alpha1.PhaseCompleted)

		g.Expect(job.Status.Attempts).To(Equal(int32(6)), "five failed attempts and the one that charged")
		g.Expect(engine.Stats().Charges).To(Equal(int64(1)))
		g.Expect(engine.Stats().Faults).To(Equal(int64(5)))
		g.Eventually(func(g Gomega) []string {
			return eventReasons(g, ns, "flaky")
		}, timeout).Should(ContainElement(controller.ReasonTransientError))
	})

	t.Run("beyond backoffLimit: stalled, never failed, still retrying", func(t *testing.T) {
		t.Parallel()
		g := NewWithT(t)
		ns := newNamespace(t, true)
		engine := sandbox.NewEngine()
		engine.FailNextAny(sandbox.FaultAfterCommit, 1000)
		startManager(t, managerConfig{
			namespaces: []string{ns},
			provider:   sandbox.NewProvider(engine),
			backoff:    controller.Backoff{Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond},
		})

		createJob(t, ns, "stuck", func(s *paymentsv1alpha1.PaymentJobSpec) { s.BackoffLimit = ptr.To[int32](2) })
		g.Eventually(func(g Gomega) {
			job := getJob(g, ns, "stuck")
			g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
			stalled := condition(job, paymentsv1alpha1.ConditionStalled)
			g.Expect(stalled).NotTo(BeNil())
			g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(stalled.Reason).To(Equal(controller.ReasonRetriesExhausted))
			g.Expect(job.Status.Attempts).To(BeNumerically(">=", 3))
		}, timeout).Should(Succeed())

		// Money moved at the first attempt but every answer was lost: the
		// outcome is uncertain, so the job must never say Failed.
		g.Consistently(func(g Gomega) {
			g.Expect(getJob(g, ns, "stuck").Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
		}, time.Second, 50*time.Millisecond).Should(Succeed())
		g.Expect(engine.Stats().Charges).To(Equal(int64(1)))

		// The provider recovers: the next retry gets the saved outcome.
		engine.FailNextAny(sandbox.FaultAfterCommit, 0)
		job := waitForPhase(t, ns, "stuck", paymentsv1alpha1.PhaseCompleted)
		g.Expect(job.Status.ProviderResponse.Replayed).To(BeTrue())
		g.Expect(condition(job, paymentsv1alpha1.ConditionStalled).Status).To(Equal(metav1.ConditionFalse))
		g.Expect(engine.Stats().Charges).To(Equal(int64(1)))
	})
}

func TestSuspend(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, true)
	engine := sandbox.NewEngine()
	provider := sandbox.NewProvider(engine)
	startManager(t, managerConfig{namespaces: []string{ns}, provider: provider})

	createJob(t, ns, "held", func(s *paymentsv1alpha1.PaymentJobSpec) { s.Suspend = ptr.To(true) })
	job := waitForPhase(t, ns, "held", paymentsv1alpha1.PhasePending)
	g.Expect(condition(job, paymentsv1alpha1.ConditionReady).Reason).To(Equal(controller.ReasonSuspended))
	g.Consistently(provider.Calls, time.Second, 50*time.Millisecond).Should(BeZero())

	job = getJob(g, ns, "held")
	job.Spec.Suspend = ptr.To(false)
	g.Expect(k8sClient.Update(ctx, job)).To(Succeed())
	job = waitForPhase(t, ns, "held", paymentsv1alpha1.PhaseCompleted)
	g.Expect(engine.Stats().Charges).To(Equal(int64(1)))
	g.Expect(job.Status.ObservedGeneration).To(Equal(job.Generation))
}

func TestActiveDeadlineStopsUnclaimedWork(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, true)
	engine := sandbox.NewEngine()
	provider := sandbox.NewProvider(engine)
	startManager(t, managerConfig{namespaces: []string{ns}, provider: provider})

	createJob(t, ns, "late", func(s *paymentsv1alpha1.PaymentJobSpec) {
		s.Suspend = ptr.To(true)
		s.ActiveDeadlineSeconds = ptr.To[int64](1)
	})
	g.Eventually(func(g Gomega) {
		job := getJob(g, ns, "late")
		g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhasePending))
		g.Expect(condition(job, paymentsv1alpha1.ConditionStalled).Reason).To(Equal(controller.ReasonDeadlineExceeded))
		g.Expect(condition(job, paymentsv1alpha1.ConditionStalled).Status).To(Equal(metav1.ConditionTrue))
	}, timeout).Should(Succeed())

	job := getJob(g, ns, "late")
	job.Spec.Suspend = ptr.To(false)
	g.Expect(k8sClient.Update(ctx, job)).To(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(getJob(g, ns, "late").Status.Phase).To(Equal(paymentsv1alpha1.PhasePending))
	}, time.Second, 50*time.Millisecond).Should(Succeed())
	g.Expect(provider.Calls()).To(BeZero(), "a job past its deadline is never charged")
}

func TestDeletion(t *testing.T) {
	t.Parallel()

	t.Run("while Processing, held until the outcome is recorded", func(t *testing.T) {
		t.Parallel()
		g := NewWithT(t)
		ctx := context.Background()
		ns := newNamespace(t, true)
		engine := sandbox.NewEngine()
		gate := engine.Hold()
		defer gate.Release()
		startManager(t, managerConfig{namespaces: []string{ns}, provider: sandbox.NewProvider(engine)})

		job := createJob(t, ns, "inflight")
		g.Eventually(gate.Entered(), timeout).Should(Receive(Equal(ns + "/inflight")))
		g.Expect(k8sClient.Delete(ctx, job)).To(Succeed())

		held := getJob(g, ns, "inflight")
		g.Expect(held.DeletionTimestamp).NotTo(BeNil())
		g.Expect(held.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
		g.Expect(held.Finalizers).To(ContainElement(paymentsv1alpha1.Finalizer))

		gate.Release()
		g.Eventually(func() bool {
			err := k8sClient.Get(ctx, client.ObjectKeyFromObject(job), &paymentsv1alpha1.PaymentJob{})
			return apierrors.IsNotFound(err)
		}, timeout).Should(BeTrue(), "the job goes once its outcome is recorded")
		g.Expect(engine.Stats().Charges).To(Equal(int64(1)))
		g.Eventually(func(g Gomega) []string {
			return eventReasons(g, ns, "inflight")
		}, timeout).Should(ContainElement(controller.ReasonSucceeded))
	})

	t.Run("a Completed job is not blocked", func(t *testing.T) {
		t.Parallel()
		g := NewWithT(t)
		ctx := context.Background()
		ns := newNamespace(t, true)
		engine := sandbox.NewEngine()
		startManager(t, managerConfig{namespaces: []string{ns}, provider: sandbox.NewProvider(engine)})

		createJob(t, ns, "paid")
		job := waitForPhase(t, ns, "paid", paymentsv1alpha1.PhaseCompleted)
		g.Eventually(func(g Gomega) {
			g.Expect(controllerutil.ContainsFinalizer(getJob(g, ns, "paid"), paymentsv1alpha1.Finalizer)).To(BeFalse())
		}, timeout).Should(Succeed())
		g.Expect(k8sClient.Delete(ctx, job)).To(Succeed())
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(job), &paymentsv1alpha1.PaymentJob{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "deleted at once, got %v", err)
	})
}

func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns1 := newNamespace(t, true)
	ns2 := newNamespace(t, true)
	// One provider account shared by two tenants.
	engine := sandbox.NewEngine()
	startManager(t, managerConfig{namespaces: []string{ns1, ns2}, provider: sandbox.NewProvider(engine)})

	same := func(s *paymentsv1alpha1.PaymentJobSpec) { s.IdempotencyKey = "invoice-2026-0042" }
	createJob(t, ns1, "invoice", same)
	createJob(t, ns2, "invoice", same)
	j1 := waitForPhase(t, ns1, "invoice", paymentsv1alpha1.PhaseCompleted)
	j2 := waitForPhase(t, ns2, "invoice", paymentsv1alpha1.PhaseCompleted)

	g.Expect(j1.Status.IdempotencyKey).To(Equal(ns1 + "/invoice-2026-0042"))
	g.Expect(j2.Status.IdempotencyKey).To(Equal(ns2 + "/invoice-2026-0042"))
	g.Expect(j1.Status.ProviderResponse.ID).NotTo(Equal(j2.Status.ProviderResponse.ID))
	g.Expect(j1.Status.ProviderResponse.Replayed || j2.Status.ProviderResponse.Replayed).To(BeFalse())
	g.Expect(engine.Stats().Charges).To(Equal(int64(2)))
}

func TestJobWaitsForItsProvider(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t, false)
	engine := sandbox.NewEngine()
	provider := sandbox.NewProvider(engine)
	startManager(t, managerConfig{namespaces: []string{ns}, provider: provider})

	createJob(t, ns, "waiting")
	g.Eventually(func(g Gomega) {
		job := getJob(g, ns, "waiting")
		g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhasePending))
		ready := condition(job, paymentsv1alpha1.ConditionReady)
		g.Expect(ready.Reason).To(Equal(controller.ReasonProviderNotReady))
		g.Expect(ready.Message).To(ContainSubstring(controller.ReasonSecretNotFound))
		g.Expect(condition(job, paymentsv1alpha1.ConditionReconciling).Status).To(Equal(metav1.ConditionTrue))
	}, timeout).Should(Succeed())
	g.Expect(provider.Calls()).To(BeZero())

	var pp paymentsv1alpha1.PaymentProvider
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: providerName}, &pp)).To(Succeed())
	g.Expect(condition(&paymentsv1alpha1.PaymentJob{Status: paymentsv1alpha1.PaymentJobStatus{Conditions: pp.Status.Conditions}},
		paymentsv1alpha1.ConditionReady).Reason).To(Equal(controller.ReasonSecretNotFound))

	createSecret(t, ns)
	job := waitForPhase(t, ns, "waiting", paymentsv1alpha1.PhaseCompleted)
	g.Expect(engine.Stats().Charges).To(Equal(int64(1)))
	for _, c := range job.Status.Conditions {
		g.Expect(strings.Contains(c.Message, testSecretValue)).To(BeFalse())
	}
}

// TestCrashAfterOutcomeBeforeFinalizerRemoval: a process recorded Completed
// and died before removing the finalizer. The next one only removes it.
func TestCrashAfterOutcomeBeforeFinalizerRemoval(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, true)
	engine := sandbox.NewEngine()
	provider := sandbox.NewProvider(engine)
	now := metav1.Now()
	recorded := func(name string) paymentsv1alpha1.PaymentJobStatus {
		return paymentsv1alpha1.PaymentJobStatus{
			Phase:            paymentsv1alpha1.PhaseCompleted,
			IdempotencyKey:   ns + "/" + name,
			Attempts:         1,
			ProviderResponse: &paymentsv1alpha1.ProviderResponse{ID: "pi_" + name, Status: "succeeded", Amount: 2000, Currency: "usd"},
			StartedAt:        &now,
			CompletedAt:      &now,
		}
	}
	// "recorded": the outcome was written, then the manager died before
	// the finalizer went. "legacy": finished by an operator version that
	// did not label finished jobs.
	createJob(t, ns, "recorded")
	job := getJob(g, ns, "recorded")
	controllerutil.AddFinalizer(job, paymentsv1alpha1.Finalizer)
	g.Expect(k8sClient.Update(ctx, job)).To(Succeed())
	job.Status = recorded("recorded")
	g.Expect(k8sClient.Status().Update(ctx, job)).To(Succeed())
	createJob(t, ns, "legacy")
	job = getJob(g, ns, "legacy")
	job.Status = recorded("legacy")
	g.Expect(k8sClient.Status().Update(ctx, job)).To(Succeed())

	startManager(t, managerConfig{namespaces: []string{ns}, provider: provider})
	for _, name := range []string{"recorded", "legacy"} {
		job := waitForFinished(t, ns, name)
		g.Expect(job.Status.ProviderResponse.ID).To(Equal("pi_" + name))
		g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted))
	}
	g.Expect(provider.Calls()).To(BeZero())
}

func TestRateLimitIsSharedAndHoldsNoWorker(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, true)
	// The limited provider: 5 requests per second, no burst above one.
	var pp paymentsv1alpha1.PaymentProvider
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: providerName}, &pp)).To(Succeed())
	pp.Spec.RequestsPerSecond = ptr.To[int32](5)
	pp.Spec.Burst = ptr.To[int32](1)
	g.Expect(k8sClient.Update(ctx, &pp)).To(Succeed())
	// An unlimited one in the same namespace.
	fast := pp.DeepCopy()
	fast.ObjectMeta = metav1.ObjectMeta{Name: "unlimited", Namespace: ns}
	fast.Spec.RequestsPerSecond, fast.Spec.Burst = nil, nil
	g.Expect(k8sClient.Create(ctx, fast)).To(Succeed())

	engine := sandbox.NewEngine()
	real := sandbox.NewProvider(engine)
	var mu sync.Mutex
	var limitedCalls []time.Time
	var otherCall time.Time
	startManager(t, managerConfig{
		namespaces:  []string{ns},
		concurrency: 1, // one worker: a job waiting for a token must not hold it
		build: func(spec paymentsv1alpha1.PaymentProviderSpec, _ string) (payment.Provider, error) {
			if spec.RequestsPerSecond == nil {
				return providerFunc(func(ctx context.Context, key string, req payment.ChargeRequest) (payment.Outcome, error) {
					mu.Lock()
					otherCall = time.Now()
					mu.Unlock()
					return real.Charge(ctx, key, req)
				}), nil
			}
			return providerFunc(func(ctx context.Context, key string, req payment.ChargeRequest) (payment.Outcome, error) {
				mu.Lock()
				limitedCalls = append(limitedCalls, time.Now())
				mu.Unlock()
				return real.Charge(ctx, key, req)
			}), nil
		},
	})

	const jobs = 10
	for i := range jobs {
		createJob(t, ns, fmt.Sprintf("limited-%d", i))
	}
	createJob(t, ns, "other", func(s *paymentsv1alpha1.PaymentJobSpec) { s.ProviderRef.Name = "unlimited" })
	// The job of the unlimited provider is not stuck behind the others.
	waitForPhase(t, ns, "other", paymentsv1alpha1.PhaseCompleted)
	for i := range jobs {
		waitForPhase(t, ns, fmt.Sprintf("limited-%d", i), paymentsv1alpha1.PhaseCompleted)
	}

	mu.Lock()
	defer mu.Unlock()
	g.Expect(limitedCalls).To(HaveLen(jobs), "one call per job")
	span := limitedCalls[jobs-1].Sub(limitedCalls[0])
	// 10 calls at 5/s with a burst of 1 need at least 9 intervals of 200ms.
	g.Expect(span).To(BeNumerically(">=", 1700*time.Millisecond), "calls spread by the token bucket")
	g.Expect(otherCall).To(BeTemporally("<", limitedCalls[jobs-1]),
		"the unlimited provider's job was charged while limited jobs still waited")
	g.Expect(engine.Stats().Charges).To(Equal(int64(jobs + 1)))
}

// TestOldProcessingJobIsLookedUpBeforeCharging: a job Processing for longer
// than the provider remembers keys is looked up by its key, not charged.
func TestOldProcessingJobIsLookedUpBeforeCharging(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, true)
	engine := sandbox.NewEngine()
	provider := sandbox.NewProvider(engine)

	// Two days ago a process claimed the job, charged, and died.
	key := ns + "/old"
	spec := jobSpec()
	req := payment.ChargeRequest{Amount: spec.Amount, Currency: spec.Currency, PaymentMethod: spec.PaymentMethod,
		Description: spec.Description, Metadata: spec.Metadata}
	charged, err := provider.Charge(ctx, key, req)
	g.Expect(err).NotTo(HaveOccurred())
	createJob(t, ns, "old")
	job := getJob(g, ns, "old")
	controllerutil.AddFinalizer(job, paymentsv1alpha1.Finalizer)
	g.Expect(k8sClient.Update(ctx, job)).To(Succeed())
	twoDaysAgo := time.Now().Add(-48 * time.Hour)
	job.Status = paymentsv1alpha1.PaymentJobStatus{
		Phase:          paymentsv1alpha1.PhaseProcessing,
		IdempotencyKey: key,
		RequestHash:    payment.RequestHash(key, req),
		Attempts:       1,
		Claim: &paymentsv1alpha1.Claim{Holder: "dead/00000000",
			AcquiredAt: metav1.NewMicroTime(twoDaysAgo), ExpiresAt: metav1.NewMicroTime(twoDaysAgo.Add(time.Minute))},
		StartedAt: &metav1.Time{Time: twoDaysAgo},
	}
	g.Expect(k8sClient.Status().Update(ctx, job)).To(Succeed())

	startManager(t, managerConfig{namespaces: []string{ns}, provider: provider, keyRetention: 23 * time.Hour})
	job = waitForPhase(t, ns, "old", paymentsv1alpha1.PhaseCompleted)

	g.Expect(job.Status.ProviderResponse.ID).To(Equal(charged.ID))
	g.Expect(job.Status.ProviderResponse.Replayed).To(BeTrue())
	g.Expect(provider.Lookups()).To(Equal(int64(1)))
	g.Expect(engine.Stats().Requests).To(Equal(int64(1)), "no create request after the lookup found the charge")
	g.Expect(engine.Stats().Charges).To(Equal(int64(1)))
}

// TestHostileProviderAnswersStayBounded: whatever a provider answers, the
// status stays small and valid, so the outcome can always be recorded.
func TestHostileProviderAnswersStayBounded(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("x", 10<<20)
	g := NewWithT(t)
	ns := newNamespace(t, true)
	startManager(t, managerConfig{
		namespaces: []string{ns},
		provider: providerFunc(func(_ context.Context, key string, _ payment.ChargeRequest) (payment.Outcome, error) {
			if strings.HasSuffix(key, "/huge-success") {
				return payment.Outcome{ID: "pi_" + huge, Status: huge, Amount: 2000, Currency: huge, Created: time.Now()}, nil
			}
			return payment.Outcome{}, &payment.Refusal{Class: payment.ErrDeclined, Reason: "not a reason! " + huge, Message: huge}
		}),
	})
	createJob(t, ns, "huge-success")
	createJob(t, ns, "huge-refusal")
	ok := waitForPhase(t, ns, "huge-success", paymentsv1alpha1.PhaseCompleted)
	failed := waitForPhase(t, ns, "huge-refusal", paymentsv1alpha1.PhaseFailed)

	g.Expect(len(ok.Status.ProviderResponse.ID)).To(BeNumerically("<=", 255+3))
	g.Expect(ok.Status.ProviderResponse.ID).To(HavePrefix("pi_xxx"))
	g.Expect(len(ok.Status.ProviderResponse.Status)).To(BeNumerically("<=", 64+3))
	g.Expect(failed.Status.Failure.Reason).To(Equal(controller.ReasonPaymentRefused))
	g.Expect(len(failed.Status.Failure.Message)).To(BeNumerically("<=", 1024+3))
	for _, j := range []*paymentsv1alpha1.PaymentJob{ok, failed} {
		for _, c := range j.Status.Conditions {
			g.Expect(len(c.Message)).To(BeNumerically("<=", 32768), "condition messages are bounded by the API")
		}
	}
}
