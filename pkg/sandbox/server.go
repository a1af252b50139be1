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
	"errors"
	"fmt"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// MaxRequestBodyBytes is the largest request body the server reads; a larger
// one is answered with 413.
const MaxRequestBodyBytes = 1 << 20

// MaxIdempotencyKeyLength is the longest Idempotency-Key header accepted, as
// at Stripe.
const MaxIdempotencyKeyLength = 255

// TestKeyPrefix starts every API key the server accepts.
const TestKeyPrefix = "sk_test_"

// Limits of Stripe's metadata.
const (
	maxMetadataKeys        = 50
	maxMetadataKeyLength   = 40
	maxMetadataValueLength = 500
)

// Search results per page when the limit parameter is left out, and at most.
const (
	defaultSearchLimit = 10
	maxSearchLimit     = 100
)

// ServerOptions configures the HTTP server of NewServer.
type ServerOptions struct {
	// Logger, when set, receives one line per request: method, path, status,
	// whether the answer was replayed, and duration. Headers, API keys,
	// idempotency keys and bodies are never logged.
	Logger *slog.Logger
}

// NewServer returns an http.Handler that serves the Engine as a subset of
// Stripe's API, enough for stripe-go to create, retrieve and search
// PaymentIntents and to read the account, and as the operator's generic
// HTTP contract (docs/providers.md, "The HTTP contract"):
//
//	POST /v1/payment_intents          create and confirm (confirm=true)
//	GET  /v1/payment_intents/{id}     retrieve
//	GET  /v1/payment_intents/search   search by metadata['key']:'value' joined by AND or by OR
//	GET  /v1/account                  the Engine's account
//	POST /http/charges                charge, in the HTTP contract's JSON
//	GET  /http/charges/lookup         the charges carrying ?key=K1&key=K2..., at most 10
//	GET  /_sandbox/stats              the Engine's Stats and account, without auth
//	GET  /_sandbox/faults             the random faults, without auth
//	PUT  /_sandbox/faults             replace the random faults, without auth
//	POST /_sandbox/forget-keys        forget every decided key (Engine.ForgetKeys), without auth
//	GET  /_sandbox/lookup             whether search and lookups are on, without auth
//	PUT  /_sandbox/lookup             {"enabled": false} turns them off (Engine.SetLookupEnabled), without auth
//
// Every /v1 route requires a test API key (TestKeyPrefix), as a Bearer token
// or as the user name of HTTP Basic auth; its errors have Stripe's shape:
// {"error": {"type", "code", "decline_code", "param", "message"}}. The /http
// routes accept any Authorization or none, and answer errors as
// {"reason", "message"}. Creates and searches on both are subject to the
// Engine's rate limits, search lag and idempotency mode.
func NewServer(e *Engine, opts ServerOptions) http.Handler {
	s := &server{engine: e}
	mux := http.NewServeMux()
	mux.Handle("/v1/payment_intents", authenticated(methods{http.MethodPost: s.createPaymentIntent}))
	mux.Handle("/v1/payment_intents/search", authenticated(methods{http.MethodGet: s.searchPaymentIntents}))
	mux.Handle("/v1/payment_intents/{id}", authenticated(methods{http.MethodGet: s.getPaymentIntent}))
	mux.Handle("/v1/account", authenticated(methods{http.MethodGet: s.getAccount}))
	mux.Handle("/v1/", authenticated(http.HandlerFunc(notFound)))
	mux.Handle("/http/charges", methods{http.MethodPost: s.createCharge})
	mux.Handle("/http/charges/lookup", methods{http.MethodGet: s.lookupCharges})
	mux.Handle("/_sandbox/stats", methods{http.MethodGet: s.getStats})
	mux.Handle("/_sandbox/faults", methods{http.MethodGet: s.getFaults, http.MethodPut: s.putFaults})
	mux.Handle("/_sandbox/forget-keys", methods{http.MethodPost: s.forgetKeys})
	mux.Handle("/_sandbox/lookup", methods{http.MethodGet: s.getLookup, http.MethodPut: s.putLookup})
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

// createPaymentIntent creates and confirms a PaymentIntent.
func (s *server) createPaymentIntent(w http.ResponseWriter, r *http.Request) {
	form, errBody, status := readForm(r)
	if errBody != nil {
		writeError(w, status, *errBody)
		return
	}

	key := strings.TrimSpace(r.Header.Get("Idempotency-Key"))
	if len(key) > MaxIdempotencyKeyLength {
		writeError(w, http.StatusBadRequest, apiErrorBody{
			Type: ErrorTypeInvalidRequest,
			Message: fmt.Sprintf("Idempotency-Key is %d characters long; it must be at most %d.",
				len(key), MaxIdempotencyKeyLength),
		})
		return
	}
	if key != "" {
		w.Header().Set("Idempotency-Key", key)
	} else {
		// Like Stripe, a request without a key is a new payment each time.
		key = "sandbox_generated_" + rand.Text()
	}

	req, se := chargeRequest(form)
	if se != nil {
		writeStripeError(w, se)
		return
	}

	in, replayed, err := s.engine.CreatePaymentIntent(key, req)
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	if err != nil {
		writeEngineError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, intentBody(in))
}

// writeEngineError writes an error of the Engine, which is always a
// *StripeError, or a 500 api_error for anything else.
func writeEngineError(w http.ResponseWriter, err error) {
	writeStripeError(w, stripeErrorOf(err))
}

// stripeErrorOf returns err as a *StripeError, a 500 api_error when it is
// not one.
func stripeErrorOf(err error) *StripeError {
	if se, ok := errors.AsType[*StripeError](err); ok {
		return se
	}
	return &StripeError{Type: ErrorTypeAPI, Message: err.Error(), HTTPStatus: http.StatusInternalServerError}
}

// readForm parses a form-encoded request body. It returns the error body
// and status to answer when the body cannot be read.
func readForm(r *http.Request) (url.Values, *apiErrorBody, int) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/x-www-form-urlencoded" {
			return nil, &apiErrorBody{
				Type:    ErrorTypeInvalidRequest,
				Message: "Request bodies must be encoded as application/x-www-form-urlencoded.",
			}, http.StatusBadRequest
		}
	}
	if err := r.ParseForm(); err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, &apiErrorBody{
				Type:    ErrorTypeInvalidRequest,
				Message: fmt.Sprintf("Request body is larger than %d bytes.", MaxRequestBodyBytes),
			}, http.StatusRequestEntityTooLarge
		}
		return nil, &apiErrorBody{
			Type:    ErrorTypeInvalidRequest,
			Message: "Request body is not valid form encoding.",
		}, http.StatusBadRequest
	}
	return r.PostForm, nil, 0
}

