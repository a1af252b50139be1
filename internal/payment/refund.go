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

package payment

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// RefundRequest is what is sent to refund (part of) a charge. The same
// PaymentRefund always produces the same RefundRequest, so a retry under
// the same key is a replay at the provider, never a second refund.
type RefundRequest struct {
	// Charge is the provider's id of the charge to refund (Stripe: the
	// PaymentIntent, pi_...).
	Charge string `json:"charge"`
	// Amount to refund, in the currency's minor unit; always greater than
	// zero. The operator always sends it: a refund of "the whole charge" is
	// the charge's amount, never "whatever is left", so that the request
	// does not change between attempts.
	Amount int64 `json:"amount"`
	// Currency is the charge's lower-case ISO 4217 code.
	Currency string `json:"currency"`
	// Reason is Stripe's refund reason (duplicate, fraudulent,
	// requested_by_customer), if any.
	Reason string `json:"reason,omitempty"`
	// Metadata is attached to the refund at the provider.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Failure reasons of refund refusals that every adapter uses, so that a
// PaymentRefund says the same thing whatever the provider.
const (
	// ReasonRefundExceedsCharge: the amount is more than what is left of
	// the charge (Stripe: amount_too_large, an error on the amount
	// parameter without a code, charge_already_refunded).
	ReasonRefundExceedsCharge = "RefundExceedsCharge"
	// ReasonChargeNotFound: the provider holds no charge with the id.
	ReasonChargeNotFound = "ChargeNotFound"
	// ReasonChargeNotRefundable: the charge exists but cannot be refunded
	// (not succeeded, disputed).
	ReasonChargeNotRefundable = "ChargeNotRefundable"
	// ReasonRefundFailed: the provider reports the refund failed or was
	// canceled; no money went back.
	ReasonRefundFailed = "RefundFailed"
)

// Refunder is implemented by providers that can refund a charge. Refunds
// follow the rules of Charge: idempotent per key (the same key and request
// replay the first outcome, Replayed set; another request under the key is
// a KeyReused refusal), bounded by the context, a *Refusal only when the
// provider definitively did not refund, anything else uncertain.
//
// The states of a refund map onto ChargeState: succeeded is StateSucceeded;
// pending and requires_action are StatePending; failed and canceled are
// StateNotCharged (no money went back).
type Refunder interface {
	// Refund refunds req.Amount of charge req.Charge under key. A refund
	// that is not final yet (pending) is a TransientError wrapping
	// ErrInFlight, like a pending charge, after the adapter tried to settle
	// it within ctx; one that failed or was canceled is a Declined refusal
	// with ReasonRefundFailed. An amount beyond what is left of the charge
	// is a refusal with ReasonRefundExceedsCharge.
	Refund(ctx context.Context, key string, req RefundRequest) (Outcome, error)
	// LookupRefunds returns every refund the provider holds on charge,
	// whatever its key: Refunds maps each refund key the operator sent (the
	// metadata entry MetadataKeyIdempotencyKey) to its refunds, newest
	// first, and Refunded sums the amounts of all of the charge's refunds
	// that succeeded or may still succeed (pending), ours or not. It has no
	// search lag: a refund the provider answered is always listed. A
	// charge the provider does not hold at all (an id it never made at
	// the account its credentials reach) is a Declined refusal with
	// ReasonChargeNotFound, where the provider can say so for sure; any
	// other error means nothing is known, and nothing may be refunded on
	// its strength.
	LookupRefunds(ctx context.Context, charge string) (RefundBook, error)
	// SettleRefund reads the refund with id, made under key, until it is
	// final or ctx is done: its outcome when it succeeded, a Declined
	// refusal (ReasonRefundFailed) when it failed or was canceled, a
	// TransientError otherwise. It never creates a refund.
	SettleRefund(ctx context.Context, key, id string) (Outcome, error)
}

// RefundLister is implemented by a Refunder whose LookupRefunds reads the
// charge with a request of its own (Stripe: the PaymentIntent). ListRefunds
// is LookupRefunds without that request, for a caller that knows the
// charge's amount and currency already: the book's Charge is the zero
// Found, and everything else is as LookupRefunds answers it.
type RefundLister interface {
	ListRefunds(ctx context.Context, charge string) (RefundBook, error)
}

// ListRefunds lists the refunds of charge at r: with ListRefunds when r is a
// RefundLister, otherwise with LookupRefunds.
func ListRefunds(ctx context.Context, r Refunder, charge string) (RefundBook, error) {
	if l, ok := r.(RefundLister); ok {
		return l.ListRefunds(ctx, charge)
	}
	return r.LookupRefunds(ctx, charge)
}

// RefundBook is what a provider holds on one charge: the charge as it is now
// and its refunds.
type RefundBook struct {
	// Charge is the charge itself (its amount and currency, its state now);
	// Found.Key is the key it was charged under, when the provider kept it.
	Charge Found
	// Refunds maps refund keys to the refunds made under them.
	Refunds map[string][]Found
	// Refunded is the sum of the amounts of every refund of the charge that
	// succeeded or is pending, including refunds made without a key.
	Refunded int64
	// Complete is true when Refunded counts every refund of the charge
	// (Stripe: always). An HTTP service's lookup answers only for the keys
	// it was asked, so there Refunded counts only the operator's refunds.
	Complete bool
}

// RefundKey is the key sent for a PaymentRefund: "<namespace>.refund/<key>"
// under the PaymentProvider's key scope, hashed like SentKey when too long.
// Namespaces and scopes never contain '.', so no refund key equals any
// PaymentJob's key (ScopedKey), whatever the two objects' keys are: at Stripe
// both kinds share one idempotency key space per account.
func RefundKey(scope, namespace, key string) string {
	return ScopedKey(scope, namespace+refundSuffix, key)
}

// RefundHash is the fingerprint of a refund request sent under a key, like
// RequestHash for charges; a refund's fingerprint never equals a charge's.
func RefundHash(key string, req RefundRequest) string {
	payload := struct {
		Version string        `json:"v"`
		Kind    string        `json:"kind"`
		Key     string        `json:"key"`
		Request RefundRequest `json:"request"`
	}{Version: "1", Kind: "refund", Key: key, Request: req}
	// json.Marshal cannot fail for strings, integers and string maps.
	b, _ := json.Marshal(payload)
	sum := sha256.Sum256(b)
	return hashedKeyPrefix + hex.EncodeToString(sum[:])
}

// RefundMetadata is LookupMetadata for a refund: a copy of req's metadata
// with key and RefundHash(key, req) under the entries Lookup reads.
func RefundMetadata(key string, req RefundRequest) map[string]string {
	return keyedMetadata(req.Metadata, key, RefundHash(key, req))
}
