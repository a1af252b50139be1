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
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The /_sandbox/intents and /_sandbox/disputes routes: the test hooks that
// write the provider's books (PutIntent, DeleteIntent, SetIntentStatus,
// OpenDispute, SetDisputeStatus) over HTTP, so that an end-to-end test run
// against the sandbox binary can seed what a reconciliation must find: an
// amount changed at the provider, a charge it lost, a disputed charge. A
// charge made behind the operator's back needs no hook: a plain POST
// /v1/payment_intents, with any metadata or none.

// putIntentBody is the body of PUT /_sandbox/intents/{id}. A field left
// out keeps the stored intent's value; for a new intent, amount and
// currency are required and the others take PutIntent's defaults.
type putIntentBody struct {
	Amount        *int64  `json:"amount"`
	Currency      *string `json:"currency"`
	Customer      *string `json:"customer"`
	PaymentMethod *string `json:"paymentMethod"`
	Description   *string `json:"description"`
	// Metadata replaces the intent's metadata; {} empties it.
	Metadata map[string]string `json:"metadata"`
	Status   *string           `json:"status"`
	// Created is in Unix seconds.
	Created        *int64  `json:"created"`
	IdempotencyKey *string `json:"idempotencyKey"`
}

// statusBody is the body of the status routes.
type statusBody struct {
	// Status is required.
	Status string `json:"status"`
}

// disputeRequestBody is the optional body of POST
// /_sandbox/intents/{id}/dispute.
type disputeRequestBody struct {
	// Reason is one of Stripe's dispute reasons; general when left out.
	Reason string `json:"reason"`
}

// putIntent stores the intent of the path (Engine.PutIntent), changed by
// the body: 201 with the intent as Stripe writes it when it is new, 200
// when it replaced one.
func (s *server) putIntent(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !strings.HasPrefix(id, "pi_") || len(id) == len("pi_") {
		writeError(w, http.StatusBadRequest, apiErrorBody{Type: ErrorTypeInvalidRequest, Param: "id",
			Message: fmt.Sprintf("Invalid intent: the id %q must start with pi_", id)})
		return
	}
	var body putIntentBody
	if !decodeControl(w, r, &body, "intent") {
		return
	}
	in, found := s.engine.intentOf(id)
	if err := body.applyTo(&in, found); err != nil {
		writeError(w, http.StatusBadRequest, apiErrorBody{Type: ErrorTypeInvalidRequest, Message: "Invalid intent: " + err.Error()})
		return
	}
	in.ID = id
	status := http.StatusOK
	if !found {
		status = http.StatusCreated
	}
	writeJSON(w, status, intentBody(s.engine.PutIntent(in)))
}

// applyTo sets the fields of the body on in; found tells whether in is a
// stored intent or a new one.
func (b putIntentBody) applyTo(in *Intent, found bool) error {
	if !found && (b.Amount == nil || b.Currency == nil) {
		return fmt.Errorf("amount and currency are required for a new intent")
	}
	if b.Amount != nil && *b.Amount <= 0 {
		return fmt.Errorf("amount must be greater than zero, got %d", *b.Amount)
	}
	if b.Currency != nil && !isCurrency(*b.Currency) {
		return fmt.Errorf("currency %q is not a lower-case three-letter ISO code", *b.Currency)
	}
	if b.Created != nil && (*b.Created < 0 || *b.Created > maxUnixSeconds) {
		return fmt.Errorf("created must be Unix seconds, got %d", *b.Created)
	}
	for _, f := range []struct {
		from *string
		into *string
	}{
		{b.Currency, &in.Currency}, {b.Customer, &in.Customer}, {b.PaymentMethod, &in.PaymentMethod},
		{b.Description, &in.Description}, {b.Status, &in.Status}, {b.IdempotencyKey, &in.IdempotencyKey},
	} {
		if f.from != nil {
			*f.into = *f.from
		}
	}
	if b.Amount != nil {
		in.Amount = *b.Amount
	}
	if b.Metadata != nil {
		in.Metadata = b.Metadata
	}
	if b.Created != nil {
		in.Created = time.Unix(*b.Created, 0)
	}
	return nil
}

// deleteIntent deletes the intent of the path (Engine.DeleteIntent),
// answering Stripe's deleted object.
func (s *server) deleteIntent(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.engine.DeleteIntent(id); err != nil {
		writeNoSuchIntent(w, id)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Deleted bool   `json:"deleted"`
	}{id, objectPaymentIntent, true})
}

// setIntentStatus sets the status of the intent of the path
// (Engine.SetIntentStatus) and answers the intent.
func (s *server) setIntentStatus(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body statusBody
	if !decodeControl(w, r, &body, "status") {
		return
	}
	if !s.engine.hasIntent(id) {
		writeNoSuchIntent(w, id)
		return
	}
	if err := s.engine.SetIntentStatus(id, body.Status); err != nil {
		writeError(w, http.StatusBadRequest, apiErrorBody{Type: ErrorTypeInvalidRequest, Param: "status", Message: err.Error()})
		return
	}
	in, _ := s.engine.intentOf(id)
	writeJSON(w, http.StatusOK, intentBody(in))
}

// openDispute opens a dispute of the intent of the path
// (Engine.OpenDispute) and answers it as Stripe writes it: 404 for an
// unknown intent, 400 for one that cannot be disputed.
func (s *server) openDispute(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body disputeRequestBody
	// An empty body leaves the reason out.
	if r.ContentLength != 0 && !decodeControl(w, r, &body, "dispute") {
		return
	}
	if !s.engine.hasIntent(id) {
		writeNoSuchIntent(w, id)
		return
	}
	d, err := s.engine.OpenDispute(id, body.Reason)
	if err != nil {
		writeError(w, http.StatusBadRequest, apiErrorBody{Type: ErrorTypeInvalidRequest, Message: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, disputeBodyOf(d))
}

// setDisputeStatus sets the status of the dispute of the path
// (Engine.SetDisputeStatus) and answers the dispute.
func (s *server) setDisputeStatus(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body statusBody
	if !decodeControl(w, r, &body, "status") {
		return
	}
	if _, ok := s.engine.GetDispute(id); !ok {
		writeError(w, http.StatusNotFound, apiErrorBody{Type: ErrorTypeInvalidRequest, Code: CodeResourceMissing,
			Param: "id", Message: fmt.Sprintf("No such dispute: '%s'", id)})
		return
	}
	d, err := s.engine.SetDisputeStatus(id, body.Status)
	if err != nil {
		writeError(w, http.StatusBadRequest, apiErrorBody{Type: ErrorTypeInvalidRequest, Param: "status", Message: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, disputeBodyOf(d))
}

// writeNoSuchIntent answers the 404 of an unknown intent.
func writeNoSuchIntent(w http.ResponseWriter, id string) {
	writeError(w, http.StatusNotFound, apiErrorBody{Type: ErrorTypeInvalidRequest, Code: CodeResourceMissing,
		Param: "id", Message: fmt.Sprintf("No such payment_intent: '%s'", id)})
}

// intentOf returns the intent with id, and false when there is none,
// without counting a retrieve.
func (e *Engine) intentOf(id string) (Intent, bool) {
	e.lockSettled()
	defer e.mu.Unlock()
	in, ok := e.intents[id]
	return in.clone(), ok
}
