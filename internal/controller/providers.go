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
	"fmt"
	"sync"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// Resolved is a provider ready to charge, with the rate limit that all the
// jobs using it share.
type Resolved struct {
	// Provider charges.
	Provider payment.Provider
	// Limiter is the provider's client-side token bucket; nil is unlimited.
	Limiter *rate.Limiter
}

// AdapterFactory builds the payment.Provider for a PaymentProvider's spec and
// the credential read from its Secret ("" when it references none).
type AdapterFactory func(spec paymentsv1alpha1.PaymentProviderSpec, credential string) (payment.Provider, error)

// errNoCredentials says a provider's Secret cannot be used; the
// PaymentProvider reconciler reports the details in its Ready condition.
var errNoCredentials = errors.New("the provider's credentials are not available")

// ProviderCache keeps one adapter and one token bucket per PaymentProvider,
// shared by all its jobs across workers. An entry is rebuilt when the
// provider's generation or its Secret's resourceVersion changes. The
// PaymentProvider reconciler refreshes entries as it checks the Secret, so
// jobs normally resolve their provider without any API request.
type ProviderCache struct {
	// SecretReader reads Secrets from the API server, uncached.
	SecretReader client.Reader
	// Build makes the adapter for a provider.
	Build AdapterFactory

	mu      sync.Mutex
	entries map[types.NamespacedName]*cacheEntry
}

type cacheEntry struct {
	generation    int64
	secretVersion string
	resolved      Resolved
}

// Resolve returns the adapter and token bucket of a ready PaymentProvider. It
// reads the provider's Secret only when this process has no entry for the
// provider's current generation yet.
func (c *ProviderCache) Resolve(ctx context.Context, pp *paymentsv1alpha1.PaymentProvider) (Resolved, error) {
	key := client.ObjectKeyFromObject(pp)
	c.mu.Lock()
	e := c.entries[key]
	c.mu.Unlock()
	if e != nil && e.generation == pp.Generation {
		return e.resolved, nil
	}
	secret, err := c.readSecret(ctx, pp)
	if err != nil {
		return Resolved{}, err
	}
	return c.Refresh(pp, secret)
}

// Refresh rebuilds the entry of a provider if its generation or Secret
// changed, and returns it. secret is nil for providers without credentials.
func (c *ProviderCache) Refresh(pp *paymentsv1alpha1.PaymentProvider, secret *corev1.Secret) (Resolved, error) {
	ref := secretRef(pp)
	credential, version := "", ""
	if ref != nil {
		if secret == nil || len(secret.Data[ref.Key]) == 0 {
			return Resolved{}, errNoCredentials
		}
		credential, version = string(secret.Data[ref.Key]), secret.ResourceVersion
	}

	key := client.ObjectKeyFromObject(pp)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[key]; e != nil && e.generation == pp.Generation && e.secretVersion == version {
		return e.resolved, nil
	}
	provider, err := c.Build(pp.Spec, credential)
	if err != nil {
		return Resolved{}, fmt.Errorf("cannot build the provider adapter: %w", err)
	}
	resolved := Resolved{Provider: provider, Limiter: limiterFor(pp.Spec)}
	if c.entries == nil {
		c.entries = map[types.NamespacedName]*cacheEntry{}
	}
	c.entries[key] = &cacheEntry{generation: pp.Generation, secretVersion: version, resolved: resolved}
	return resolved, nil
}

// Forget drops the entry of a deleted provider.
func (c *ProviderCache) Forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, key)
}

func (c *ProviderCache) readSecret(ctx context.Context, pp *paymentsv1alpha1.PaymentProvider) (*corev1.Secret, error) {
	ref := secretRef(pp)
	if ref == nil {
		return nil, nil
	}
	var secret corev1.Secret
	err := c.SecretReader.Get(ctx, types.NamespacedName{Namespace: pp.Namespace, Name: ref.Name}, &secret)
	if apierrors.IsNotFound(err) {
		return nil, errNoCredentials
	}
	if err != nil {
		return nil, fmt.Errorf("cannot get secret %q: %w", ref.Name, err)
	}
	return &secret, nil
}

// secretRef is the Secret key a provider's credential is read from, or nil.
func secretRef(pp *paymentsv1alpha1.PaymentProvider) *paymentsv1alpha1.SecretKeyReference {
	switch {
	case pp.Spec.Stripe != nil:
		return &pp.Spec.Stripe.SecretKeyRef
	case pp.Spec.HTTP != nil:
		return pp.Spec.HTTP.SecretKeyRef
	}
	return nil
}

// limiterFor is the token bucket of requestsPerSecond and burst (which
// defaults to requestsPerSecond), or nil when the provider is unlimited.
func limiterFor(spec paymentsv1alpha1.PaymentProviderSpec) *rate.Limiter {
	if spec.RequestsPerSecond == nil {
		return nil
	}
	burst := int(*spec.RequestsPerSecond)
	if spec.Burst != nil {
		burst = int(*spec.Burst)
	}
	return rate.NewLimiter(rate.Limit(*spec.RequestsPerSecond), burst)
}
