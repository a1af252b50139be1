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

package events

// Whether an event is for the account and mode a provider reaches.

import (
	"context"
	"fmt"
	"time"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/stripe"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
)

// Identities tells the account and mode a PaymentProvider reaches.
type Identities interface {
	// KnownIdentity returns pp's identity, and false when this process
	// does not know it (then the event's account is not checked).
	KnownIdentity(ctx context.Context, pp *paymentsv1alpha1.PaymentProvider) (paymentsv1alpha1.ProviderIdentity, bool)
}

// CachedIdentities are the identities the provider cache holds: those of
// the providers this process built an adapter for. The account is asked of
// the provider once per configuration (providercache.Resolved.Identity),
// within Timeout (zero: two seconds).
type CachedIdentities struct {
	Cache   *providercache.ProviderCache
	Timeout time.Duration
}

// KnownIdentity returns the identity of pp's cached adapter, and false
// when there is none or its account cannot be read.
func (c CachedIdentities) KnownIdentity(ctx context.Context, pp *paymentsv1alpha1.PaymentProvider) (paymentsv1alpha1.ProviderIdentity, bool) {
	resolved, ok := c.Cache.Kept(pp.UID)
	if !ok {
		return paymentsv1alpha1.ProviderIdentity{}, false
	}
	timeout := c.Timeout
	if timeout == 0 {
		timeout = 2 * time.Second
	}
	id, err := resolved.IdentityWithin(ctx, timeout)
	return id, err == nil
}

// foreign says why ev is not for the account or mode pp reaches, or "".
// An account or mode that is not known is not compared.
func (s *Server) foreign(ctx context.Context, pp *paymentsv1alpha1.PaymentProvider, ev payment.Event) string {
	mode := ""
	if s.Identities != nil {
		if id, ok := s.Identities.KnownIdentity(ctx, pp); ok {
			if ev.Account != "" && id.Account != "" && ev.Account != id.Account {
				return fmt.Sprintf("the event is for account %q, the provider reaches %q", ev.Account, id.Account)
			}
			mode = id.Mode
		}
	}
	if mode == "" && pp.Spec.Stripe != nil {
		// The mode of the API key: test-mode and live-mode events of one
		// account carry the same account id.
		if key, err := providercache.ReadCredential(ctx, s.Reader, pp); err == nil {
			mode = stripe.Mode(key)
		}
	}
	if ev.Live != nil && mode != "" && *ev.Live != (mode == "live") {
		return fmt.Sprintf("the event's livemode is %t, the provider's key is in %s mode", *ev.Live, mode)
	}
	return ""
}
