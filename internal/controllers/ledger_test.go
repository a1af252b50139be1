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
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

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

// ledgerEntry is the entry the pages hold under key.
func ledgerEntry(g Gomega, key string) paymentsv1alpha1.LedgerEntry {
	var pages paymentsv1alpha1.PaymentLedgerList
	g.Expect(k8sClient.List(context.Background(), &pages)).To(Succeed())
	for _, p := range pages.Items {
		for _, e := range p.Entries {
			if e.Key == key {
				return e
			}
		}
	}
	g.Expect(key).To(BeEmpty(), "no ledger entry under the key")
	return paymentsv1alpha1.LedgerEntry{}
}

// expectFoundInLedger checks that the re-created job was finished from the
// ledger as the first job's outcome, with no provider call.
func expectFoundInLedger(g Gomega, r recreation) {
	g.Expect(r.again.Status.Phase).To(Equal(r.first.Status.Phase))
	g.Expect(condition(r.again, paymentsv1alpha1.ConditionReady).Reason).To(Equal(paymentsv1alpha1.ReasonFoundInLedger))
	g.Expect(r.again.Status.Attempts).To(BeZero(), "no claim, no provider call")
	g.Expect(r.again.Status.IdempotencyKey).To(Equal(r.first.Status.IdempotencyKey))
	g.Expect(r.calls).To(BeZero(), "no provider call for the re-created job")
	g.Eventually(func(g Gomega) []string { return eventReasons(g, r.again.Namespace, r.again.Name) }, timeout).
		Should(ContainElement(paymentsv1alpha1.ReasonFoundInLedger))
}

// (a) A Completed job, deleted and created again after the provider forgot
// its keys, through a provider that cannot look keys up: finished from the
// ledger, with no provider call and no second charge.
func TestRecreatedJobIsFinishedFromTheLedger(t *testing.T) {
	s := newScenario(t, withoutLookups())

	r := s.recreate("invoice", func(first *paymentsv1alpha1.PaymentJob) {
		s.Expect(first.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted))
		s.Expect(ledgerEntries(s, s.ns)).To(HaveKeyWithValue(first.Status.IdempotencyKey, 1))
		e := ledgerEntry(s, first.Status.IdempotencyKey)
		s.Expect(e.Amount).To(Equal(first.Spec.Amount), "the money, for reconciliation after the job is gone")
		s.Expect(e.Currency).To(Equal(strings.ToLower(first.Spec.Currency)))
	})
	s.Expect(r.forgotten).To(Equal(1))
	expectFoundInLedger(s, r)
	s.Expect(r.again.Status.ProviderResponse.ID).To(Equal(r.first.Status.ProviderResponse.ID))
	s.expectCharges(1)
	s.Expect(ledgerEntries(s, s.ns)).To(HaveKeyWithValue(r.first.Status.IdempotencyKey, 1), "recorded once")
}

// A refused payment is recorded too: created again, it is Failed from the
// ledger, not sent again.
func TestRecreatedRefusedJobFailsFromTheLedger(t *testing.T) {
	s := newScenario(t, withoutLookups())

	r := s.recreate("declined", func(first *paymentsv1alpha1.PaymentJob) {
		s.Expect(first.Status.Phase).To(Equal(paymentsv1alpha1.PhaseFailed))
	}, declinedCard)
	expectFoundInLedger(s, r)
	s.Expect(r.again.Status.Failure.Reason).To(Equal(r.first.Status.Failure.Reason))

	// The same key for another request is not this payment: it stalls.
	s.create("other", keyed("invoice-7"))
	s.waitForFinished("other")
	s.create("other-amount", keyed("invoice-7"), func(spec *paymentsv1alpha1.PaymentJobSpec) { spec.Amount = 999 })
	s.waitForStall("other-amount", paymentsv1alpha1.ReasonChargeMismatch)
	s.expectCharges(1)
}

