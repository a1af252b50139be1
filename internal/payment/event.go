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

import "time"

// EventTolerance is how old a signed provider event may be: its signed
// timestamp must be within five minutes of the receiver's clock (Stripe's
// default tolerance), so a captured request cannot be replayed later.
const EventTolerance = 5 * time.Minute

// MaxEventBytes is the largest event body accepted.
const MaxEventBytes = 64 << 10

// EventSubject says what kind of provider object an event is about.
type EventSubject string

const (
	// SubjectPayment is a payment (Stripe: a PaymentIntent).
	SubjectPayment EventSubject = "payment"
	// SubjectRefund is a refund of a payment.
	SubjectRefund EventSubject = "refund"
	// SubjectDispute is a dispute (chargeback) of a payment.
	SubjectDispute EventSubject = "dispute"
)

// Event is a verified provider event, reduced to what names the objects it
// wakes. It is a hint, never an outcome: the operator reads the provider
// before it writes anything, so an event can only make it look sooner.
type Event struct {
	// ID is the provider's event id (evt_...): each is handled once.
	ID string
	// Type is the provider's event type, such as payment_intent.succeeded.
	Type string
	// Account is the provider account the event comes from, when the
	// provider says ("" otherwise).
	Account string
	// Live is the provider's livemode flag, when it has one.
	Live *bool
	// Subject says what ObjectID is.
	Subject EventSubject
	// ObjectID is the provider's id of the object: pi_..., re_..., dp_...
	ObjectID string
	// Key is the idempotency key the object carries in its metadata, when
	// it was made by the operator.
	Key string
	// PaymentID is, for a refund or a dispute, the payment it is about.
	PaymentID string
	// Created is when the provider created the event.
	Created time.Time
}
