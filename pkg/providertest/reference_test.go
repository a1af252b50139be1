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
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// refService is a minimal payment service written from docs/providers.md:
// a map from key to saved answer, a set of keys in flight and a list of
// charges for the lookup. Its switches break it on purpose, each in one way
// that exactly-once depends on.
type refService struct {
	// token, when set, is the bearer token required.
	token string
	// noReplay charges every request again, whatever its key has seen.
	noReplay bool
	// acceptOther replays the saved answer to a request with other fields.
	acceptOther bool
	// chargeInFlight processes a request whose key is in flight as a new one.
	chargeInFlight bool
	// compareFingerprint counts the fingerprint among the fields compared,
	// as the sandbox once did.
	compareFingerprint bool
	// echoAuth answers every request with a 500 that quotes its
	// Authorization header, as a careless service might.
	echoAuth bool
	// keyFromBody keys charges on the body's idempotencyKey and ignores
	// the Idempotency-Key header.
	keyFromBody bool
	// notFoundWhenEmpty answers a lookup that finds no charge with 404, as
	// a REST-minded service might.
	notFoundWhenEmpty bool
	// status is the status of a charge, "succeeded" when empty.
	status string
	// refunds are the refund switches (reference_refunds_test.go).
	refunds refRefundSwitches
	// lists are the list switches (reference_list_test.go).
	lists refListSwitches
	// settling are the debit and event switches (reference_settle_test.go).
	settling refSettleSwitches

	mu       sync.Mutex
	saved    map[string]refSaved
	inFlight map[string]bool
	charges  []refCharge
	hold     *refHold
	loseNext bool
	// refunded and savedRefunds are the refunds made and the answers
	// saved under refund keys.
	refunded     []refRefund
	savedRefunds map[string]refSavedRefund
	// events is where events are sent.
	events refEvents
}

// refSaved is the saved answer to a key: a charge, or a decline.
type refSaved struct {
	fields string
	charge *refCharge
	reason string
}

// refCharge is a charge the service made.
type refCharge struct {
	Key         string `json:"idempotencyKey"`
	ID          string `json:"id"`
	Status      string `json:"status"`
	Amount      int64  `json:"amount"`
	Currency    string `json:"currency"`
	Fingerprint string `json:"fingerprint"`
	Created     int64  `json:"created"`
	// Method is the payment method type of a debit, Reason why it failed.
	Method        string `json:"method,omitempty"`
	Reason        string `json:"reason,omitempty"`
	paymentMethod string
}

// refHold holds the next request with a new key in flight.
type refHold struct {
	entered chan string
	release chan struct{}
}

// startRef serves s on a loopback server closed with the test, and returns
// its base url: the charge endpoint is /charges, the lookup
// /charges/lookup, the refund endpoint /refunds and the list /list.
func startRef(t *testing.T, s *refService) string {
	t.Helper()
	s.saved, s.inFlight, s.savedRefunds = map[string]refSaved{}, map[string]bool{}, map[string]refSavedRefund{}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv.URL
}

// holdNext holds the next request with a new key until release.
func (s *refService) holdNext() (<-chan string, func()) {
	h := &refHold{entered: make(chan string, 1), release: make(chan struct{})}
	s.mu.Lock()
	s.hold = h
	s.mu.Unlock()
	return h.entered, sync.OnceFunc(func() { close(h.release) })
}

// loseNextAnswer answers the next new charge with a 500 after saving it.
func (s *refService) loseNextAnswer() {
	s.mu.Lock()
	s.loseNext = true
	s.mu.Unlock()
}

func (s *refService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	switch {
	case s.echoAuth:
		refError(w, http.StatusInternalServerError, "ServerError", "cannot use "+auth)
	case s.token != "" && auth != "Bearer "+s.token:
		refError(w, http.StatusUnauthorized, "Unauthorized", "a valid bearer token is required")
	case r.URL.Path == "/charges" && r.Method == http.MethodPost:
		s.charge(w, r)
	case r.URL.Path == "/charges/lookup" && r.Method == http.MethodGet:
		s.lookup(w, r)
	case r.URL.Path == "/refunds" && r.Method == http.MethodPost:
		s.refund(w, r)
	case r.URL.Path == "/list" && r.Method == http.MethodGet:
		s.list(w, r)
	default:
		refError(w, http.StatusNotFound, "NotFound", "no such route")
	}
}

