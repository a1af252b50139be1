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
	"slices"
	"strings"
)

// Reading refunds, and what becomes of them after they were created: a
// pending refund settles when its delay has passed, and a test fails one
// with FailRefund. Reads have no lag: a refund is listed as soon as it is
// answered.

// GetRefund returns the refund with the ID as it is now, and false when
// there is none.
func (e *Engine) GetRefund(id string) (Refund, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.refunds[id]
	if !ok {
		return Refund{}, false
	}
	return e.settleLocked(r).clone(), true
}

// ListRefunds returns the refunds of the PaymentIntent with the ID, or of
// every PaymentIntent for "", as they are now, newest first: what GET
// /v1/refunds lists. It is also a test's view of every refund the Engine
// made, to check that each was made once.
func (e *Engine) ListRefunds(paymentIntent string) []Refund {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids := e.refundOrder
	if paymentIntent != "" {
		ids = e.refundsOf[paymentIntent]
	}
	found := make([]Refund, 0, len(ids))
	for _, id := range slices.Backward(ids) {
		found = append(found, e.settleLocked(e.refunds[id]).clone())
	}
	return found
}

// Refunded returns the sum of the amounts of the succeeded and pending
// refunds of the PaymentIntent with the ID: what is no longer left to
// refund. The Engine keeps it at most the PaymentIntent's amount.
func (e *Engine) Refunded(paymentIntent string) int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.refundedLocked(paymentIntent)
}

// FailRefund makes the succeeded or pending refund with the ID fail, as a
// card refund fails at Stripe days later when the card was closed:
// failureReason is one of the RefundFailure constants, or empty for
// RefundFailureUnknown. Its amount is then left to refund again. It returns
// an error for an unknown ID, a refund that already failed, or an unknown
// failure reason. The refund counts in Stats.RefundsFailed.
func (e *Engine) FailRefund(id, failureReason string) (Refund, error) {
	if failureReason == "" {
		failureReason = RefundFailureUnknown
	}
	if !slices.Contains(refundFailures, failureReason) {
		return Refund{}, fmt.Errorf("cannot fail refund %s: unknown failure reason %q; use one of %s",
			id, failureReason, strings.Join(refundFailures, ", "))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.refunds[id]
	if !ok {
		return Refund{}, fmt.Errorf("cannot fail refund %s: no such refund", id)
	}
	r = e.settleLocked(r)
	if r.Status == RefundStatusFailed {
		return Refund{}, fmt.Errorf("cannot fail refund %s: it already failed", id)
	}
	r.Status = RefundStatusFailed
	r.FailureReason = failureReason
	delete(e.settles, id)
	e.refunds[id] = r
	e.stats.RefundsFailed++
	e.refundEventLocked(r, false)
	return r.clone(), nil
}

// settleLocked returns r, succeeded and stored if it was pending and its
// delay has passed by the Engine's clock. The caller holds the lock.
func (e *Engine) settleLocked(r Refund) Refund {
	at, pending := e.settles[r.ID]
	if !pending || e.now().Before(at) {
		return r
	}
	r.Status = RefundStatusSucceeded
	e.refunds[r.ID] = r
	delete(e.settles, r.ID)
	e.refundEventLocked(r, false)
	return r
}
