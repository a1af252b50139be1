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
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// Bank debits against the sandbox: accepted at once, settled (or failed)
// later, by the sandbox's clock. What moved is read at the sandbox.

// debit pays a job with method, a sandbox bank-debit payment method.
func debit(method string) func(*paymentsv1alpha1.PaymentJobSpec) {
	return func(spec *paymentsv1alpha1.PaymentJobSpec) {
		spec.PaymentMethod = method
		spec.Currency = "eur"
	}
}

// stalledReasons watches a job's Stalled condition until stop, and
// returns every reason it saw Stalled=True with.
func (s *scenario) stalledReasons(name string) (stop func() []string) {
	var (
		mu   sync.Mutex
		seen []string
		done atomic.Bool
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !done.Load() {
			var job paymentsv1alpha1.PaymentJob
			if k8sClient.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: name}, &job) == nil {
				if c := meta.FindStatusCondition(job.Status.Conditions, paymentsv1alpha1.ConditionStalled); c != nil && c.Status == "True" {
					mu.Lock()
					seen = append(seen, c.Reason)
					mu.Unlock()
				}
			}
			<-time.After(20 * time.Millisecond)
		}
	}()
	return func() []string {
		done.Store(true)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// A SEPA debit settles 3 s after it is accepted, long after the provider
// call's deadline (500 ms) and the backoff's longest interval: the job
// waits AwaitingSettlement, is never sent twice, never Stalled, counts one
// attempt, and completes when the sandbox settles it.
func TestADebitThatSettlesAfterTheCallsDeadlineIsNeverSentTwiceNorStalled(t *testing.T) {
	s := newScenario(t, withEngine(sandbox.WithDebitSettleDelay(3*time.Second)),
		withManager(managerConfig{timeout: 500 * time.Millisecond, lease: 5 * time.Second}))
	stop := s.stalledReasons("debit")
	s.create("debit", debit(sandbox.PaymentMethodSEPADebit))

	waiting := s.waitForSettling("debit")
	s.Expect(waiting.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
	s.Expect(waiting.Status.Settlement).NotTo(BeNil())
	s.Expect(waiting.Status.Settlement.Method).To(Equal("sepa_debit"))
	s.Expect(waiting.Status.Settlement.Deadline.Sub(waiting.Status.Settlement.Since.Time)).To(Equal(20 * 24 * time.Hour))
	s.Expect(condition(waiting, paymentsv1alpha1.ConditionReady).Message).To(ContainSubstring("up to 14 business days"))

	done := s.waitForPhase("debit", paymentsv1alpha1.PhaseCompleted)
	s.Expect(stop()).To(BeEmpty(), "never Stalled while it settled")
	s.Expect(done.Status.Attempts).To(BeEquivalentTo(1), "reads count no attempt")
	s.Expect(done.Status.Settlement.SettledAt).NotTo(BeNil())
	s.Expect(done.Status.ProviderResponse.Status).To(Equal("succeeded"))
	s.Expect(s.engine.Stats().ChargesByKey[done.Status.IdempotencyKey]).To(BeEquivalentTo(1), "sent once")
	s.expectCharges(1)
	s.expectEvent("debit", paymentsv1alpha1.ReasonAwaitingSettlement)
	s.expectEvent("debit", paymentsv1alpha1.ReasonSucceeded)
}

// A debit the bank refuses days later: the sandbox's clock moves 5 days
// on; the job's next read finds it failed, and the job is Failed with the
// bank's reason, nothing sent again.
func TestADebitThatFailsAfterDaysIsFailedWithTheProvidersReason(t *testing.T) {
	var offset atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	s := newScenario(t, withEngine(sandbox.WithClock(clock), sandbox.WithDebitSettleDelay(5*24*time.Hour)))
	s.create("debit", debit(sandbox.PaymentMethodSEPADebitInsufficientFunds))
	s.waitForSettling("debit")

	offset.Store(int64(5*24*time.Hour + time.Minute))

	failed := s.waitForPhase("debit", paymentsv1alpha1.PhaseFailed)
	s.Expect(failed.Status.Failure).NotTo(BeNil())
	s.Expect(failed.Status.Failure.Reason).To(Equal("insufficient_funds"))
	s.Expect(condition(failed, paymentsv1alpha1.ConditionReady).Reason).To(Equal("insufficient_funds"))
	s.Expect(failed.Status.Attempts).To(BeEquivalentTo(1))
	s.Expect(s.engine.Stats().ChargesByKey[failed.Status.IdempotencyKey]).To(BeEquivalentTo(1), "sent once")
	s.expectEvent("debit", "insufficient_funds")
}

// A refund of a debit still settling waits (the provider refuses to refund
// it), sends nothing, then refunds once the debit settled.
func TestARefundWaitsForTheDebitToSettle(t *testing.T) {
	s := newScenario(t, withEngine(sandbox.WithDebitSettleDelay(3*time.Second)))
	s.create("invoice", debit(sandbox.PaymentMethodSEPADebit))
	s.waitForSettling("invoice")
	s.createRefund("invoice-back", "invoice", 500)

	waiting := s.waitForRefund("invoice-back", paymentsv1alpha1.PhasePending, paymentsv1alpha1.ReasonAwaitingSettlement)
	s.Expect(meta.FindStatusCondition(waiting.Status.Conditions, paymentsv1alpha1.ConditionReady).Message).
		To(ContainSubstring("has not settled it"))
	s.Expect(s.engine.Stats().Refunds).To(BeZero(), "nothing sent while the debit settles")

	s.waitForPhase("invoice", paymentsv1alpha1.PhaseCompleted)
	rf := s.waitForRefund("invoice-back", paymentsv1alpha1.PhaseCompleted, paymentsv1alpha1.ReasonSucceeded)
	s.expectRefundedAt(rf, "invoice", 500)
}

// waitForSettling waits until the job waits AwaitingSettlement, and
// returns it.
func (s *scenario) waitForSettling(name string) *paymentsv1alpha1.PaymentJob {
	s.t.Helper()
	return waitForJob(s.t, s.ns, name, "AwaitingSettlement", func(g Gomega, job *paymentsv1alpha1.PaymentJob) {
		c := condition(job, paymentsv1alpha1.ConditionReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(paymentsv1alpha1.ReasonAwaitingSettlement), c.Message)
	})
}
