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

package engine

import (
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// The engine is the exactly-once protocol, once, for every kind that moves
// money: the Reconciler owns the claim, the outcome, the backoff, the stall,
// the ledger and the resolution, and a Kind supplies what differs between a
// charge and a refund: the request, the provider call, the lookup, and the
// checks before the first claim. This is crossplane-runtime's managed
// reconciler and its ExternalClient in miniature.

// Object is one payment the engine drives: a PaymentJob or a PaymentRefund.
// Its status (GetPaymentStatus) is written by the engine only.
type Object interface {
	client.Object
	// GetPaymentStatus returns the object's protocol status.
	GetPaymentStatus() *paymentsv1alpha1.PaymentStatus
}

// Terms are the spec fields every kind has and the engine reads.
type Terms struct {
	// Provider is the name of the PaymentProvider in the object's namespace.
	Provider string
	// Key is the object's idempotency key: spec.idempotencyKey or its name.
	Key string
	// Suspend holds an unclaimed object (spec.suspend).
	Suspend bool
	// BackoffLimit is spec.backoffLimit (nil: the default).
	BackoffLimit *int32
	// ActiveDeadlineSeconds is spec.activeDeadlineSeconds.
	ActiveDeadlineSeconds *int64
	// TTLSecondsAfterFinished is spec.ttlSecondsAfterFinished.
	TTLSecondsAfterFinished *int32
}

// SpecTerms are the Terms of obj read from the spec fields every kind has,
// under the same names: providerRef, idempotencyKey (obj's name when
// empty), suspend, backoffLimit, activeDeadlineSeconds and
// ttlSecondsAfterFinished.
func SpecTerms(obj Object, provider paymentsv1alpha1.ProviderReference, key string, suspend *bool,
	backoffLimit *int32, activeDeadlineSeconds *int64, ttlSecondsAfterFinished *int32) Terms {
	return Terms{
		Provider:                provider.Name,
		Key:                     payment.EffectiveKey(obj.GetName(), key),
		Suspend:                 suspend != nil && *suspend,
		BackoffLimit:            backoffLimit,
		ActiveDeadlineSeconds:   activeDeadlineSeconds,
		TTLSecondsAfterFinished: ttlSecondsAfterFinished,
	}
}

// Terminal reports whether phase is final: Completed or Failed.
func Terminal(phase paymentsv1alpha1.PaymentJobPhase) bool {
	return phase == paymentsv1alpha1.PhaseCompleted || phase == paymentsv1alpha1.PhaseFailed
}

// Unfinished keeps the Objects whose phase is not final (a filter of
// UsersOf).
func Unfinished(obj client.Object) bool {
	o, ok := obj.(Object)
	return ok && !Terminal(o.GetPaymentStatus().Phase)
}

// Request is what an object sends under its key, the same on every
// attempt.
type Request struct {
	// Key is the idempotency key sent.
	Key string
	// Fingerprint is the request's hash under Key, recorded at the first
	// claim (status.requestHash) and compared at every later one.
	Fingerprint string
	// Amount and Currency are the money the request moves, for messages and
	// for telling a found payment without a fingerprint apart.
	Amount   int64
	Currency string
	// Refunds is, for a refund, the provider's id of the charge it gives
	// money back from; the ledger records it beside the refund's outcome.
	Refunds string
}

// match is the request as payment.Decide compares a payment found without
// a fingerprint: by amount and currency.
func (q Request) match() payment.ChargeRequest {
	return payment.ChargeRequest{Amount: q.Amount, Currency: q.Currency}
}

// Scheduler deletes finished objects after their TTL (the TTL collector).
type Scheduler interface {
	// Schedule takes obj of kind k, just finished, into account.
	Schedule(k AnyKind, obj Object)
}

// Words word every message, event action and error the engine writes on
// an object of a kind, so that a refund never reads of charging.
type Words struct {
	// Action is the event action of the provider call: Charge, Refund.
	Action string
	// Noun names the provider's object: charge, refund.
	Noun string
	// Done says it happened: Charged, Refunded.
	Done string
	// Doing says it is being done: charging, refunding.
	Doing string
	// Object is how messages name one object of the kind: object, refund.
	Object string
	// Request names what was asked of the provider, as users say it:
	// payment, refund.
	Request string
	// Unmoved says that a refusal moved no money: nothing was charged, no
	// money went back.
	Unmoved string
}

// not says the engine does not do it: Not charging, Not refunding.
func (w Words) not() string { return "Not " + w.Doing }

// done says it was done, in a sentence: charged, refunded.
func (w Words) done() string { return strings.ToLower(w.Done) }