// (b) The same after the namespace's PaymentProvider and Secret were deleted
// and created again: a new PaymentProvider object, the same account.
func TestRecreatedJobAfterProviderAndSecretAreRecreated(t *testing.T) {
	ctx := context.Background()
	s := newScenario(t, withoutLookups())

	var oldUID types.UID
	r := s.recreate("invoice", func(*paymentsv1alpha1.PaymentJob) {
		pp := getProvider(s, s.ns)
		oldUID = pp.UID
		deleteProviderAndSecret(s, s.ns)
		// As `kubectl delete` does, wait for the old provider to be gone:
		// its finalizer comes off once no job uses it.
		s.Eventually(func(g Gomega) {
			var providers paymentsv1alpha1.PaymentProviderList
			g.Expect(k8sClient.List(ctx, &providers, client.InNamespace(s.ns))).To(Succeed())
			g.Expect(providers.Items).To(BeEmpty())
		}, timeout).Should(Succeed())
		createSecret(t, s.ns)
		s.Expect(k8sClient.Create(ctx, &paymentsv1alpha1.PaymentProvider{
			ObjectMeta: metav1.ObjectMeta{Name: providerName, Namespace: s.ns},
			Spec:       pp.Spec,
		})).To(Succeed())
	})
	expectFoundInLedger(s, r)
	s.Expect(r.again.Status.ProviderResponse.ID).To(Equal(r.first.Status.ProviderResponse.ID))
	s.Expect(r.again.Status.Provider.UID).NotTo(Equal(string(oldUID)), "the job's own provider object")
	s.Expect(r.again.Status.Provider.Endpoint).To(Equal(r.first.Status.Provider.Endpoint), "where the payment was made")
	s.expectCharges(1)
}

// (c) The TTL deletes a finished job and the ledger keeps its record. A
// self-healing GitOps loop that creates the manifest again whenever it is
// missing brings it back once: it is finished from the ledger and kept, so
// the loop stops.
func TestTTLDeletesFinishedJobsAndSelfHealingDoesNotBounce(t *testing.T) {
	ctx := context.Background()
	s := newScenario(t, withoutLookups())
	m := s.manager
	withTTL := func(spec *paymentsv1alpha1.PaymentJobSpec) { spec.TTLSecondsAfterFinished = ptr.To[int32](1) }

	first := s.create("invoice", withTTL)
	waitForGone(s, first, "deleted after its TTL")
	s.Expect(m.recorded(s, s.ns, "invoice").Outcome).To(Equal(paymentsv1alpha1.LedgerCompleted),
		"the ledger keeps the deleted job's outcome")
	s.expectCharges(1)
	s.engine.ForgetKeys()
	before := m.counter.writes.Load()

	// The self-healing loop: whenever the manifest is missing, create it.
	var recreations atomic.Int64
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			job := &paymentsv1alpha1.PaymentJob{ObjectMeta: metav1.ObjectMeta{Name: "invoice", Namespace: s.ns}, Spec: jobSpec()}
			withTTL(&job.Spec)
			if k8sClient.Create(ctx, job) == nil {
				recreations.Add(1)
			}
		}
	}()
	defer func() { close(stop); <-stopped }()

	again := s.waitForFinished("invoice")
	s.Expect(condition(again, paymentsv1alpha1.ConditionReady).Reason).To(Equal(paymentsv1alpha1.ReasonFoundInLedger))
	// The outcome and the finish, counted once the manager's client has
	// its answers (the test may read the job before that).
	s.Eventually(func() int64 { return m.counter.writes.Load() - before }, timeout).Should(Equal(int64(2)),
		"writes for the re-created job: the outcome, the finish; writes:\n%s", m.counter)
	writes := m.counter.writes.Load()
	// Five TTLs later: the same object, no more writes, no new charge.
	s.Consistently(func(g Gomega) {
		g.Expect(s.get(g, "invoice").UID).To(Equal(again.UID))
	}, 5*time.Second, 100*time.Millisecond).Should(Succeed())
	s.Expect(recreations.Load()).To(Equal(int64(1)), "the loop created the manifest again once")
	s.Expect(m.counter.writes.Load()).To(Equal(writes), "a job finished from the ledger is left alone; writes:\n%s", m.counter)
	s.expectCharges(1)
	t.Logf("self-healing loop: %d re-creation, %d job writes for it, none in the five TTLs after", recreations.Load(), writes-before)
}

// The manager's default TTL applies to jobs without one; the job's own
// TTL wins.
func TestDefaultTTLAppliesToJobsWithoutOne(t *testing.T) {
	// Another team's jobs, finished by a manager of its own without a TTL.
	other := newScenario(t)
	theirs := other.create("theirs")
	other.waitForFinished("theirs")
	s := newScenario(t, withManager(managerConfig{ttl: ttlZero}))

	gone := s.create("gone")
	s.create("kept", func(spec *paymentsv1alpha1.PaymentJobSpec) { spec.TTLSecondsAfterFinished = ptr.To[int32](3600) })
	waitForGone(s, gone)
	job := s.waitForFinished("kept")
	s.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted))
	// A manager restricted to namespaces sweeps only those.
	s.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(theirs), &paymentsv1alpha1.PaymentJob{})).To(Succeed())
}

