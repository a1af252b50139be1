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
	"errors"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/httpprovider"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/stripe"
)

// NewAdapter is the AdapterFactory of the manager: the Stripe adapter for
// spec.stripe, the generic HTTP provider for spec.http. The credential is the
// Stripe secret key or the bearer token; it never appears in errors.
func NewAdapter(spec paymentsv1alpha1.PaymentProviderSpec, credential string) (payment.Provider, error) {
	switch {
	case spec.Stripe != nil:
		return stripe.New(stripe.Config{APIKey: credential, APIBase: spec.Stripe.APIBase})
	case spec.HTTP != nil:
		return httpprovider.New(httpprovider.Config{URL: spec.HTTP.URL, LookupURL: spec.HTTP.LookupURL, Token: credential})
	}
	return nil, errors.New("exactly one of spec.stripe or spec.http must be set")
}
