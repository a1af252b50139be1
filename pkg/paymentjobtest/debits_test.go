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

package paymentjobtest_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/paymentjobtest"
)

// eventsSecret is the endpoint secret of the tests' providers with events.
const eventsSecret = "whsec_paymentjobtest"

// pendUntilSettled keeps the debits pending until the test settles them,
// and resets the faults when t ends.
func pendUntilSettled(t *testing.T) {
	t.Helper()
	NewWithT(t).Expect(env.Faults().PendingDebits(time.Hour)).To(Succeed())
	t.Cleanup(func() { NewWithT(t).Expect(env.Faults().Reset()).To(Succeed()) })
}

// TestDebitsWaitUntilSettled: a debit job waits AwaitingSettlement, charged
// once, until SettleDebits decides it; then it is Completed, or Failed with
// the bank's reason, still charged once.
func TestDebitsWaitUntilSettled(t *testing.T) {
	tests := []struct {
		name          string
		paymentMethod string
		phase         paymentsv1alpha1.PaymentJobPhase
		check         func(g Gomega, job *paymentsv1alpha1.PaymentJob)
	}{
		{name: "settles", paymentMethod: paymentjobtest.PaymentMethodDebitSettles, phase: paymentsv1alpha1.PhaseCompleted,
			check: func(g Gomega, job *paymentsv1alpha1.PaymentJob) {
				g.Expect(job.Status.Settlement.SettledAt).NotTo(BeNil())
				g.Expect(job.Status.ProviderResponse.Status).To(Equal("succeeded"))
			}},
		{name: "fails for insufficient funds", paymentMethod: paymentjobtest.PaymentMethodDebitFails, phase: paymentsv1alpha1.PhaseFailed,
			check: func(g Gomega, job *paymentsv1alpha1.PaymentJob) {
				g.Expect(strings.ToLower(job.Status.Failure.Reason + job.Status.Failure.Message)).To(ContainSubstring("insufficient"))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			pendUntilSettled(t)
			ns := namespace(t)
			job(t, ns, "debit", tt.paymentMethod)

			waiting, err := env.WaitForReason(ctx, ns, "debit", paymentsv1alpha1.ReasonAwaitingSettlement, time.Minute)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(waiting.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
			g.Expect(waiting.Status.Settlement.Method).To(Equal("sepa_debit"))
			g.Expect(meta.IsStatusConditionTrue(waiting.Status.Conditions, paymentsv1alpha1.ConditionStalled)).To(BeFalse())
			g.Expect(env.Charges(ns + "/debit")).To(Equal(1))

			g.Expect(env.SettleDebits()).To(BeNumerically(">=", 1))
			done, err := env.WaitForPhase(ctx, ns, "debit", tt.phase, time.Minute)

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(env.Charges(ns + "/debit")).To(Equal(1))
			tt.check(g, done)
		})
	}
}

func TestWaitForReasonSaysWhereTheJobIs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	job(t, ns, "card", paymentjobtest.PaymentMethodSucceeds)

	_, err := env.WaitForReason(ctx, ns, "card", paymentsv1alpha1.ReasonAwaitingSettlement, time.Minute)

	// A card is final at once: the wait ends there, not after a minute.
	g.Expect(err).To(MatchError(And(ContainSubstring("Ready reason AwaitingSettlement"), ContainSubstring("Completed, which is final"))))
}

// TestSendEventWakesASettlingJob: with events, a settling job is read
// rarely (every 30 s at first); the event SendEvent sends wakes it at once.
// A wrong secret is refused and wakes nothing.
func TestSendEventWakesASettlingJob(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pendUntilSettled(t)
	ns := namespace(t)
	g.Expect(env.EnableEvents(ctx, ns, "stripe", eventsSecret)).To(Succeed())
	url := env.EventsURL(ns, "stripe")
	g.Expect(url).To(HavePrefix("http://127.0.0.1:"))
	job(t, ns, "debit", paymentjobtest.PaymentMethodDebitSettles)
	waiting, err := env.WaitForReason(ctx, ns, "debit", paymentsv1alpha1.ReasonAwaitingSettlement, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.SettleDebits()).To(BeNumerically(">=", 1))

	err = paymentjobtest.SendEvent(ctx, url, "whsec_forged", "payment_intent.succeeded", waiting)
	g.Expect(err).To(MatchError(ContainSubstring("401")))
	g.Expect(paymentjobtest.SendEvent(ctx, url, eventsSecret, "payment_intent.succeeded", waiting)).To(Succeed())

	// Well inside the 30 s the job would otherwise wait for its next read.
	done, err := env.WaitForPhase(ctx, ns, "debit", paymentsv1alpha1.PhaseCompleted, 10*time.Second)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Charges(ns + "/debit")).To(Equal(1))
	g.Expect(done.Status.Settlement.SettledAt.Sub(waiting.Status.Settlement.Since.Time)).To(BeNumerically("<", 30*time.Second))
}

func TestSendEventRefusesAJobWithoutAPayment(t *testing.T) {
	g := NewWithT(t)
	unpaid := &paymentsv1alpha1.PaymentJob{ObjectMeta: metav1.ObjectMeta{Namespace: "billing", Name: "invoice-1"}}

	err := paymentjobtest.SendEvent(context.Background(), "http://127.0.0.1:1/events/billing/stripe", eventsSecret,
		"payment_intent.succeeded", unpaid)

	g.Expect(err).To(MatchError(ContainSubstring("job billing/invoice-1: it names no payment yet")))
}

func TestEventsEndpointAnswersUnknownProviders(t *testing.T) {
	g := NewWithT(t)
	res, err := http.Post(env.EventsURL("nowhere", "none"), "application/json", strings.NewReader("{}"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Body.Close()).To(Succeed())
	// Refused, unsigned: the endpoint listens and checks before anything.
	g.Expect(res.StatusCode).To(BeNumerically(">=", 400))
	g.Expect(res.StatusCode).To(BeNumerically("<", 500))
}
