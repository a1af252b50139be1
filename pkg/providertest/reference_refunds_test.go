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

package providertest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// The reference service's refunds, written from docs/providers.md,
// "Refunds": a refund is saved under its key with the refund, in one step,
// and never goes beyond what is left of its charge. Its switches break it
// on purpose, each in one way a refund rule checks.

// hangUpWait is how long keyLostOnHangUp's second step waits.
const hangUpWait = 3 * time.Second

// refRefundSwitches break the reference service's refunds.
type refRefundSwitches struct {
	// noReplay refunds every refund request again, whatever its key has
	// seen.
	noReplay bool
	// keyLostOnHangUp saves a refund's key in a second step, which a client
	// that hangs up before the answer rolls back while the refund stays:
	// the key and the refund are not written together.
	keyLostOnHangUp bool
	// beyondCharge refunds any amount, whatever is left of the charge.
	beyondCharge bool
	// unknownCharge refunds a charge the service never made.
	unknownCharge bool
	// refusalReason, when set, is the reason of every refund refusal.
	refusalReason string
	// byChargeOnly lists a refund in the lookup of its charge, but not
	// under its key.
	byChargeOnly bool
	// chargeWithoutKey answers the lookup of a charge's refunds (?charge=)
	// without the charge's idempotency key.
	chargeWithoutKey bool
}

// refRefund is a refund the service made.
type refRefund struct {
	Key         string `json:"idempotencyKey"`
	ID          string `json:"id"`
	Status      string `json:"status"`
	Amount      int64  `json:"amount"`
	Currency    string `json:"currency"`
	Fingerprint string `json:"fingerprint"`
	Charge      string `json:"charge"`
	Created     int64  `json:"created"`
}

// refSavedRefund is the saved answer to a refund key: a refund, or a
// refusal.
type refSavedRefund struct {
	fields  string
	refund  *refRefund
	reason  string
	message string
}

// refund answers a refund request.
func (s *refService) refund(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Charge      string            `json:"charge"`
		Amount      int64             `json:"amount"`
		Currency    string            `json:"currency"`
		Reason      string            `json:"reason"`
		Metadata    map[string]string `json:"metadata"`
		Fingerprint string            `json:"fingerprint"`
	}
	raw, err := io.ReadAll(r.Body)
	key := r.Header.Get("Idempotency-Key")
	switch {
	case err != nil || json.Unmarshal(raw, &body) != nil:
		refError(w, http.StatusBadRequest, "InvalidRequest", "the body is not a refund")
		return
	case key == "" || body.Charge == "" || body.Amount <= 0:
		refError(w, http.StatusBadRequest, "InvalidRequest", "a key, a charge and an amount greater than zero are required")
		return
	}
	fields := fmt.Sprint(body.Charge, body.Amount, body.Currency, body.Reason, body.Metadata)
	sw := s.refunds

	s.mu.Lock()
	saved, known := s.savedRefunds[key]
	switch {
	case known && !sw.noReplay && saved.fields != fields:
		s.mu.Unlock()
		refError(w, http.StatusUnprocessableEntity, "IdempotencyKeyReused", "the key was used with another refund")
		return
	case known && !sw.noReplay:
		s.mu.Unlock()
		w.Header().Set("Idempotent-Replayed", "true")
		answerRefund(w, saved, true)
		return
	}
	saved = s.decideRefundLocked(fields, key, body.Charge, body.Amount, body.Currency, body.Fingerprint)
	if !sw.keyLostOnHangUp {
		s.savedRefunds[key] = saved
	}
	s.mu.Unlock()

	if sw.keyLostOnHangUp {
		// The second step waits long enough that the client's retry after
		// a hang-up comes while the key is not saved yet (or the server
		// noticed the hang-up): on a loaded CI runner the retry came after
		// 200 ms, and once (a cold run, with the race detector) after 1 s.
		// Only this broken service's refunds pay for it.
		select {
		case <-r.Context().Done():
		case <-time.After(hangUpWait):
			s.mu.Lock()
			s.savedRefunds[key] = saved
			s.mu.Unlock()
		}
	}
	answerRefund(w, saved, false)
}

// decideRefundLocked refunds amount of charge, or refuses it; the caller
// holds the lock.
func (s *refService) decideRefundLocked(fields, key, charge string, amount int64, currency, fingerprint string) refSavedRefund {
	saved := refSavedRefund{fields: fields}
	var paid *refCharge
	for i := range s.charges {
		if s.charges[i].ID == charge {
			paid = &s.charges[i]
		}
	}
	left := int64(0)
	if paid != nil {
		left = paid.Amount
		for _, rf := range s.refunded {
			if rf.Charge == charge {
				left -= rf.Amount
			}
		}
	}
	sw := s.refunds
	switch {
	case paid == nil && !sw.unknownCharge:
		saved.reason, saved.message = "ChargeNotFound", "no such charge: "+charge
	case paid != nil && amount > left && !sw.beyondCharge:
		saved.reason, saved.message = "RefundExceedsCharge", fmt.Sprintf("%d is more than the %d left of the charge", amount, left)
	default:
		rf := refRefund{Key: key, ID: fmt.Sprintf("re_%d", len(s.refunded)+1), Status: "succeeded", Amount: amount,
			Currency: currency, Fingerprint: fingerprint, Charge: charge, Created: time.Now().Unix()}
		s.refunded = append(s.refunded, rf)
		saved.refund = &rf
	}
	if saved.reason != "" && sw.refusalReason != "" {
		saved.reason = sw.refusalReason
	}
	return saved
}

// answerRefund writes a saved refund answer.
func answerRefund(w http.ResponseWriter, saved refSavedRefund, replayed bool) {
	if saved.refund == nil {
		refError(w, http.StatusPaymentRequired, saved.reason, saved.message)
		return
	}
	status := http.StatusCreated
	if replayed {
		status = http.StatusOK
	}
	rf := saved.refund
	refJSON(w, status, map[string]any{"id": rf.ID, "status": rf.Status, "amount": rf.Amount,
		"currency": rf.Currency, "charge": rf.Charge, "replayed": replayed})
}

// lookupRefunds are the refunds under the keys and, unless charge is "",
// every refund of charge; the caller holds the lock.
func (s *refService) lookupRefunds(keys map[string]bool, charge string) []refRefund {
	found := []refRefund{}
	for _, rf := range s.refunded {
		if (keys[rf.Key] && !s.refunds.byChargeOnly) || (charge != "" && rf.Charge == charge) {
			found = append(found, rf)
		}
	}
	return found
}
