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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/paymentjobtest"
)

// jobRef names a job for Events and WaitForEvent, as a test that has not
// read it back has it.
func jobRef(ns, name string) *paymentsv1alpha1.PaymentJob {
	return &paymentsv1alpha1.PaymentJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func TestWaitForEvent(t *testing.T) {
	ctx := context.Background()

	t.Run("the outcome's event, waited for right after the create", func(t *testing.T) {
		g := NewWithT(t)
		ns := namespace(t)
		job(t, ns, "paid", paymentjobtest.PaymentMethodSucceeds)

		ev, err := env.WaitForEvent(ctx, jobRef(ns, "paid"), paymentsv1alpha1.ReasonSucceeded, time.Minute)

		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ev.Type).To(Equal(corev1.EventTypeNormal))
		g.Expect(ev.Regarding.Kind).To(Equal("PaymentJob"))
		g.Expect(ev.Regarding.Name).To(Equal("paid"))
		g.Expect(ev.Note).To(ContainSubstring("2000 usd"))
	})

	t.Run("a decline", func(t *testing.T) {
		g := NewWithT(t)
		ns := namespace(t)
		job(t, ns, "declined", paymentjobtest.PaymentMethodDeclined)

		ev, err := env.WaitForEvent(ctx, jobRef(ns, "declined"), paymentsv1alpha1.ReasonCardDeclined, time.Minute)

		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ev.Type).To(Equal(corev1.EventTypeWarning))
	})

	t.Run("an event whose object is created later", func(t *testing.T) {
		g := NewWithT(t)
		ns := namespace(t)
		done := make(chan error, 1)
		go func() {
			_, err := env.WaitForEvent(ctx, jobRef(ns, "later"), paymentsv1alpha1.ReasonSucceeded, time.Minute)
			done <- err
		}()
		time.Sleep(200 * time.Millisecond) // the wait starts before the job exists
		job(t, ns, "later", paymentjobtest.PaymentMethodSucceeds)
		g.Eventually(done, time.Minute).Should(Receive(BeNil()))
	})

	t.Run("a reason that never comes lists the events there are", func(t *testing.T) {
		g := NewWithT(t)
		ns := namespace(t)
		job(t, ns, "only-paid", paymentjobtest.PaymentMethodSucceeds)
		_, err := env.WaitForEvent(ctx, jobRef(ns, "only-paid"), paymentsv1alpha1.ReasonSucceeded, time.Minute)
		g.Expect(err).NotTo(HaveOccurred())

		_, err = env.WaitForEvent(ctx, jobRef(ns, "only-paid"), paymentsv1alpha1.ReasonRetriesExhausted, time.Second)

		g.Expect(err).To(MatchError(And(
			ContainSubstring("no event RetriesExhausted on "+ns+"/only-paid within 1s"),
			ContainSubstring("events: Normal Succeeded: "),
		)))
	})

	t.Run("an event on a job whose provider is missing", func(t *testing.T) {
		g := NewWithT(t)
		ns := emptyNamespace(t)
		g.Expect(env.Client().Create(ctx, &paymentsv1alpha1.PaymentJob{
			ObjectMeta: metav1.ObjectMeta{Name: "stranded", Namespace: ns},
			Spec: paymentsv1alpha1.PaymentJobSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: "nowhere"},
				Amount: 100, Currency: "usd"},
		})).To(Succeed())

		ev, err := env.WaitForEvent(ctx, jobRef(ns, "stranded"), paymentsv1alpha1.ReasonProviderNotFound, time.Minute)

		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ev.Type).To(Equal(corev1.EventTypeWarning))
		g.Expect(ev.Note).To(ContainSubstring(`"nowhere"`))
	})

	t.Run("no reason", func(t *testing.T) {
		_, err := env.WaitForEvent(ctx, jobRef("any", "any"), "", time.Second)
		NewWithT(t).Expect(err).To(MatchError(ContainSubstring("without a reason")))
	})
}

func TestEventsAreOldestFirst(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	g.Expect(env.Faults().LoseResponses(1)).To(Succeed())
	t.Cleanup(func() { g.Expect(env.Faults().Reset()).To(Succeed()) })
	job(t, ns, "retried", paymentjobtest.PaymentMethodSucceeds)
	done, err := env.WaitForEvent(ctx, jobRef(ns, "retried"), paymentsv1alpha1.ReasonReplayed, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())

	events, err := env.Events(ctx, jobRef(ns, "retried"))

	g.Expect(err).NotTo(HaveOccurred())
	reasons := make([]string, 0, len(events))
	for _, ev := range events {
		reasons = append(reasons, ev.Reason)
	}
	g.Expect(reasons).To(ContainElement(paymentsv1alpha1.ReasonTransientError))
	g.Expect(reasons[len(reasons)-1]).To(Equal(done.Reason), "the outcome comes last: %v", reasons)
}
