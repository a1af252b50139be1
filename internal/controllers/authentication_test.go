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
	"fmt"
	"testing"

	. "github.com/onsi/gomega"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/stripe"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// TestJobsThatNeedAuthenticationFail runs jobs whose card needs 3-D Secure
// through the real Stripe adapter and the sandbox's HTTP server: no
// customer is present to authenticate, so each ends Failed with the reason
// authentication_required, after one attempt and without moving money,
// instead of retrying forever.
func TestJobsThatNeedAuthenticationFail(t *testing.T) {
	const forced = "pm_card_forcedRequiresAction"
	s := newScenario(t, overHTTP())
	// Whatever the adapter sends, this card's intents wait in
	// requires_action, as an intent made without off_session does.
	s.engine.RequireAction(forced)

	s.create("needs-3ds", func(spec *paymentsv1alpha1.PaymentJobSpec) {
		spec.PaymentMethod = sandbox.PaymentMethodAuthenticationRequired
	})
	s.create("waits-for-customer", func(spec *paymentsv1alpha1.PaymentJobSpec) { spec.PaymentMethod = forced })

	for _, name := range []string{"needs-3ds", "waits-for-customer"} {
		job := s.waitForPhase(name, paymentsv1alpha1.PhaseFailed)
		s.Expect(job.Status.Failure).NotTo(BeNil())
		s.Expect(job.Status.Failure.Reason).To(Equal(stripe.ReasonAuthenticationRequired), name)
		s.Expect(job.Status.Attempts).To(Equal(int32(1)), "%s failed on its first attempt", name)
		s.Expect(job.Status.ProviderResponse).To(BeNil())
		s.expectEvent(name, stripe.ReasonAuthenticationRequired)
	}

	// Both intents were canceled at the provider: the one that waited for
	// the customer, and the one the off-session decline left
	// requires_payment_method, so that no one can confirm it later.
	statusOf := func(name string) string {
		found, err := s.engine.SearchPaymentIntents(fmt.Sprintf("metadata['%s']:'%s/%s'",
			payment.MetadataKeyIdempotencyKey, s.ns, name))
		s.Expect(err).NotTo(HaveOccurred())
		s.Expect(found).To(HaveLen(1), name)
		return found[0].Status
	}
	s.Expect(statusOf("waits-for-customer")).To(Equal(sandbox.StatusCanceled))
	s.Expect(statusOf("needs-3ds")).To(Equal(sandbox.StatusCanceled))

	st := s.engine.Stats()
	s.Expect(st.Charges).To(BeZero(), "no money moved")
	s.Expect(st.Cancels).To(Equal(int64(2)))
	s.Expect(st.Declines).To(Equal(int64(1)))
	s.Expect(st.RequiresAction).To(Equal(int64(1)))
}
