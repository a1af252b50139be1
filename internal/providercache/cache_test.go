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

package providercache

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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/stripe"
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
	secret := "sk_test_a"

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

	rotated := "sk_test_b"
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

	_, err = cache.Refresh(pp, "")
	g.Expect(err).To(MatchError(ErrNoCredentials))

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

func TestReadCredential(t *testing.T) {
	pp := &paymentsv1alpha1.PaymentProvider{
		ObjectMeta: metav1.ObjectMeta{Namespace: "billing", Name: "stripe"},
		Spec: paymentsv1alpha1.PaymentProviderSpec{
			Stripe: &paymentsv1alpha1.StripeProvider{SecretKeyRef: paymentsv1alpha1.SecretKeyReference{Name: "s", Key: "apiKey"}},
		},
	}
	secret := func(labelled bool, value string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "billing", Name: "s"},
			Data: map[string][]byte{"apiKey": []byte(value)}}
		if labelled {
			s.Labels = map[string]string{paymentsv1alpha1.LabelCredentials: "true"}
		}
		return s
	}
	tests := []struct {
		name    string
		objects []client.Object
		want    string
		wantErr error
	}{
		{name: "labelled with a value", objects: []client.Object{secret(true, "sk_test_a")}, want: "sk_test_a"},
		{name: "missing", wantErr: ErrNoCredentials},
		{name: "not labelled for the operator", objects: []client.Object{secret(false, "sk_test_a")}, wantErr: ErrNoCredentials},
		{name: "labelled, the key empty", objects: []client.Object{secret(true, "")}, wantErr: ErrCredentialKeyMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			reader := fake.NewClientBuilder().WithObjects(tt.objects...).Build()
			got, err := ReadCredential(context.Background(), reader, pp)
			if tt.wantErr != nil {
				g.Expect(err).To(MatchError(tt.wantErr))
				g.Expect(got).To(BeEmpty())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}

	g := NewWithT(t)
	none := &paymentsv1alpha1.PaymentProvider{Spec: paymentsv1alpha1.PaymentProviderSpec{
		HTTP: &paymentsv1alpha1.HTTPProvider{URL: "https://pay.example.com/charges"}}}
	got, err := ReadCredential(context.Background(), fake.NewClientBuilder().Build(), none)
	g.Expect(err).NotTo(HaveOccurred(), "a provider without a secretKeyRef needs no Secret")
	g.Expect(got).To(BeEmpty())
}

func TestProviderKinds(t *testing.T) {
	g := NewWithT(t)
	stripeSpec := paymentsv1alpha1.PaymentProviderSpec{Stripe: &paymentsv1alpha1.StripeProvider{APIBase: "https://stripe.example.com/"}}
	httpSpec := paymentsv1alpha1.PaymentProviderSpec{HTTP: &paymentsv1alpha1.HTTPProvider{
		URL: "https://pay.example.com/charges", LookupURL: "https://pay.example.com/lookup"}}

	g.Expect(endpointOf(stripeSpec)).To(Equal("https://stripe.example.com"))
	g.Expect(endpointOf(paymentsv1alpha1.PaymentProviderSpec{Stripe: &paymentsv1alpha1.StripeProvider{}})).To(Equal(stripe.DefaultAPIBase))
	g.Expect(ProviderURLs(httpSpec)).To(Equal([]ProviderURL{
		{"spec.http.url", "https://pay.example.com/charges"}, {"spec.http.lookupURL", "https://pay.example.com/lookup"}}))

	for _, spec := range []paymentsv1alpha1.PaymentProviderSpec{{}, {Stripe: stripeSpec.Stripe, HTTP: httpSpec.HTTP}} {
		_, err := kindOf(spec)
		g.Expect(err).To(MatchError(errNoKind), "none or both kinds: an object written around the CRD")
		g.Expect(ProviderURLs(spec)).To(BeEmpty())
	}
}
