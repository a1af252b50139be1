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
	"errors"
	"fmt"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/egress"
)

// ErrEndpointRefused says a provider's URL is not allowed by the manager's
// egress policy.
var ErrEndpointRefused = errors.New("endpoint refused by the egress policy")

// NewAdapterFactory is the AdapterFactory of the manager: the Stripe adapter
// for spec.stripe, the generic HTTP provider for spec.http, both calling out
// through one HTTP client whose dialer enforces policy on every connection
// (after DNS resolution). A URL the policy refuses (plain http to a host not
// listed in --insecure-provider-hosts, a forbidden literal address) is
// refused here already, wrapped in ErrEndpointRefused. The credential is the
// Stripe secret key or the bearer token; it never appears in errors.
func NewAdapterFactory(policy *egress.Policy) AdapterFactory {
	httpClient := policy.HTTPClient()
	return func(spec paymentsv1alpha1.PaymentProviderSpec, credential string) (payment.Provider, error) {
		for _, u := range ProviderURLs(spec) {
			if err := policy.CheckURL(u.Field, u.URL); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrEndpointRefused, err)
			}
		}
		kind, err := kindOf(spec)
		if err != nil {
			return nil, err
		}
		return kind.build(spec, credential, httpClient)
	}
}
