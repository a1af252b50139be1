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
	"time"
)

// Disputes, as at Stripe: a cardholder disputes the whole of a succeeded
// PaymentIntent's charge with their bank. The sandbox opens one only when a
// test says so (OpenDispute, POST /_sandbox/intents/{id}/dispute) and moves
// it through Stripe's statuses with SetDisputeStatus; it is listed and
// retrieved like the other objects (GET /v1/disputes).

// Dispute statuses, as at Stripe.
const (
	// DisputeStatusWarningNeedsResponse is an inquiry (not yet a
	// dispute) awaiting evidence.
	DisputeStatusWarningNeedsResponse = "warning_needs_response"
	// DisputeStatusWarningUnderReview is an inquiry under review.
	DisputeStatusWarningUnderReview = "warning_under_review"
	// DisputeStatusWarningClosed is an inquiry closed without becoming a
	// dispute.
	DisputeStatusWarningClosed = "warning_closed"
	// DisputeStatusNeedsResponse is a dispute awaiting evidence; the
	// status of a dispute OpenDispute opens.
	DisputeStatusNeedsResponse = "needs_response"
	// DisputeStatusUnderReview is a dispute whose evidence is under review.
	DisputeStatusUnderReview = "under_review"
	// DisputeStatusWon is a dispute decided for the account: the money
	// stays.
	DisputeStatusWon = "won"
	// DisputeStatusLost is a dispute decided for the cardholder: the money
	// went back.
	DisputeStatusLost = "lost"
)

// disputeStatuses are the statuses SetDisputeStatus accepts.
var disputeStatuses = []string{
	DisputeStatusWarningNeedsResponse, DisputeStatusWarningUnderReview, DisputeStatusWarningClosed,
	DisputeStatusNeedsResponse, DisputeStatusUnderReview, DisputeStatusWon, DisputeStatusLost,
}

// Dispute reasons a test may give OpenDispute; Stripe has a few more,
// which OpenDispute accepts too (see disputeReasons).
const (
	// DisputeReasonFraudulent is a payment the cardholder says they did not
	// make.
	DisputeReasonFraudulent = "fraudulent"
	// DisputeReasonDuplicate is a payment the cardholder says was charged
	// twice.
	DisputeReasonDuplicate = "duplicate"
	// DisputeReasonGeneral is a dispute without a stated reason; the reason
	// of a dispute opened without one.
	DisputeReasonGeneral = "general"
)

// disputeReasons are Stripe's dispute reasons.
var disputeReasons = []string{
	"bank_cannot_process", "check_returned", "credit_not_processed", "customer_initiated",
	"debit_not_authorized", DisputeReasonDuplicate, DisputeReasonFraudulent, DisputeReasonGeneral,
	"incorrect_account_details", "insufficient_funds", "product_not_received", "product_unacceptable",
	"subscription_canceled", "unrecognized",
}

// Dispute is a dispute of a PaymentIntent's charge.
type Dispute struct {
	// ID is "dp_" followed by 24 letters and digits.
	ID string
	// PaymentIntent is the ID of the disputed PaymentIntent.
	PaymentIntent string
	// Charge is the ID of the PaymentIntent's charge (see Refund.Charge).
	Charge string
	// Amount disputed, in the currency's minor unit: the whole payment.
	Amount int64
	// Currency is the PaymentIntent's.
	Currency string
	// Status is one of the DisputeStatus constants.
	Status string
	// Reason is one of Stripe's dispute reasons, such as
	// DisputeReasonFraudulent.
	Reason string
	// Created is when the dispute was opened, by the Engine's clock.
	Created time.Time
}

