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
	"slices"
)

// What becomes of an intent that waits for its customer: canceled by the
// merchant, or authenticated by the customer.

// Cancellation reasons a client may send to CancelPaymentIntent, as at
// Stripe; Stripe sets others (automatic, expired, failed_invoice,
// void_invoice) itself.
const (
	CancellationReasonDuplicate           = "duplicate"
	CancellationReasonFraudulent          = "fraudulent"
	CancellationReasonRequestedByCustomer = "requested_by_customer"
	CancellationReasonAbandoned           = "abandoned"
)

// cancellationReasons are the reasons CancelPaymentIntent accepts.
var cancellationReasons = []string{
	CancellationReasonDuplicate, CancellationReasonFraudulent,
	CancellationReasonRequestedByCustomer, CancellationReasonAbandoned,
}

// cancelable are the statuses an intent may be canceled in. Stripe also
// cancels a processing intent "in rare cases"; the sandbox models the
// common case and refuses.
var cancelable = []string{
	StatusRequiresPaymentMethod, StatusRequiresCapture, StatusRequiresConfirmation, StatusRequiresAction,
}

// CancelPaymentIntent cancels the intent with id, as POST
// /v1/payment_intents/{id}/cancel does at Stripe: only an intent in
// requires_payment_method, requires_capture, requires_confirmation or
// requires_action is canceled; one in any other status (succeeded,
// processing, canceled) is refused with a 400 payment_intent_unexpected_state
// that carries the intent, and an unknown id with a 404 resource_missing.
// reason is empty or one of the CancellationReason constants; another is a
// 400 parameter_invalid. A canceled intent moved no money: it counts in
// Stats.Cancels, never in Stats.Charges.
//
// The idempotency key works as for CreatePaymentIntent, in the same key
// space: a retry with the same id and reason replays the first answer, the
// key used with anything else is a 400 idempotency_error, and an empty key
// is a new request each time. Refusals are not saved, as Stripe saves no
// answer of a request it did not execute. Requests do not count in
// Stats.Requests (creates only); they are subject to the write rate limit, FailNextAny and FailNext of
// FaultBeforeCommit and FaultAfterCommit (the intent is canceled, and the
// answer lost). Errors are always *StripeError.
func (e *Engine) CancelPaymentIntent(key, id, reason string) (Intent, bool, error) {
	e.lockSettled()
	defer e.mu.Unlock()
	if !e.allow(e.writes) {
		return Intent{}, false, rateLimitError(RateLimitRetryAfter, false)
	}
	if e.take(e.failNextAny, FaultBeforeCommit) {
		e.stats.Faults++
		return Intent{}, false, apiError(FaultBeforeCommit)
	}
	lose := e.take(e.failNextAny, FaultAfterCommit)
	fp := fmt.Sprintf("cancel %s %s", id, reason)
	if s, ok := e.keys[key]; ok && key != "" && e.idempotent {
		switch {
		case s.inFlight:
			e.stats.InFlightConflicts++
			return Intent{}, false, keyInUseError()
		case s.fingerprint != fp:
			e.stats.KeyReusedErrors++
			return Intent{}, false, keyReusedError()
		}
		e.stats.Replays++
		if lose {
			e.stats.Faults++
			return Intent{}, false, apiError(FaultAfterCommit)
		}
		return s.saved.clone(), true, nil
	}
	if e.take(e.failNext, FaultBeforeCommit) {
		e.stats.Faults++
		return Intent{}, false, apiError(FaultBeforeCommit)
	}
	if reason != "" && !slices.Contains(cancellationReasons, reason) {
		e.stats.InvalidRequests++
		return Intent{}, false, invalidRequest(CodeParameterInvalid, "cancellation_reason",
			fmt.Sprintf("Invalid cancellation_reason: must be one of %v.", cancellationReasons))
	}
	in, ok := e.intents[id]
	if !ok {
		e.stats.InvalidRequests++
		se := invalidRequest(CodeResourceMissing, "id", fmt.Sprintf("No such payment_intent: '%s'", id))
		se.HTTPStatus = http.StatusNotFound
		return Intent{}, false, se
	}
	if !slices.Contains(cancelable, in.Status) {
		e.stats.InvalidRequests++
		return Intent{}, false, unexpectedStateError(in.clone(), "cancel",
			append(slices.Clone(cancelable), StatusProcessing))
	}
	in.Status = StatusCanceled
	in.CancellationReason = reason
	e.storeIntentLocked(in)
	e.stats.Cancels++
	if key != "" && e.idempotent {
		saved := in.clone()
		e.keys[key] = &keyState{fingerprint: fp, intentID: id, saved: &saved}
	}
	if lose || e.take(e.failNext, FaultAfterCommit) {
		e.stats.Faults++
		return Intent{}, false, apiError(FaultAfterCommit)
	}
	return in.clone(), false, nil
}

// CompleteAction completes the customer's authentication of the intent
// with id, which must be in requires_action: the payment succeeds and counts
// in Stats.Charges and Stats.ChargesByKey, as when a customer comes back and
// passes 3-D Secure. It returns an error for an unknown id or an intent in
// another status, such as one canceled meanwhile.
func (e *Engine) CompleteAction(id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	in, ok := e.intents[id]
	switch {
	case !ok:
		return fmt.Errorf("cannot complete the action of payment intent %s: no such payment intent", id)
	case in.Status != StatusRequiresAction:
		return fmt.Errorf("cannot complete the action of payment intent %s: its status is %s, not %s",
			id, in.Status, StatusRequiresAction)
	}
	in.Status = StatusSucceeded
	e.storeIntentLocked(in)
	e.stats.Charges++
	e.stats.ChargesByKey[in.IdempotencyKey]++
	return nil
}
