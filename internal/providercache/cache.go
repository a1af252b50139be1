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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
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

	// lookups batches the provider's lookups; nil when it cannot look
	// charges up (it is not a payment.Looker).
	lookups *LookupBatcher
	// lookupFirst says every job is looked up before its first charge.
	lookupFirst bool
	// identity names where the provider sends keys.
	identity *identity
	// timeout is the provider's spec.timeoutSeconds; zero when unset.
	timeout time.Duration
}

// Identity returns the PaymentProvider's UID, its endpoint and, for
// providers that name one, the account behind its credentials. The account
// is asked once per provider configuration; a failure is not remembered.
func (r Resolved) Identity(ctx context.Context) (paymentsv1alpha1.ProviderIdentity, error) {
	return r.IdentityWithin(ctx, 0)
}

// IdentityWithin is Identity with a bound on the account request, when one
// is needed; zero leaves ctx's deadline alone.
func (r Resolved) IdentityWithin(ctx context.Context, timeout time.Duration) (paymentsv1alpha1.ProviderIdentity, error) {
	if r.identity == nil {
		return paymentsv1alpha1.ProviderIdentity{}, errors.New("the provider has no identity")
	}
	return r.identity.get(ctx, r.Provider, timeout)
}

// AccountsOnly reports whether the account alone names where the provider
// moves money (Stripe), whatever its endpoint: see SameProvider and
// SameBooks.
func (r Resolved) AccountsOnly() bool { return r.identity.accountsOnly }

// Lookups batches the provider's lookups; nil when it cannot look charges
// up (it is not a payment.Looker).
func (r Resolved) Lookups() *LookupBatcher { return r.lookups }

// LookupFirst reports whether every job is looked up before its first
// charge (spec.lookup.policy).
func (r Resolved) LookupFirst() bool { return r.lookupFirst }

// SpecTimeout is the provider's spec.timeoutSeconds; zero when unset.
func (r Resolved) SpecTimeout() time.Duration { return r.timeout }

// AdapterFactory builds the payment.Provider for a PaymentProvider's spec and
// the credential read from its Secret ("" when it references none).
type AdapterFactory func(spec paymentsv1alpha1.PaymentProviderSpec, credential string) (payment.Provider, error)

// ProviderCache keeps one adapter, one token bucket and one lookup batcher
// per PaymentProvider configuration, shared by all its jobs across workers.
// Entries are keyed by the provider's UID and a hash of what the adapter was
// built from (its spec and credential): a provider deleted and created again
// under the same name, an edited spec or a rotated Secret gets a new entry,
// and so a new identity check. The PaymentProvider reconciler refreshes
// entries as it checks the Secret, so jobs normally resolve their provider
// without any API request.
//
// An entry outlives its provider for the jobs that were Processing through
// it: when the provider is deleted or its credentials go away, the entry is
// retired, not dropped, and Kept still returns it for KeptAdapterTTL after
// its last use. It lives in this process's memory only.
type ProviderCache struct {
	// SecretReader reads the Secrets labelled LabelCredentials=true: the
	// manager's cached client, whose cache holds no other Secret.
	SecretReader client.Reader
	// Build makes the adapter for a provider.
	Build AdapterFactory
	// Clock dates the last use of retired entries; nil is the real clock.
	Clock clock.PassiveClock

	mu      sync.Mutex
	entries map[types.UID]*cacheEntry
	byName  map[types.NamespacedName]types.UID
}

type cacheEntry struct {
	generation int64
	hash       string
	resolved   Resolved
	// retired is set when the provider was deleted or its credentials went
	// away; lastUsed is when a job last asked for the entry after that.
	retired  bool
	lastUsed time.Time
}

// Resolve returns the adapter and token bucket of a ready PaymentProvider. It
// reads the provider's Secret only when this process has no entry for the
// provider's UID and current generation yet.
func (c *ProviderCache) Resolve(ctx context.Context, pp *paymentsv1alpha1.PaymentProvider) (Resolved, error) {
	c.mu.Lock()
	e := c.entries[pp.UID]
	current := e != nil && !e.retired && e.generation == pp.Generation
	c.mu.Unlock()
	if current {
		return e.resolved, nil
	}
	credential, err := ReadCredential(ctx, c.SecretReader, pp)
	if err != nil {
		return Resolved{}, err
	}
	return c.Refresh(pp, credential)
}

// Kept returns the adapter this process last used for the PaymentProvider
// with uid, retired or not, so that the jobs Processing through it can
// finish after the provider or its Secret is gone.
func (c *ProviderCache) Kept(uid types.UID) (Resolved, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pruneLocked()
	e := c.entries[uid]
	if e == nil {
		return Resolved{}, false
	}
	e.lastUsed = c.now()
	return e.resolved, true
}

