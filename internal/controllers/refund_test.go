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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// The refunds of the engine's second kind, against the API server and the
// sandbox: what a refund moves is read at the sandbox (its refunds and
// what it holds refunded per charge), never from the operator's status.

// createRefund creates the PaymentRefund name of the job in the scenario's
// namespace, for amount (0: the whole charge).
func (s *scenario) createRefund(name, job string, amount int64, mutate ...func(*paymentsv1alpha1.PaymentRefundSpec)) {
	s.t.Helper()
	rf := &paymentsv1alpha1.PaymentRefund{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
		Spec: paymentsv1alpha1.PaymentRefundSpec{
			ProviderRef:   paymentsv1alpha1.ProviderReference{Name: providerName},
			PaymentJobRef: paymentsv1alpha1.PaymentJobReference{Name: job},
			Reason:        paymentsv1alpha1.RefundRequestedByCustomer,
		},
	}
	if amount > 0 {
		rf.Spec.Amount = ptr.To(amount)
	}
	for _, m := range mutate {
		m(&rf.Spec)
	}
	s.Expect(k8sClient.Create(context.Background(), rf)).To(Succeed())
}

// getRefund reads the refund name from the API server.
func (s *scenario) getRefund(g Gomega, name string) *paymentsv1alpha1.PaymentRefund {
	rf := &paymentsv1alpha1.PaymentRefund{}
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: name}, rf)).To(Succeed())
	return rf
}

// waitForRefund waits until the refund name is in phase with the Ready
// reason, and returns it.
func (s *scenario) waitForRefund(name string, phase paymentsv1alpha1.PaymentJobPhase, reason string) *paymentsv1alpha1.PaymentRefund {
	s.t.Helper()
	var rf *paymentsv1alpha1.PaymentRefund
	s.Eventually(func(g Gomega) {
		rf = s.getRefund(g, name)
		g.Expect(rf.Status.Phase).To(Equal(phase), "refund %s: %+v", name, rf.Status.Conditions)
		ready := meta.FindStatusCondition(rf.Status.Conditions, paymentsv1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(reason), "refund %s: %s", name, ready.Message)
	}).WithTimeout(30 * time.Second).Should(Succeed())
	return rf
}

// refundsAt are the refunds the sandbox holds on the job's charge.
func (s *scenario) refundsAt(job string) []sandbox.Refund {
	s.t.Helper()
	return s.engine.ListRefunds(s.job(job).Status.ProviderResponse.ID)
}

// expectRefundedAt checks that the refund's status names exactly one of
// the sandbox's refunds, for amount.
func (s *scenario) expectRefundedAt(rf *paymentsv1alpha1.PaymentRefund, job string, amount int64) { //nolint:unparam // each scenario refunds its job "invoice"; the calls name it
	s.t.Helper()
	resp := rf.Status.ProviderResponse
	s.Expect(resp).NotTo(BeNil())
	var found []sandbox.Refund
	for _, r := range s.refundsAt(job) {
		if r.ID == resp.ID {
			found = append(found, r)
		}
	}
	s.Expect(found).To(HaveLen(1), "refund %s names one refund at the sandbox", rf.Name)
	s.Expect(found[0].Amount).To(Equal(amount))
	s.Expect(rf.Status.Charge.ID).To(Equal(s.job(job).Status.ProviderResponse.ID))
}

func TestRefundsNeverGoBeyondTheCharge(t *testing.T) {
	s := newScenario(t)
	s.run("invoice", paymentsv1alpha1.PhaseCompleted)

	s.createRefund("first", "invoice", 800)
	s.expectRefundedAt(s.waitForRefund("first", paymentsv1alpha1.PhaseCompleted, "Succeeded"), "invoice", 800)
	s.createRefund("second", "invoice", 700)
	s.expectRefundedAt(s.waitForRefund("second", paymentsv1alpha1.PhaseCompleted, "Succeeded"), "invoice", 700)

	// 600 is more than the 500 left: Failed, and nothing sent.
	s.createRefund("third", "invoice", 600)
	third := s.waitForRefund("third", paymentsv1alpha1.PhaseFailed, "RefundExceedsCharge")
	s.Expect(third.Status.Failure.Message).To(ContainSubstring("500 of 2000"))
	s.Expect(third.Status.Attempts).To(BeZero(), "never claimed")
	s.Expect(s.refundsAt("invoice")).To(HaveLen(2), "the third refund sent nothing")
	s.Expect(s.engine.Refunded(s.job("invoice").Status.ProviderResponse.ID)).To(Equal(int64(1500)))

	// The whole charge (no amount) is more than what is left too.
	s.createRefund("all", "invoice", 0)
	s.waitForRefund("all", paymentsv1alpha1.PhaseFailed, "RefundExceedsCharge")
	s.Expect(s.refundsAt("invoice")).To(HaveLen(2))
}

