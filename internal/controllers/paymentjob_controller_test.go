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
	"context"
	"fmt"
	"regexp"
	"strings"
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

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/sandboxprovider"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

func TestHappyPath(t *testing.T) {
	s := newScenario(t)
	ns := s.ns
	job := s.run("invoice-42", paymentsv1alpha1.PhaseCompleted)

	// One charge at the provider, under the namespace-scoped key.
	stats := s.engine.Stats()
	s.Expect(stats.Charges).To(Equal(int64(1)))
	s.Expect(stats.ChargesByKey).To(Equal(map[string]int{ns + "/invoice-42": 1}))
	intent, ok := s.engine.LookupByKey(ns + "/invoice-42")
	s.Expect(ok).To(BeTrue())

	// The status is the record of what happened.
	s.Expect(job.Status.IdempotencyKey).To(Equal(ns + "/invoice-42"))
	s.Expect(job.Status.RequestHash).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
	s.Expect(job.Status.Attempts).To(Equal(int32(1)))
	s.Expect(job.Status.Claim).To(BeNil(), "a finished job holds no claim")
	s.Expect(job.Status.StartedAt).NotTo(BeNil())
	s.Expect(job.Status.CompletedAt).NotTo(BeNil())
	s.Expect(job.Status.Failure).To(BeNil())
	s.Expect(job.Status.ProviderResponse).NotTo(BeNil())
	s.Expect(*job.Status.ProviderResponse).To(MatchFields(intent.ID, "succeeded", 2000, "usd", false))
	s.Expect(job.Status.ObservedGeneration).To(Equal(job.Generation))

	// kstatus conditions.
	s.Expect(condition(job, paymentsv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	s.Expect(condition(job, paymentsv1alpha1.ConditionReady).Reason).To(Equal(paymentsv1alpha1.ReasonSucceeded))
	s.Expect(condition(job, paymentsv1alpha1.ConditionReconciling).Status).To(Equal(metav1.ConditionFalse))
	s.Expect(condition(job, paymentsv1alpha1.ConditionStalled).Status).To(Equal(metav1.ConditionFalse))
	for _, c := range job.Status.Conditions {
		s.Expect(c.ObservedGeneration).To(Equal(job.Generation))
		s.Expect(c.Message).NotTo(ContainSubstring(testSecretValue))
	}

	// Nothing in flight, so nothing blocks deletion: the finalizer goes
	// right after the outcome is recorded, with the finished label that
	// takes the job out of the manager's cache.
	s.waitForFinished("invoice-42")

	// The outcome's event tells the story of a job that went well (the job
	// may also have waited for its provider); a first claim has no event.
	s.Eventually(func(g Gomega) []string {
		return eventReasons(g, ns, "invoice-42")
	}, timeout).Should(And(ContainElement(paymentsv1alpha1.ReasonSucceeded), Not(ContainElement(paymentsv1alpha1.ReasonClaimed))))

	// The metrics are served from controller-runtime's registry.
	succeeded, _ := metricValue(t, "paymentjob_charges_total", map[string]string{"outcome": "succeeded"})
	s.Expect(succeeded).To(BeNumerically(">=", 1))
	_, series := metricValue(t, "paymentjob_reconcile_duration_seconds", nil)
	s.Expect(series).To(BeNumerically(">", 0))
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
	s := newScenario(t)
	m := s.manager

	// A finished job has the finished label, no finalizer, and leaves the
	// manager's cache.
	s.create("done")
	s.waitForFinished("done")
	s.Eventually(func() error {
		return m.cache.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: "done"}, &paymentsv1alpha1.PaymentJob{})
	}, timeout).Should(Satisfy(apierrors.IsNotFound))
	// The manager counts its finishing write once its client has the
	// answer, which may come after the test sees the label.
	s.Eventually(m.counter.String, timeout).Should(MatchRegexp(
		`write done phase=Completed .* finalizers=\[\] labels=map\[` + regexp.QuoteMeta(paymentsv1alpha1.LabelFinished)))
	callsBefore, writesBefore := s.sandbox.Calls(), m.counter.writes.Load()

	// 100 updates of the finished job reach no reconcile.
	var job *paymentsv1alpha1.PaymentJob
	for i := range 100 {
		job = s.update("done", func(j *paymentsv1alpha1.PaymentJob) {
			metav1.SetMetaDataAnnotation(&j.ObjectMeta, "touch", fmt.Sprint(i))
		})
	}
	lastTouch := job.ResourceVersion
	// The watch delivers events in resourceVersion order: once a later job
	// is finished, the manager has seen all that the touches could cause.
	s.create("later")
	s.waitForFinished("later")
	s.Expect(s.sandbox.Calls()).To(Equal(callsBefore+1), "one provider call, for the later job only")
	// Counted once the manager's client has its answer: the test may see
	// the finished job before that.
	s.Eventually(func() int64 { return m.counter.writes.Load() - writesBefore }, timeout).Should(Equal(int64(4)),
		"four writes for the later job (finalizer, claim, outcome, finish), none for the Completed one; all writes:\n%s", m.counter)
	s.Expect(s.job("done").ResourceVersion).To(Equal(lastTouch), "the API server saw no write after the last touch")

	// Taking the label away brings the job back into the cache: it is
	// labelled again, with one write, and never charged. The first time, the
	// spec changes too, as when config/policy's mutating policy takes the
	// label off a finished job whose spec.suspend a GitOps patch changed:
	// one more write acknowledges the new generation.
	for i := range 20 {
		s.update("done", func(j *paymentsv1alpha1.PaymentJob) {
			delete(j.Labels, paymentsv1alpha1.LabelFinished)
			if i == 0 {
				j.Spec.Suspend = ptr.To(true)
			}
		})
		s.waitForFinished("done")
	}
	s.Expect(s.sandbox.Calls()).To(Equal(callsBefore + 1))
	s.Eventually(func() int64 { return m.counter.writes.Load() - writesBefore }, timeout).Should(Equal(int64(4+20+1)),
		"all writes:\n%s", m.counter)
	s.expectCharges(2)
	job = s.job("done")
	s.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted))
	s.Expect(job.Status.ObservedGeneration).To(Equal(job.Generation), "the new generation is acknowledged")
	s.Expect(condition(job, paymentsv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
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
		crashingProvider func(p *sandboxprovider.Provider, crash func()) payment.Provider
		wantReplayed     bool
	}{
		{
			name: "after the claim, before the charge",
			crashingProvider: func(_ *sandboxprovider.Provider, crash func()) payment.Provider {
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
			crashingProvider: func(p *sandboxprovider.Provider, crash func()) payment.Provider {
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
			s := newScenario(t, withoutManager())
			const lease = 3 * time.Second

			var first *testManager
			first = s.start(managerConfig{
				provider: tt.crashingProvider(s.sandbox, func() { first.crash() }),
				lease:    lease, timeout: 2 * time.Second,
			})
			s.create("crash")
			s.waitForPhase("crash", paymentsv1alpha1.PhaseProcessing)
			<-first.done
			job := s.job("crash")
			s.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing), "the dead process recorded no outcome")
			s.Expect(job.Status.Claim.Holder).To(Equal(first.holder))
			s.Expect(job.Finalizers).To(ContainElement(paymentsv1alpha1.Finalizer))

			s.start(managerConfig{lease: lease, timeout: 2 * time.Second})
			job = s.waitForPhase("crash", paymentsv1alpha1.PhaseCompleted)

			s.expectCharges(1, "exactly one charge")
			s.Expect(job.Status.Attempts).To(Equal(int32(2)), "the second process took the claim over")
			s.Expect(job.Status.ProviderResponse.Replayed).To(Equal(tt.wantReplayed))
			intent, _ := s.engine.LookupByKey(s.ns + "/crash")
			s.Expect(job.Status.ProviderResponse.ID).To(Equal(intent.ID))
			s.Expect(job.Status.CompletedAt.Time).To(BeTemporally(">=", job.Status.StartedAt.Add(lease)),
				"the takeover waited for the claim to expire")
			s.expectEvent("crash", paymentsv1alpha1.ReasonClaimTakenOver)
		})
	}

	// The outcome is charged and its write does not go through at once.
	writeFaults := []struct {
		name string
		// before runs ahead of the first outcome write; its error replaces
		// the write.
		before func(context.Context, *paymentsv1alpha1.PaymentJob) error
		// wantAttempts is the number of claims, each one provider request.
		wantAttempts int32
		// wantReplayed: the recorded response is the provider's replay.
		wantReplayed bool
		// also checks what else the fault leaves on the job.
		also func(Gomega, *paymentsv1alpha1.PaymentJob)
	}{
		{
			// The claim was still this attempt's, so the outcome is written
			// on the fresh copy: no second provider call is needed.
			name: "the outcome write conflicts",
			before: func(ctx context.Context, job *paymentsv1alpha1.PaymentJob) error {
				// A GitOps tool labels the job at the worst moment.
				touch := &paymentsv1alpha1.PaymentJob{}
				if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(job), touch); err != nil {
					return err
				}
				touch.Labels = map[string]string{"argocd.argoproj.io/instance": "billing"}
				return k8sClient.Update(ctx, touch)
			},
			wantAttempts: 1,
			also: func(g Gomega, job *paymentsv1alpha1.PaymentJob) {
				g.Expect(job.Labels).To(HaveKey("argocd.argoproj.io/instance"), "the user's write was kept")
			},
		},
		{
			// The retry is answered from the provider's saved outcome.
			name: "the outcome write fails",
			before: func(context.Context, *paymentsv1alpha1.PaymentJob) error {
				return apierrors.NewServiceUnavailable("etcd leader changed")
			},
			wantAttempts: 2,
			wantReplayed: true,
			also:         func(Gomega, *paymentsv1alpha1.PaymentJob) {},
		},
	}
	for _, tt := range writeFaults {
		t.Run(tt.name, func(t *testing.T) {
			var hit atomic.Bool
			s := newScenario(t, withManager(managerConfig{intercept: onFirstOutcomeWrite(&hit, tt.before)}))
			job := s.run("invoice", paymentsv1alpha1.PhaseCompleted)

			s.Expect(hit.Load()).To(BeTrue(), "the fault met the outcome write")
			stats := s.engine.Stats()
			s.Expect(stats.Charges).To(Equal(int64(1)), "exactly one charge")
			s.Expect(stats.Requests).To(Equal(int64(tt.wantAttempts)), "one provider request per attempt")
			s.Expect(stats.Replays).To(Equal(int64(tt.wantAttempts-1)), "every request after the charge is a replay")
			s.Expect(job.Status.Attempts).To(Equal(tt.wantAttempts))
			s.Expect(job.Status.ProviderResponse.Replayed).To(Equal(tt.wantReplayed))
			tt.also(s, job)
		})
	}
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
	both := managerConfig{concurrency: 8}
	s := newScenario(t, withEngine(sandbox.WithIdempotency(false)), withManager(both))
	a, b := s.manager, s.start(both)

	const jobs = 200
	for i := range jobs {
		s.create(fmt.Sprintf("job-%03d", i), func(spec *paymentsv1alpha1.PaymentJobSpec) { spec.Amount = int64(100 + i) })
	}
	list := waitForJobs(t, s.ns, jobs, func(_ Gomega, j *paymentsv1alpha1.PaymentJob) bool {
		return j.Status.Phase == paymentsv1alpha1.PhaseCompleted
	})

	stats := s.engine.Stats()
	s.Expect(stats.Charges).To(Equal(int64(jobs)), "exactly one charge per job")
	s.Expect(stats.Requests).To(Equal(int64(jobs)), "exactly one create request per job: claims are exclusive")
	s.Expect(stats.InFlightConflicts).To(BeZero())
	s.Expect(a.counter.writes.Load()).To(BeNumerically(">", 0), "manager a took part")
	s.Expect(b.counter.writes.Load()).To(BeNumerically(">", 0), "manager b took part")
	s.Expect(stats.ChargesByKey).To(HaveLen(jobs))
	for key, n := range stats.ChargesByKey {
		s.Expect(n).To(Equal(1), "key %s charged %d times", key, n)
	}
	for _, j := range list {
		intent, ok := s.engine.LookupByKey(j.Status.IdempotencyKey)
		s.Expect(ok).To(BeTrue())
		s.Expect(j.Status.ProviderResponse.ID).To(Equal(intent.ID), "job %s records the sandbox's charge", j.Name)
		s.Expect(j.Status.ProviderResponse.Amount).To(Equal(j.Spec.Amount))
	}
	t.Logf("200 jobs, 2 managers: %d charges, %d replays, %d in-flight conflicts; writes a=%d b=%d",
		stats.Charges, stats.Replays, stats.InFlightConflicts, a.counter.writes.Load(), b.counter.writes.Load())
}