// chargeRequest reads the parameters of a PaymentIntent creation. Unknown
// parameters are ignored; the Engine validates the values it knows.
func chargeRequest(form url.Values) (payment.ChargeRequest, *StripeError) {
	if !form.Has("amount") {
		return payment.ChargeRequest{}, invalidRequest(CodeParameterMissing, "amount", "Missing required param: amount.")
	}
	amount, err := strconv.ParseInt(form.Get("amount"), 10, 64)
	if err != nil {
		return payment.ChargeRequest{}, invalidRequest("parameter_invalid_integer", "amount",
			"Invalid integer: amount must be a whole number of the currency's minor unit.")
	}
	// The Engine always confirms: a request that would leave the intent
	// unconfirmed or uncaptured at Stripe must not look charged here.
	if form.Get("confirm") != "true" {
		return payment.ChargeRequest{}, invalidRequest(CodeParameterInvalid, "confirm",
			"The sandbox only creates confirmed PaymentIntents: send confirm=true.")
	}
	if cm := form.Get("capture_method"); cm != "" && cm != "automatic" && cm != "automatic_async" {
		return payment.ChargeRequest{}, invalidRequest(CodeParameterInvalid, "capture_method",
			"The sandbox only supports capture_method=automatic.")
	}
	metadata, se := metadataParams(form)
	if se != nil {
		return payment.ChargeRequest{}, se
	}
	return payment.ChargeRequest{
		Amount:        amount,
		Currency:      form.Get("currency"),
		Customer:      form.Get("customer"),
		PaymentMethod: form.Get("payment_method"),
		Description:   form.Get("description"),
		Metadata:      metadata,
	}, nil
}

