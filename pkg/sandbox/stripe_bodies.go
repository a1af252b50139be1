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
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// What the Stripe routes write: PaymentIntent, search result and account
// bodies, and errors in Stripe's shape.

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

// objectPaymentIntent is the object field of a PaymentIntent body, and the
// word of Stripe's messages for one.
const objectPaymentIntent = "payment_intent"

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
	CancellationReason *string           `json:"cancellation_reason"`
	LastPaymentError   *apiErrorBody     `json:"last_payment_error"`
	PaymentMethodTypes []string          `json:"payment_method_types"`
	// LatestCharge is the charge's ID (a string) of a succeeded intent,
	// nil otherwise, or the charge itself when expanded (chargeBody).
	LatestCharge any `json:"latest_charge"`
}

// intentBody is the PaymentIntent body of an Engine intent.
func intentBody(in Intent) paymentIntentBody {
	metadata := in.Metadata
	if metadata == nil {
		metadata = map[string]string{}
	}
	var received int64
	var latestCharge any
	if in.Status == StatusSucceeded {
		received = in.Amount
		latestCharge = chargeID(in.ID)
	}
	var lastError *apiErrorBody
	if se := in.LastPaymentError; se != nil {
		lastError = &apiErrorBody{
			Type:        se.Type,
			Code:        se.Code,
			DeclineCode: se.DeclineCode,
			Message:     se.Message,
			Param:       se.Param,
			DocURL:      docURL(se.Code),
		}
	}
	return paymentIntentBody{
		ID:                 in.ID,
		Object:             objectPaymentIntent,
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
		ConfirmationMethod: methodAutomatic,
		CaptureMethod:      methodAutomatic,
		CancellationReason: nullable(in.CancellationReason),
		LastPaymentError:   lastError,
		LatestCharge:       latestCharge,
		PaymentMethodTypes: []string{methodTypeOf(in)},
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
// one, its Retry-After in whole seconds rounded up, and its payment_intent:
// the intent a decline off-session left requires_payment_method, or the one
// whose status refused a cancel. A plain card decline keeps no intent, so
// its error carries none.
func writeStripeError(w http.ResponseWriter, se *StripeError) {
	setRetryAfter(w, se.RetryAfter)
	status := se.HTTPStatus
	if status == 0 {
		status = http.StatusInternalServerError
	}
	body := apiErrorBody{
		Type:        se.Type,
		Code:        se.Code,
		DeclineCode: se.DeclineCode,
		Message:     se.Message,
		Param:       se.Param,
		DocURL:      docURL(se.Code),
	}
	if in, ok := se.PaymentIntent(); ok {
		ib := intentBody(in)
		body.PaymentIntent = &ib
	}
	writeError(w, status, body)
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
