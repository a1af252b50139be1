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

package books

// Kind is what moved money: a charge or a refund.
type Kind string

const (
	// Charge is a payment: a PaymentJob at the cluster, a PaymentIntent
	// (or the HTTP contract's charge) at the provider.
	Charge Kind = "charge"
	// Refund is a PaymentRefund at the cluster, a refund at the provider.
	Refund Kind = "refund"
)

// Status is a provider object's state, as far as money goes.
type Status string

const (
	// StatusSucceeded means the money moved.
	StatusSucceeded Status = "succeeded"
	// StatusPending means the provider accepted it and has not settled it yet
	// (a refund to some payment methods takes days). It counts as money
	// that moves.
	StatusPending Status = "pending"
	// StatusFailed means no money moved, or (a refund) it moved back.
	StatusFailed Status = "failed"
	// StatusCanceled means the object was canceled before money moved.
	StatusCanceled Status = "canceled"
)

// moves reports whether an object in status s moved money, or will.
func (s Status) moves() bool { return s == StatusSucceeded || s == StatusPending }

// Record is the cluster's word on one idempotency key: a PaymentJob or a
// PaymentRefund, its ledger entry, or both.
type Record struct {
	// Kind is Charge for a job, Refund for a refund.
	Kind Kind
	// Key is the idempotency key the operator sent, namespace-scoped as
	// the provider saw it.
	Key string
	// Object names the PaymentJob or PaymentRefund, "<namespace>/<name>";
	// when only the ledger holds the key (the object was deleted after its
	// TTL), the name its ledger entry's key gives, with ObjectDeleted set,
	// or empty when the key gives none.
	Object string
	// ObjectDeleted says the object is no longer in the cluster: Object
	// was named from the ledger.
	ObjectDeleted bool
	// InLedger says the outcome ledger holds the key.
	InLedger bool
	// Moved says the cluster's outcome is that money moved (Completed);
	// false is a definitive refusal (Failed).
	Moved bool
	// ID is the provider's id the cluster recorded, if any.
	ID string
	// Amount in minor units; 0 when the cluster does not know it.
	Amount int64
	// Currency is the ISO 4217 code; empty when the cluster does not know
	// it.
	Currency string
	// ChargeKey is a refund's charge: the key of the job it refunds.
	ChargeKey string
	// ChargeObject is a refund's charge's PaymentJob, "<namespace>/<name>"
	// (the PaymentRefund's spec.paymentJobRef, or the name the charge's
	// ledger entry gives), with ChargeObjectDeleted set when the job is no
	// longer in the cluster. Empty when the cluster does not know it; a
	// charge record in the comparison fills it then.
	ChargeObject        string
	ChargeObjectDeleted bool
	// ChargeInLedger says the ledger holds a refund's charge's outcome.
	ChargeInLedger bool
	// ChargeAmount is a refund's charge's amount in minor units, as the
	// cluster recorded it; 0 when it does not know it.
	ChargeAmount int64
	// Charge is a refund's charge: the provider's id of the charge it gives
	// money back from, as the PaymentRefund or the ledger recorded it.
	Charge string
	// Exact says, for a refund, that the provider's exact list of its
	// charge's refunds was read (Stripe's list of a charge's refunds has no
	// search lag; the HTTP contract's refund lookup): when nothing under
	// the key moved money there, none did. Without it a refund the
	// provider shows nothing of is reported with what to check, never with
	// the advice to refund again.
	Exact bool
}

// Object is the provider's word on one charge or refund.
type Object struct {
	// Kind is Charge or Refund.
	Kind Kind
	// ID is the provider's id (pi_..., re_...).
	ID string
	// Key is the idempotency key the object carries in its metadata;
	// empty when it carries none (made in the dashboard or by another
	// system).
	Key string
	// Status is where the money is.
	Status Status
	// Amount in minor units.
	Amount int64
	// Currency is the ISO 4217 code, in any case.
	Currency string
	// Charge is a refund's charge: the provider's id of the charge it
	// refunds.
	Charge string
	// Dispute is the id of a dispute on a charge, if there is one.
	Dispute string
	// Refunded is, for a charge, the sum of the amounts of its refunds
	// that moved money (succeeded or pending), those made outside the
	// operator included, as the provider's list of them gave it;
	// RefundsRead says the caller read that list. Without it, Compare sums
	// the charge's refunds among the objects it is given.
	Refunded    int64
	RefundsRead bool
	// KeyUnknown says, of a charge given to Compare as a refund's charge,
	// that the provider did not say which key it was made under (a list of
	// a charge's refunds that does not read the charge): its empty Key is
	// no sign of a charge made without one of our keys.
	KeyUnknown bool
}