// Refresh rebuilds the entry of a provider if its UID, spec or credential
// changed, and returns it. credential is "" for providers without one.
func (c *ProviderCache) Refresh(pp *paymentsv1alpha1.PaymentProvider, credential string) (Resolved, error) {
	kind, err := kindOf(pp.Spec)
	if err != nil {
		return Resolved{}, err
	}
	if kind.secretRef(pp.Spec) != nil && credential == "" {
		return Resolved{}, ErrNoCredentials
	}
	hash := configHash(pp.Spec, credential)

	name := client.ObjectKeyFromObject(pp)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[types.UID]*cacheEntry{}
		c.byName = map[types.NamespacedName]types.UID{}
	}
	c.pruneLocked()
	if e := c.entries[pp.UID]; e != nil && e.hash == hash {
		e.generation = pp.Generation
		e.retired = false
		c.nameLocked(name, pp.UID)
		return e.resolved, nil
	}
	provider, err := c.Build(pp.Spec, credential)
	if err != nil {
		return Resolved{}, fmt.Errorf("cannot build the provider adapter: %w", err)
	}
	timeout := time.Duration(0)
	if pp.Spec.TimeoutSeconds != nil {
		timeout = time.Duration(*pp.Spec.TimeoutSeconds) * time.Second
	}
	resolved := Resolved{
		Provider: provider,
		Limiter:  limiterFor(pp.Spec),
		timeout:  timeout,
		identity: &identity{
			id: paymentsv1alpha1.ProviderIdentity{UID: string(pp.UID), Endpoint: endpointOf(pp.Spec),
				Mode: modeOf(kind, credential), KeyScope: pp.Spec.KeyScope},
			accountsOnly: kind.accountsOnly,
		},
	}
	if looker, ok := provider.(payment.Looker); ok {
		resolved.lookups = newLookupBatcher(looker, lookupLimiterFor(pp.Spec))
		resolved.lookupFirst = pp.Spec.Lookup == nil || pp.Spec.Lookup.Policy != paymentsv1alpha1.LookupNever
	}
	c.entries[pp.UID] = &cacheEntry{generation: pp.Generation, hash: hash, resolved: resolved}
	c.nameLocked(name, pp.UID)
	return resolved, nil
}

// nameLocked makes uid the live entry of name: the entry of a provider
// that had the name before (deleted and created again) is retired.
func (c *ProviderCache) nameLocked(name types.NamespacedName, uid types.UID) {
	if old, ok := c.byName[name]; ok && old != uid {
		c.retireLocked(old)
	}
	c.byName[name] = uid
}

// Start drops, every KeptAdapterTTL/6 until ctx ends, the retired entries
// that no job used for KeptAdapterTTL, even when no provider is left to
// reconcile. Every replica runs it.
func (c *ProviderCache) Start(ctx context.Context) error {
	tick := time.NewTicker(KeptAdapterTTL / 6)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			c.mu.Lock()
			c.pruneLocked()
			c.mu.Unlock()
		}
	}
}

// NeedLeaderElection is false: every replica keeps its own adapters.
func (c *ProviderCache) NeedLeaderElection() bool { return false }

// Retire marks the entry of a provider that was deleted, or whose
// credentials can no longer be read: new jobs cannot resolve it, and Kept
// still returns it to the jobs already Processing through it, until
// KeptAdapterTTL after their last use.
func (c *ProviderCache) Retire(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if uid, ok := c.byName[key]; ok {
		c.retireLocked(uid)
		delete(c.byName, key)
	}
	c.pruneLocked()
}

func (c *ProviderCache) retireLocked(uid types.UID) {
	if e := c.entries[uid]; e != nil && !e.retired {
		e.retired = true
		e.lastUsed = c.now()
	}
}

// pruneLocked drops the retired entries that no job used for
// KeptAdapterTTL, and with them the credentials they were built from.
func (c *ProviderCache) pruneLocked() {
	now := c.now()
	for uid, e := range c.entries {
		if e.retired && now.Sub(e.lastUsed) > KeptAdapterTTL {
			delete(c.entries, uid)
		}
	}
}

func (c *ProviderCache) now() time.Time {
	if c.Clock == nil {
		return time.Now()
	}
	return c.Clock.Now()
}

// configHash is a fingerprint of what an adapter is built from. It stays in
// memory: the credential never leaves the process, hashed or not.
func configHash(spec paymentsv1alpha1.PaymentProviderSpec, credential string) string {
	// json.Marshal cannot fail for the spec's strings, integers and pointers.
	b, _ := json.Marshal(spec)
	h := sha256.New()
	h.Write(b)
	h.Write([]byte{0})
	h.Write([]byte(credential))
	return hex.EncodeToString(h.Sum(nil))
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

// lookupLimiterFor is the token bucket of the provider's lookups:
// spec.lookup.requestsPerSecond, DefaultLookupRequestsPerSecond when unset.
func lookupLimiterFor(spec paymentsv1alpha1.PaymentProviderSpec) *rate.Limiter {
	perSecond := int32(DefaultLookupRequestsPerSecond)
	if spec.Lookup != nil && spec.Lookup.RequestsPerSecond != nil {
		perSecond = *spec.Lookup.RequestsPerSecond
	}
	return rate.NewLimiter(rate.Limit(perSecond), int(perSecond))
}
