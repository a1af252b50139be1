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

package engine

import (
	"testing"

	. "github.com/onsi/gomega"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/stripe"
)

// TestRefusalsGetTheAPIsReasons: the refusal codes of package payment
// (which knows nothing of the API) reach status.failure.reason as the API's
// reasons, through the one mapping (refusalReasons); a provider's own valid
// code (Stripe's) passes as it is, and an invalid one is PaymentRefused.
func TestRefusalsGetTheAPIsReasons(t *testing.T) {
	g := NewWithT(t)
	for code, want := range map[string]string{
		payment.ReasonCardDeclined:          paymentsv1alpha1.ReasonCardDeclined,
		payment.ReasonInvalidRequest:        paymentsv1alpha1.ReasonInvalidRequest,
		payment.ReasonKeyReused:             paymentsv1alpha1.ReasonIdempotencyKeyReused,
		payment.ReasonRefundExceedsCharge:   paymentsv1alpha1.ReasonRefundExceedsCharge,
		payment.ReasonChargeNotFound:        paymentsv1alpha1.ReasonChargeNotFound,
		payment.ReasonChargeNotRefundable:   paymentsv1alpha1.ReasonChargeNotRefundable,
		payment.ReasonRefundFailed:          paymentsv1alpha1.ReasonRefundFailed,
		stripe.ReasonPaymentCanceled:        paymentsv1alpha1.ReasonPaymentCanceled,
		stripe.ReasonAuthenticationRequired: paymentsv1alpha1.ReasonAuthenticationRequired,
		"insufficient funds!":               paymentsv1alpha1.ReasonPaymentRefused,
	} {
		g.Expect(refusalReason(&payment.Refusal{Reason: code})).To(Equal(want), "code %q", code)
	}
	g.Expect(refusalReasons).To(HaveLen(7), "every code package payment declares is mapped")
}