func TestRefundOfTheWholeCharge(t *testing.T) {
	s := newScenario(t)
	s.run("invoice", paymentsv1alpha1.PhaseCompleted)
	s.createRefund("all", "invoice", 0)
	rf := s.waitForRefund("all", paymentsv1alpha1.PhaseCompleted, "Succeeded")
	s.expectRefundedAt(rf, "invoice", 2000)
	s.Expect(rf.Status.IdempotencyKey).To(Equal(s.ns+".refund/all"), "a refund's key is never a job's")
	s.Eventually(func(g Gomega) {
		rf := s.getRefund(g, "all")
		g.Expect(rf.Finalizers).To(BeEmpty())
		g.Expect(rf.Labels).To(HaveKeyWithValue(paymentsv1alpha1.LabelFinished, "true"))
	}).WithTimeout(30*time.Second).Should(Succeed(), "finished: its outcome in the ledger, its finalizer off")
	s.Expect(s.manager.recorded(s, s.ns+".refund", "all").Charge).To(Equal(rf.Status.ProviderResponse.ID))
	// The engine's metrics say which kind a pass was of: the refund's
	// passes are not counted as a job's.
	for _, kind := range []string{"PaymentJob", "PaymentRefund"} {
		_, series := metricValue(t, "paymentjob_reconcile_duration_seconds", map[string]string{"kind": kind})
		s.Expect(series).To(BeNumerically(">", 0), "passes of %ss", kind)
	}
	succeeded, _ := metricValue(t, "paymentjob_refunds_total", map[string]string{"outcome": "succeeded"})
	s.Expect(succeeded).To(BeNumerically(">=", 1))
}

func TestRefundWaitsForItsPayment(t *testing.T) {
	s := newScenario(t)
	s.create("invoice", func(spec *paymentsv1alpha1.PaymentJobSpec) { spec.Suspend = ptr.To(true) })
	s.createRefund("back", "invoice", 500)
	s.waitForRefund("back", paymentsv1alpha1.PhasePending, "PaymentNotCompleted")
	s.Expect(s.engine.Stats().Charges).To(BeZero())

	s.update("invoice", func(j *paymentsv1alpha1.PaymentJob) { j.Spec.Suspend = ptr.To(false) })
	s.waitForPhase("invoice", paymentsv1alpha1.PhaseCompleted)
	s.expectRefundedAt(s.waitForRefund("back", paymentsv1alpha1.PhaseCompleted, "Succeeded"), "invoice", 500)
}

func TestRefundOfAFailedPaymentFails(t *testing.T) {
	s := newScenario(t)
	s.run("declined", paymentsv1alpha1.PhaseFailed, declinedCard)
	s.createRefund("back", "declined", 500)
	rf := s.waitForRefund("back", paymentsv1alpha1.PhaseFailed, "PaymentFailed")
	s.Expect(rf.Status.Attempts).To(BeZero())
}

