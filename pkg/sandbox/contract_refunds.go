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
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// Refunds in the HTTP contract: POST /http/refunds, with the status codes
// of POST /http/charges, and the refunds of a charge in the lookup. A
// refund refused for what the charge allows is a 402 with the payment
// package's reason:
//
//	Engine refusal                                  contract answer
//	charge_already_refunded, amount_too_large       402 RefundExceedsCharge
//	resource_missing (payment_intent)               402 ChargeNotFound
//	a PaymentIntent that did not succeed            402 ChargeNotRefundable
//
// and any other error is answered as for a charge. A refund that failed
// after it was created is a 2xx with status "failed".

// contractRefundRequest is the JSON body of POST /http/refunds.
type contractRefundRequest struct {
	Charge         string            `json:"charge"`
	Amount         int64             `json:"amount"`
	Currency       string            `json:"currency"`
	Reason         string            `json:"reason"`
	Metadata       map[string]string `json:"metadata"`
	IdempotencyKey string            `json:"idempotencyKey"`
	Fingerprint    string            `json:"fingerprint"`
}

// contractRefund is the 2xx body of POST /http/refunds.
type contractRefund struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	Created  int64  `json:"created"`
	Replayed bool   `json:"replayed"`
	Charge   string `json:"charge"`
}

// contractFoundRefund is a refund of the lookup body.
type contractFoundRefund struct {
	IdempotencyKey string `json:"idempotencyKey"`
	ID             string `json:"id"`
	Status         string `json:"status"`
	Amount         int64  `json:"amount"`
	Currency       string `json:"currency"`
	Created        int64  `json:"created"`
	Fingerprint    string `json:"fingerprint"`
	Charge         string `json:"charge"`
}

// createContractRefund refunds under the Idempotency-Key header (or the
// body's idempotencyKey), storing the key and the body's fingerprint in the
// refund's metadata so that a lookup finds it: 201 for a new refund, 200
// with Idempotent-Replayed: true for a replay. A replay answers the refund
// as it is now, so that a retry of a pending refund learns its outcome, as
// the contract asks.
func (s *server) createContractRefund(w http.ResponseWriter, r *http.Request) {
	body, err := readContractRefund(r)
	if err != nil {
		writeUnreadable(w, err)
		return
	}
	key, err := contractKey(r.Header.Get("Idempotency-Key"), body.IdempotencyKey)
	if err == nil && body.Charge == "" {
		err = errors.New("charge is required")
	}
	if err == nil && body.Amount <= 0 {
		err = errors.New("amount must be greater than zero")
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, contractError{Reason: payment.ReasonInvalidRequest, Message: err.Error()})
		return
	}
	w.Header().Set("Idempotency-Key", key)
	req := RefundParams{
		PaymentIntent: body.Charge,
		Amount:        body.Amount,
		Currency:      body.Currency,
		Reason:        body.Reason,
		Metadata:      lookupMetadata(body.Metadata, key, body.Fingerprint),
	}
	// Compared without the fingerprint, as a charge is.
	compared := req
	compared.Metadata = maps.Clone(req.Metadata)
	delete(compared.Metadata, payment.MetadataKeyFingerprint)
	refund, replayed, err := s.engine.createRefund(key, req, compared.fingerprint())
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	if err != nil {
		writeContractRefundError(w, stripeErrorOf(err))
		return
	}
	status := http.StatusCreated
	if replayed {
		status = http.StatusOK
		if now, ok := s.engine.GetRefund(refund.ID); ok {
			refund = now
		}
	}
	writeJSON(w, status, contractRefund{
		ID:       refund.ID,
		Status:   refund.Status,
		Amount:   refund.Amount,
		Currency: refund.Currency,
		Created:  refund.Created.Unix(),
		Replayed: replayed,
		Charge:   refund.PaymentIntent,
	})
}

// readContractRefund decodes the JSON body of a refund; unknown fields are
// ignored.
func readContractRefund(r *http.Request) (contractRefundRequest, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return contractRefundRequest{}, errors.New("the request body must be application/json")
		}
	}
	var body contractRefundRequest
	dec := json.NewDecoder(r.Body)
	err := dec.Decode(&body)
	if err == nil && dec.More() {
		err = errors.New("the body holds more than one JSON value")
	}
	if err != nil {
		return contractRefundRequest{}, fmt.Errorf("invalid refund body: %w", err)
	}
	return body, nil
}

// writeContractRefundError writes a refund refusal as a 402 with its
// reason (a 409 ChargePending for a payment still processing), and any
// other Engine error as for a charge.
func writeContractRefundError(w http.ResponseWriter, se *StripeError) {
	if se.refusal == "" {
		writeContractError(w, se)
		return
	}
	if se.refusal == ReasonChargePending {
		writeJSON(w, http.StatusConflict, contractError{Reason: se.refusal, Message: se.Message})
		return
	}
	writeJSON(w, http.StatusPaymentRequired, contractError{Reason: se.refusal, Message: se.Message})
}

// lookupCharge returns the PaymentIntent with id and its refunds, newest
// first, for the contract's lookup: found is false for an unknown id. It
// counts as one search (Stats.Searches, RateLimits.Searches) and has no
// search lag.
func (e *Engine) lookupCharge(id string) (in Intent, refunds []Refund, found bool, err error) {
	e.lockSettled()
	e.stats.Searches++
	if e.lookupOff {
		e.mu.Unlock()
		return Intent{}, nil, false, lookupOffError()
	}
	if !e.allow(e.searches) {
		e.mu.Unlock()
		return Intent{}, nil, false, rateLimitError(RateLimitRetryAfter, false)
	}
	in, found = e.intents[id]
	in = in.clone()
	e.mu.Unlock()
	if !found {
		return Intent{}, nil, false, nil
	}
	return in, e.ListRefunds(id), true, nil
}

// foundCharge is an intent as a charge of the lookup body.
func foundCharge(in Intent) contractFound {
	return contractFound{
		IdempotencyKey: cmp.Or(in.Metadata[payment.MetadataKeyIdempotencyKey], in.IdempotencyKey),
		ID:             in.ID,
		Status:         contractStatus(in.Status),
		Amount:         in.Amount,
		Currency:       in.Currency,
		Created:        in.Created.Unix(),
		Fingerprint:    in.Metadata[payment.MetadataKeyFingerprint],
		Method:         methodTypeOf(in),
		FailureCode:    failureCodeOf(in),
	}
}

// failureCodeOf is the code of in's last payment error for a failed
// intent, empty otherwise.
func failureCodeOf(in Intent) string {
	if in.Status != StatusRequiresPaymentMethod || in.LastPaymentError == nil {
		return ""
	}
	return cmp.Or(in.LastPaymentError.DeclineCode, in.LastPaymentError.Code)
}

// foundRefund is a refund of the lookup body; one made without the
// operator's metadata has an empty idempotencyKey and fingerprint.
func foundRefund(r Refund) contractFoundRefund {
	return contractFoundRefund{
		IdempotencyKey: r.Metadata[payment.MetadataKeyIdempotencyKey],
		ID:             r.ID,
		Status:         r.Status,
		Amount:         r.Amount,
		Currency:       r.Currency,
		Created:        r.Created.Unix(),
		Fingerprint:    r.Metadata[payment.MetadataKeyFingerprint],
		Charge:         r.PaymentIntent,
	}
}
