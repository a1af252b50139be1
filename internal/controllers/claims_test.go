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
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// TestOutcomeIsNotWrittenOnALostClaim: another process takes the claim over
// while the provider is called. The outcome is not written over its claim;
// the new holder's attempt replays the charge instead. Not parallel: it
// compares the shared registry's counters.
func TestOutcomeIsNotWrittenOnALostClaim(t *testing.T) {
	const lease = 2 * time.Second
	lostBefore := counterValue(t, "paymentjob_claim_lost_total")

	var moved atomic.Bool
	s := newScenario(t, serial(), withManager(managerConfig{
		lease: lease, timeout: time.Second,
		intercept: onFirstOutcomeWrite(&moved, func(ctx context.Context, job *paymentsv1alpha1.PaymentJob) error {
			// A process that believed the claim expired takes it over.
			fresh := &paymentsv1alpha1.PaymentJob{}
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(job), fresh); err != nil {
				return err
			}
			now := time.Now()
			fresh.Status.Attempts++
			fresh.Status.Claim = &paymentsv1alpha1.Claim{Holder: "intruder/00000001",
				AcquiredAt: metav1.NewMicroTime(now), ExpiresAt: metav1.NewMicroTime(now.Add(lease))}
			return k8sClient.Status().Update(ctx, fresh)
		}),
	}))
	job := s.run("contested", paymentsv1alpha1.PhaseCompleted)

	s.Expect(moved.Load()).To(BeTrue(), "the claim was moved before the outcome write")
	s.expectCharges(1, "exactly one charge")
	s.Expect(job.Status.Attempts).To(Equal(int32(3)), "the claim was taken over from the intruder after it expired")
	s.Expect(job.Status.ProviderResponse.Replayed).To(BeTrue(), "the outcome came from the provider's replay")
	s.Expect(counterValue(t, "paymentjob_claim_lost_total") - lostBefore).To(Equal(1.0))
	s.expectEvent("contested", paymentsv1alpha1.ReasonClaimTakenOver)
}