// stall creates the job name with a backoffLimit of zero: the job stalls
// after its first attempt, when that attempt's outcome is uncertain.
func (s *scenario) stall(name string) {
	s.t.Helper()
	s.create(name, backoffLimit(0))
	waitForJob(s.t, s.ns, name, "stalled", func(g Gomega, job *paymentsv1alpha1.PaymentJob) {
		g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
		expectStalled(g, job, "")
	})
}

// expectRefused waits until the job has a ResolutionRefused event whose
// message holds want.
func (s *scenario) expectRefused(name, want string) {
	s.t.Helper()
	s.Eventually(func(g Gomega) []string { return refusals(g, s.ns, name) }, timeout).
		Should(ContainElement(ContainSubstring(want)))
}

// (d) A person resolves a Stalled job: each value, a refused one, and one on
// a job that is not Stalled. Nothing is ever charged by a resolution.
func TestResolvingAStalledJob(t *testing.T) {
	t.Parallel()

	t.Run("charged=<id> that the provider holds", func(t *testing.T) {
		s := newScenario(t)
		// Every answer is lost after the charge: the job cannot know.
		s.engine.FailNextAny(sandbox.FaultAfterCommit, 1_000_000)
		s.stall("lost")
		intent, ok := s.engine.LookupByKey(payment.SentKey(s.ns, "lost"))
		s.Expect(ok).To(BeTrue())
		charges := s.engine.Stats().Charges

		s.resolve("lost", "charged="+intent.ID)
		job := s.waitForFinished("lost")
		s.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted))
		s.Expect(job.Status.ProviderResponse.ID).To(Equal(intent.ID))
		s.Expect(job.Status.Resolution).NotTo(BeNil())
		s.Expect(job.Status.Resolution.Value).To(Equal("charged=" + intent.ID))
		s.Expect(job.Status.Resolution.Verified).To(BeTrue())
		s.Expect(job.Status.Resolution.By).NotTo(BeEmpty())
		s.Expect(condition(job, paymentsv1alpha1.ConditionReady).Reason).To(Equal(paymentsv1alpha1.ReasonResolved))
		s.expectEvent("lost", paymentsv1alpha1.ReasonResolved)
		e := s.manager.recorded(s, s.ns, "lost")
		s.Expect(e.Charge).To(Equal(intent.ID))
		s.Expect(e.ResolvedBy).To(Equal(job.Status.Resolution.By))
		s.expectCharges(charges, "a resolution never charges")
	})

	// A provider whose lookup shows a charge at once (no search lag): the
	// resolutions are checked as soon as they are set.
	t.Run("not-charged, when the provider holds nothing", func(t *testing.T) {
		s := newScenario(t, withProvider(searchLag(0)))
		s.engine.FailNextAny(sandbox.FaultBeforeCommit, 1_000_000)
		s.stall("never")

		s.resolve("never", "not-charged")
		job := s.waitForFinished("never")
		s.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseFailed))
		s.Expect(job.Status.Failure.Reason).To(Equal(paymentsv1alpha1.ReasonResolved))
		s.Expect(job.Status.Resolution.Verified).To(BeTrue())
		s.Expect(s.manager.recorded(s, s.ns, "never").Outcome).To(Equal(paymentsv1alpha1.LedgerFailed))
		s.expectCharges(0)
	})

	t.Run("refused: a charge the provider does not know, and not-charged when it holds one", func(t *testing.T) {
		s := newScenario(t, withProvider(searchLag(0)))
		s.engine.FailNextAny(sandbox.FaultAfterCommit, 1_000_000)
		s.stall("lost")
		charges := s.engine.Stats().Charges

		for _, r := range []struct{ value, refusal string }{
			{"charged=pi_nobody_knows", "does not know a charge pi_nobody_knows"},
			{"not-charged", "the provider holds charge"},
			{"maybe", "is not a resolution"},
		} {
			s.resolve("lost", r.value)
			s.expectRefused("lost", r.refusal)
		}
		job := s.job("lost")
		s.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing), "still uncertain")
		s.Expect(job.Status.Resolution).To(BeNil())
		s.expectCharges(charges)
	})

	t.Run("refused on a job that is not Stalled", func(t *testing.T) {
		s := newScenario(t)
		s.engine.FailNextAny(sandbox.FaultBeforeCommit, 1_000_000)
		s.create("retrying", backoffLimit(100))
		s.waitForPhase("retrying", paymentsv1alpha1.PhaseProcessing)

		s.resolve("retrying", "not-charged")
		s.expectRefused("retrying", "not Stalled")
		job := s.job("retrying")
		s.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
		s.Expect(job.Status.Resolution).To(BeNil())
	})
}