func TestRefundAfterItsJobWasDeletedByItsTTL(t *testing.T) {
	s := newScenario(t, withManager(managerConfig{ttl: ttlZero, sweep: 200 * time.Millisecond}))
	job := s.run("invoice", paymentsv1alpha1.PhaseCompleted, func(spec *paymentsv1alpha1.PaymentJobSpec) {
		spec.IdempotencyKey = "inv-2026-7"
	})
	charge := job.Status.ProviderResponse.ID
	waitForGone(s, job, "deleted by its TTL")

	// The job is gone: the refund names its key, and the ledger names
	// the charge; the provider gives its amount.
	s.createRefund("back", "invoice", 0, func(spec *paymentsv1alpha1.PaymentRefundSpec) {
		spec.PaymentJobRef.IdempotencyKey = "inv-2026-7"
		spec.TTLSecondsAfterFinished = ptr.To[int32](3600) // kept, to be read here
	})
	rf := s.waitForRefund("back", paymentsv1alpha1.PhaseCompleted, "Succeeded")
	s.Expect(rf.Status.Charge.ID).To(Equal(charge))
	s.Expect(rf.Status.Charge.Amount).To(Equal(int64(2000)))
	s.Expect(s.engine.ListRefunds(charge)).To(HaveLen(1))
	s.Expect(s.engine.Refunded(charge)).To(Equal(int64(2000)))
}

func TestRefundWithALostAnswerIsReplayed(t *testing.T) {
	s := newScenario(t)
	s.run("invoice", paymentsv1alpha1.PhaseCompleted)
	s.engine.FailNext(sandbox.FaultAfterCommit, 1)
	s.createRefund("back", "invoice", 900)
	rf := s.waitForRefund("back", paymentsv1alpha1.PhaseCompleted, "Succeeded")
	s.Expect(rf.Status.Attempts).To(BeNumerically(">=", 2), "the first answer was lost")
	s.Expect(rf.Status.ProviderResponse.Replayed).To(BeTrue())
	s.expectRefundedAt(rf, "invoice", 900)
	s.Expect(s.refundsAt("invoice")).To(HaveLen(1), "refunded once")
}

func TestRefundCreatedAgainIsFinishedFromTheLedger(t *testing.T) {
	s := newScenario(t)
	s.run("invoice", paymentsv1alpha1.PhaseCompleted)
	s.createRefund("back", "invoice", 300)
	first := s.waitForRefund("back", paymentsv1alpha1.PhaseCompleted, "Succeeded")
	s.Expect(k8sClient.Delete(context.Background(), first)).To(Succeed())
	waitForGone(s, first)

	// The provider forgot its keys; the manifest comes back from Git.
	s.engine.ForgetKeys()
	requests := s.engine.Stats().RefundRequests
	s.createRefund("back", "invoice", 300)
	again := s.waitForRefund("back", paymentsv1alpha1.PhaseCompleted, "FoundInLedger")
	s.Expect(again.Status.ProviderResponse.ID).To(Equal(first.Status.ProviderResponse.ID))
	s.Expect(s.engine.Stats().RefundRequests).To(Equal(requests), "no refund request")
	s.Expect(s.refundsAt("invoice")).To(HaveLen(1))
}

