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

package stripe

// Stripe's webhook events, verified and reduced to the objects they name.

import (
	"errors"
	"fmt"
	"strings"
	"time"

	stripego "github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// SignatureHeader is the header Stripe signs its webhook events in.
const SignatureHeader = "Stripe-Signature"

// ParseEvent verifies a Stripe webhook event, its body and its
// Stripe-Signature header, with the endpoint secret (whsec_...) at now, and
// reduces it to the objects it names:
//
//   - payment_intent.*: the PaymentIntent (SubjectPayment, ObjectID pi_...,
//     Key from its metadata);
//   - refund.*, charge.refund.updated: the refund (SubjectRefund, ObjectID
//     re_..., Key from its metadata, PaymentID its PaymentIntent);
//   - charge.refunded: the refunded payment (SubjectRefund, PaymentID its
//     PaymentIntent; the charge names no single refund);
//   - charge.dispute.*: the dispute (SubjectDispute, ObjectID dp_...,
//     PaymentID its PaymentIntent).
//
// Other types are verified and returned with ErrEventIgnored. Its errors
// wrap one of payment's ErrEvent* errors and never quote the body, the
// header or the secret.
func ParseEvent(body []byte, header, secret string, now time.Time) (payment.Event, error) {
	if err := payment.CheckEventSize(body); err != nil {
		return payment.Event{}, err
	}
	signed, err := payment.ParseSignatureHeader(header)
	if err != nil {
		return payment.Event{}, err
	}
	// The tolerance is checked here, against the injected clock and in both
	// directions (stripe-go checks only the past, against time.Now), after
	// the signature, so that "stale" counts signed replays, not forgeries.
	// IgnoreAPIVersionMismatch: the endpoint's API version is chosen in the
	// Stripe dashboard and may differ from stripe-go's; only id, type,
	// account, livemode and a few fields of data.object that every version
	// carries are read, and the operator reads the object through its own
	// client before it writes anything.
	ev, err := webhook.ConstructEventWithOptions(body, header, secret, webhook.ConstructEventOptions{
		IgnoreTolerance:          true,
		IgnoreAPIVersionMismatch: true,
	})
	switch {
	case errors.Is(err, webhook.ErrNotSigned), errors.Is(err, webhook.ErrInvalidHeader):
		return payment.Event{}, fmt.Errorf("%w: Stripe cannot read the %s header", payment.ErrEventUnsigned, SignatureHeader)
	case errors.Is(err, webhook.ErrNoValidSignature):
		return payment.Event{}, fmt.Errorf("%w: no %s signature matches the endpoint secret", payment.ErrEventBadSignature, SignatureHeader)
	case err != nil:
		// The signature was checked first: the body is signed, not an event.
		return payment.Event{}, fmt.Errorf("%w: not a Stripe event", payment.ErrEventMalformed)
	}
	if err := payment.CheckEventTime(signed.Signed, now); err != nil {
		return payment.Event{}, err
	}
	return reduceEvent(&ev)
}

// reduceEvent maps a verified Stripe event to the objects it names.
func reduceEvent(ev *stripego.Event) (payment.Event, error) {
	if ev.ID == "" || ev.Type == "" {
		return payment.Event{}, fmt.Errorf("%w: the event has no id or type", payment.ErrEventMalformed)
	}
	live := ev.Livemode
	out := payment.Event{
		ID:      ev.ID,
		Type:    string(ev.Type),
		Account: ev.Account,
		Live:    &live,
		Created: time.Unix(ev.Created, 0),
	}
	typ := string(ev.Type)
	switch {
	case strings.HasPrefix(typ, "payment_intent."):
		out.Subject = payment.SubjectPayment
	case typ == "charge.refunded", typ == "charge.refund.updated", strings.HasPrefix(typ, "refund."):
		out.Subject = payment.SubjectRefund
	case strings.HasPrefix(typ, "charge.dispute."):
		out.Subject = payment.SubjectDispute
	default:
		return out, fmt.Errorf("%w: %s", payment.ErrEventIgnored, typ)
	}
	if ev.Data == nil || ev.Data.Object == nil {
		return payment.Event{}, fmt.Errorf("%w: %s %s has no data.object", payment.ErrEventMalformed, typ, ev.ID)
	}
	obj := ev.Data.Object
	id := stringField(obj, "id")
	switch {
	case out.Subject == payment.SubjectPayment:
		out.ObjectID = id
	case typ == "charge.refunded":
		// The object is the charge: it names its PaymentIntent, and the
		// refunds only in older API versions.
		out.PaymentID = idField(obj, "payment_intent")
	default:
		out.ObjectID = id
		out.PaymentID = idField(obj, "payment_intent")
	}
	if metadata, ok := obj["metadata"].(map[string]any); ok && out.Subject != payment.SubjectDispute {
		out.Key, _ = metadata[payment.MetadataKeyIdempotencyKey].(string)
	}
	if out.ObjectID == "" && out.PaymentID == "" {
		return payment.Event{}, fmt.Errorf("%w: %s %s names no object", payment.ErrEventMalformed, typ, ev.ID)
	}
	return out, nil
}

// stringField is obj[name] when it is a string.
func stringField(obj map[string]any, name string) string {
	s, _ := obj[name].(string)
	return s
}

// idField is the id in obj[name], a string or an expanded object.
func idField(obj map[string]any, name string) string {
	switch v := obj[name].(type) {
	case string:
		return v
	case map[string]any:
		return stringField(v, "id")
	}
	return ""
}
