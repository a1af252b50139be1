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
	"errors"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// The waits on something outside a job are bounded and say so: nothing
// depends on the informer's resync to make progress.

// TestSecretReadErrorsAreRetriedAndReported: reading the provider's Secret
// fails for a while (an API or cache error, not a missing Secret). The
// provider gets a SecretReadFailed Warning event, the read is retried with
// backoff, and the provider becomes Ready and charges once it works.
func TestSecretReadErrorsAreRetriedAndReported(t *testing.T) {
	var failures atomic.Int32
	failures.Store(3)
	s := newScenario(t, withoutManager())
	s.start(managerConfig{
		intercept: interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.Secret); ok && key.Namespace == s.ns && failures.Add(-1) >= 0 {
				return errors.New("injected: the Secret cannot be read")
			}
			return c.Get(ctx, key, obj, opts...)
		}}})
	s.create("after-errors")
	s.expectEvent(providerName, paymentsv1alpha1.ReasonSecretReadFailed)
	s.waitForPhase("after-errors", paymentsv1alpha1.PhaseCompleted)
	s.Expect(failures.Load()).To(BeNumerically("<", 0), "every injected error was hit and retried")
	s.expectCharges(1)
}

// TestLongRateLimitWaitsAreReported: jobs behind a provider limited to one
// charge a second; the ones that wait 5 seconds or more say so in their
// Ready condition (RateLimited), and all are charged once in the end.
func TestLongRateLimitWaitsAreReported(t *testing.T) {
	s := newScenario(t, withProvider(func(pp *paymentsv1alpha1.PaymentProvider) {
		pp.Spec.RequestsPerSecond = ptr.To[int32](1)
		pp.Spec.Burst = ptr.To[int32](1)
	}))
	names := jobNames("limited", 9)
	for _, name := range names {
		s.create(name)
	}
	s.Eventually(func(g Gomega) {
		reported := 0
		for _, name := range names {
			if c := readyCondition(g, s.ns, name); c.Reason == paymentsv1alpha1.ReasonRateLimited {
				g.Expect(c.Message).To(ContainSubstring(providerName))
				reported++
			}
		}
		g.Expect(reported).To(BeNumerically(">", 0))
	}, timeout, 50*time.Millisecond).Should(Succeed())
	for _, name := range names {
		job := s.waitForPhase(name, paymentsv1alpha1.PhaseCompleted)
		s.Expect(job.Status.Attempts).To(Equal(int32(1)))
	}
	s.expectCharges(int64(len(names)))
	s.Eventually(func(g Gomega) []string {
		reasons := make([]string, 0, len(names))
		for _, name := range names {
			reasons = append(reasons, eventReasons(g, s.ns, name)...)
		}
		return reasons
	}, timeout).Should(ContainElement(paymentsv1alpha1.ReasonRateLimited))
}
