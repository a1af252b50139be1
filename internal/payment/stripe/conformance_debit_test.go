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
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/httpprovider"
)

// Bank debits and webhooks against stripe-mock: its fixtures are made to
// say processing and sepa_debit, so that the requests the adapter then
// sends (or does not) are checked against Stripe's OpenAPI spec, and the
// shape of Stripe's own Event and PaymentIntent objects is what ParseEvent
// reads.
func TestConformanceOfBankDebits(t *testing.T) {
	base := startStripeMock(t)
	processingDebit := func(req *http.Request, _ int, body map[string]any) {
		if req.URL.Path == "/v1/payment_intents" || req.URL.Path == "/v1/payment_intents/pi_123" {
			body["status"] = "processing"
			body["payment_method_types"] = []string{"sepa_debit"}
		}
	}

	t.Run("a processing debit is settling at once, with one create and no read", func(t *testing.T) {
		c := newConformanceCall(t, base)
		c.rec.rewrite = processingDebit

		_, err := c.p.Charge(c.ctx, "conformance/debit-1", payment.ChargeRequest{Amount: 2000, Currency: "eur", PaymentMethod: "pm_success_de"})

		s, ok := payment.IsSettling(err)
		c.g.Expect(ok).To(BeTrue(), "settling: %v", err)
		c.g.Expect(s.Method).To(Equal("sepa_debit"))
		c.rec.expectAccepted(c.g)
		c.g.Expect(c.rec.count(http.MethodPost, "/v1/payment_intents")).To(Equal(1))
		c.g.Expect(c.rec.count(http.MethodGet, "")).To(BeZero(), "not polled within the call")
	})

	t.Run("a settling debit is read once by its id", func(t *testing.T) {
		c := newConformanceCall(t, base)
		c.rec.rewrite = func(req *http.Request, n int, body map[string]any) {
			processingDebit(req, n, body)
			// Made under the key Settle is asked for.
			meta, _ := body["metadata"].(map[string]any)
			if meta == nil {
				meta = map[string]any{}
			}
			meta[payment.MetadataKeyIdempotencyKey] = "conformance/debit-2"
			body["metadata"] = meta
		}

		_, err := c.p.Settle(c.ctx, "conformance/debit-2", "pi_123")

		_, ok := payment.IsSettling(err)
		c.g.Expect(ok).To(BeTrue(), "settling: %v", err)
		c.expectReadsOnly("/v1/payment_intents/pi_123", 1)
	})

	t.Run("Stripe's own event and intent shapes parse", func(t *testing.T) {
		g := NewWithT(t)
		event := mockObject(g, base+"/v1/events/evt_123")
		intent := mockObject(g, base+"/v1/payment_intents/pi_123")
		intent["metadata"] = map[string]any{payment.MetadataKeyIdempotencyKey: "billing/invoice-7"}
		event["type"] = "payment_intent.succeeded"
		event["livemode"] = false
		event["data"] = map[string]any{"object": intent}
		body, err := json.Marshal(event)
		g.Expect(err).NotTo(HaveOccurred())
		now := time.Now()

		ev, err := ParseEvent(body, httpprovider.Sign("whsec_conformance", now, body), "whsec_conformance", now)

		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ev.ID).To(Equal(event["id"]))
		g.Expect(ev.Subject).To(Equal(payment.SubjectPayment))
		g.Expect(ev.ObjectID).To(Equal(intent["id"]))
		g.Expect(ev.Key).To(Equal("billing/invoice-7"))
	})
}

// mockObject GETs url from stripe-mock with the conformance key and
// returns the JSON object it answers.
func mockObject(g Gomega, url string) map[string]any {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Authorization", "Bearer "+conformanceKey)
	res, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = res.Body.Close() }()
	g.Expect(res.StatusCode).To(Equal(http.StatusOK))
	raw, err := io.ReadAll(res.Body)
	g.Expect(err).NotTo(HaveOccurred())
	var out map[string]any
	g.Expect(json.Unmarshal(raw, &out)).To(Succeed())
	return out
}