// chargeTwiceUnderOneKey charges the job "first" under the key invoice-7
// and, once it is Completed, creates "second" under the same key for
// another amount.
func chargeTwiceUnderOneKey(s *scenario) {
	s.t.Helper()
	s.run("first", paymentsv1alpha1.PhaseCompleted, keyed("invoice-7"))
	s.create("second", keyed("invoice-7"), func(spec *paymentsv1alpha1.PaymentJobSpec) { spec.Amount = 9999 })
}

func TestDefinitiveRefusalsFail(t *testing.T) {
	t.Parallel()

	t.Run("declined card", func(t *testing.T) {
		s := newScenario(t)
		job := s.run("declined", paymentsv1alpha1.PhaseFailed, declinedCard)

		s.Expect(job.Status.Failure.Reason).To(Equal(paymentsv1alpha1.ReasonCardDeclined))
		s.Expect(job.Status.Failure.Message).To(ContainSubstring("generic_decline"))
		s.Expect(job.Status.ProviderResponse).To(BeNil())
		s.Expect(condition(job, paymentsv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
		s.Expect(condition(job, paymentsv1alpha1.ConditionStalled).Status).To(Equal(metav1.ConditionTrue))
		s.Expect(condition(job, paymentsv1alpha1.ConditionStalled).Reason).To(Equal(paymentsv1alpha1.ReasonCardDeclined))
		s.expectCharges(0)
		// No retry: the one call that was refused is the only one.
		s.Consistently(s.sandbox.Calls, time.Second, 50*time.Millisecond).Should(Equal(int64(1)))
		s.expectEvent("declined", paymentsv1alpha1.ReasonCardDeclined)
	})

	// The lookup before the first charge finds the first job's charge under
	// the key, made for another request: the second job stalls without a
	// request. Without lookups, the provider refuses the reused key.
	t.Run("key reused with another amount", func(t *testing.T) {
		s := newScenario(t)
		chargeTwiceUnderOneKey(s)
		job := s.waitForStall("second", paymentsv1alpha1.ReasonChargeMismatch)

		s.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhasePending))
		s.expectCharges(1, "only the first job charged")
		s.Expect(s.engine.Stats().Requests).To(Equal(int64(1)), "the second job sent nothing")
	})

	// The provider's own answer: without lookups and without the ledger
	// (which stalls the second job like the lookup does, once it holds the
	// first one's outcome: TestRecreatedRefusedJobFailsFromTheLedger).
	t.Run("key reused with another amount, lookups off", func(t *testing.T) {
		s := newScenario(t, withProvider(lookupNever), withManager(managerConfig{noLedger: true}))
		chargeTwiceUnderOneKey(s)
		job := s.waitForPhase("second", paymentsv1alpha1.PhaseFailed)

		s.Expect(job.Status.Failure.Reason).To(Equal(paymentsv1alpha1.ReasonIdempotencyKeyReused))
		s.expectCharges(1, "only the first job charged")
	})

	t.Run("same key and same request is one payment", func(t *testing.T) {
		s := newScenario(t)
		first := s.create("march", keyed("invoice-8"))
		done := s.waitForPhase("march", paymentsv1alpha1.PhaseCompleted)
		// GitOps re-creates the manifest under another name.
		again := s.run("march-again", paymentsv1alpha1.PhaseCompleted, func(spec *paymentsv1alpha1.PaymentJobSpec) { *spec = first.Spec })

		s.Expect(again.Status.ProviderResponse.Replayed).To(BeTrue())
		s.Expect(again.Status.ProviderResponse.ID).To(Equal(done.Status.ProviderResponse.ID))
		s.expectCharges(1)
	})
}

