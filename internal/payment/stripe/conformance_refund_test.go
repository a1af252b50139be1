//go:build conformance

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

package stripe

import (
	"errors"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	stripego "github.com/stripe/stripe-go/v85"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// TestConformanceRefunds runs the requests of Refund, LookupRefunds, ListRefunds and
// SettleRefund against stripe-mock, as TestConformance does for charges:
// stripe-mock validates each against Stripe's OpenAPI spec and answers with
// fixtures, so the tests assert that the requests validate and that the
// answers are read.
func TestConformanceRefunds(t *testing.T) {
	base := startStripeMock(t)

	t.Run("Refund with every field", func(t *testing.T) {
		c := newConformanceCall(t, base)

		out, err := c.p.Refund(c.ctx, "conformance.refund/refund-1", payment.RefundRequest{
			Charge:   "pi_123",
			Amount:   500,
			Currency: "usd",
			Reason:   string(stripego.RefundReasonRequestedByCustomer),
			Metadata: map[string]string{"ticket": "T-7"},
		})
		t.Logf("Refund answered: outcome %+v, error %v", out, err)
		c.expectCreateAccepted(err)
		c.g.Expect(c.rec.count(http.MethodPost, "/v1/refunds")).To(Equal(1))
		form := c.rec.form(http.MethodPost, "/v1/refunds")
		c.g.Expect(form.Get("payment_intent")).To(Equal("pi_123"))
		c.g.Expect(form.Get("amount")).To(Equal("500"))
		c.g.Expect(form.Get("reason")).To(Equal("requested_by_customer"))
		c.g.Expect(form.Get("metadata[" + payment.MetadataKeyIdempotencyKey + "]")).To(Equal("conformance.refund/refund-1"))
		c.g.Expect(form.Get("metadata[" + payment.MetadataKeyFingerprint + "]")).To(HavePrefix("sha256:"))
		c.g.Expect(form.Get("metadata[ticket]")).To(Equal("T-7"))
	})

	t.Run("a pending refund is read until final", func(t *testing.T) {
		c := newConformanceCall(t, base)
		// The fixture is made pending when it is created, so that the
		// read is sent and checked; the read answers it as it is.
		c.rec.rewrite = func(req *http.Request, _ int, body map[string]any) {
			body["id"] = "re_123"
			if req.Method == http.MethodPost {
				body["status"] = string(stripego.RefundStatusPending)
			}
		}

		out, err := c.p.Refund(c.ctx, "conformance.refund/refund-2", payment.RefundRequest{Charge: "pi_123", Amount: 100, Currency: "usd"})
		t.Logf("Refund answered: outcome %+v, error %v", out, err)
		c.expectCreateAccepted(err)
		c.g.Expect(err).NotTo(HaveOccurred())
		c.g.Expect(out.Status).To(Equal(string(stripego.RefundStatusSucceeded)))
		c.g.Expect(c.rec.count(http.MethodPost, "")).To(Equal(1), "polling never creates a refund")
		c.g.Expect(c.rec.count(http.MethodGet, "/v1/refunds/re_123")).To(Equal(1))
	})

	t.Run("LookupRefunds reads the intent and follows pages", func(t *testing.T) {
		c := newConformanceCall(t, base)
		// stripe-mock answers one page; the first is made to say there is
		// another, so that the request for it is checked too.
		c.rec.rewrite = func(req *http.Request, n int, body map[string]any) {
			if req.URL.Path == "/v1/refunds" && n == 0 {
				body["has_more"] = true
			}
		}

		book, err := c.p.LookupRefunds(c.ctx, "pi_123")
		c.g.Expect(err).NotTo(HaveOccurred())
		c.g.Expect(book.Charge.ID).To(Equal("pi_123"))
		c.g.Expect(book.Complete).To(BeTrue())
		c.rec.expectAccepted(c.g)
		c.g.Expect(c.rec.count(http.MethodGet, "/v1/payment_intents/pi_123")).To(Equal(1))
		c.g.Expect(c.rec.count(http.MethodGet, "/v1/refunds")).To(Equal(2))
		c.g.Expect(c.rec.count(http.MethodPost, "")).To(Equal(0))
	})

	t.Run("ListRefunds lists without reading the intent", func(t *testing.T) {
		c := newConformanceCall(t, base)
		book, err := c.p.ListRefunds(c.ctx, "pi_123")
		c.g.Expect(err).NotTo(HaveOccurred())
		c.g.Expect(book.Complete).To(BeTrue())
		c.rec.expectAccepted(c.g)
		c.g.Expect(c.rec.count(http.MethodGet, "/v1/refunds")).To(Equal(1))
		c.g.Expect(c.rec.count(http.MethodGet, "/v1/payment_intents/pi_123")).To(Equal(0))
		c.g.Expect(c.rec.count(http.MethodPost, "")).To(Equal(0))
	})

	t.Run("SettleRefund reads the refund", func(t *testing.T) {
		c := newConformanceCall(t, base)
		// The fixture carries no key; it is given the one it is settled
		// under, so that SettleRefund goes on to its status.
		const key = "conformance.refund/settle-1"
		c.rec.rewrite = func(_ *http.Request, _ int, body map[string]any) {
			body["id"] = "re_123"
			body["metadata"] = map[string]any{payment.MetadataKeyIdempotencyKey: key}
		}

		out, err := c.p.SettleRefund(c.ctx, key, "re_123")
		t.Logf("SettleRefund answered: outcome %+v, error %v", out, err)
		var te *payment.TransientError
		c.g.Expect(errors.As(err, &te)).To(BeFalse(), "SettleRefund failed: %v", err)
		c.expectReadsOnly("/v1/refunds/re_123", 1)
	})
}
