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
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
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

// Kind is what one kind of payment supplies to the engine. The engine has no
// default: Reconciler.Kind must be set.
type Kind interface {
	// Name is the kind, as users see it (PaymentJob).
	Name() string
	// Noun and Verb word the kind's messages: "charge", "charged".
	Words() Words
	// New returns an empty object of the kind.
	New() Object
	// NewList returns an empty list of the kind.
	NewList() client.ObjectList
	// Terms reads the fields of obj's spec the engine needs.
	Terms(obj Object) Terms
	// Key is the key obj sends through a provider with key scope scope.
	Key(obj Object, scope string) string
	// Request is what obj sends under key. It reads only obj (its spec,
	// and what Prepare recorded in its status), never the API.
	Request(obj Object, key string) Request
	// Prepare runs before an unclaimed object is looked up in the ledger
	// and claimed: it records in obj's status, in memory, what Request
	// needs (the refunded charge), or says why obj must wait or stall
	// (wait), or fail without a provider call (refuse). The claim write
	// persists what it recorded.
	Prepare(ctx context.Context, r *Reconciler, obj Object) (wait *Progress, refuse *payment.Refusal, err error)
	// Calls is the provider's side of obj through t.
	Calls(t *Target, obj Object) Calls
	// Observe is the look at the provider before the first claim: what it
	// holds under req's key, and whether req may still be sent. wait is
	// set when the answer is not there yet (the kind wakes obj).
	Observe(ctx context.Context, r *Reconciler, obj Object, t *Target, req Request) (Observation, error)
	// SearchLag is how long after an attempt the provider's lookup may
	// still miss what it made.
	SearchLag(ctx context.Context, r *Reconciler, obj Object, t *Target) time.Duration
	// Watch adds the kind's watches beyond its own objects and the
	// PaymentProviders they use.
	Watch(r *Reconciler, b *builder.Builder) *builder.Builder
	// Counters are the kind's provider-call metrics.
	Counters() Counters
}

// LedgerPreparer is implemented by a Kind whose Request needs what Prepare
// records (a refund: the charge it refunds). PrepareFromLedger records the
// same from the ledger's entry under obj's own key, so that a re-created
// object is finished from its own entry before Prepare reads anything else
// (a refund whose PaymentJob is gone); it returns false when the entry
// holds too little (recorded before the ledger kept it), and the object is
// then prepared first and compared with the entry after.
type LedgerPreparer interface {
	PrepareFromLedger(obj Object, e ledger.Entry) bool
}

// ExactFind is implemented by a Kind whose provider answers Find from an
// exact list, with no search lag (a charge's refunds). A not-charged
// resolution of such an object is only recorded once that list, read at
// the account the object was sent to, holds nothing under its key: never
// on a person's word alone.
type ExactFind interface {
	ExactFind() bool
}

// Objects implements a Kind's New and NewList for a kind whose objects are
// *O, listed in *L: the PaymentJob kind embeds
// Objects[paymentsv1alpha1.PaymentJob, paymentsv1alpha1.PaymentJobList].
type Objects[O, L any] struct{}

// New returns a new, empty *O.
func (Objects[O, L]) New() Object { return any(new(O)).(Object) }

// NewList returns a new, empty *L.
func (Objects[O, L]) NewList() client.ObjectList { return any(new(L)).(client.ObjectList) }

// Scheduler deletes finished objects after their TTL (the TTL collector).
type Scheduler interface {
	// Schedule takes obj of kind k, just finished, into account.
	Schedule(k Kind, obj Object)
}

// Words word a kind's messages and events.
type Words struct {
	// Action is the event action of the provider call: Charge, Refund.
	Action string
	// Noun names the provider's object: charge, refund.
	Noun string
	// Done says it happened: Charged, Refunded.
	Done string
	// Request names what was asked of the provider, as users say it:
	// payment, refund.
	Request string
	// Unmoved says that a refusal moved no money: nothing was charged, no
	// money went back.
	Unmoved string
}

// Observation is what a kind found at the provider before the first claim.
type Observation struct {
	// Waiting: the answer is not there yet; come back after Requeue.
	Waiting bool
	Requeue time.Duration
	// Err: the provider could not be asked; nothing may be sent on its
	// strength.
	Err error
	// Found is what the provider holds under the key.
	Found []payment.Found
	// Refuse, when set, ends the object Failed without a provider call.
	Refuse *payment.Refusal
	// Wait, when set, keeps the object Pending (or stalls it) for the
	// reason, without a provider call, and looks again after Requeue.
	Wait *Progress
}

// Calls is what the engine asks of a kind's provider for one object.
type Calls interface {
	// Send makes the request under key (the charge, the refund).
	Send(ctx context.Context, key string) (payment.Outcome, error)
	// CanFind reports whether Find and Settle work.
	CanFind() bool
	// Find returns what the provider holds under key now.
	Find(ctx context.Context, key string) ([]payment.Found, error)
	// Settle reads id, made under key, until it is final.
	Settle(ctx context.Context, key, id string) (payment.Outcome, error)
}
