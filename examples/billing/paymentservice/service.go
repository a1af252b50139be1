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

// Package paymentservice is a minimal payment service behind the
// operator's http provider: the HTTP contract of docs/providers.md in
// memory. It charges every payment method but "pm_card_chargeDeclined",
// which it declines, and keeps "pm_card_slow" in flight for two seconds.
// Its test certifies it with pkg/providertest.
package paymentservice

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// Service serves POST /charges and GET /charges/lookup?key=...
type Service struct {
	// Token is the bearer token callers must send.
	Token string

	mu       sync.Mutex
	saved    map[string]saved // by idempotency key
	inFlight map[string]bool
}

type request struct {
	Amount        int64             `json:"amount"`
	Currency      string            `json:"currency"`
	Customer      string            `json:"customer,omitempty"`
	PaymentMethod string            `json:"paymentMethod"`
	Description   string            `json:"description,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	Fingerprint   string            `json:"fingerprint,omitempty"`
}

// saved is the answer given to a key, replayed to every retry.
type saved struct {
	request request
	status  int
	body    map[string]any
}

// ServeHTTP routes the two endpoints.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+s.Token {
		answer(w, http.StatusUnauthorized, map[string]any{"reason": "Unauthorized", "message": "a valid bearer token is required"})
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/charges":
		s.charge(w, r)
	case r.Method == http.MethodGet && r.URL.Path == "/charges/lookup":
		s.lookup(w, r)
	default:
		answer(w, http.StatusNotFound, map[string]any{"reason": "NotFound", "message": "no such endpoint"})
	}
}

func (s *Service) charge(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	var req request
	if key == "" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Amount <= 0 || req.PaymentMethod == "" {
		answer(w, http.StatusBadRequest, map[string]any{"reason": "InvalidRequest", "message": "an Idempotency-Key header and a JSON body with amount and paymentMethod are required"})
		return
	}
	s.mu.Lock()
	if s.saved == nil {
		s.saved, s.inFlight = map[string]saved{}, map[string]bool{}
	}
	if prev, ok := s.saved[key]; ok {
		s.mu.Unlock()
		if !sameRequest(prev.request, req) {
			answer(w, http.StatusUnprocessableEntity, map[string]any{"reason": "IdempotencyKeyReused", "message": "this key was used for another request"})
			return
		}
		w.Header().Set("Idempotent-Replayed", "true")
		answer(w, prev.status, prev.body)
		return
	}
	if s.inFlight[key] {
		s.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		answer(w, http.StatusConflict, map[string]any{"reason": "IdempotencyKeyInUse", "message": "a request with this key is in flight"})
		return
	}
	s.inFlight[key] = true
	s.mu.Unlock()

	if req.PaymentMethod == "pm_card_slow" {
		time.Sleep(2 * time.Second)
	}
	result := saved{request: req, status: http.StatusCreated, body: map[string]any{
		"id": newID(), "status": "succeeded", "amount": req.Amount, "currency": req.Currency,
		"created": time.Now().Unix(), "fingerprint": req.Fingerprint, "idempotencyKey": key,
	}}
	if req.PaymentMethod == "pm_card_chargeDeclined" {
		result.status, result.body = http.StatusPaymentRequired, map[string]any{"reason": "CardDeclined", "message": "Your card was declined."}
	}
	s.mu.Lock()
	delete(s.inFlight, key)
	s.saved[key] = result
	s.mu.Unlock()
	answer(w, result.status, result.body)
}

// sameRequest compares the request's fields, leaving the fingerprint out.
func sameRequest(a, b request) bool {
	a.Fingerprint, b.Fingerprint = "", ""
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func (s *Service) lookup(w http.ResponseWriter, r *http.Request) {
	charges := []map[string]any{}
	s.mu.Lock()
	for _, key := range r.URL.Query()["key"] {
		if prev, ok := s.saved[key]; ok && prev.status == http.StatusCreated {
			charges = append(charges, prev.body)
		}
	}
	s.mu.Unlock()
	answer(w, http.StatusOK, map[string]any{"account": "acct_example", "charges": charges})
}

func answer(w http.ResponseWriter, status int, body map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "ch_" + hex.EncodeToString(b)
}
