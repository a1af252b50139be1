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
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/paymentjobtest"
)

// emptyNamespace creates a namespace without providers.
func emptyNamespace(t *testing.T) string {
	t.Helper()
	ns := "kit-" + rand.String(6)
	NewWithT(t).Expect(env.Client().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	return ns
}

func TestSandboxURLsAreTheHTTPContractRoutes(t *testing.T) {
	g := NewWithT(t)
	urls := env.SandboxURLs()
	g.Expect(urls.StripeAPIBase).To(HavePrefix("http://127.0.0.1:"))
	g.Expect(urls.HTTPCharges).To(Equal(urls.StripeAPIBase + "/http/charges"))
	g.Expect(urls.HTTPLookup).To(Equal(urls.StripeAPIBase + "/http/charges/lookup"))
	g.Expect(urls.HTTPRefunds).To(Equal(urls.StripeAPIBase + "/http/refunds"))
}

// TestHTTPProviderChargesAtTheSandbox: a job through CreateHTTPProvider's
// provider goes through the operator's HTTP adapter to the sandbox's
// contract routes, is counted by Charges, and the fault switches apply.
func TestHTTPProviderChargesAtTheSandbox(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := emptyNamespace(t)
	g.Expect(env.CreateHTTPProvider(ctx, ns, "payments")).To(Succeed())

	var pp paymentsv1alpha1.PaymentProvider
	g.Expect(env.Client().Get(ctx, client.ObjectKey{Namespace: ns, Name: "payments"}, &pp)).To(Succeed())
	urls := env.SandboxURLs()
	g.Expect(pp.Spec.Stripe).To(BeNil())
	g.Expect(pp.Spec.HTTP).To(Equal(&paymentsv1alpha1.HTTPProvider{
		URL: urls.HTTPCharges, LookupURL: urls.HTTPLookup, RefundURL: urls.HTTPRefunds,
		SecretKeyRef: &paymentsv1alpha1.SecretKeyReference{Name: "payments-token", Key: "token"},
	}))

	g.Expect(env.Faults().LoseResponses(1)).To(Succeed())
	t.Cleanup(func() { g.Expect(env.Faults().Reset()).To(Succeed()) })
	g.Expect(env.Client().Create(ctx, &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: "over-http", Namespace: ns},
		Spec: paymentsv1alpha1.PaymentJobSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: "payments"},
			Amount: 1500, Currency: "eur", PaymentMethod: paymentjobtest.PaymentMethodSucceeds},
	})).To(Succeed())
	job, err := env.WaitForPhase(ctx, ns, "over-http", paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(job.Status.Provider.Endpoint).To(Equal(urls.HTTPCharges), "charged through the http provider")
	g.Expect(job.Status.ProviderResponse.Replayed).To(BeTrue(), "the lost response was replayed")
	g.Expect(env.Charges(ns + "/over-http")).To(Equal(1))
}

func TestWaitForProviderReady(t *testing.T) {
	ctx := context.Background()

	t.Run("a provider of the test's own", func(t *testing.T) {
		g := NewWithT(t)
		ns := emptyNamespace(t)
		g.Expect(env.Client().Create(ctx, &paymentsv1alpha1.PaymentProvider{
			ObjectMeta: metav1.ObjectMeta{Name: "no-lookup", Namespace: ns},
			Spec: paymentsv1alpha1.PaymentProviderSpec{HTTP: &paymentsv1alpha1.HTTPProvider{
				URL: env.SandboxURLs().HTTPCharges}},
		})).To(Succeed())

		pp, err := env.WaitForProviderReady(ctx, ns, "no-lookup", time.Minute)

		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pp.Name).To(Equal("no-lookup"))
		ready := pp.Status.Conditions[0]
		g.Expect(ready.Type).To(Equal(paymentsv1alpha1.ConditionReady))
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(ready.Reason).To(Equal(paymentsv1alpha1.ReasonReady))
		g.Expect(ready.ObservedGeneration).To(Equal(pp.Generation))
	})

	t.Run("a provider whose Secret is missing says why", func(t *testing.T) {
		g := NewWithT(t)
		ns := emptyNamespace(t)
		g.Expect(env.Client().Create(ctx, &paymentsv1alpha1.PaymentProvider{
			ObjectMeta: metav1.ObjectMeta{Name: "no-secret", Namespace: ns},
			Spec: paymentsv1alpha1.PaymentProviderSpec{HTTP: &paymentsv1alpha1.HTTPProvider{
				URL:          env.SandboxURLs().HTTPCharges,
				SecretKeyRef: &paymentsv1alpha1.SecretKeyReference{Name: "missing", Key: "token"}}},
		})).To(Succeed())
		started := time.Now()

		_, err := env.WaitForProviderReady(ctx, ns, "no-secret", 2*time.Second)

		g.Expect(err).To(MatchError(And(
			ContainSubstring("PaymentProvider "+ns+"/no-secret is not Ready within 2s"),
			ContainSubstring("Ready=False "+paymentsv1alpha1.ReasonSecretNotFound),
			ContainSubstring(`Secret "missing"`),
		)))
		g.Expect(time.Since(started)).To(BeNumerically("<", 10*time.Second))
	})

	t.Run("a provider that does not exist", func(t *testing.T) {
		g := NewWithT(t)
		_, err := env.WaitForProviderReady(ctx, emptyNamespace(t), "nowhere", time.Second)
		g.Expect(err).To(MatchError(ContainSubstring("is not Ready within 1s")))
		g.Expect(err).To(MatchError(ContainSubstring("it does not exist")))
	})

	t.Run("CreateProvider fails with the provider's reason", func(t *testing.T) {
		g := NewWithT(t)
		ns := emptyNamespace(t)
		// A Secret of that name without the label: the operator never reads it.
		g.Expect(env.Client().Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "stripe-credentials", Namespace: ns},
			StringData: map[string]string{"apiKey": "sk_test_unlabelled"},
		})).To(Succeed())
		short, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		err := env.CreateProvider(short, ns, "stripe")
		g.Expect(err).To(HaveOccurred())
		g.Expect(strings.Contains(err.Error(), paymentsv1alpha1.ReasonSecretNotFound)).To(BeTrue(), err.Error())
	})
}