func TestTransientErrors(t *testing.T) {
	t.Parallel()

	t.Run("five in a row, then success", func(t *testing.T) {
		s := newScenario(t)
		s.engine.FailNext(sandbox.FaultBeforeCommit, 5)
		job := s.run("flaky", paymentsv1alpha1.PhaseCompleted)

		s.Expect(job.Status.Attempts).To(Equal(int32(6)), "five failed attempts and the one that charged")
		s.expectCharges(1)
		s.Expect(s.engine.Stats().Faults).To(Equal(int64(5)))
		s.expectEvent("flaky", paymentsv1alpha1.ReasonTransientError)
	})

	t.Run("beyond backoffLimit: stalled, never failed, still retrying", func(t *testing.T) {
		s := newScenario(t, withManager(managerConfig{
			backoff: engine.Backoff{Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond},
		}))
		s.engine.FailNextAny(sandbox.FaultAfterCommit, 1000)

		s.create("stuck", backoffLimit(2))
		waitForJob(t, s.ns, "stuck", "ran out of retries", func(g Gomega, job *paymentsv1alpha1.PaymentJob) {
			g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
			expectStalled(g, job, paymentsv1alpha1.ReasonRetriesExhausted)
			g.Expect(job.Status.Attempts).To(BeNumerically(">=", 3))
		})

		// Money moved at the first attempt but every answer was lost: the
		// outcome is uncertain, so the job must never say Failed.
		s.Consistently(func(g Gomega) {
			g.Expect(s.get(g, "stuck").Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
		}, time.Second, 50*time.Millisecond).Should(Succeed())
		s.expectCharges(1)

		// The provider recovers: the next retry gets the saved outcome.
		s.engine.FailNextAny(sandbox.FaultAfterCommit, 0)
		job := s.waitForPhase("stuck", paymentsv1alpha1.PhaseCompleted)
		s.Expect(job.Status.ProviderResponse.Replayed).To(BeTrue())
		s.Expect(condition(job, paymentsv1alpha1.ConditionStalled).Status).To(Equal(metav1.ConditionFalse))
		s.expectCharges(1)
	})
}

func TestSuspend(t *testing.T) {
	s := newScenario(t)

	job := s.run("held", paymentsv1alpha1.PhasePending, suspended)
	s.Expect(condition(job, paymentsv1alpha1.ConditionReady).Reason).To(Equal(paymentsv1alpha1.ReasonSuspended))
	s.Consistently(s.sandbox.Calls, time.Second, 50*time.Millisecond).Should(BeZero())

	s.update("held", func(j *paymentsv1alpha1.PaymentJob) { j.Spec.Suspend = ptr.To(false) })
	job = s.waitForPhase("held", paymentsv1alpha1.PhaseCompleted)
	s.expectCharges(1)
	s.Expect(job.Status.ObservedGeneration).To(Equal(job.Generation))
}

func TestActiveDeadlineStopsUnclaimedWork(t *testing.T) {
	s := newScenario(t)

	s.create("late", suspended, func(spec *paymentsv1alpha1.PaymentJobSpec) { spec.ActiveDeadlineSeconds = ptr.To[int64](1) })
	job := s.waitForStall("late", paymentsv1alpha1.ReasonDeadlineExceeded)
	s.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhasePending))

	s.update("late", func(j *paymentsv1alpha1.PaymentJob) { j.Spec.Suspend = ptr.To(false) })
	s.Consistently(func(g Gomega) {
		g.Expect(s.get(g, "late").Status.Phase).To(Equal(paymentsv1alpha1.PhasePending))
	}, time.Second, 50*time.Millisecond).Should(Succeed())
	s.Expect(s.sandbox.Calls()).To(BeZero(), "a job past its deadline is never charged")
}

