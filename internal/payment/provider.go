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

// Metadata entries that adapters store with every charge, where the provider
// keeps metadata, so that Lookup can find the charge by its key and tell
// whether it was made for the same request.
const (
	// MetadataKeyIdempotencyKey holds the idempotency key.
	MetadataKeyIdempotencyKey = "paymentjob_idempotency_key"
	// MetadataKeyFingerprint holds RequestHash(key, request).
	MetadataKeyFingerprint = "paymentjob_request_fingerprint"
)

// LookupMetadata returns a copy of req's metadata that also holds key under
// MetadataKeyIdempotencyKey and RequestHash(key, req) under
// MetadataKeyFingerprint: what an adapter stores with a charge where the
// provider keeps metadata. These two win over entries of req with the same
// names, since Lookup and Decide trust them; req is not changed.
func LookupMetadata(key string, req ChargeRequest) map[string]string {
	return keyedMetadata(req.Metadata, key, RequestHash(key, req))
}

// keyedMetadata is a copy of metadata with key under
// MetadataKeyIdempotencyKey and fingerprint under MetadataKeyFingerprint,
// which win over entries of metadata with the same names.
func keyedMetadata(metadata map[string]string, key, fingerprint string) map[string]string {
	out := make(map[string]string, len(metadata)+2)
	for k, v := range metadata {
		out[k] = v
	}
	out[MetadataKeyIdempotencyKey] = key
	out[MetadataKeyFingerprint] = fingerprint
	return out
}

// MaxLookupKeys is the most keys one Lookup call may ask for: one Stripe
// search query joins at most 10 clauses with OR.
const MaxLookupKeys = 10

// ChargeState is what a charge found by its key means for the job that
// sent the key.
type ChargeState string

const (
	// StateSucceeded means money moved (Stripe: succeeded, requires_capture).
	StateSucceeded ChargeState = "Succeeded"
	// StatePending means the charge is not final and may still move money
	// (Stripe: processing, requires_action, requires_confirmation). It is
	// settled by its id, never charged around.
	StatePending ChargeState = "Pending"
	// StateNotCharged means the charge ended without moving money (Stripe:
	// requires_payment_method, canceled).
	StateNotCharged ChargeState = "NotCharged"
)

// Found is a charge the provider holds under an idempotency key.
type Found struct {
	// Key is the idempotency key the charge carries.
	Key string
	// Outcome is the charge as the provider reports it now; Status is the
	// provider's own word for its state, Replayed is always false.
	Outcome
	// State classifies Status.
	State ChargeState
	// Fingerprint is the RequestHash the charge was created with, as the
	// adapter stored it at the provider; empty for a charge created without
	// one (by an older operator, or by hand).
	Fingerprint string
}

// Looker is implemented by providers that can find charges by their
// idempotency key, so that a key the provider no longer remembers (Stripe:
// after 24 hours) is never charged a second time.
type Looker interface {
	// Lookup returns every charge the provider holds under each of keys,
	// at most MaxLookupKeys of them; a key without charges is absent from
	// the map. Any error means nothing is known about any of the keys, and
	// nothing may be charged on its strength. An index that lags behind
	// writes (Stripe's search) may miss a charge made in the last minutes:
	// Lookup is never a read-after-write check.
	Lookup(ctx context.Context, keys []string) (map[string][]Found, error)
	// Settle reads the charge with id, made under key, until it is final or
	// ctx is done. It returns the outcome of a charge that succeeded, a
	// Declined refusal for one that ended without moving money, and a
	// TransientError otherwise. It never creates a charge.
	Settle(ctx context.Context, key, id string) (Outcome, error)
}

// Identifier is implemented by providers that can name the account their
// credentials reach, so that a payment is never continued at another one.
type Identifier interface {
	// Account returns the provider's identifier of the account, such as
	// Stripe's acct_..., or "" when the provider names none. It is called
	// once per provider configuration; an error is uncertain and retried.
	Account(ctx context.Context) (string, error)
}