// (e) Two managers without leader election complete 200 jobs: every
// outcome is in the ledger exactly once.
func TestTwoManagersRecordEveryOutcomeOnce(t *testing.T) {
	both := managerConfig{concurrency: 8}
	s := newScenario(t, withManager(both))
	s.start(both)
	const jobs = 200
	for i := range jobs {
		s.create(fmt.Sprintf("job-%03d", i))
	}
	waitForJobs(t, s.ns, jobs, func(_ Gomega, j *paymentsv1alpha1.PaymentJob) bool {
		return j.Labels[paymentsv1alpha1.LabelFinished] == "true"
	})
	entries := ledgerEntries(s, s.ns)
	s.Expect(entries).To(HaveLen(jobs))
	for i := range jobs {
		s.Expect(entries).To(HaveKeyWithValue(payment.SentKey(s.ns, fmt.Sprintf("job-%03d", i)), 1))
	}
}

// A crash between the outcome write and the ledger record: the outcome is
// in the job, the ledger append failed. The finalizer stays on until a later
// pass (here, another manager) has recorded it; only then is the job
// finished, so it cannot be deleted before the ledger holds it.
func TestOutcomeIsRecordedBeforeTheFinalizerComesOff(t *testing.T) {
	s := newScenario(t, withoutManager())
	ledgerDown := errors.New("the ledger cannot be written")
	var refused atomic.Int64
	// refuseLedger fails the writes of ledger pages and lets the others go.
	refuseLedger := func(obj client.Object, write func() error) error {
		if _, ok := obj.(*paymentsv1alpha1.PaymentLedger); ok {
			refused.Add(1)
			return ledgerDown
		}
		return write()
	}
	broken := s.start(managerConfig{intercept: interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return refuseLedger(obj, func() error { return c.Create(ctx, obj, opts...) })
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return refuseLedger(obj, func() error { return c.Update(ctx, obj, opts...) })
		},
	}})
	job := s.run("invoice", paymentsv1alpha1.PhaseCompleted)
	s.Eventually(refused.Load, timeout).Should(BeNumerically(">", 0))
	s.Consistently(func(g Gomega) {
		j := s.get(g, "invoice")
		g.Expect(j.Finalizers).To(ContainElement(paymentsv1alpha1.Finalizer), "finished before the ledger held it")
		g.Expect(j.Labels).NotTo(HaveKey(paymentsv1alpha1.LabelFinished))
	}, 2*time.Second, 100*time.Millisecond).Should(Succeed())
	// Deleting it now does not lose the record: the finalizer holds it.
	s.Expect(k8sClient.Delete(context.Background(), job)).To(Succeed())
	broken.stop()

	m := s.start(managerConfig{})
	waitForGone(s, job, "released once recorded")
	s.Expect(m.recorded(s, s.ns, "invoice").Outcome).To(Equal(paymentsv1alpha1.LedgerCompleted))
	s.expectCharges(1)
}

// gatedCharges is a provider whose charges of one amount, once made, wait
// until the test opens the gate before they answer: a manager killed (or
// slow) between the charge and the mark, while another job under the same
// key finishes meanwhile.
type gatedCharges struct {
	p       payment.Provider
	amount  int64
	reached chan struct{}
	once    sync.Once
	gate    chan struct{}
}

func (c *gatedCharges) Charge(ctx context.Context, key string, req payment.ChargeRequest) (payment.Outcome, error) {
	o, err := c.p.Charge(ctx, key, req)
	if req.Amount == c.amount {
		c.once.Do(func() { close(c.reached) })
		select {
		case <-c.gate:
		case <-ctx.Done():
			return payment.Outcome{}, ctx.Err()
		}
	}
	return o, err
}