func TestDeletion(t *testing.T) {
	t.Parallel()

	t.Run("while Processing, held until the outcome is recorded", func(t *testing.T) {
		s := newScenario(t)
		gate := s.engine.Hold()
		defer gate.Release()

		job := s.create("inflight")
		s.Eventually(gate.Entered(), timeout).Should(Receive(Equal(s.ns + "/inflight")))
		s.Expect(k8sClient.Delete(context.Background(), job)).To(Succeed())

		held := s.job("inflight")
		s.Expect(held.DeletionTimestamp).NotTo(BeNil())
		s.Expect(held.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
		s.Expect(held.Finalizers).To(ContainElement(paymentsv1alpha1.Finalizer))

		gate.Release()
		waitForGone(s, job, "the job goes once its outcome is recorded")
		s.expectCharges(1)
		s.expectEvent("inflight", paymentsv1alpha1.ReasonSucceeded)
	})

	t.Run("a Completed job is not blocked", func(t *testing.T) {
		ctx := context.Background()
		s := newScenario(t)

		s.create("paid")
		job := s.waitForFinished("paid")
		s.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted))
		s.Expect(controllerutil.ContainsFinalizer(job, paymentsv1alpha1.Finalizer)).To(BeFalse())
		s.Expect(k8sClient.Delete(ctx, job)).To(Succeed())
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(job), &paymentsv1alpha1.PaymentJob{})
		s.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "deleted at once, got %v", err)
	})
}

