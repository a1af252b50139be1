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
	"slices"
	"strings"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// This file serves the operator's generic HTTP contract (docs/providers.md,
// "The HTTP contract") on top of the same Engine as the Stripe routes: the
// same keys, intents, faults, limits and counters. Statuses are said in the
// contract's words (see contractStatus). Its errors are {"reason",
// "message"} bodies:
//
//	Stripe error                  contract answer
//	card_error                    402 CardDeclined
//	idempotency_error             422 IdempotencyKeyReused
//	idempotency_key_in_use        409 IdempotencyKeyInUse, Retry-After
//	rate_limit                    429 RateLimited, Retry-After
//	other invalid_request_error   400 InvalidRequest
//	api_error (injected faults)   500 ServerError
//	lookups turned off            404 NotFound

// Reasons of the contract's error bodies that the payment package does not
// name.
const (
	reasonKeyInUse    = "IdempotencyKeyInUse"
	reasonRateLimited = "RateLimited"
	reasonServerError = "ServerError"
	reasonNotFound    = "NotFound"
)

// contractChargeRequest is the JSON body of POST /http/charges.
type contractChargeRequest struct {
	Amount         int64             `json:"amount"`
	Currency       string            `json:"currency"`
	Customer       string            `json:"customer"`
	PaymentMethod  string            `json:"paymentMethod"`
	Description    string            `json:"description"`
	Metadata       map[string]string `json:"metadata"`
	IdempotencyKey string            `json:"idempotencyKey"`
	Fingerprint    string            `json:"fingerprint"`
}

// contractCharge is the 2xx body of POST /http/charges.
type contractCharge struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	Created  int64  `json:"created"`
	Replayed bool   `json:"replayed"`
	// Method is the payment method type, such as sepa_debit: a processing
	// charge of a bank debit stays processing for days.
	Method string `json:"method"`
	// FailureCode is why a charge failed after it was accepted, such as
	// insufficient_funds, in the contract's reason field; empty otherwise.
	FailureCode string `json:"reason,omitempty"`
}

// contractFound is a charge of the lookup body.
type contractFound struct {
	IdempotencyKey string `json:"idempotencyKey"`
	ID             string `json:"id"`
	Status         string `json:"status"`
	Amount         int64  `json:"amount"`
	Currency       string `json:"currency"`
	Created        int64  `json:"created"`
	Fingerprint    string `json:"fingerprint"`
	Method         string `json:"method"`
	// FailureCode is the contract's reason of a failed charge.
	FailureCode string `json:"reason,omitempty"`
}

// contractLookup is the body of GET /http/charges/lookup.
type contractLookup struct {
	Account string                `json:"account"`
	Charges []contractFound       `json:"charges"`
	Refunds []contractFoundRefund `json:"refunds"`
}

// contractError is an error body of the contract.
type contractError struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// writeUnreadable answers a request body that could not be read: 413 when
// it is too large, 400 otherwise.
func writeUnreadable(w http.ResponseWriter, err error) {
	status := http.StatusBadRequest
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		status = http.StatusRequestEntityTooLarge
	}
	writeJSON(w, status, contractError{Reason: payment.ReasonInvalidRequest, Message: err.Error()})
}

