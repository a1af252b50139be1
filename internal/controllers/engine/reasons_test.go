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

package engine_test

import (
	"testing"

	. "github.com/onsi/gomega"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/stripe"
)

// TestAdapterReasonsAreTheAPIs keeps the reasons that the provider adapters
// put in a refusal, and the operator copies into status.failure.reason, equal
// to the API's constants. Package payment knows nothing of the API (the
// import rules of CONTRIBUTING.md), so it declares its own; the controllers'
// reasons are the API's constants themselves.
func TestAdapterReasonsAreTheAPIs(t *testing.T) {
	g := NewWithT(t)
	for _, p := range [][2]string{
		{payment.ReasonCardDeclined, paymentsv1alpha1.ReasonCardDeclined},
		{payment.ReasonInvalidRequest, paymentsv1alpha1.ReasonInvalidRequest},
		{payment.ReasonKeyReused, paymentsv1alpha1.ReasonIdempotencyKeyReused},
		{payment.ReasonRefundExceedsCharge, paymentsv1alpha1.ReasonRefundExceedsCharge},
		{payment.ReasonChargeNotFound, paymentsv1alpha1.ReasonChargeNotFound},
		{payment.ReasonChargeNotRefundable, paymentsv1alpha1.ReasonChargeNotRefundable},
		{payment.ReasonRefundFailed, paymentsv1alpha1.ReasonRefundFailed},
		{stripe.ReasonPaymentCanceled, paymentsv1alpha1.ReasonPaymentCanceled},
		{stripe.ReasonAuthenticationRequired, paymentsv1alpha1.ReasonAuthenticationRequired},
	} {
		g.Expect(p[0]).To(Equal(p[1]))
	}
}