func TestTenantIsolation(t *testing.T) {
	// One provider account shared by two tenants.
	s := newScenario(t, withNamespaces(2))
	ns1, ns2 := s.namespaces[0], s.namespaces[1]

	same := keyed("invoice-2026-0042")
	createJob(t, ns1, "invoice", same)
	createJob(t, ns2, "invoice", same)
	j1 := waitForPhase(t, ns1, "invoice", paymentsv1alpha1.PhaseCompleted)
	j2 := waitForPhase(t, ns2, "invoice", paymentsv1alpha1.PhaseCompleted)

	s.Expect(j1.Status.IdempotencyKey).To(Equal(ns1 + "/invoice-2026-0042"))
	s.Expect(j2.Status.IdempotencyKey).To(Equal(ns2 + "/invoice-2026-0042"))
	s.Expect(j1.Status.ProviderResponse.ID).NotTo(Equal(j2.Status.ProviderResponse.ID))
	s.Expect(j1.Status.ProviderResponse.Replayed || j2.Status.ProviderResponse.Replayed).To(BeFalse())
	s.expectCharges(2)
}

func TestJobWaitsForItsProvider(t *testing.T) {
	s := newScenario(t, withoutSecret())

	s.create("waiting")
	s.Eventually(func(g Gomega) {
		job := s.get(g, "waiting")
		g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhasePending))
		ready := condition(job, paymentsv1alpha1.ConditionReady)
		g.Expect(ready.Reason).To(Equal(paymentsv1alpha1.ReasonProviderNotReady))
		g.Expect(ready.Message).To(ContainSubstring(paymentsv1alpha1.ReasonSecretNotFound))
		g.Expect(condition(job, paymentsv1alpha1.ConditionReconciling).Status).To(Equal(metav1.ConditionTrue))
	}, timeout).Should(Succeed())
	s.Expect(s.sandbox.Calls()).To(BeZero())
	s.Expect(providerReady(s, s.ns).Reason).To(Equal(paymentsv1alpha1.ReasonSecretNotFound))

	createSecret(t, s.ns)
	job := s.waitForPhase("waiting", paymentsv1alpha1.PhaseCompleted)
	s.expectCharges(1)
	for _, c := range job.Status.Conditions {
		s.Expect(c.Message).NotTo(ContainSubstring(testSecretValue))
	}
}

