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

package protocol_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// Payments that settle later: a bank debit the provider accepted and has
// not settled. Every answer the provider can give while it settles.

// The provider's answers about a bank debit.
var (
	// settlingDebit is a SEPA debit accepted and not settled yet.
	settlingDebit answer = func() (payment.Outcome, error) {
		return payment.Outcome{}, payment.Settling("pi_1", "processing", "sepa_debit")
	}
	// settlingUnknown is a payment accepted and not settled, of a method
	// the provider does not name.
	settlingUnknown answer = func() (payment.Outcome, error) {
		return payment.Outcome{}, payment.Settling("pi_1", "processing", "")
	}
	// debitFailed is a debit the bank refused after days.
	debitFailed answer = func() (payment.Outcome, error) {
		return payment.Outcome{}, payment.Declined("insufficient_funds", "The account has insufficient funds.")
	}
	// readFailed is a read of the payment that got no answer.
	readFailed answer = func() (payment.Outcome, error) {
		return payment.Outcome{}, payment.Transient(errors.New("connection reset"), 0)
	}
	// settledDebit is the debit settled: the money moved.
	settledDebit = succeeded
)

// acceptedFirst is a new job's first pass answered settling: claimed, sent
// once, then AwaitingSettlement, read again after the shortest interval.
var acceptedFirst = step{effects: claimAndCharge.then("status: Processing/AwaitingSettlement"),
	requeue: jittered(2 * time.Second), events: []string{"AwaitingSettlement"}}

// settlingRead is a later pass that reads the payment (no claim, no write)
// and finds it still settling: read again after requeue.
func settlingRead(after time.Duration, requeue window) step {
	return step{after: after, effects: []string{"settle"}, requeue: requeue}
}

const day = 24 * time.Hour

var settlingTable = []row{
	{
		name: "debit accepted: AwaitingSettlement, no attempt counted, read at a falling rate, never sent again; settles: Completed",
		job:  newJob(), provider: providerNoLookup, looker: true, answers: []answer{settlingDebit}, settles: []answer{settlingDebit, settlingDebit, settlingDebit, settledDebit},
		steps: []step{acceptedFirst,
			// Its own write's watch event: the read is not due.
			{after: time.Second, requeue: between(time.Second-time.Millisecond, 1500*time.Millisecond)},
			settlingRead(2*time.Second, jittered(2*time.Second)),
			// A day old: read every 2 hours at most.
			settlingRead(day, jittered(2*time.Hour)),
			settlingRead(3*day, jittered(2*time.Hour)),
			{after: 3 * time.Hour, effects: []string{"settle", "status: Completed/Succeeded", finish}, events: []string{"Succeeded"}},
		},
		final: paid,
	},
	{
		name:     "debit fails after days: Failed with the bank's reason, finished",
		job:      newJob(),
		provider: providerNoLookup, looker: true, answers: []answer{settlingDebit}, settles: []answer{settlingDebit, debitFailed},
		steps: []step{acceptedFirst,
			settlingRead(3*time.Second, jittered(2*time.Second)),
			{after: 5 * day, effects: []string{"settle", "status: Failed/insufficient_funds", finish}, events: []string{"insufficient_funds"}},
		},
		final: final{phase: failed, ready: "insufficient_funds", stalled: true},
	},
	{
		name: "settling past its deadline (SEPA: 20 days): Stalled SettlementOverdue once, still read; settles: Completed",
		job:  newJob(), provider: providerNoLookup, looker: true, answers: []answer{settlingDebit}, settles: []answer{settlingDebit, settlingDebit, settledDebit},
		steps: []step{acceptedFirst,
			{after: 21 * day, effects: []string{"settle", "status: Processing/SettlementOverdue"}, requeue: jittered(2 * time.Hour),
				events: []string{"SettlementOverdue"}},
			// Still overdue: no second write, no second event.
			settlingRead(3*time.Hour, jittered(2*time.Hour)),
			{after: 3 * time.Hour, effects: []string{"settle", "status: Completed/Succeeded", finish}, events: []string{"Succeeded"}},
		},
		final: paid,
	},
	{
		name: "a read of a settling payment that fails: nothing counted, nothing sent, read again",
		job:  newJob(), provider: providerNoLookup, looker: true, answers: []answer{settlingDebit}, settles: []answer{readFailed, settledDebit},
		steps: []step{acceptedFirst,
			settlingRead(3*time.Second, jittered(2*time.Second)),
			{after: 3 * time.Second, effects: []string{"settle", "status: Completed/Succeeded", finish}, events: []string{"Succeeded"}},
		},
		final: paid,
	},
	{
		name: "a read of a settling payment refused as invalid: never Failed (the payment was accepted), read again",
		job:  newJob(), provider: providerNoLookup, looker: true, answers: []answer{settlingDebit}, settles: []answer{invalid, settledDebit},
		steps: []step{acceptedFirst,
			settlingRead(3*time.Second, jittered(2*time.Second)),
			{after: 3 * time.Second, effects: []string{"settle", "status: Completed/Succeeded", finish}, events: []string{"Succeeded"}},
		},
		final: paid,
	},
	{
		name: "settling answered to a retry after an uncertain attempt: AwaitingSettlement, the uncertainty ends",
		job:  newJob(), provider: providerNoLookup, looker: true, answers: []answer{transient, settlingUnknown}, settles: []answer{settledDebit},
		steps: []step{transientFirst,
			{after: 2 * time.Second, effects: chargeAgain.then("status: Processing/AwaitingSettlement"),
				requeue: jittered(2 * time.Second), events: []string{"Claimed", "AwaitingSettlement"}},
			{after: 3 * time.Second, effects: []string{"settle", "status: Completed/Succeeded", finish}, events: []string{"Succeeded"}},
		},
		final: paid,
	},
	{
		name: "a provider that cannot read payments: the same request under the same key, under a claim; settles: Completed",
		job:  newJob(), answers: []answer{settlingDebit, settlingDebit, replayed},
		steps: []step{acceptedFirst,
			{after: 3 * time.Second, effects: chargeAgain.then("status: Processing/AwaitingSettlement"),
				requeue: jittered(2 * time.Second), events: []string{"Claimed"}},
			{after: 3 * time.Second, effects: chargeAgain.then(completeAndFinish...), events: []string{"Claimed", "Replayed"}},
		},
		final: paid,
	},
}