// metadataParams reads the metadata[key]=value parameters, leaving out empty
// values as Stripe does, within Stripe's limits.
func metadataParams(form url.Values) (map[string]string, *StripeError) {
	var metadata map[string]string
	for name, values := range form {
		inner, ok := strings.CutPrefix(name, "metadata[")
		if !ok {
			continue
		}
		key, ok := strings.CutSuffix(inner, "]")
		switch {
		case !ok || key == "" || strings.ContainsAny(key, "[]"):
			return nil, invalidRequest(CodeParameterInvalid, "metadata",
				"Invalid metadata: use metadata[key]=value with a non-empty key.")
		case len(key) > maxMetadataKeyLength:
			return nil, invalidRequest(CodeParameterInvalid, "metadata",
				fmt.Sprintf("Metadata keys can have up to %d characters.", maxMetadataKeyLength))
		case len(values[0]) > maxMetadataValueLength:
			return nil, invalidRequest(CodeParameterInvalid, "metadata",
				fmt.Sprintf("Metadata values can have up to %d characters.", maxMetadataValueLength))
		case values[0] == "":
			continue
		}
		if metadata == nil {
			metadata = map[string]string{}
		}
		metadata[key] = values[0]
	}
	if len(metadata) > maxMetadataKeys {
		return nil, invalidRequest(CodeParameterInvalid, "metadata",
			fmt.Sprintf("Metadata can have up to %d keys.", maxMetadataKeys))
	}
	return metadata, nil
}

// getPaymentIntent answers the intent with the ID of the path.
func (s *server) getPaymentIntent(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	in, ok := s.engine.GetPaymentIntent(id)
	if !ok {
		writeError(w, http.StatusNotFound, apiErrorBody{
			Type:    ErrorTypeInvalidRequest,
			Code:    CodeResourceMissing,
			Param:   "id",
			Message: fmt.Sprintf("No such payment_intent: '%s'", id),
			DocURL:  docURL(CodeResourceMissing),
		})
		return
	}
	writeJSON(w, http.StatusOK, intentBody(in))
}

// searchPaymentIntents answers the intents whose metadata matches the query,
// newest first, a page at a time.
func (s *server) searchPaymentIntents(w http.ResponseWriter, r *http.Request) {
	if err := s.engine.refuseLookup(); err != nil {
		writeEngineError(w, err)
		return
	}
	params := r.URL.Query()
	if !params.Has("query") {
		writeStripeError(w, invalidRequest(CodeParameterMissing, "query", "Missing required param: query."))
		return
	}
	limit := defaultSearchLimit
	if params.Has("limit") {
		n, err := strconv.Atoi(params.Get("limit"))
		if err != nil || n < 1 || n > maxSearchLimit {
			writeStripeError(w, invalidRequest(CodeParameterInvalid, "limit",
				fmt.Sprintf("Invalid limit: must be an integer between 1 and %d.", maxSearchLimit)))
			return
		}
		limit = n
	}

	found, err := s.engine.SearchPaymentIntents(params.Get("query"))
	if err != nil {
		writeEngineError(w, err)
		return
	}
	// The page token is the ID of the last intent of the previous page:
	// intents are never deleted and their order never changes.
	if page := params.Get("page"); page != "" {
		i := slices.IndexFunc(found, func(in Intent) bool { return in.ID == page })
		if i < 0 {
			writeStripeError(w, invalidRequest(CodeParameterInvalid, "page", "Invalid page: use the next_page of a search result."))
			return
		}
		found = found[i+1:]
	}
	hasMore := len(found) > limit
	found = found[:min(limit, len(found))]

	body := searchResultBody{
		Object:  "search_result",
		URL:     "/v1/payment_intents/search",
		HasMore: hasMore,
		Data:    make([]paymentIntentBody, 0, len(found)),
	}
	for _, in := range found {
		body.Data = append(body.Data, intentBody(in))
	}
	if hasMore {
		body.NextPage = &found[len(found)-1].ID
	}
	writeJSON(w, http.StatusOK, body)
}

// getAccount answers the Engine's account, with the fields stripe-go reads.
func (s *server) getAccount(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, accountBody{
		ID:               s.engine.Account(),
		Object:           "account",
		Type:             "standard",
		Country:          "US",
		DefaultCurrency:  "usd",
		ChargesEnabled:   true,
		PayoutsEnabled:   true,
		DetailsSubmitted: true,
	})
}