// TestCrashAfterOutcomeBeforeFinalizerRemoval: a process recorded Completed
// and died before removing the finalizer. The next one only removes it.
func TestCrashAfterOutcomeBeforeFinalizerRemoval(t *testing.T) {
	s := newScenario(t, withoutManager())
	now := time.Now()
	charged := func(name string) *payment.Outcome {
		return &payment.Outcome{ID: "pi_" + name, Status: "succeeded", Amount: 2000, Currency: "usd", Created: now}
	}
	// "recorded": the outcome was written, then the manager died before
	// the finalizer went. "legacy": finished by an operator version that
	// did not label finished jobs.
	s.leftBehind("recorded", now, true, charged("recorded"))
	s.leftBehind("legacy", now, false, charged("legacy"))

	s.start(managerConfig{})
	for _, name := range []string{"recorded", "legacy"} {
		job := s.waitForFinished(name)
		s.Expect(job.Status.ProviderResponse.ID).To(Equal("pi_" + name))
		s.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted))
	}
	s.Expect(s.sandbox.Calls()).To(BeZero())
}

func TestRateLimitIsSharedAndHoldsNoWorker(t *testing.T) {
	// The limited provider: 2 requests per second, no burst above one:
	// its ten jobs take 4.5 s, a window the unlimited job's creation
	// falls in even on a loaded machine (at 5/s, 1.8 s was too short
	// beside a busy CI runner).
	s := newScenario(t, withoutManager(), withProvider(func(pp *paymentsv1alpha1.PaymentProvider) {
		pp.Spec.RequestsPerSecond = ptr.To[int32](2)
		pp.Spec.Burst = ptr.To[int32](1)
	}))
	// An unlimited one in the same namespace.
	fast := getProvider(s, s.ns).DeepCopy()
	fast.ObjectMeta = metav1.ObjectMeta{Name: "unlimited", Namespace: s.ns}
	fast.Spec.RequestsPerSecond, fast.Spec.Burst = nil, nil
	s.Expect(k8sClient.Create(context.Background(), fast)).To(Succeed())

	// Every charge reports its provider and its time, in the order of the
	// calls; the room is for more calls than jobs, which the test counts.
	type call struct {
		limited bool
		at      time.Time
	}
	const jobs = 10
	calls := make(chan call, 4*jobs)
	timed := func(limited bool) payment.Provider {
		return providerFunc(func(ctx context.Context, key string, req payment.ChargeRequest) (payment.Outcome, error) {
			calls <- call{limited: limited, at: time.Now()}
			return s.sandbox.Charge(ctx, key, req)
		})
	}
	s.start(managerConfig{
		concurrency: 1, // one worker: a job waiting for a token must not hold it
		build: func(spec paymentsv1alpha1.PaymentProviderSpec, _ string) (payment.Provider, error) {
			return timed(spec.RequestsPerSecond != nil), nil
		},
	})

	for i := range jobs {
		s.create(fmt.Sprintf("limited-%d", i))
	}
	// The job of the unlimited provider is not stuck behind the others.
	s.run("other", paymentsv1alpha1.PhaseCompleted, func(spec *paymentsv1alpha1.PaymentJobSpec) { spec.ProviderRef.Name = "unlimited" })
	for i := range jobs {
		s.waitForPhase(fmt.Sprintf("limited-%d", i), paymentsv1alpha1.PhaseCompleted)
	}

	var limitedCalls []time.Time
	var otherCall time.Time
	for len(calls) > 0 {
		c := <-calls
		if c.limited {
			limitedCalls = append(limitedCalls, c.at)
		} else {
			otherCall = c.at
		}
	}
	s.Expect(limitedCalls).To(HaveLen(jobs), "one call per job")
	span := limitedCalls[jobs-1].Sub(limitedCalls[0])
	// 10 calls at 2/s with a burst of 1 need at least 9 intervals of 500ms.
	s.Expect(span).To(BeNumerically(">=", 4200*time.Millisecond), "calls spread by the token bucket")
	s.Expect(otherCall).To(BeTemporally("<", limitedCalls[jobs-1]),
		"the unlimited provider's job was charged while limited jobs still waited")
	s.expectCharges(jobs + 1)
}