func TestSettlingProtocol(t *testing.T) {
	for _, tt := range settlingTable {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newWorld(t, tt)
			runWith(t, g, tt, w)
			// Sent once (or replayed under its key), never charged around.
			for _, c := range w.provider.callsNamed("charge") {
				g.Expect(c.key).To(Equal(w.provider.callsNamed("charge")[0].key))
			}
			job := &paymentsv1alpha1.PaymentJob{}
			g.Expect(w.store.Get(context.Background(), jobKey, job)).To(Succeed())
			g.Expect(job.Status.Settlement).NotTo(BeNil(), "the settlement is kept")
			g.Expect(job.Status.Settlement.Since.Time).To(BeTemporally(">=", start))
			// Reads count no attempt: one per claim, and a claim per send.
			g.Expect(job.Status.Attempts).To(BeEquivalentTo(len(w.provider.callsNamed("charge"))), "attempts")
		})
	}
}

// settling reports whether the world's object waits, before the next pass,
// for its provider to settle a payment it accepted.
func (w *world) settling() bool {
	obj := w.kind.New()
	if err := w.store.Get(context.Background(), w.key, obj); err != nil {
		return false
	}
	st := obj.GetPaymentStatus()
	return st.Phase == paymentsv1alpha1.PhaseProcessing && st.Settlement != nil && st.Settlement.SettledAt == nil
}

// settlingJob is the world's PaymentJob accepted by the provider as a
// SEPA debit and not settled yet.
func settlingJob() *paymentsv1alpha1.PaymentJob {
	return newJob(withFinalizer, func(j *paymentsv1alpha1.PaymentJob) {
		j.Status.Phase = processing
		j.Status.ProviderResponse = &paymentsv1alpha1.ProviderResponse{ID: chargeID, Status: "processing"}
		j.Status.Settlement = &paymentsv1alpha1.Settlement{Method: "sepa_debit", Since: metav1.NewTime(start.Add(-day)),
			Deadline: metav1.NewTime(start.Add(19 * day))}
	})
}