// OpenDispute opens a dispute of the whole of the succeeded PaymentIntent
// with intentID, in DisputeStatusNeedsResponse, as a cardholder's bank does
// at Stripe, and returns it. reason is one of Stripe's dispute reasons, or
// empty for DisputeReasonGeneral. It returns an error for an unknown
// PaymentIntent, one that did not succeed or is already disputed (Stripe
// allows one dispute per charge), or an unknown reason.
func (e *Engine) OpenDispute(intentID, reason string) (Dispute, error) {
	if reason == "" {
		reason = DisputeReasonGeneral
	}
	if !slices.Contains(disputeReasons, reason) {
		return Dispute{}, fmt.Errorf("cannot dispute payment intent %s: unknown reason %q; use one of %s",
			intentID, reason, strings.Join(disputeReasons, ", "))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	in, ok := e.intents[intentID]
	switch {
	case !ok:
		return Dispute{}, fmt.Errorf("cannot dispute payment intent %s: no such payment intent", intentID)
	case in.Status != StatusSucceeded:
		return Dispute{}, fmt.Errorf("cannot dispute payment intent %s: its status is %s, not %s",
			intentID, in.Status, StatusSucceeded)
	case len(e.disputesOf[intentID]) > 0:
		return Dispute{}, fmt.Errorf("cannot dispute payment intent %s: it is already disputed (%s)",
			intentID, e.disputesOf[intentID][0])
	}
	d := Dispute{
		ID:            e.newDisputeID(),
		PaymentIntent: in.ID,
		Charge:        chargeID(in.ID),
		Amount:        in.Amount,
		Currency:      in.Currency,
		Status:        DisputeStatusNeedsResponse,
		Reason:        reason,
		Created:       e.now(),
	}
	e.disputes[d.ID] = d
	e.disputesOf[in.ID] = append(e.disputesOf[in.ID], d.ID)
	e.disputeIndex.insert(keyOf(d.Created, d.ID))
	e.disputeEventLocked(d)
	return d, nil
}

// SetDisputeStatus moves the dispute with id to status, one of the
// DisputeStatus constants, as the provider does while it is decided. It
// returns an error for an unknown id or status.
func (e *Engine) SetDisputeStatus(id, status string) (Dispute, error) {
	if !slices.Contains(disputeStatuses, status) {
		return Dispute{}, fmt.Errorf("cannot set the status of dispute %s: unknown status %q; use one of %s",
			id, status, strings.Join(disputeStatuses, ", "))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	d, ok := e.disputes[id]
	if !ok {
		return Dispute{}, fmt.Errorf("cannot set the status of dispute %s: no such dispute", id)
	}
	d.Status = status
	e.disputes[id] = d
	return d, nil
}

// GetDispute returns the dispute with id, and false when there is none.
func (e *Engine) GetDispute(id string) (Dispute, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, ok := e.disputes[id]
	return d, ok
}

// ListDisputes returns a page of the disputes of q's window, of every
// PaymentIntent or of q.PaymentIntent, newest first, and whether more of
// the window follow it: GET /v1/disputes. It answers the errors of
// ListIntents, for disputes, and counts in Stats.Lists.
func (e *Engine) ListDisputes(q ListQuery) ([]Dispute, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stats.Lists++
	index := &e.disputeIndex
	if q.PaymentIntent != "" {
		index = e.subIndex(e.disputesOf[q.PaymentIntent], func(id string) time.Time { return e.disputes[id].Created })
	}
	keys, more, err := listPage(index, q, "dispute", func(id string) (indexKey, bool) {
		d, ok := e.disputes[id]
		return keyOf(d.Created, id), ok && (q.PaymentIntent == "" || d.PaymentIntent == q.PaymentIntent)
	})
	if err != nil {
		return nil, false, err
	}
	page := make([]Dispute, len(keys))
	for i, k := range keys {
		page[i] = e.disputes[k.id]
	}
	return page, more, nil
}

// disputeOfLocked returns the ID of the dispute of the PaymentIntent with
// id, empty when it has none. The caller holds the lock.
func (e *Engine) disputeOfLocked(intentID string) string {
	if ids := e.disputesOf[intentID]; len(ids) > 0 {
		return ids[0]
	}
	return ""
}

// newDisputeID returns an unused dispute ID. The caller holds the lock.
func (e *Engine) newDisputeID() string {
	for {
		id := "dp_" + e.randomText(24)
		if _, taken := e.disputes[id]; !taken {
			return id
		}
	}
}
