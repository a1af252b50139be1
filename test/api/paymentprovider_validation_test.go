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

package v1alpha1_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

func providerManifest(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": paymentsv1alpha1.GroupVersion.String(),
		"kind":       "PaymentProvider",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec":       spec,
	}}
}

var (
	stripeSpec = map[string]any{
		"apiBase":      "http://127.0.0.1:12111",
		"secretKeyRef": map[string]any{"name": "stripe-credentials", "key": "apiKey"},
	}
	httpSpec = map[string]any{
		"url":          "https://payments.internal/charges",
		"secretKeyRef": map[string]any{"name": "payments-token", "key": "token"},
	}
)

func TestPaymentProviderAcceptsValidObjectsAndRoundTrips(t *testing.T) {
	ctx := context.Background()

	t.Run("stripe", func(t *testing.T) {
		g := NewWithT(t)
		name := uniqueName("stripe")
		g.Expect(k8sClient.Create(ctx, providerManifest(name, map[string]any{
			"stripe":            stripeSpec,
			"requestsPerSecond": int64(25),
			"burst":             int64(50),
			"timeoutSeconds":    int64(30),
		}))).To(Succeed())

		var got paymentsv1alpha1.PaymentProvider
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &got)).To(Succeed())
		g.Expect(got.Spec).To(Equal(paymentsv1alpha1.PaymentProviderSpec{
			Stripe: &paymentsv1alpha1.StripeProvider{
				APIBase:      "http://127.0.0.1:12111",
				SecretKeyRef: paymentsv1alpha1.SecretKeyReference{Name: "stripe-credentials", Key: "apiKey"},
			},
			RequestsPerSecond: ptr.To[int32](25),
			Burst:             ptr.To[int32](50),
			TimeoutSeconds:    ptr.To[int32](30),
		}))
	})

	t.Run("http without a token", func(t *testing.T) {
		g := NewWithT(t)
		provider := &paymentsv1alpha1.PaymentProvider{
			ObjectMeta: metav1.ObjectMeta{Name: uniqueName("http"), Namespace: namespace},
			Spec: paymentsv1alpha1.PaymentProviderSpec{
				HTTP: &paymentsv1alpha1.HTTPProvider{URL: "http://127.0.0.1:8080/charges"},
			},
		}
		g.Expect(k8sClient.Create(ctx, provider)).To(Succeed())

		var got paymentsv1alpha1.PaymentProvider
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(provider), &got)).To(Succeed())
		g.Expect(got.Spec).To(Equal(provider.Spec))
	})
}

func TestPaymentProviderRejectsInvalidSpec(t *testing.T) {
	tests := []struct {
		name string
		spec map[string]any
		want []string
	}{
		{"both stripe and http", map[string]any{"stripe": stripeSpec, "http": httpSpec},
			[]string{"spec", "exactly one of spec.stripe or spec.http must be set"}},
		{"neither stripe nor http", map[string]any{"requestsPerSecond": int64(5)},
			[]string{"spec", "exactly one of spec.stripe or spec.http must be set"}},
		{"stripe without a secret", map[string]any{"stripe": map[string]any{"apiBase": "https://api.stripe.com"}},
			[]string{"spec.stripe.secretKeyRef", "Required value"}},
		{"stripe secret without a key", map[string]any{"stripe": map[string]any{
			"secretKeyRef": map[string]any{"name": "stripe-credentials"}}},
			[]string{"spec.stripe.secretKeyRef.key", "Required value"}},
		{"apiBase not a URL", map[string]any{"stripe": map[string]any{
			"apiBase":      "api.stripe.com",
			"secretKeyRef": map[string]any{"name": "s", "key": "k"}}},
			[]string{"spec.stripe.apiBase", "should match"}},
		{"http without a url", map[string]any{"http": map[string]any{}},
			[]string{"spec.http.url", "Required value"}},
		{"requestsPerSecond zero", map[string]any{"stripe": stripeSpec, "requestsPerSecond": int64(0)},
			[]string{"spec.requestsPerSecond", "greater than or equal to 1"}},
		{"burst zero", map[string]any{"stripe": stripeSpec, "burst": int64(0)},
			[]string{"spec.burst", "greater than or equal to 1"}},
		{"timeoutSeconds zero", map[string]any{"stripe": stripeSpec, "timeoutSeconds": int64(0)},
			[]string{"spec.timeoutSeconds", "greater than or equal to 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := k8sClient.Create(context.Background(), providerManifest(uniqueName("invalid"), tt.spec))
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			for _, want := range tt.want {
				g.Expect(err.Error()).To(ContainSubstring(want))
			}
			t.Logf("rejected: %v", err)
		})
	}

	t.Run("switching from stripe to both on update", func(t *testing.T) {
		g := NewWithT(t)
		ctx := context.Background()
		u := providerManifest(uniqueName("switch"), map[string]any{"stripe": stripeSpec})
		g.Expect(k8sClient.Create(ctx, u)).To(Succeed())
		g.Expect(unstructured.SetNestedMap(u.Object, httpSpec, "spec", "http")).To(Succeed())
		err := k8sClient.Update(ctx, u)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		g.Expect(err.Error()).To(ContainSubstring("exactly one of spec.stripe or spec.http"))
	})
}
