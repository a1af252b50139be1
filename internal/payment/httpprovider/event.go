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

package httpprovider

// The HTTP contract's signed events (docs/providers.md, "Events").

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// SignatureHeader is the header the HTTP contract's events are signed in:
// "t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>", with one
// v1 per secret while the secret is rotated.
const SignatureHeader = "Paymentjob-Signature"

// The HTTP contract's event types, and the subject each names.
var eventSubjects = map[string]payment.EventSubject{
	"payment.succeeded":  payment.SubjectPayment,
	"payment.failed":     payment.SubjectPayment,
	"payment.processing": payment.SubjectPayment,
	"refund.succeeded":   payment.SubjectRefund,
	"refund.failed":      payment.SubjectRefund,
	"payment.refunded":   payment.SubjectRefund,
	"payment.disputed":   payment.SubjectDispute,
}

// eventBody is the JSON body of an event.
type eventBody struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Created int64  `json:"created"`
	Account string `json:"account"`
	Data    *struct {
		ID             string `json:"id"`
		IdempotencyKey string `json:"idempotencyKey"`
		Payment        string `json:"payment"`
	} `json:"data"`
}

// Sign returns the Paymentjob-Signature header of body signed with secret
// at t, for services that send events and for tests.
func Sign(secret string, t time.Time, body []byte) string {
	return "t=" + strconv.FormatInt(t.Unix(), 10) + ",v1=" + hex.EncodeToString(signature(secret, t.Unix(), body))
}

// signature is HMAC-SHA256(secret, "<t>.<body>").
func signature(secret string, t int64, body []byte) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(t, 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return mac.Sum(nil)
}

// ParseEvent verifies an event of the HTTP contract, its body and its
// Paymentjob-Signature header, with the endpoint secret at now: one v1
// signature must match (compared in constant time) and its timestamp be
// within payment.EventTolerance of now. It reduces the event to the
// objects it names: for payment.* events data.id is the payment; for
// refund.* events and payment.refunded data.id is the refund and
// data.payment its payment; for payment.disputed data.id is the dispute
// and data.payment its payment. Unknown types are verified and returned
// with ErrEventIgnored. Its errors wrap one of payment's ErrEvent* errors
// and never quote the body, the header or the secret.
func ParseEvent(body []byte, header, secret string, now time.Time) (payment.Event, error) {
	if err := payment.CheckEventSize(body); err != nil {
		return payment.Event{}, err
	}
	signed, err := payment.ParseSignatureHeader(header)
	if err != nil {
		return payment.Event{}, err
	}
	want := signature(secret, signed.Signed.Unix(), body)
	matched := false
	for _, sig := range signed.V1 {
		// Every signature is compared, so the time taken does not say which.
		if hmac.Equal(want, sig) {
			matched = true
		}
	}
	if !matched {
		return payment.Event{}, fmt.Errorf("%w: no %s signature matches the endpoint secret", payment.ErrEventBadSignature, SignatureHeader)
	}
	if err := payment.CheckEventTime(signed.Signed, now); err != nil {
		return payment.Event{}, err
	}
	return reduceEvent(body)
}

// reduceEvent reads a verified body.
func reduceEvent(body []byte) (payment.Event, error) {
	var b eventBody
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&b); err != nil || dec.More() {
		return payment.Event{}, fmt.Errorf("%w: not a JSON event", payment.ErrEventMalformed)
	}
	if b.ID == "" || b.Type == "" {
		return payment.Event{}, fmt.Errorf("%w: the event has no id or type", payment.ErrEventMalformed)
	}
	ev := payment.Event{ID: b.ID, Type: b.Type, Account: b.Account}
	if b.Created > 0 {
		ev.Created = time.Unix(b.Created, 0)
	}
	subject, known := eventSubjects[b.Type]
	if !known {
		return ev, fmt.Errorf("%w: %s", payment.ErrEventIgnored, b.Type)
	}
	if b.Data == nil {
		return payment.Event{}, fmt.Errorf("%w: %s %s has no data", payment.ErrEventMalformed, b.Type, b.ID)
	}
	ev.Subject = subject
	ev.ObjectID = b.Data.ID
	ev.Key = b.Data.IdempotencyKey
	if subject == payment.SubjectPayment {
		if ev.ObjectID == "" {
			return payment.Event{}, fmt.Errorf("%w: %s %s has no data.id", payment.ErrEventMalformed, b.Type, b.ID)
		}
		return ev, nil
	}
	ev.PaymentID = b.Data.Payment
	if ev.PaymentID == "" {
		return payment.Event{}, fmt.Errorf("%w: %s %s has no data.payment", payment.ErrEventMalformed, b.Type, b.ID)
	}
	return ev, nil
}