// accountBody is an Account as Stripe writes it, reduced to a few fields.
type accountBody struct {
	ID               string `json:"id"`
	Object           string `json:"object"`
	Type             string `json:"type"`
	Country          string `json:"country"`
	DefaultCurrency  string `json:"default_currency"`
	ChargesEnabled   bool   `json:"charges_enabled"`
	PayoutsEnabled   bool   `json:"payouts_enabled"`
	DetailsSubmitted bool   `json:"details_submitted"`
}

// paymentIntentBody is a PaymentIntent as Stripe writes it.
type paymentIntentBody struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	Amount             int64             `json:"amount"`
	AmountReceived     int64             `json:"amount_received"`
	Currency           string            `json:"currency"`
	Customer           *string           `json:"customer"`
	PaymentMethod      *string           `json:"payment_method"`
	Description        *string           `json:"description"`
	Metadata           map[string]string `json:"metadata"`
	Status             string            `json:"status"`
	Created            int64             `json:"created"`
	Livemode           bool              `json:"livemode"`
	ConfirmationMethod string            `json:"confirmation_method"`
	CaptureMethod      string            `json:"capture_method"`
}

// intentBody is the PaymentIntent body of an Engine intent.
func intentBody(in Intent) paymentIntentBody {
	metadata := in.Metadata
	if metadata == nil {
		metadata = map[string]string{}
	}
	var received int64
	if in.Status == StatusSucceeded {
		received = in.Amount
	}
	return paymentIntentBody{
		ID:                 in.ID,
		Object:             "payment_intent",
		Amount:             in.Amount,
		AmountReceived:     received,
		Currency:           in.Currency,
		Customer:           nullable(in.Customer),
		PaymentMethod:      nullable(in.PaymentMethod),
		Description:        nullable(in.Description),
		Metadata:           metadata,
		Status:             in.Status,
		Created:            in.Created.Unix(),
		Livemode:           false,
		ConfirmationMethod: "automatic",
		CaptureMethod:      "automatic",
	}
}

// nullable is nil for the empty string, which JSON writes as null.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// searchResultBody is a page of search results as Stripe writes it.
type searchResultBody struct {
	Object   string              `json:"object"`
	URL      string              `json:"url"`
	HasMore  bool                `json:"has_more"`
	Data     []paymentIntentBody `json:"data"`
	NextPage *string             `json:"next_page"`
}

// apiErrorBody is the "error" object of a Stripe error body.
type apiErrorBody struct {
	Type          string             `json:"type"`
	Code          string             `json:"code,omitempty"`
	DeclineCode   string             `json:"decline_code,omitempty"`
	Message       string             `json:"message,omitempty"`
	Param         string             `json:"param,omitempty"`
	DocURL        string             `json:"doc_url,omitempty"`
	PaymentIntent *paymentIntentBody `json:"payment_intent,omitempty"`
}

// writeStripeError writes an Engine error with its status and, when it has
// one, its Retry-After in whole seconds rounded up. The Engine keeps no
// intent for a declined payment, so the error carries no payment_intent.
func writeStripeError(w http.ResponseWriter, se *StripeError) {
	setRetryAfter(w, se.RetryAfter)
	status := se.HTTPStatus
	if status == 0 {
		status = http.StatusInternalServerError
	}
	writeError(w, status, apiErrorBody{
		Type:        se.Type,
		Code:        se.Code,
		DeclineCode: se.DeclineCode,
		Message:     se.Message,
		Param:       se.Param,
		DocURL:      docURL(se.Code),
	})
}

// setRetryAfter sets the Retry-After header to d in whole seconds rounded
// up, when d is positive.
func setRetryAfter(w http.ResponseWriter, d time.Duration) {
	if d > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(d.Seconds()))))
	}
}

// docURL is Stripe's documentation page of an error code.
func docURL(code string) string {
	if code == "" {
		return ""
	}
	return "https://docs.stripe.com/error-codes/" + strings.ReplaceAll(code, "_", "-")
}

// writeError writes a Stripe error body.
func writeError(w http.ResponseWriter, status int, body apiErrorBody) {
	writeJSON(w, status, struct {
		Error apiErrorBody `json:"error"`
	}{body})
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