// charge answers a charge request.
func (s *refService) charge(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Amount        int64             `json:"amount"`
		Currency      string            `json:"currency"`
		Customer      string            `json:"customer"`
		PaymentMethod string            `json:"paymentMethod"`
		Description   string            `json:"description"`
		Metadata      map[string]string `json:"metadata"`
		Fingerprint   string            `json:"fingerprint"`
		Key           string            `json:"idempotencyKey"`
	}
	decoded := json.NewDecoder(r.Body).Decode(&body) == nil
	key := r.Header.Get("Idempotency-Key")
	if s.keyFromBody {
		key = body.Key
	}
	switch {
	case !decoded:
		refError(w, http.StatusBadRequest, "InvalidRequest", "the body is not a charge")
		return
	case key == "":
		refError(w, http.StatusBadRequest, "InvalidRequest", "an Idempotency-Key header is required")
		return
	case body.Amount <= 0:
		refError(w, http.StatusBadRequest, "InvalidRequest", "the amount must be greater than zero")
		return
	}
	// The fingerprint is left out of the comparison, as the contract says.
	fields := fmt.Sprint(body.Amount, body.Currency, body.Customer, body.PaymentMethod, body.Description, body.Metadata)
	if s.compareFingerprint {
		fields += body.Fingerprint
	}

	s.mu.Lock()
	saved, known := s.saved[key]
	if known && saved.charge != nil && s.settling.newOnProcessingRetry && s.current(saved.charge.ID).Status == "processing" {
		known = false
	}
	switch {
	case s.inFlight[key] && !s.chargeInFlight:
		s.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		refError(w, http.StatusConflict, "IdempotencyKeyInUse", "a request with this key is in flight")
		return
	case known && !s.noReplay && saved.fields != fields && !s.acceptOther:
		s.mu.Unlock()
		refError(w, http.StatusUnprocessableEntity, "IdempotencyKeyReused", "the key was used with another request")
		return
	case known && !s.noReplay:
		s.mu.Unlock()
		w.Header().Set("Idempotent-Replayed", "true")
		s.answer(w, saved, true)
		return
	}
	s.inFlight[key] = true
	hold, lose := s.hold, s.loseNext
	s.hold, s.loseNext = nil, false
	s.mu.Unlock()

	if hold != nil {
		hold.entered <- key
		<-hold.release
	}

	s.mu.Lock()
	delete(s.inFlight, key)
	saved = refSaved{fields: fields}
	if body.PaymentMethod == "pm_card_chargeDeclined" {
		saved.reason = "CardDeclined"
	} else {
		status, method := s.newStatus(body.PaymentMethod)
		saved.charge = &refCharge{Key: key, ID: fmt.Sprintf("ch_%d", len(s.charges)+1), Status: status,
			Amount: body.Amount, Currency: body.Currency, Fingerprint: body.Fingerprint, Created: time.Now().Unix(),
			Method: method, paymentMethod: body.PaymentMethod}
		s.charges = append(s.charges, *saved.charge)
	}
	s.saved[key] = saved
	s.mu.Unlock()
	if saved.charge != nil {
		s.emit(*saved.charge)
	}
	if lose {
		refError(w, http.StatusInternalServerError, "ServerError", "the answer was lost")
		return
	}
	s.answer(w, saved, false)
}

// answer writes a saved answer.
func (s *refService) answer(w http.ResponseWriter, saved refSaved, replayed bool) {
	if saved.charge == nil {
		refError(w, http.StatusPaymentRequired, saved.reason, "Your card was declined.")
		return
	}
	status := http.StatusCreated
	if replayed {
		status = http.StatusOK
	}
	s.mu.Lock()
	c := *s.current(saved.charge.ID)
	s.mu.Unlock()
	refJSON(w, status, map[string]any{"id": c.ID, "status": c.Status, "amount": c.Amount,
		"currency": c.Currency, "replayed": replayed, "method": c.Method, "reason": c.Reason})
}

// lookup answers the charges under the key parameters, or with the id of
// the charge parameter, and their refunds.
func (s *refService) lookup(w http.ResponseWriter, r *http.Request) {
	keys := map[string]bool{}
	for _, k := range r.URL.Query()["key"] {
		keys[k] = true
	}
	charge := r.URL.Query().Get("charge")
	s.mu.Lock()
	found := []refCharge{}
	for _, c := range s.charges {
		if keys[c.Key] || (charge != "" && c.ID == charge) {
			if !keys[c.Key] && s.refunds.chargeWithoutKey {
				c.Key = ""
			}
			found = append(found, c)
		}
	}
	refunds := s.lookupRefunds(keys, charge)
	s.mu.Unlock()
	if len(found) == 0 && len(refunds) == 0 && s.notFoundWhenEmpty {
		refError(w, http.StatusNotFound, "NotFound", "no charges under these keys")
		return
	}
	refJSON(w, http.StatusOK, map[string]any{"account": "acct_ref", "charges": found, "refunds": refunds})
}

// refError writes an error body of the contract.
func refError(w http.ResponseWriter, status int, reason, message string) {
	refJSON(w, status, map[string]string{"reason": reason, "message": message})
}

// refJSON writes v as a JSON body.
func refJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
