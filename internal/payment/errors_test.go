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

package payment_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// allClasses are the error classes a caller can test for with errors.Is.
var allClasses = []error{
	payment.ErrDeclined,
	payment.ErrInvalid,
	payment.ErrKeyReused,
	payment.ErrInFlight,
}

func TestRefusalsCarryTheirClassReasonAndMessage(t *testing.T) {
	tests := []struct {
		name, wantReason, wantMessage string
		err, wantClass                error
	}{
		{
			name:        "declined with a reason keeps the reason",
			err:         payment.Declined("InsufficientFunds", "your card has insufficient funds"),
			wantClass:   payment.ErrDeclined,
			wantReason:  "InsufficientFunds",
			wantMessage: "your card has insufficient funds",
		},
		{
			name:        "declined without a reason defaults to CardDeclined",
			err:         payment.Declined("", "your card was declined"),
			wantClass:   payment.ErrDeclined,
			wantReason:  payment.ReasonCardDeclined,
			wantMessage: "your card was declined",
		},
		{
			name:        "invalid",
			err:         payment.Invalid("amount must be at least 50 cents"),
			wantClass:   payment.ErrInvalid,
			wantReason:  payment.ReasonInvalidRequest,
			wantMessage: "amount must be at least 50 cents",
		},
		{
			name:        "key reused",
			err:         payment.KeyReused("keys can only be used with the same parameters"),
			wantClass:   payment.ErrKeyReused,
			wantReason:  payment.ReasonKeyReused,
			wantMessage: "keys can only be used with the same parameters",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			// Checked bare and wrapped, as the reconciler sees it after
			// the adapter or a helper added context.
			for _, err := range []error{tt.err, fmt.Errorf("cannot charge payment: %w", tt.err)} {
				for _, class := range allClasses {
					g.Expect(errors.Is(err, class)).To(Equal(class == tt.wantClass),
						"errors.Is(%q, %q)", err, class)
				}

				r, ok := payment.IsRefusal(err)
				g.Expect(ok).To(BeTrue(), "a refusal must let the job be marked Failed")
				g.Expect(r).To(HaveOccurred())
				g.Expect(r.Class).To(BeIdenticalTo(tt.wantClass))
				g.Expect(r.Reason).To(Equal(tt.wantReason))
				g.Expect(r.Message).To(Equal(tt.wantMessage))
				g.Expect(err.Error()).To(ContainSubstring(tt.wantMessage))
				g.Expect(payment.RetryAfter(err)).To(BeZero())
			}
		})
	}
}

func TestRefusalWithoutMessageReportsItsClass(t *testing.T) {
	g := NewWithT(t)

	g.Expect(payment.Invalid("").Error()).To(Equal(payment.ErrInvalid.Error()))
	g.Expect(payment.Declined("", "").Error()).To(Equal(payment.ErrDeclined.Error()))
	g.Expect(payment.KeyReused("").Error()).To(Equal(payment.ErrKeyReused.Error()))
}

// The reconciler relies on this: anything that is not a refusal is an
// uncertain outcome, retried under the same key and never marked Failed.
func TestUncertainOutcomesAreNotRefusals(t *testing.T) {
	tests := []struct {
		name           string
		err            error
		wantInFlight   bool
		wantRetryAfter time.Duration
	}{
		{
			name:           "transient with a Retry-After hint",
			err:            payment.Transient(errors.New("503 service unavailable"), 2*time.Second),
			wantRetryAfter: 2 * time.Second,
		},
		{
			name: "transient without a hint",
			err:  payment.Transient(errors.New("connection reset by peer"), 0),
		},
		{
			name:           "transient without a cause",
			err:            payment.Transient(nil, time.Second),
			wantRetryAfter: time.Second,
		},
		{
			name:           "in flight",
			err:            payment.InFlight(3 * time.Second),
			wantInFlight:   true,
			wantRetryAfter: 3 * time.Second,
		},
		{
			name:           "wrapped in flight",
			err:            fmt.Errorf("cannot charge payment: %w", payment.InFlight(5*time.Second)),
			wantInFlight:   true,
			wantRetryAfter: 5 * time.Second,
		},
		{
			name:           "wrapped transient",
			err:            fmt.Errorf("cannot charge payment: %w", payment.Transient(errors.New("429 too many requests"), 7*time.Second)),
			wantRetryAfter: 7 * time.Second,
		},
		{
			name:           "transient caused by a deadline",
			err:            payment.Transient(context.DeadlineExceeded, time.Second),
			wantRetryAfter: time.Second,
		},
		{
			name: "context deadline exceeded",
			err:  context.DeadlineExceeded,
		},
		{
			name: "wrapped context deadline exceeded",
			err:  fmt.Errorf("cannot charge payment: %w", context.DeadlineExceeded),
		},
		{
			name: "context canceled",
			err:  context.Canceled,
		},
		{
			name: "plain error",
			err:  errors.New("unexpected EOF"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			r, ok := payment.IsRefusal(tt.err)
			g.Expect(ok).To(BeFalse(), "an uncertain outcome must never mark the job Failed")
			g.Expect(r).NotTo(HaveOccurred())

			g.Expect(errors.Is(tt.err, payment.ErrInFlight)).To(Equal(tt.wantInFlight))
			for _, class := range []error{payment.ErrDeclined, payment.ErrInvalid, payment.ErrKeyReused} {
				g.Expect(errors.Is(tt.err, class)).To(BeFalse(), "errors.Is(%q, %q)", tt.err, class)
			}
			g.Expect(payment.RetryAfter(tt.err)).To(Equal(tt.wantRetryAfter))
		})
	}
}

func TestNilErrorIsNeitherRefusalNorHint(t *testing.T) {
	g := NewWithT(t)

	r, ok := payment.IsRefusal(nil)
	g.Expect(ok).To(BeFalse())
	g.Expect(r).NotTo(HaveOccurred())
	g.Expect(payment.RetryAfter(nil)).To(BeZero())
}

func TestRefusalWrappedAsTransientIsUncertain(t *testing.T) {
	g := NewWithT(t)
	err := payment.Transient(payment.Declined("", "card_declined"), 0)
	_, ok := payment.IsRefusal(err)
	g.Expect(ok).To(BeFalse(), "an adapter that is unsure whether a decline is final must not fail the job")
}
