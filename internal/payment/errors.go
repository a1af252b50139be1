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

package payment

import (
	"errors"
	"fmt"
	"time"
)

// The classes of provider errors. Test for them with errors.Is; a *Refusal
// wraps one of the first three, a *TransientError may wrap ErrInFlight.
var (
	// ErrDeclined means the provider refused the payment method, for example
	// a declined card. Nothing was charged.
	ErrDeclined = errors.New("payment declined")
	// ErrInvalid means the provider rejected the request as malformed.
	// Nothing was charged.
	ErrInvalid = errors.New("invalid payment request")
	// ErrKeyReused means the key was already used with other parameters.
	// Nothing was charged by this request.
	ErrKeyReused = errors.New("idempotency key reused with other parameters")
	// ErrInFlight means a request with the same key is still being processed
	// by the provider. The outcome is not known yet.
	ErrInFlight = errors.New("a request with the same idempotency key is in flight")
)

// Failure reasons recorded in a PaymentJob's status when it fails.
const (
	ReasonCardDeclined   = "CardDeclined"
	ReasonInvalidRequest = "InvalidRequest"
	ReasonKeyReused      = "IdempotencyKeyReused"
)

// Refusal is a definitive refusal: the provider did not charge and will not
// charge for this request, so the job may be marked Failed.
type Refusal struct {
	// Class is ErrDeclined, ErrInvalid or ErrKeyReused.
	Class error
	// Reason is a code for the job's status, such as CardDeclined: a
	// Kubernetes condition reason, as ValidReason checks.
	Reason string
	// Message is the provider's explanation. It must not contain secrets or
	// card data.
	Message string
}

// Error returns the reason and message.
func (r *Refusal) Error() string {
	if r.Message == "" {
		return r.Class.Error()
	}
	return fmt.Sprintf("%s: %s", r.Class, r.Message)
}

// Unwrap returns the class, so errors.Is(err, ErrDeclined) works.
func (r *Refusal) Unwrap() error { return r.Class }

// Declined returns a refusal of class ErrDeclined. reason defaults to
// CardDeclined.
func Declined(reason, message string) error {
	if reason == "" {
		reason = ReasonCardDeclined
	}
	return &Refusal{Class: ErrDeclined, Reason: reason, Message: message}
}

// Invalid returns a refusal of class ErrInvalid.
func Invalid(message string) error {
	return &Refusal{Class: ErrInvalid, Reason: ReasonInvalidRequest, Message: message}
}

// KeyReused returns a refusal of class ErrKeyReused.
func KeyReused(message string) error {
	return &Refusal{Class: ErrKeyReused, Reason: ReasonKeyReused, Message: message}
}

// TransientError is an uncertain outcome: a timeout, a 5xx, a rate limit or a
// request in flight. The charge may or may not have happened; the same call
// must be retried with the same key.
type TransientError struct {
	// RetryAfter is how long the provider asked to wait; zero if it did not.
	RetryAfter time.Duration
	// Err is the cause.
	Err error
}

// Error returns the cause.
func (e *TransientError) Error() string {
	if e.Err == nil {
		return "transient provider error"
	}
	return "transient provider error: " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *TransientError) Unwrap() error { return e.Err }

// Transient wraps err as a TransientError with a Retry-After hint.
func Transient(err error, retryAfter time.Duration) error {
	return &TransientError{RetryAfter: retryAfter, Err: err}
}

// InFlight returns a TransientError of class ErrInFlight.
func InFlight(retryAfter time.Duration) error {
	return &TransientError{RetryAfter: retryAfter, Err: ErrInFlight}
}

// IsRefusal reports whether err is a definitive refusal, and returns it.
// Any other error, including a context deadline, is an uncertain outcome; so
// is a refusal wrapped in a TransientError, which says the outcome is unsure.
func IsRefusal(err error) (*Refusal, bool) {
	var t *TransientError
	if errors.As(err, &t) {
		return nil, false
	}
	var r *Refusal
	if errors.As(err, &r) {
		return r, true
	}
	return nil, false
}

// RetryAfter returns the provider's Retry-After hint carried by err, or zero.
func RetryAfter(err error) time.Duration {
	var t *TransientError
	if errors.As(err, &t) {
		return t.RetryAfter
	}
	return 0
}

// SettlingError says the provider accepted the payment and holds it under
// ID, not settled yet: a bank debit (SEPA, ACH, Bacs) stays processing for
// days and may still succeed or fail. It is neither a refusal nor an
// uncertainty: nothing is sent again under the key, the payment is read by
// its ID (Settle) until the provider decides.
type SettlingError struct {
	// ID of the payment (or refund) at the provider.
	ID string
	// Status is the provider's word for it, such as processing.
	Status string
	// Method is the provider's payment method type, such as sepa_debit;
	// empty when the provider does not say.
	Method string
}

// Error says which payment is settling.
func (e *SettlingError) Error() string {
	if e.Method != "" {
		return fmt.Sprintf("%s %s is %s: accepted by the provider, not settled yet", e.Method, e.ID, e.Status)
	}
	return fmt.Sprintf("%s is %s: accepted by the provider, not settled yet", e.ID, e.Status)
}

// Settling returns the SettlingError of the payment id in status, paid with
// method ("" when unknown).
func Settling(id, status, method string) error {
	return &SettlingError{ID: id, Status: status, Method: method}
}

// IsSettling reports whether err says the payment is accepted and not
// settled yet, and returns it.
func IsSettling(err error) (*SettlingError, bool) {
	var s *SettlingError
	if errors.As(err, &s) {
		return s, true
	}
	return nil, false
}