// TestOldProcessingJobIsLookedUpBeforeCharging: a job Processing for longer
// than the provider remembers keys is looked up by its key, not charged.
func TestOldProcessingJobIsLookedUpBeforeCharging(t *testing.T) {
	s := newScenario(t, withoutManager())

	// Two days ago a process claimed the job, charged, and died.
	sent := chargeOf(s.ns, "old")
	charged, err := s.sandbox.Charge(context.Background(), sent.Key, sent.Request)
	s.Expect(err).NotTo(HaveOccurred())
	s.leftBehind("old", time.Now().Add(-48*time.Hour), true, nil)

	s.start(managerConfig{keyRetention: 23 * time.Hour})
	job := s.waitForPhase("old", paymentsv1alpha1.PhaseCompleted)

	s.Expect(job.Status.ProviderResponse.ID).To(Equal(charged.ID))
	s.Expect(job.Status.ProviderResponse.Replayed).To(BeTrue())
	s.Expect(s.sandbox.Lookups()).To(Equal(int64(1)))
	s.Expect(s.engine.Stats().Requests).To(Equal(int64(1)), "no create request after the lookup found the charge")
	s.expectCharges(1)
}

// TestHostileProviderAnswersStayBounded: whatever a provider answers, the
// status stays small and valid, so the outcome can always be recorded.
func TestHostileProviderAnswersStayBounded(t *testing.T) {
	huge := strings.Repeat("x", 10<<20)
	s := newScenario(t, withManager(managerConfig{
		provider: providerFunc(func(_ context.Context, key string, _ payment.ChargeRequest) (payment.Outcome, error) {
			if strings.HasSuffix(key, "/huge-success") {
				return payment.Outcome{ID: "pi_" + huge, Status: huge, Amount: 2000, Currency: huge, Created: time.Now()}, nil
			}
			return payment.Outcome{}, &payment.Refusal{Class: payment.ErrDeclined, Reason: "not a reason! " + huge, Message: huge}
		}),
	}))
	s.create("huge-success")
	s.create("huge-refusal")
	ok := s.waitForPhase("huge-success", paymentsv1alpha1.PhaseCompleted)
	failed := s.waitForPhase("huge-refusal", paymentsv1alpha1.PhaseFailed)

	s.Expect(len(ok.Status.ProviderResponse.ID)).To(BeNumerically("<=", 255+3))
	s.Expect(ok.Status.ProviderResponse.ID).To(HavePrefix("pi_xxx"))
	s.Expect(len(ok.Status.ProviderResponse.Status)).To(BeNumerically("<=", 64+3))
	s.Expect(failed.Status.Failure.Reason).To(Equal(paymentsv1alpha1.ReasonPaymentRefused))
	s.Expect(len(failed.Status.Failure.Message)).To(BeNumerically("<=", 1024+3))
	for _, j := range []*paymentsv1alpha1.PaymentJob{ok, failed} {
		for _, c := range j.Status.Conditions {
			s.Expect(len(c.Message)).To(BeNumerically("<=", 32768), "condition messages are bounded by the API")
		}
	}
}
