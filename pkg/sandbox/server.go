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
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"
)

// MaxRequestBodyBytes is the largest request body the server reads; a larger
// one is answered with 413.
const MaxRequestBodyBytes = 1 << 20

// MaxIdempotencyKeyLength is the longest Idempotency-Key header accepted, as
// at Stripe.
const MaxIdempotencyKeyLength = 255

// TestKeyPrefix starts every API key the server accepts.
const TestKeyPrefix = "sk_test_"

// ServerOptions configures the HTTP server of NewServer.
type ServerOptions struct {
	// Logger, when set, receives one line per request: method, path, status,
	// whether the answer was replayed, and duration. Headers, API keys,
	// idempotency keys and bodies are never logged.
	Logger *slog.Logger
}

// NewServer returns an http.Handler that serves the Engine as a subset of
// Stripe's API, enough for stripe-go to create, retrieve, cancel, list and
// search PaymentIntents, to create, list and retrieve their refunds, to list
// and retrieve disputes and to read the account, and as the operator's
// generic HTTP contract (docs/providers.md, "The HTTP contract"):
//
//	POST /v1/payment_intents              create and confirm (confirm=true; off_session honoured)
//	GET  /v1/payment_intents              list, newest first (created[gte|gt|lte|lt], limit, starting_after,
//	                                      ending_before), Engine.ListIntents
//	GET  /v1/payment_intents/{id}         retrieve
//	POST /v1/payment_intents/{id}/cancel  cancel (cancellation_reason), Engine.CancelPaymentIntent
//	GET  /v1/payment_intents/search       search by metadata['key']:'value' joined by AND or by OR
//	POST /v1/refunds                      refund a PaymentIntent (payment_intent, amount, reason), Engine.CreateRefund
//	GET  /v1/refunds                      list refunds, newest first (payment_intent and the list parameters)
//	GET  /v1/refunds/{id}                 retrieve a refund
//	GET  /v1/disputes                     list disputes, newest first (payment_intent and the list parameters)
//	GET  /v1/disputes/{id}                retrieve a dispute
//	GET  /v1/account                      the Engine's account
//	POST /http/charges                    charge, in the HTTP contract's JSON
//	POST /http/refunds                    refund a charge, in the HTTP contract's JSON
//	GET  /http/charges/lookup             the charges carrying ?key=K1&key=K2..., at most 10, and with
//	                                      ?charge=ID that charge and its refunds
//	GET  /http/list                       a page of the charges or refunds of a window (kind, createdFrom,
//	                                      createdTo, limit, after), newest first
//	GET  /_sandbox/stats                  the Engine's Stats and account, without auth
//	GET  /_sandbox/books                  every intent and refund with its idempotency key, and the Stats, read
//	                                      at one moment (Engine.Books, its Go field names), without auth
//	GET  /_sandbox/faults                 the random faults, without auth
//	PUT  /_sandbox/faults                 replace the random faults, without auth
//	POST /_sandbox/forget-keys            forget every decided key (Engine.ForgetKeys), without auth
//	GET  /_sandbox/lookup                 whether search and lookups are on, without auth
//	PUT  /_sandbox/lookup                 {"enabled": false} turns them off (Engine.SetLookupEnabled), without auth
//	GET  /_sandbox/refunds                the refund settle delay and amountTooLargeCode, without auth
//	PUT  /_sandbox/refunds                {"settleDelay": "2s"} makes new refunds pending that long (Engine.SetRefundSettleDelay),
//	                                      {"amountTooLargeCode": false} refuses a refund beyond what is left without a code
//	                                      (Engine.SetAmountTooLargeCode); a field left out keeps its value, without auth
//	POST /_sandbox/refunds/{id}/fail      fail a refund, {"failureReason": R} optional (Engine.FailRefund), without auth
//	PUT  /_sandbox/intents/{id}           store an intent, {"amount", "currency", "status", "created", "metadata", ...};
//	                                      fields left out keep the stored ones (Engine.PutIntent), without auth
//	DELETE /_sandbox/intents/{id}         remove an intent from the books (Engine.DeleteIntent), without auth
//	POST /_sandbox/intents/{id}/status    {"status": S} (Engine.SetIntentStatus), without auth
//	POST /_sandbox/intents/{id}/dispute   open a dispute, {"reason": R} optional (Engine.OpenDispute), without auth
//	POST /_sandbox/disputes/{id}/status   {"status": S} (Engine.SetDisputeStatus), without auth
//	GET  /_sandbox/debits                 the bank debits' settle delay, {"settleDelay": "5s"}, without auth
//	PUT  /_sandbox/debits                 {"settleDelay": "200ms"} (Engine.SetDebitSettleDelay), without auth
//	GET  /_sandbox/webhooks               the webhook config without its secret ({"url", "format", "hasSecret",
//	                                      "seed", "faults"}) and its counters ("stats": WebhookStats), without auth
//	PUT  /_sandbox/webhooks               {"url", "secret", "format": "stripe"|"http", "seed", "faults": {"duplicate",
//	                                      "reorder", "drop", "badSignature", "delay": "1s"}}; a field left out keeps
//	                                      its value, "url": "" turns webhooks off (Engine.SetWebhooks), without auth
//
// Every /v1 route requires a test API key (TestKeyPrefix), as a Bearer token
// or as the user name of HTTP Basic auth; its errors have Stripe's shape:
// {"error": {"type", "code", "decline_code", "param", "message"}}. The /http
// routes accept any Authorization or none, and answer errors as
// {"reason", "message"}. Creates and searches on both are subject to the
// Engine's rate limits, search lag and idempotency mode; every other GET of
// /v1, and GET /http/list, to RateLimits.Reads.
func NewServer(e *Engine, opts ServerOptions) http.Handler {
	s := &server{engine: e}
	mux := http.NewServeMux()
	mux.Handle("/v1/payment_intents", authenticated(methods{
		http.MethodGet: s.read(s.listPaymentIntents), http.MethodPost: s.createPaymentIntent}))
	mux.Handle("/v1/payment_intents/search", authenticated(methods{http.MethodGet: s.searchPaymentIntents}))
	mux.Handle("/v1/payment_intents/{id}", authenticated(methods{http.MethodGet: s.read(s.getPaymentIntent)}))
	mux.Handle("/v1/payment_intents/{id}/cancel", authenticated(methods{http.MethodPost: s.cancelPaymentIntent}))
	mux.Handle("/v1/refunds", authenticated(methods{http.MethodGet: s.read(s.listRefunds), http.MethodPost: s.createRefund}))
	mux.Handle("/v1/refunds/{id}", authenticated(methods{http.MethodGet: s.read(s.getRefund)}))
	mux.Handle("/v1/disputes", authenticated(methods{http.MethodGet: s.read(s.listDisputes)}))
	mux.Handle("/v1/disputes/{id}", authenticated(methods{http.MethodGet: s.read(s.getDispute)}))
	mux.Handle("/v1/account", authenticated(methods{http.MethodGet: s.read(s.getAccount)}))
	mux.Handle("/v1/", authenticated(http.HandlerFunc(notFound)))
	mux.Handle("/http/charges", methods{http.MethodPost: s.createCharge})
	mux.Handle("/http/charges/lookup", methods{http.MethodGet: s.lookupCharges})
	mux.Handle("/http/refunds", methods{http.MethodPost: s.createContractRefund})
	mux.Handle("/http/list", methods{http.MethodGet: s.listContract})
	mux.Handle("/_sandbox/stats", methods{http.MethodGet: s.getStats})
	mux.Handle("/_sandbox/books", methods{http.MethodGet: s.getBooks})
	mux.Handle("/_sandbox/faults", methods{http.MethodGet: s.getFaults, http.MethodPut: s.putFaults})
	mux.Handle("/_sandbox/forget-keys", methods{http.MethodPost: s.forgetKeys})
	mux.Handle("/_sandbox/lookup", methods{http.MethodGet: s.getLookup, http.MethodPut: s.putLookup})
	mux.Handle("/_sandbox/refunds", methods{http.MethodGet: s.getRefundControl, http.MethodPut: s.putRefundControl})
	mux.Handle("/_sandbox/refunds/{id}/fail", methods{http.MethodPost: s.failRefund})
	mux.Handle("/_sandbox/intents/{id}", methods{http.MethodPut: s.putIntent, http.MethodDelete: s.deleteIntent})
	mux.Handle("/_sandbox/intents/{id}/status", methods{http.MethodPost: s.setIntentStatus})
	mux.Handle("/_sandbox/intents/{id}/dispute", methods{http.MethodPost: s.openDispute})
	mux.Handle("/_sandbox/disputes/{id}/status", methods{http.MethodPost: s.setDisputeStatus})
	mux.Handle("/_sandbox/debits", methods{http.MethodGet: s.getDebitControl, http.MethodPut: s.putDebitControl})
	mux.Handle("/_sandbox/webhooks", methods{http.MethodGet: s.getWebhooks, http.MethodPut: s.putWebhooks})
	mux.HandleFunc("/", notFound)

	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Request-Id", "req_"+rand.Text())
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, MaxRequestBodyBytes)
		}
		mux.ServeHTTP(w, r)
	})
	if opts.Logger != nil {
		h = logged(opts.Logger, h)
	}
	return h
}