// createCharge charges under the Idempotency-Key header (or the body's
// idempotencyKey), storing the key and the body's fingerprint in the
// intent's metadata so that a lookup finds it: 201 for a new charge, 200
// with Idempotent-Replayed: true for a replay.
func (s *server) createCharge(w http.ResponseWriter, r *http.Request) {
	body, err := readContractCharge(r)
	if err != nil {
		writeUnreadable(w, err)
		return
	}
	key, err := contractKey(r.Header.Get("Idempotency-Key"), body.IdempotencyKey)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, contractError{Reason: payment.ReasonInvalidRequest, Message: err.Error()})
		return
	}
	w.Header().Set("Idempotency-Key", key)
	req := withLookupMetadata(PaymentIntentParams{
		Amount:        body.Amount,
		Currency:      body.Currency,
		Customer:      body.Customer,
		PaymentMethod: body.PaymentMethod,
		Description:   body.Description,
		Metadata:      body.Metadata,
	}, key, body.Fingerprint)

	// The contract compares a retry with the first request without its
	// fingerprint (docs/providers.md): a job charged by an operator that
	// sent none, retried by one that does, is the same request.
	compared := req
	compared.Metadata = maps.Clone(req.Metadata)
	delete(compared.Metadata, payment.MetadataKeyFingerprint)
	// A contract charge has no customer present: it is off-session.
	in, replayed, err := s.engine.createPaymentIntent(key, req, ConfirmOptions{OffSession: true}, compared.fingerprint())
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	if err != nil {
		writeContractError(w, stripeErrorOf(err))
		return
	}
	status := http.StatusCreated
	if replayed {
		status = http.StatusOK
	}
	writeJSON(w, status, contractCharge{
		ID:       in.ID,
		Status:   contractStatus(in.Status),
		Amount:   in.Amount,
		Currency: in.Currency,
		Created:  in.Created.Unix(),
		Replayed: replayed,
		Method:   methodTypeOf(in),
	})
}

// withLookupMetadata returns a copy of p whose metadata also holds key and,
// when it is not empty, fingerprint.
func withLookupMetadata(p PaymentIntentParams, key, fingerprint string) PaymentIntentParams {
	p.Metadata = lookupMetadata(p.Metadata, key, fingerprint)
	return p
}

// lookupMetadata returns a copy of metadata that also holds key and, when
// it is not empty, fingerprint.
func lookupMetadata(metadata map[string]string, key, fingerprint string) map[string]string {
	tagged := make(map[string]string, len(metadata)+2)
	maps.Copy(tagged, metadata)
	tagged[payment.MetadataKeyIdempotencyKey] = key
	if fingerprint != "" {
		tagged[payment.MetadataKeyFingerprint] = fingerprint
	}
	return tagged
}

// readContractCharge decodes the JSON body of a charge; unknown fields are
// ignored.
func readContractCharge(r *http.Request) (contractChargeRequest, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return contractChargeRequest{}, errors.New("the request body must be application/json")
		}
	}
	var body contractChargeRequest
	dec := json.NewDecoder(r.Body)
	err := dec.Decode(&body)
	if err == nil && dec.More() {
		err = errors.New("the body holds more than one JSON value")
	}
	if err != nil {
		return contractChargeRequest{}, fmt.Errorf("invalid charge body: %w", err)
	}
	return body, nil
}

// contractKey returns the idempotency key of the header or of the body,
// which must agree when both are sent.
func contractKey(header, body string) (string, error) {
	header = strings.TrimSpace(header)
	if header != "" && body != "" && header != body {
		return "", errors.New("the Idempotency-Key header and the body's idempotencyKey differ")
	}
	key := cmp.Or(header, body)
	if key == "" {
		return "", errors.New("an Idempotency-Key header is required")
	}
	if len(key) > MaxIdempotencyKeyLength {
		return "", fmt.Errorf("the idempotency key is %d characters long; it must be at most %d",
			len(key), MaxIdempotencyKeyLength)
	}
	return key, nil
}

