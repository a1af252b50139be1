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

package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// countedProvider is a distinct payment.Provider per build.
type countedProvider struct{ build int }

func (countedProvider) Charge(context.Context, string, payment.ChargeRequest) (payment.Outcome, error) {
	return payment.Outcome{}, errors.New("not used")
}

func TestProviderCacheRebuildsOnGenerationOrSecretChange(t *testing.T) {
	g := NewWithT(t)
	builds := 0
	var credentials []string
	clk := clocktesting.NewFakePassiveClock(time.Now())
	cache := &ProviderCache{Clock: clk, Build: func(_ paymentsv1alpha1.PaymentProviderSpec, credential string) (payment.Provider, error) {
		builds++
		credentials = append(credentials, credential)
		return countedProvider{build: builds}, nil
	}}
	pp := &paymentsv1alpha1.PaymentProvider{
		ObjectMeta: metav1.ObjectMeta{Namespace: "billing", Name: "stripe", Generation: 1},
		Spec: paymentsv1alpha1.PaymentProviderSpec{
			Stripe:            &paymentsv1alpha1.StripeProvider{SecretKeyRef: paymentsv1alpha1.SecretKeyReference{Name: "s", Key: "apiKey"}},
			RequestsPerSecond: ptr.To[int32](10),
		},
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "100",
		Labels: map[string]string{paymentsv1alpha1.LabelCredentials: "true"}}, Data: map[string][]byte{"apiKey": []byte("sk_test_a")}}

	first, err := cache.Refresh(pp, secret)
	g.Expect(err).NotTo(HaveOccurred())
	again, err := cache.Refresh(pp, secret)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Provider).To(Equal(first.Provider))
	g.Expect(again.Limiter).To(BeIdenticalTo(first.Limiter), "one token bucket shared by all jobs")
	g.Expect(builds).To(Equal(1))

	// Resolve needs no API read while the generation is current.
	resolved, err := cache.Resolve(context.Background(), pp)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resolved.Provider).To(Equal(first.Provider))

	rotated := secret.DeepCopy()
	rotated.ResourceVersion = "101"
	rotated.Data["apiKey"] = []byte("sk_test_b")
	_, err = cache.Refresh(pp, rotated)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(builds).To(Equal(2), "a rotated secret rebuilds the adapter")

	pp.Generation = 2
	pp.Spec.RequestsPerSecond = ptr.To[int32](20)
	changed, err := cache.Refresh(pp, rotated)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(builds).To(Equal(3), "a new generation rebuilds the adapter")
	g.Expect(float64(changed.Limiter.Limit())).To(Equal(20.0))
	g.Expect(changed.Limiter.Burst()).To(Equal(20), "burst defaults to requestsPerSecond")
	g.Expect(credentials).To(Equal([]string{"sk_test_a", "sk_test_b", "sk_test_b"}))

	_, err = cache.Refresh(pp, &corev1.Secret{Data: map[string][]byte{"apiKey": nil}})
	g.Expect(err).To(MatchError(errNoCredentials))

	// Deleted and created again under the same name: a new UID, a new
	// entry, and the old one is gone.
	recreated := pp.DeepCopy()
	recreated.UID = "another-uid"
	recreated.Generation = 1
	fresh, err := cache.Refresh(recreated, rotated)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(builds).To(Equal(4), "a re-created provider gets its own adapter")
	id, err := fresh.Identity(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(id.UID).To(Equal("another-uid"))
	// The old entry is retired, not dropped: the jobs Processing through the
	// provider that was deleted still find its adapter, until no job used
	// it for KeptAdapterTTL.
	kept, ok := cache.Kept(pp.UID)
	g.Expect(ok).To(BeTrue())
	g.Expect(kept.Provider).To(Equal(changed.Provider))
	_, err = cache.Resolve(context.Background(), recreated)
	g.Expect(err).NotTo(HaveOccurred())
	clk.SetTime(clk.Now().Add(KeptAdapterTTL / 2))
	_, ok = cache.Kept(pp.UID)
	g.Expect(ok).To(BeTrue(), "used again, so kept for another KeptAdapterTTL")
	clk.SetTime(clk.Now().Add(KeptAdapterTTL + time.Second))
	_, ok = cache.Kept(pp.UID)
	g.Expect(ok).To(BeFalse(), "unused for KeptAdapterTTL: dropped with its credential")
	_, ok = cache.Kept(recreated.UID)
	g.Expect(ok).To(BeTrue(), "the live entry is never dropped for age")
	g.Expect(cache.entries).To(HaveLen(1))
}