func TestRefundsRacingForTheLastOfACharge(t *testing.T) {
	s := newScenario(t)
	s.run("invoice", paymentsv1alpha1.PhaseCompleted)
	// Each fits alone, not both: one is refunded, the other fails with
	// the reason named, whether the operator sees the first in flight or
	// the provider refuses the second (the protocol table has that path).
	s.createRefund("one", "invoice", 1500)
	s.createRefund("two", "invoice", 1500)

	var completed, failed []*paymentsv1alpha1.PaymentRefund
	s.Eventually(func(g Gomega) {
		completed, failed = nil, nil
		for _, name := range []string{"one", "two"} {
			switch rf := s.getRefund(g, name); rf.Status.Phase {
			case paymentsv1alpha1.PhaseCompleted:
				completed = append(completed, rf)
			case paymentsv1alpha1.PhaseFailed:
				failed = append(failed, rf)
			}
		}
		g.Expect(len(completed) + len(failed)).To(Equal(2))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	s.Expect(completed).To(HaveLen(1))
	s.Expect(failed).To(HaveLen(1))
	s.Expect(failed[0].Status.Failure.Reason).To(Equal("RefundExceedsCharge"))
	s.expectRefundedAt(completed[0], "invoice", 1500)
	s.Expect(s.refundsAt("invoice")).To(HaveLen(1))
	s.Expect(s.engine.Refunded(s.job("invoice").Status.ProviderResponse.ID)).To(Equal(int64(1500)))
}

// TestRefundLosingTheRaceForTheLastOfAChargeAtStripe races a PaymentRefund
// against another refund of the same charge at the provider, through the
// real Stripe adapter: the PaymentRefund's request passes the operator's
// check and is in flight when the other refund (another operator's, or one
// made in the Dashboard) takes the rest of the charge. The sandbox refuses
// it as Stripe does, on the amount parameter without a code: the refund
// fails RefundExceedsCharge, and its condition and event speak of the
// refund, not of a charge.
func TestRefundLosingTheRaceForTheLastOfAChargeAtStripe(t *testing.T) {
	s := newScenario(t, overHTTP())
	s.engine.SetAmountTooLargeCode(false)
	s.run("invoice", paymentsv1alpha1.PhaseCompleted)
	charge := s.job("invoice").Status.ProviderResponse.ID

	late := s.engine.Hold()
	s.createRefund("late", "invoice", 1500)
	s.Eventually(late.Entered()).WithTimeout(30*time.Second).Should(Receive(), "the refund is sent")
	first := s.engine.Hold()
	made := make(chan error, 1)
	go func() {
		_, _, err := s.engine.CreateRefund("dashboard", sandbox.RefundParams{PaymentIntent: charge, Amount: 1500})
		made <- err
	}()
	s.Eventually(first.Entered()).WithTimeout(10 * time.Second).Should(Receive())
	first.Release()
	s.Eventually(made).WithTimeout(10*time.Second).Should(Receive(BeNil()), "the other refund takes the rest")
	late.Release()

	rf := s.waitForRefund("late", paymentsv1alpha1.PhaseFailed, "RefundExceedsCharge")
	s.Expect(rf.Status.Failure.Reason).To(Equal("RefundExceedsCharge"))
	s.Expect(rf.Status.Failure.Message).To(ContainSubstring("is greater than unrefunded amount on charge"))
	ready := meta.FindStatusCondition(rf.Status.Conditions, paymentsv1alpha1.ConditionReady)
	s.Expect(ready.Message).To(HavePrefix("The provider refused the refund; no money went back: "))
	s.Eventually(func(g Gomega) []string { return notes(g, s.ns, "late", "RefundExceedsCharge") }).
		WithTimeout(10 * time.Second).Should(ConsistOf(HavePrefix("The provider refused the refund: ")))
	for _, e := range eventsAbout(s, s.ns, "late") {
		s.Expect(e.Action).To(Equal("Refund"), "event %s", e.Reason)
		s.Expect(e.Note).NotTo(Or(ContainSubstring("nothing was charged"), ContainSubstring("refused the payment")))
	}

	s.Expect(s.engine.Refunded(charge)).To(Equal(int64(1500)), "only the other refund moved money")
	s.Expect(s.engine.Stats().RefundsByKey).NotTo(HaveKey(s.ns + ".refund/late"))
}

// TestRefundThroughEveryAdapter refunds through the real adapters against
// the sandbox's HTTP server: the Stripe adapter (POST /v1/refunds, the
// charge's refund list) and the HTTP contract (POST /http/refunds, the
// lookup's refunds), a partial refund, a refund whose answer is lost, and
// one beyond what is left.
func TestRefundThroughEveryAdapter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec func(base string) paymentsv1alpha1.PaymentProviderSpec
	}{
		{name: "stripe", spec: func(base string) paymentsv1alpha1.PaymentProviderSpec {
			return paymentsv1alpha1.PaymentProviderSpec{Stripe: &paymentsv1alpha1.StripeProvider{APIBase: base,
				SecretKeyRef: paymentsv1alpha1.SecretKeyReference{Name: "sandbox-credentials", Key: "apiKey"}}}
		}},
		{name: "http", spec: func(base string) paymentsv1alpha1.PaymentProviderSpec {
			return paymentsv1alpha1.PaymentProviderSpec{HTTP: &paymentsv1alpha1.HTTPProvider{URL: base + "/http/charges",
				LookupURL: base + "/http/charges/lookup", RefundURL: base + "/http/refunds"}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScenario(t, overHTTP(), withoutManager())
			updateProvider(s, s.ns, func(pp *paymentsv1alpha1.PaymentProvider) { pp.Spec = tt.spec(s.url) })
			s.start(managerConfig{})
			s.run("invoice", paymentsv1alpha1.PhaseCompleted)

			s.createRefund("part", "invoice", 500)
			s.expectRefundedAt(s.waitForRefund("part", paymentsv1alpha1.PhaseCompleted, "Succeeded"), "invoice", 500)

			s.engine.FailNext(sandbox.FaultAfterCommit, 1)
			s.createRefund("lost", "invoice", 1000)
			lost := s.waitForRefund("lost", paymentsv1alpha1.PhaseCompleted, "Succeeded")
			s.Expect(lost.Status.Attempts).To(BeNumerically(">=", 2))
			s.expectRefundedAt(lost, "invoice", 1000)

			s.createRefund("too-much", "invoice", 600)
			s.waitForRefund("too-much", paymentsv1alpha1.PhaseFailed, "RefundExceedsCharge")
			s.Expect(s.refundsAt("invoice")).To(HaveLen(2))
			s.Expect(s.engine.Stats().RefundsByKey).To(Equal(map[string]int{s.ns + ".refund/part": 1, s.ns + ".refund/lost": 1}))
		})
	}
}

// An http provider without a refund endpoint cannot refund: the refund
// waits, stalled, and sends nothing.
func TestRefundThroughAProviderThatCannotRefund(t *testing.T) {
	s := newScenario(t, overHTTP(), withoutManager())
	updateProvider(s, s.ns, func(pp *paymentsv1alpha1.PaymentProvider) {
		pp.Spec = paymentsv1alpha1.PaymentProviderSpec{HTTP: &paymentsv1alpha1.HTTPProvider{URL: s.url + "/http/charges",
			LookupURL: s.url + "/http/charges/lookup"}}
	})
	s.start(managerConfig{})
	s.run("invoice", paymentsv1alpha1.PhaseCompleted)
	s.createRefund("back", "invoice", 500)
	rf := s.waitForRefund("back", paymentsv1alpha1.PhasePending, "RefundsUnsupported")
	s.Expect(meta.IsStatusConditionTrue(rf.Status.Conditions, paymentsv1alpha1.ConditionStalled)).To(BeTrue())
	s.Expect(s.engine.Stats().RefundRequests).To(BeZero())
}

// A refund that the provider fails after it reported it succeeded is never
// hidden: the refund watch reads it again and sets it Failed, with a
// Warning event and the metric.
func TestRefundFailedAfterSuccessIsReported(t *testing.T) {
	s := newScenario(t, withManager(managerConfig{refundRecheck: 200 * time.Millisecond}))
	s.run("invoice", paymentsv1alpha1.PhaseCompleted)
	s.createRefund("back", "invoice", 800)
	done := s.waitForRefund("back", paymentsv1alpha1.PhaseCompleted, "Succeeded")
	before, _ := metricValue(t, "paymentjob_refunds_failed_after_success_total", nil)

	_, err := s.engine.FailRefund(done.Status.ProviderResponse.ID, sandbox.RefundFailureLostOrStolenCard)
	s.Expect(err).NotTo(HaveOccurred())
	failed := s.waitForRefund("back", paymentsv1alpha1.PhaseFailed, "RefundFailedAfterSuccess")
	s.Expect(failed.Status.Failure.Reason).To(Equal("RefundFailedAfterSuccess"))
	s.Expect(failed.Status.Failure.Message).To(ContainSubstring(done.Status.ProviderResponse.ID))
	s.Expect(meta.IsStatusConditionTrue(failed.Status.Conditions, paymentsv1alpha1.ConditionStalled)).To(BeTrue())
	s.Eventually(func(g Gomega) []string { return eventReasons(g, s.ns, "back") }, timeout).
		Should(ContainElement("RefundFailedAfterSuccess"))
	after, _ := metricValue(t, "paymentjob_refunds_failed_after_success_total", nil)
	s.Expect(after).To(BeNumerically(">", before))
	// The ledger keeps the first outcome under the key, Completed: the key is
	// spent at the provider (sending it again replays the failed refund),
	// and the money reconciliation reports the entry RefundFailedAfterSuccess
	// against the provider's list (TestReconciliationFindsEachDiscrepancyOnce).
	s.Expect(s.manager.recorded(s, s.ns+".refund", "back").Outcome).To(Equal(paymentsv1alpha1.LedgerCompleted))

	// The money is back at the merchant: the charge can be refunded again.
	s.createRefund("again", "invoice", 2000)
	s.expectRefundedAt(s.waitForRefund("again", paymentsv1alpha1.PhaseCompleted, "Succeeded"), "invoice", 2000)
}

// A finished refund is deleted after its TTL once its outcome is in the
// ledger, like a job; created again from Git, it is finished from the
// ledger with no refund call.
func TestRefundDeletedByItsTTL(t *testing.T) {
	s := newScenario(t, withManager(managerConfig{sweep: 200 * time.Millisecond}))
	s.run("invoice", paymentsv1alpha1.PhaseCompleted)
	s.createRefund("back", "invoice", 400, func(spec *paymentsv1alpha1.PaymentRefundSpec) {
		spec.TTLSecondsAfterFinished = ptr.To[int32](0)
	})
	first := &paymentsv1alpha1.PaymentRefund{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "back"}}
	waitForGone(s, first, "deleted by its TTL")
	refunds := s.refundsAt("invoice")
	s.Expect(refunds).To(HaveLen(1))
	recorded := s.manager.recorded(s, s.ns+".refund", "back")
	s.Expect(recorded.Outcome).To(Equal(paymentsv1alpha1.LedgerCompleted), "its outcome in the ledger before it went")
	s.Expect(recorded.Charge).To(Equal(refunds[0].ID))

	requests := s.engine.Stats().RefundRequests
	s.createRefund("back", "invoice", 400)
	again := s.waitForRefund("back", paymentsv1alpha1.PhaseCompleted, "FoundInLedger")
	s.Expect(again.Status.ProviderResponse.ID).To(Equal(refunds[0].ID))
	s.Expect(s.engine.Stats().RefundRequests).To(Equal(requests), "no refund request")
	s.Expect(s.refundsAt("invoice")).To(HaveLen(1))
}

