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

package sandbox

import (
	"cmp"
	"encoding/json"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// The events of the changes the Engine makes, in both formats. They are
// made under the lock, at the change, with the object as it is then, and
// queued for the webhook goroutine.

// Event types of the HTTP contract's events.
const (
	HTTPEventPaymentProcessing = "payment.processing"
	HTTPEventPaymentSucceeded  = "payment.succeeded"
	HTTPEventPaymentFailed     = "payment.failed"
	HTTPEventPaymentRefunded   = "payment.refunded"
	HTTPEventPaymentDisputed   = "payment.disputed"
	HTTPEventRefundSucceeded   = "refund.succeeded"
	HTTPEventRefundFailed      = "refund.failed"
)

// stripeEvent is an Event object as Stripe sends it to a webhook endpoint.
type stripeEvent struct {
	ID              string          `json:"id"`
	Object          string          `json:"object"`
	APIVersion      string          `json:"api_version"`
	Created         int64           `json:"created"`
	Data            stripeEventData `json:"data"`
	Livemode        bool            `json:"livemode"`
	PendingWebhooks int             `json:"pending_webhooks"`
	Request         stripeRequest   `json:"request"`
	Type            string          `json:"type"`
}

// stripeEventData holds the object of the event.
type stripeEventData struct {
	Object any `json:"object"`
}

// stripeRequest is the request that caused an event; the sandbox names
// none.
type stripeRequest struct {
	ID             *string `json:"id"`
	IdempotencyKey *string `json:"idempotency_key"`
}

// httpEvent is an event of the HTTP contract.
type httpEvent struct {
	ID      string        `json:"id"`
	Type    string        `json:"type"`
	Created int64         `json:"created"`
	Account string        `json:"account,omitempty"`
	Data    httpEventData `json:"data"`
}

// httpEventData names the object of an HTTP contract event.
type httpEventData struct {
	ID             string `json:"id"`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	Payment        string `json:"payment,omitempty"`
}

// emitLocked queues an event when webhooks are on: stripeType with
// stripeObject in the Stripe format, httpType with data in the HTTP
// contract's; an empty type makes no event in that format. The caller
// holds the lock.
func (e *Engine) emitLocked(stripeType string, stripeObject any, httpType string, data httpEventData) {
	h := e.hooks
	if h == nil || h.cfg.URL == "" {
		return
	}
	id := "evt_" + e.randomText(24)
	created := e.now().Unix()
	var v any
	switch {
	case h.cfg.Format == WebhookFormatHTTP && httpType != "":
		v = httpEvent{ID: id, Type: httpType, Created: created, Account: e.account, Data: data}
	case h.cfg.Format == WebhookFormatStripe && stripeType != "":
		v = stripeEvent{ID: id, Object: "event", APIVersion: StripeAPIVersion, Created: created,
			Data: stripeEventData{Object: stripeObject}, PendingWebhooks: 1, Type: stripeType}
	default:
		return
	}
	body, err := json.Marshal(v)
	if err != nil {
		// The bodies are plain structs: this cannot happen.
		return
	}
	h.stats.Events++
	h.enqueue(&delivery{id: id, body: body, ready: h.now()})
}

// intentEventLocked queues the event of in's new status. The caller holds
// the lock.
func (e *Engine) intentEventLocked(in Intent) {
	var stripeType, httpType string
	switch in.Status {
	case StatusProcessing:
		stripeType, httpType = "payment_intent.processing", HTTPEventPaymentProcessing
	case StatusSucceeded:
		stripeType, httpType = "payment_intent.succeeded", HTTPEventPaymentSucceeded
	case StatusRequiresPaymentMethod:
		stripeType, httpType = "payment_intent.payment_failed", HTTPEventPaymentFailed
	case StatusCanceled:
		stripeType, httpType = "payment_intent.canceled", HTTPEventPaymentFailed
	case StatusRequiresAction:
		stripeType = "payment_intent.requires_action"
	default:
		return
	}
	e.emitLocked(stripeType, intentBody(in), httpType, httpEventData{ID: in.ID, IdempotencyKey: intentKey(in)})
}

// refundEventLocked queues the events of r, just created or changed: at
// Stripe refund.created or refund.updated, and charge.refunded when it
// succeeded; in the HTTP contract refund.succeeded or refund.failed, and
// payment.refunded when it succeeded. The caller holds the lock.
func (e *Engine) refundEventLocked(r Refund, created bool) {
	stripeType := "refund.updated"
	if created {
		stripeType = "refund.created"
	}
	var httpType string
	switch r.Status {
	case RefundStatusSucceeded:
		httpType = HTTPEventRefundSucceeded
	case RefundStatusFailed:
		httpType = HTTPEventRefundFailed
	}
	key := cmp.Or(r.Metadata[payment.MetadataKeyIdempotencyKey], r.IdempotencyKey)
	e.emitLocked(stripeType, refundBodyOf(r), httpType, httpEventData{ID: r.ID, IdempotencyKey: key, Payment: r.PaymentIntent})
	if r.Status != RefundStatusSucceeded {
		return
	}
	in, ok := e.intents[r.PaymentIntent]
	if !ok {
		return
	}
	refunded := e.refundedLocked(in.ID)
	e.emitLocked("charge.refunded", chargeBody{
		ID: chargeID(in.ID), Object: "charge", Amount: in.Amount, AmountCaptured: in.Amount,
		AmountRefunded: refunded, Captured: true, Paid: true, Refunded: refunded >= in.Amount,
		Currency: in.Currency, Metadata: intentBody(in).Metadata, PaymentIntent: in.ID,
		Status: StatusSucceeded, Created: in.Created.Unix(),
	}, HTTPEventPaymentRefunded, httpEventData{ID: in.ID, IdempotencyKey: intentKey(in), Payment: in.ID})
}

// disputeEventLocked queues the event of a dispute opened. The caller
// holds the lock.
func (e *Engine) disputeEventLocked(d Dispute) {
	var key string
	if in, ok := e.intents[d.PaymentIntent]; ok {
		key = intentKey(in)
	}
	e.emitLocked("charge.dispute.created", disputeBodyOf(d), HTTPEventPaymentDisputed,
		httpEventData{ID: d.ID, IdempotencyKey: key, Payment: d.PaymentIntent})
}

// intentKey is the idempotency key in carries in its metadata, or the one
// it was created with.
func intentKey(in Intent) string {
	return cmp.Or(in.Metadata[payment.MetadataKeyIdempotencyKey], in.IdempotencyKey)
}