// server serves an Engine over HTTP.
type server struct {
	engine *Engine
}

// methods routes a request by its method, HEAD as GET, and answers 405 with
// an Allow header for the others.
type methods map[string]http.HandlerFunc

func (m methods) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	if h, ok := m[method]; ok {
		h(w, r)
		return
	}
	allowed := make([]string, 0, len(m))
	for k := range m {
		allowed = append(allowed, k)
	}
	slices.Sort(allowed)
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	writeError(w, http.StatusMethodNotAllowed, apiErrorBody{
		Type:    ErrorTypeInvalidRequest,
		Message: fmt.Sprintf("Unrecognized request method %s for %s; allowed: %s.", r.Method, r.URL.Path, strings.Join(allowed, ", ")),
	})
}

// notFound answers an unknown route.
func notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, apiErrorBody{
		Type:    ErrorTypeInvalidRequest,
		Message: fmt.Sprintf("Unrecognized request URL (%s: %s).", r.Method, r.URL.Path),
	})
}

// authenticated lets through the requests that carry a test API key.
func authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, found := apiKey(r)
		if found && strings.HasPrefix(key, TestKeyPrefix) && len(key) > len(TestKeyPrefix) {
			next.ServeHTTP(w, r)
			return
		}
		message := "Invalid API Key provided"
		if !found {
			message = "You did not provide an API key. Send it as a Bearer token in the Authorization header."
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="Stripe"`)
		writeError(w, http.StatusUnauthorized, apiErrorBody{Type: ErrorTypeInvalidRequest, Message: message})
	})
}

// apiKey returns the API key of a Bearer token or of HTTP Basic auth's user
// name, and false when the request carries neither.
func apiKey(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if len(h) >= len("Bearer ") && strings.EqualFold(h[:len("Bearer ")], "Bearer ") {
		key := strings.TrimSpace(h[len("Bearer "):])
		return key, key != ""
	}
	if user, _, ok := r.BasicAuth(); ok {
		return user, user != ""
	}
	return "", false
}

// writeJSON writes v as the JSON body of the response.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// The status is written: an encoding error can only be a broken
	// connection, which the client sees.
	_ = json.NewEncoder(w).Encode(v)
}

// logged logs one line per request.
func logged(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		log.LogAttrs(r.Context(), slog.LevelInfo, "Served request",
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", rec.status),
			slog.Bool("replayed", w.Header().Get("Idempotent-Replayed") == "true"),
			slog.Duration("duration", time.Since(start)),
		)
	})
}

// statusRecorder remembers the status written.
type statusRecorder struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (r *statusRecorder) WriteHeader(status int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = status, true
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wroteHeader = true
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