// TestRefundFromGitAfterItsJobIsGoneIsFinishedFromItsOwnEntry: a refund
// manifest in Git names its PaymentJob by name only, and the job charged
// under a key of its own; both objects are deleted (their TTL, by hand),
// and Git applies the refund again. It is finished from its own ledger
// entry, which names the charge it refunded, before the job (which cannot
// be found under its name any more) is looked for: Completed, no refund
// request, never PaymentNotFound.
func TestRefundFromGitAfterItsJobIsGoneIsFinishedFromItsOwnEntry(t *testing.T) {
	s := newScenario(t)
	job := s.run("invoice", paymentsv1alpha1.PhaseCompleted, func(spec *paymentsv1alpha1.PaymentJobSpec) {
		spec.IdempotencyKey = "inv-2026-9"
	})
	charge := job.Status.ProviderResponse.ID
	s.createRefund("back", "invoice", 300)
	first := s.waitForRefund("back", paymentsv1alpha1.PhaseCompleted, "Succeeded")
	s.Expect(k8sClient.Delete(context.Background(), first)).To(Succeed())
	waitForGone(s, first)
	s.Expect(k8sClient.Delete(context.Background(), job)).To(Succeed())
	waitForGone(s, job)

	requests := s.engine.Stats().RefundRequests
	s.createRefund("back", "invoice", 300)
	again := s.waitForRefund("back", paymentsv1alpha1.PhaseCompleted, "FoundInLedger")
	s.Expect(again.Status.ProviderResponse.ID).To(Equal(first.Status.ProviderResponse.ID))
	s.Expect(again.Status.Charge.ID).To(Equal(charge), "the charge the ledger says it refunded")
	s.Expect(s.engine.Stats().RefundRequests).To(Equal(requests), "no refund request")
	s.Expect(s.engine.ListRefunds(charge)).To(HaveLen(1), "refunded once")
}