// Two jobs with one key and different amounts: A is charged, and before
// its answer is written B is refused (the key was used for another
// request) and its Failed outcome recorded; A's answer comes then. The ledger keeps B's outcome (the first), so A is not recorded:
// A stays Completed with its finalizer, Stalled LedgerConflict, announced
// once, and no TTL deletes it, not even after a person took its finalizer
// off; B, whose outcome is the ledger's, is deleted by the same TTL.
func TestJobWhoseOutcomeIsNotTheLedgersStallsAndIsKept(t *testing.T) {
	gated := &gatedCharges{amount: 2000, reached: make(chan struct{}), gate: make(chan struct{})}
	s := newScenario(t, withoutManager())
	gated.p = s.sandbox
	s.manager = s.start(managerConfig{provider: gated, ttl: ttlZero, sweep: 200 * time.Millisecond})

	s.create("a", keyed("order-9"))
	s.Eventually(gated.reached, timeout).Should(BeClosed(), "A is charged")
	s.create("b", keyed("order-9"), func(spec *paymentsv1alpha1.PaymentJobSpec) { spec.Amount = 999 })
	var heldB ledger.Entry
	s.Eventually(func(g Gomega) {
		heldB = s.manager.recorded(g, s.ns, "order-9")
		g.Expect(heldB.Outcome).To(Equal(paymentsv1alpha1.LedgerFailed))
	}, timeout).Should(Succeed(), "B's refusal is recorded first")
	waitForGone(s, &paymentsv1alpha1.PaymentJob{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "b"}},
		"B's outcome is the ledger's: the TTL deletes it")
	close(gated.gate)

	a := s.waitForStall("a", paymentsv1alpha1.ReasonLedgerConflict)
	s.Expect(a.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted), "A was charged, and says so")
	s.Expect(condition(a, paymentsv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	s.Expect(a.Finalizers).To(ContainElement(paymentsv1alpha1.Finalizer))
	s.Expect(a.Labels).NotTo(HaveKey(paymentsv1alpha1.LabelFinished))
	msg := condition(a, paymentsv1alpha1.ConditionStalled).Message
	s.Expect(msg).To(ContainSubstring(a.Status.IdempotencyKey))
	s.Expect(msg).NotTo(ContainSubstring("999"), "nothing of the other object's payment")
	s.Expect(msg).NotTo(ContainSubstring(heldB.Reason), "nothing of the other object's payment")
	s.Expect(s.manager.recorded(s, s.ns, "order-9").Outcome).To(Equal(paymentsv1alpha1.LedgerFailed), "the first outcome stays")
	s.expectCharges(1)
	s.Expect(jobsGauge(t, "paymentjob_ledger_conflicts")).To(BeNumerically(">=", 1))

	// Announced once: another pass (a label from a GitOps tool) asks the
	// ledger again and announces nothing.
	s.update("a", func(job *paymentsv1alpha1.PaymentJob) { metav1.SetMetaDataLabel(&job.ObjectMeta, "team", "billing") })
	conflictEvents := func(g Gomega) int {
		n := 0
		for _, r := range eventReasons(g, s.ns, "a") {
			if r == paymentsv1alpha1.ReasonLedgerConflict {
				n++
			}
		}
		return n
	}
	s.Eventually(conflictEvents, timeout).Should(Equal(1))
	s.Consistently(conflictEvents, 2*time.Second, 100*time.Millisecond).Should(Equal(1))

	// A person takes the finalizer off (the money is settled): the job is
	// finished, and still no TTL deletes it.
	s.update("a", func(job *paymentsv1alpha1.PaymentJob) {
		job.Finalizers = slices.DeleteFunc(job.Finalizers, func(f string) bool { return f == paymentsv1alpha1.Finalizer })
	})
	s.Eventually(func(g Gomega) map[string]string { return s.get(g, "a").Labels }, timeout).
		Should(HaveKeyWithValue(paymentsv1alpha1.LabelFinished, "true"))
	s.Consistently(func(g Gomega) {
		a := s.get(g, "a")
		expectStalled(g, a, paymentsv1alpha1.ReasonLedgerConflict)
	}, 2*time.Second, 100*time.Millisecond).Should(Succeed(), "the TTL keeps a job whose outcome is not the ledger's")
}
