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
	"fmt"
	"sync"
	"time"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// Where a provider configuration sends keys, and whether a payment recorded
// at one identity may go on, or was made, at another.

// identity memoizes the account a provider configuration reaches.
type identity struct {
	mu    sync.Mutex
	known bool
	id    paymentsv1alpha1.ProviderIdentity
	// accountsOnly: the account alone names where money moves (Stripe),
	// so the endpoint may change (a proxy) as long as the account does not.
	accountsOnly bool
}

func (i *identity) get(ctx context.Context, p payment.Provider, timeout time.Duration) (paymentsv1alpha1.ProviderIdentity, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.known {
		return i.id, nil
	}
	if idf, ok := p.(payment.Identifier); ok {
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		account, err := idf.Account(ctx)
		if err != nil {
			return paymentsv1alpha1.ProviderIdentity{}, fmt.Errorf("cannot identify the provider's account: %w", err)
		}
		i.id.Account = payment.Bound(account, 255)
	}
	i.known = true
	return i.id, nil
}

// SameProvider reports whether a payment recorded as sent to recorded may
// go on at current, and if not, why.
func SameProvider(recorded, current paymentsv1alpha1.ProviderIdentity, accountsOnly bool) (bool, string) {
	switch {
	case recorded.UID != current.UID:
		return false, fmt.Sprintf("the PaymentProvider object was replaced (uid %s, now %s)", recorded.UID, current.UID)
	case recorded.Account != current.Account && (recorded.Account != "" || !accountsOnly):
		return false, fmt.Sprintf("the account changed from %q to %q", recorded.Account, current.Account)
	case recorded.Endpoint != current.Endpoint && (!accountsOnly || recorded.Account == ""):
		return false, fmt.Sprintf("the endpoint changed from %q to %q", recorded.Endpoint, current.Endpoint)
	case recorded.Mode != "" && recorded.Mode != current.Mode:
		return false, fmt.Sprintf("the mode changed from %s to %s", recorded.Mode, describeMode(current.Mode))
	}
	return true, ""
}

// SameBooks reports whether a payment the ledger recorded as made at
// recorded was made where current charges now, and if not, why. Unlike
// SameProvider it does not compare the PaymentProvider object, which the
// ledger outlives (a namespace re-created from Git has new objects): only
// where the money moved, the account and its mode for providers that name
// one, the endpoint for the others, and both for an HTTP provider that
// names its account (one endpoint may serve several accounts, each key
// reaching its own). An entry recorded before modes or accounts were
// recorded matches either.
func SameBooks(recorded, current paymentsv1alpha1.ProviderIdentity, accountsOnly bool) (bool, string) {
	switch {
	case accountsOnly && recorded.Account != "":
		if recorded.Account != current.Account {
			return false, fmt.Sprintf("the account changed from %q to %q", recorded.Account, current.Account)
		}
	case recorded.Endpoint != current.Endpoint:
		return false, fmt.Sprintf("the endpoint changed from %q to %q", recorded.Endpoint, current.Endpoint)
	case !accountsOnly && recorded.Account != "" && recorded.Account != current.Account:
		return false, fmt.Sprintf("the account changed from %q to %q", recorded.Account, current.Account)
	}
	if recorded.Mode != "" && recorded.Mode != current.Mode {
		return false, fmt.Sprintf("the mode changed from %s to %s", recorded.Mode, describeMode(current.Mode))
	}
	return true, ""
}

// describeMode names a mode for a message.
func describeMode(mode string) string {
	if mode == "" {
		return "unknown"
	}
	return mode
}

// modeOf is the mode a kind's credential reaches, "" when it cannot tell.
func modeOf(kind *providerKind, credential string) string {
	if kind.mode == nil {
		return ""
	}
	return kind.mode(credential)
}

// DescribeBooks names where a payment was made for a message: the account
// and mode, or the endpoint.
func DescribeBooks(id paymentsv1alpha1.ProviderIdentity) string {
	s := id.Endpoint
	if id.Account != "" {
		s = "account " + id.Account
	}
	if id.Mode != "" {
		s += " (" + id.Mode + " mode)"
	}
	return s
}
