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
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The Stripe routes, /v1: create, retrieve, cancel and search
// PaymentIntents, and read the account, with the form-encoded parameters
// stripe-go sends.

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

// Capture and confirmation methods. The sandbox confirms and captures every
// intent at once, as "automatic" does at Stripe, and takes
// "automatic_async", the automatic capture of newer API versions, as the
// same.
const (
	methodAutomatic      = "automatic"
	methodAutomaticAsync = "automatic_async"
)

// createPaymentIntent creates and confirms a PaymentIntent.
func (s *server) createPaymentIntent(w http.ResponseWriter, r *http.Request) {
	form, key, ok := readCreate(w, r)
	if !ok {
		return
	}

	params, se := intentParams(form)
	if se != nil {
		writeStripeError(w, se)
		return
	}
	offSession, se := offSessionParam(form)
	if se != nil {
		writeStripeError(w, se)
		return
	}

	in, replayed, err := s.engine.CreatePaymentIntentWithOptions(key, params, ConfirmOptions{OffSession: offSession})
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	if err != nil {
		writeEngineError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s.expandCharge(intentBody(in), in, form))
}

// readCreate reads the form and the Idempotency-Key of a create request;
// without a key, a new one is made, as Stripe makes a new object each time.
// It answers the error and returns false when either cannot be read.
func readCreate(w http.ResponseWriter, r *http.Request) (url.Values, string, bool) {
	form, errBody, status := readForm(r)
	if errBody != nil {
		writeError(w, status, *errBody)
		return nil, "", false
	}
	key, ok := idempotencyKey(w, r)
	if !ok {
		return nil, "", false
	}
	if key == "" {
		// Like Stripe, a request without a key is a new object each time.
		key = "sandbox_generated_" + rand.Text()
	}
	return form, key, true
}

// idempotencyKey reads the Idempotency-Key header and echoes it; it answers
// 400 and returns false when the key is too long.
func idempotencyKey(w http.ResponseWriter, r *http.Request) (string, bool) {
	key := strings.TrimSpace(r.Header.Get("Idempotency-Key"))
	if len(key) > MaxIdempotencyKeyLength {
		writeError(w, http.StatusBadRequest, apiErrorBody{
			Type: ErrorTypeInvalidRequest,
			Message: fmt.Sprintf("Idempotency-Key is %d characters long; it must be at most %d.",
				len(key), MaxIdempotencyKeyLength),
		})
		return "", false
	}
	if key != "" {
		w.Header().Set("Idempotency-Key", key)
	}
	return key, true
}

// offSessionParam reads off_session: "true" or "false" (or left out, false)
// as Stripe takes a boolean on create with confirm=true. Stripe also takes
// "one_off" and "recurring" there, which the sandbox treats as true.
func offSessionParam(form url.Values) (bool, *StripeError) {
	switch v := form.Get("off_session"); v {
	case "", "false":
		return false, nil
	case "true", "one_off", "recurring":
		return true, nil
	default:
		return false, invalidRequest(CodeParameterInvalid, "off_session",
			fmt.Sprintf("Invalid off_session: %q; use true or false.", v))
	}
}

// cancelPaymentIntent cancels the intent with the ID of the path
// (Engine.CancelPaymentIntent), with cancellation_reason from the form.
func (s *server) cancelPaymentIntent(w http.ResponseWriter, r *http.Request) {
	form, errBody, status := readForm(r)
	if errBody != nil {
		writeError(w, status, *errBody)
		return
	}
	key, ok := idempotencyKey(w, r)
	if !ok {
		return
	}
	in, replayed, err := s.engine.CancelPaymentIntent(key, r.PathValue("id"), form.Get("cancellation_reason"))
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	if err != nil {
		writeEngineError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, intentBody(in))
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

// intentParams reads the parameters of a PaymentIntent creation. Unknown
// parameters are ignored; the Engine validates the values it knows.
func intentParams(form url.Values) (PaymentIntentParams, *StripeError) {
	if !form.Has("amount") {
		return PaymentIntentParams{}, invalidRequest(CodeParameterMissing, "amount", "Missing required param: amount.")
	}
	amount, err := strconv.ParseInt(form.Get("amount"), 10, 64)
	if err != nil {
		return PaymentIntentParams{}, invalidRequest(CodeParameterInvalidInteger, "amount",
			"Invalid integer: amount must be a whole number of the currency's minor unit.")
	}
	// The Engine always confirms: a request that would leave the intent
	// unconfirmed or uncaptured at Stripe must not look charged here.
	if form.Get("confirm") != "true" {
		return PaymentIntentParams{}, invalidRequest(CodeParameterInvalid, "confirm",
			"The sandbox only creates confirmed PaymentIntents: send confirm=true.")
	}
	if cm := form.Get("capture_method"); cm != "" && cm != methodAutomatic && cm != methodAutomaticAsync {
		return PaymentIntentParams{}, invalidRequest(CodeParameterInvalid, "capture_method",
			"The sandbox only supports capture_method=automatic.")
	}
	metadata, se := metadataParams(form)
	if se != nil {
		return PaymentIntentParams{}, se
	}
	return PaymentIntentParams{
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
	writeJSON(w, http.StatusOK, s.expandCharge(intentBody(in), in, r.URL.Query()))
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
