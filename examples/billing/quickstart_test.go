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

package billing_test

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

// docs:start quick
func TestFromNothingToACompletedPaymentJob(t *testing.T) {
	g, ctx, kit := NewWithT(t), context.Background(), paymentjobtest.StartT(t, paymentjobtest.Options{})
	g.Expect(kit.Client().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "quick"}})).To(Succeed())
	g.Expect(kit.CreateProvider(ctx, "quick", "stripe")).To(Succeed())
	g.Expect(kit.Client().Create(ctx, &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: "invoice-1", Namespace: "quick"},
		Spec: paymentsv1alpha1.PaymentJobSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: "stripe"},
			Amount: 2000, Currency: "usd", PaymentMethod: paymentjobtest.PaymentMethodSucceeds},
	})).To(Succeed())
	job, err := kit.WaitForPhase(ctx, "quick", "invoice-1", paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kit.Charges("quick/invoice-1")).To(Equal(1), "charge %s", job.Status.ProviderResponse.ID)
}

// docs:end quick