// lookupCharges answers every charge carrying one of the key parameters,
// newest first, with one search of the Engine (so the search lag and rate
// limit apply). With a charge parameter it also answers that charge, and
// every refund of it, ours or not, newest first, without lag
// (Engine.lookupCharge). The refunds made under a key parameter are listed
// too; refunds is [] without either. Without keys or charge
// it searches nothing and answers the account, so that a client can probe
// for the endpoint. While lookups are off (Engine.SetLookupEnabled) it
// answers every request, probes included, with a 404, as a service without
// the endpoint.
func (s *server) lookupCharges(w http.ResponseWriter, r *http.Request) {
	if err := s.engine.refuseLookup(); err != nil {
		writeContractError(w, stripeErrorOf(err))
		return
	}
	charge := r.URL.Query().Get("charge")
	keys := r.URL.Query()["key"]
	if len(keys) > payment.MaxLookupKeys {
		writeJSON(w, http.StatusBadRequest, contractError{Reason: payment.ReasonInvalidRequest,
			Message: fmt.Sprintf("%d keys asked for; at most %d in one lookup", len(keys), payment.MaxLookupKeys)})
		return
	}
	if len(charge) > MaxIdempotencyKeyLength {
		writeJSON(w, http.StatusBadRequest, contractError{Reason: payment.ReasonInvalidRequest,
			Message: fmt.Sprintf("the charge must be at most %d characters long", MaxIdempotencyKeyLength)})
		return
	}
	for _, key := range keys {
		if key == "" || len(key) > MaxIdempotencyKeyLength {
			writeJSON(w, http.StatusBadRequest, contractError{Reason: payment.ReasonInvalidRequest,
				Message: fmt.Sprintf("every key must be 1 to %d characters long", MaxIdempotencyKeyLength)})
			return
		}
	}
	body := contractLookup{Account: s.engine.Account(), Charges: []contractFound{}, Refunds: []contractFoundRefund{}}
	if len(keys) > 0 {
		found, err := s.engine.SearchKeys(keys)
		if err != nil {
			writeContractError(w, stripeErrorOf(err))
			return
		}
		for _, in := range found {
			body.Charges = append(body.Charges, foundCharge(in))
		}
		// Refunds made under an asked key are listed too: a client settles
		// a refund by its key.
		for _, refund := range s.engine.ListRefunds("") {
			if slices.Contains(keys, cmp.Or(refund.Metadata[payment.MetadataKeyIdempotencyKey], refund.IdempotencyKey)) {
				body.Refunds = append(body.Refunds, foundRefund(refund))
			}
		}
	}
	if charge != "" {
		in, refunds, ok, err := s.engine.lookupCharge(charge)
		if err != nil {
			writeContractError(w, stripeErrorOf(err))
			return
		}
		if ok && !slices.ContainsFunc(body.Charges, func(c contractFound) bool { return c.ID == in.ID }) {
			body.Charges = append(body.Charges, foundCharge(in))
		}
		for _, refund := range refunds {
			if !slices.ContainsFunc(body.Refunds, func(f contractFoundRefund) bool { return f.ID == refund.ID }) {
				body.Refunds = append(body.Refunds, foundRefund(refund))
			}
		}
	}
	writeJSON(w, http.StatusOK, body)
}

// contractStatus is a PaymentIntent status in the words of the contract:
// succeeded and requires_capture are "succeeded", processing stays,
// requires_action and requires_confirmation are "pending",
// requires_payment_method is "failed" and canceled stays. Any other status
// is answered as is, which a client takes for pending.
func contractStatus(status string) string {
	switch status {
	case StatusRequiresCapture:
		return StatusSucceeded
	case StatusRequiresAction, StatusRequiresConfirmation:
		return "pending"
	case StatusRequiresPaymentMethod:
		return "failed"
	default:
		return status
	}
}

// writeContractError writes an Engine error as the contract's error body,
// with the status of the table at the top of this file.
func writeContractError(w http.ResponseWriter, se *StripeError) {
	var status int
	body := contractError{Message: se.Message}
	switch {
	case se.Type == ErrorTypeCard:
		status, body.Reason = http.StatusPaymentRequired, payment.ReasonCardDeclined
		body.Message = fmt.Sprintf("%s (%s)", se.Message, se.DeclineCode)
	case se.Type == ErrorTypeIdempotency:
		status, body.Reason = http.StatusUnprocessableEntity, payment.ReasonKeyReused
	case se.Code == CodeIdempotencyKeyInUse:
		status, body.Reason = http.StatusConflict, reasonKeyInUse
		setRetryAfter(w, InFlightRetryAfter)
	case se.Code == CodeRateLimit:
		status, body.Reason = http.StatusTooManyRequests, reasonRateLimited
		setRetryAfter(w, se.RetryAfter)
	case se.HTTPStatus == http.StatusNotFound:
		status, body.Reason = http.StatusNotFound, reasonNotFound
	case se.Type == ErrorTypeInvalidRequest:
		status, body.Reason = http.StatusBadRequest, payment.ReasonInvalidRequest
	default:
		status, body.Reason = http.StatusInternalServerError, reasonServerError
	}
	writeJSON(w, status, body)
}
