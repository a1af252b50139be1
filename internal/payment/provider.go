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

// Package payment is the only door to side effects: the Provider interface
// that charges money, the request and outcome types, the typed error classes
// that decide whether a job fails or retries, and the derivation of the
// idempotency key and request fingerprint. It knows nothing of Kubernetes.
package payment

import (
	"context"
	"time"
)

// ChargeRequest is what is sent to the provider. The same PaymentJob always
// produces the same ChargeRequest, so a retry under the same key is a replay
// at the provider, never a request with other parameters.
type ChargeRequest struct {
	// Amount in the currency's minor unit; always greater than zero.
	Amount int64 `json:"amount"`
	// Currency is the lower-case ISO 4217 code.
	Currency string `json:"currency"`
	// Customer is the provider's customer identifier, if any.
	Customer string `json:"customer,omitempty"`
	// PaymentMethod is the provider's payment method identifier, if any.
	PaymentMethod string `json:"paymentMethod,omitempty"`
	// Description is shown by the provider.
	Description string `json:"description,omitempty"`
	// Metadata is attached to the payment at the provider.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Outcome is the provider's answer to a successful charge.
type Outcome struct {
	// ID of the charge at the provider.
	ID string
	// Status reported by the provider, such as succeeded.
	Status string
	// Amount charged, in minor units.
	Amount int64
	// Currency charged.
	Currency string
	// Created is when the provider created the charge.
	Created time.Time
	// Replayed is true when the provider answered with the saved outcome of
	// an earlier request with the same key instead of charging.
	Replayed bool
}

// Provider charges money. It is the only place where side effects happen.
//
// Charge must be idempotent per key: a second call with the same key and the
// same request returns the first call's outcome (Replayed set) and moves no
// money. A call with the same key and another request fails with a KeyReused
// refusal. Charge is bounded by the context's deadline, never touches
// Kubernetes objects, and returns one of the error classes of this package:
// a *Refusal when the provider definitively did not charge, anything else
// when the outcome is uncertain and the same call must be retried.
type Provider interface {
	Charge(ctx context.Context, key string, req ChargeRequest) (Outcome, error)
}

// Looker is implemented by providers that can find the outcome of an earlier
// charge by its key, for providers whose key memory may have expired.
type Looker interface {
	// Lookup returns the outcome of the charge made with key, and false when
	// the provider has no charge for it.
	Lookup(ctx context.Context, key string) (Outcome, bool, error)
}
