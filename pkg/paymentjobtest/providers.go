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

package paymentjobtest

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// providerReadyTimeout bounds the wait of CreateProvider and
// CreateHTTPProvider.
const providerReadyTimeout = time.Minute

// CreateProvider creates, in namespace, a PaymentProvider named name that
// charges at the sandbox through the real Stripe adapter, and its labelled
// Secret (name-credentials), and waits until the provider is Ready.
func (e *Env) CreateProvider(ctx context.Context, namespace, name string) error {
	secret, err := e.createCredentials(ctx, namespace, name+"-credentials", "apiKey", "sk_test_paymentjobtest")
	if err != nil {
		return err
	}
	return e.createProvider(ctx, &paymentsv1alpha1.PaymentProvider{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: paymentsv1alpha1.PaymentProviderSpec{Stripe: &paymentsv1alpha1.StripeProvider{
			APIBase:      e.SandboxURLs().StripeAPIBase,
			SecretKeyRef: *secret,
		}},
	})
}

// CreateHTTPProvider creates, in namespace, a PaymentProvider named name of
// kind http, which charges, looks up and refunds at the sandbox's routes of
// the operator's HTTP contract (SandboxURLs) through the operator's HTTP
// adapter, and the labelled Secret (name-token) of its bearer token; it
// waits until the provider is Ready. Jobs through it are charged under the
// same keys as through CreateProvider's, so Charges and Faults work alike.
// For another spec (no lookup, no refunds, a service of your own), create
// the PaymentProvider yourself and call WaitForProviderReady.
func (e *Env) CreateHTTPProvider(ctx context.Context, namespace, name string) error {
	secret, err := e.createCredentials(ctx, namespace, name+"-token", "token", "paymentjobtest-token")
	if err != nil {
		return err
	}
	urls := e.SandboxURLs()
	return e.createProvider(ctx, &paymentsv1alpha1.PaymentProvider{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: paymentsv1alpha1.PaymentProviderSpec{HTTP: &paymentsv1alpha1.HTTPProvider{
			URL:          urls.HTTPCharges,
			LookupURL:    urls.HTTPLookup,
			RefundURL:    urls.HTTPRefunds,
			SecretKeyRef: secret,
		}},
	})
}

// createCredentials creates a Secret named name, labelled for the
// operator, that holds value under key; one that exists is kept.
func (e *Env) createCredentials(ctx context.Context, namespace, name, key, value string) (*paymentsv1alpha1.SecretKeyReference, error) {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
			Labels: map[string]string{paymentsv1alpha1.LabelCredentials: "true"}},
		StringData: map[string]string{key: value},
	}
	if err := e.client.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("paymentjobtest: cannot create the provider's Secret: %w", err)
	}
	return &paymentsv1alpha1.SecretKeyReference{Name: name, Key: key}, nil
}

// createProvider creates pp and waits until it is Ready.
func (e *Env) createProvider(ctx context.Context, pp *paymentsv1alpha1.PaymentProvider) error {
	if err := e.client.Create(ctx, pp); err != nil {
		return fmt.Errorf("paymentjobtest: cannot create the PaymentProvider: %w", err)
	}
	_, err := e.WaitForProviderReady(ctx, pp.Namespace, pp.Name, providerReadyTimeout)
	return err
}

// WaitForProviderReady waits up to timeout until the PaymentProvider is
// Ready for its current spec (the condition's observedGeneration is the
// provider's generation), and returns it. Otherwise the error says where
// the provider is: its conditions and its events. Jobs through a provider
// that is not Ready wait in Pending (ProviderNotReady), so a test that
// creates or changes a provider itself waits for it first.
func (e *Env) WaitForProviderReady(ctx context.Context, namespace, name string,
	timeout time.Duration) (*paymentsv1alpha1.PaymentProvider, error) {
	pp := &paymentsv1alpha1.PaymentProvider{}
	key := client.ObjectKey{Namespace: namespace, Name: name}
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		if err := e.client.Get(ctx, key, pp); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		c := meta.FindStatusCondition(pp.Status.Conditions, paymentsv1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == pp.Generation, nil
	})
	if err == nil {
		return pp, nil
	}
	if e.stopped() {
		err = fmt.Errorf("%w; the operator is not running", err)
	}
	where := "it does not exist"
	if pp.UID != "" {
		where = fmt.Sprintf("conditions: %s; events: %s", describeConditions(pp.Status.Conditions), e.describeEvents(pp))
	}
	return pp, fmt.Errorf("paymentjobtest: PaymentProvider %s is not Ready within %s (%w): %s", key, timeout, err, where)
}
