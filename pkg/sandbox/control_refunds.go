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
	"fmt"
	"net/http"
	"time"
)

// The /_sandbox/refunds routes: the settle delay of new refunds, how a
// refund beyond what is left is refused, and failing a refund after it was
// made.

// refundControlBody is GET and PUT /_sandbox/refunds. A PUT sets at least
// one field; a field left out keeps its value.
type refundControlBody struct {
	// SettleDelay is a Go duration (Engine.SetRefundSettleDelay).
	SettleDelay *string `json:"settleDelay,omitempty"`
	// AmountTooLargeCode is whether a refund beyond what is left is
	// refused with the code amount_too_large, or without a code as Stripe
	// answers it (Engine.SetAmountTooLargeCode).
	AmountTooLargeCode *bool `json:"amountTooLargeCode,omitempty"`
}

// getRefundControl answers the refund settle delay and whether a refund
// beyond what is left is refused with a code.
func (s *server) getRefundControl(w http.ResponseWriter, _ *http.Request) {
	d := s.engine.RefundSettleDelay().String()
	code := s.engine.AmountTooLargeCode()
	writeJSON(w, http.StatusOK, refundControlBody{SettleDelay: &d, AmountTooLargeCode: &code})
}

// putRefundControl sets the refund settle delay
// (Engine.SetRefundSettleDelay) and the code of a refund beyond what is
// left (Engine.SetAmountTooLargeCode), each when the body has it; it
// changes nothing when either is invalid.
func (s *server) putRefundControl(w http.ResponseWriter, r *http.Request) {
	var body refundControlBody
	if !decodeControl(w, r, &body, "refunds") {
		return
	}
	if body.SettleDelay == nil && body.AmountTooLargeCode == nil {
		writeError(w, http.StatusBadRequest, apiErrorBody{Type: ErrorTypeInvalidRequest,
			Message: "Invalid refunds: settleDelay or amountTooLargeCode is required"})
		return
	}
	if body.SettleDelay != nil {
		d, err := time.ParseDuration(*body.SettleDelay)
		if err == nil && d < 0 {
			err = errors.New("must not be negative")
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, apiErrorBody{Type: ErrorTypeInvalidRequest,
				Message: fmt.Sprintf("Invalid refunds: settleDelay: %v", err)})
			return
		}
		s.engine.SetRefundSettleDelay(d)
	}
	if body.AmountTooLargeCode != nil {
		s.engine.SetAmountTooLargeCode(*body.AmountTooLargeCode)
	}
	s.getRefundControl(w, r)
}

// failRefundBody is the optional body of POST /_sandbox/refunds/{id}/fail.
type failRefundBody struct {
	// FailureReason is one of the RefundFailure constants; unknown when
	// left out.
	FailureReason string `json:"failureReason"`
}

// failRefund fails the refund with the ID of the path (Engine.FailRefund)
// and answers it as Stripe writes it: 404 for an unknown refund, 400 for
// one that already failed or an unknown failure reason.
func (s *server) failRefund(w http.ResponseWriter, r *http.Request) {
	var body failRefundBody
	// An empty body leaves the reason out.
	if r.ContentLength != 0 && !decodeControl(w, r, &body, "refund failure") {
		return
	}
	id := r.PathValue("id")
	if _, ok := s.engine.GetRefund(id); !ok {
		writeError(w, http.StatusNotFound, apiErrorBody{Type: ErrorTypeInvalidRequest, Code: CodeResourceMissing,
			Param: "id", Message: fmt.Sprintf("No such refund: '%s'", id)})
		return
	}
	refund, err := s.engine.FailRefund(id, body.FailureReason)
	if err != nil {
		writeError(w, http.StatusBadRequest, apiErrorBody{Type: ErrorTypeInvalidRequest, Message: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, refundBodyOf(refund))
}
