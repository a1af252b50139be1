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

package httpprovider_test

// The tests of the refund endpoint: Refund.

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/httpprovider"
)

const (
	refundPath    = "/v1/refunds"
	testRefundKey = "billing.refund/invoice-2026-0001"
)

// testRefund is a refund request with every field set.
var testRefund = payment.RefundRequest{
	Charge:   "ch_1",
	Amount:   500,
	Currency: "eur",
	Reason:   "requested_by_customer",
	Metadata: map[string]string{"ticket": "T-7"},
}

// newRefunder is the provider New builds for a service at srv with a refund
// endpoint, as a payment.Refunder.
func newRefunder(t *testing.T, srv string, cfg httpprovider.Config) payment.Refunder {
	t.Helper()
	cfg.URL = srv + chargePath
	cfg.RefundURL = srv + refundPath
	r, ok := newProvider(t, cfg).(payment.Refunder)
	if !ok {
		t.Fatal("the provider is not a payment.Refunder")
	}
	return r
}

func TestRefundSendsTheContractRequest(t *testing.T) {
	bare := payment.RefundRequest{Charge: "ch_1", Amount: 500, Currency: "eur"}
	cases := map[string]struct {
		req        payment.RefundRequest
		wantFields map[string]any
	}{
		"every field": {req: testRefund, wantFields: map[string]any{
			"charge": "ch_1", "amount": float64(500), "currency": "eur", "reason": "requested_by_customer",
			"metadata": map[string]any{"ticket": "T-7"}, "idempotencyKey": testRefundKey,
			"fingerprint": payment.RefundHash(testRefundKey, testRefund),
		}},
		"empty optional fields are left out": {req: bare, wantFields: map[string]any{
			"charge": "ch_1", "amount": float64(500), "currency": "eur", "idempotencyKey": testRefundKey,
			"fingerprint": payment.RefundHash(testRefundKey, bare),
		}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			srv, requests := newServer(t, answer(http.StatusCreated, nil, `{"id":"re_1","status":"succeeded","charge":"ch_1"}`))
			p := newRefunder(t, srv.URL, httpprovider.Config{Token: testToken + "\n"})

			got, err := p.Refund(context.Background(), testRefundKey, c.req)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(payment.Outcome{ID: "re_1", Status: "succeeded", Amount: 500, Currency: "eur"}))

			sent := drain(requests)
			g.Expect(sent).To(HaveLen(1))
			g.Expect(sent[0].method).To(Equal(http.MethodPost))
			g.Expect(sent[0].path).To(Equal(refundPath))
			for name, value := range map[string]string{
				"Content-Type": jsonType, "Accept": jsonType, "Idempotency-Key": testRefundKey,
				"Authorization": "Bearer " + testToken, "User-Agent": httpprovider.UserAgent,
			} {
				g.Expect(sent[0].header.Get(name)).To(Equal(value), "header %s", name)
			}
			var fields map[string]any
			g.Expect(json.Unmarshal(sent[0].body, &fields)).To(Succeed())
			g.Expect(fields).To(Equal(c.wantFields))
		})
	}
}

func TestRefundMapsEveryAnswer(t *testing.T) {
	created := time.Unix(createdEpoch, 0).UTC()
	tests := []answerCase{
		// Refunded.
		{
			name: "201 succeeded with every field", status: 201,
			body:        `{"id":"re_1","status":"succeeded","amount":500,"currency":"eur","created":1772368200,"charge":"ch_1"}`,
			wantOutcome: &payment.Outcome{ID: "re_1", Status: "succeeded", Amount: 500, Currency: "eur", Created: created},
		},
		{
			name: "200 completed, replayed through the header", status: 200, header: map[string]string{"Idempotent-Replayed": "true"},
			body:        `{"id":"re_1","status":"Completed"}`,
			wantOutcome: &payment.Outcome{ID: "re_1", Status: "Completed", Amount: 500, Currency: "eur", Replayed: true},
		},
		{
			name: "200 paid, replayed through the body", status: 200, body: `{"id":"re_1","status":"paid","replayed":true}`,
			wantOutcome: &payment.Outcome{ID: "re_1", Status: "paid", Amount: 500, Currency: "eur", Replayed: true},
		},
		{
			name: "200 without a status takes the amount and currency from the request", status: 200, body: `{"id":"re_1"}`,
			wantOutcome: &payment.Outcome{ID: "re_1", Amount: 500, Currency: "eur"},
		},

		// Not refunded: definitive.
		{
			name: "200 failed without a reason", status: 200, body: `{"id":"re_1","status":"failed"}`,
			wantClass: payment.ErrDeclined, wantRefusal: true, wantReason: payment.ReasonRefundFailed,
			wantMessage: `reported the refund as "failed"`,
		},
		{
			name: "200 rejected with a reason", status: 200, body: `{"id":"re_1","status":"rejected","reason":"ChargeNotRefundable","message":"disputed"}`,
			wantClass: payment.ErrDeclined, wantRefusal: true, wantReason: payment.ReasonChargeNotRefundable,
			wantMessage: `reported the refund as "rejected": disputed`,
		},
		{
			name: "200 cancelled", status: 200, body: `{"id":"re_1","status":"cancelled"}`,
			wantClass: payment.ErrDeclined, wantRefusal: true, wantReason: payment.ReasonRefundFailed, wantMessage: `"cancelled"`,
		},
		{
			name: "402 beyond the charge", status: 402, body: `{"reason":"RefundExceedsCharge","message":"only 300 left"}`,
			wantClass: payment.ErrDeclined, wantRefusal: true, wantReason: payment.ReasonRefundExceedsCharge, wantMessage: "only 300 left",
		},
		{
			name: "402 of an unknown charge", status: 402, body: `{"reason":"ChargeNotFound","message":"no charge ch_1"}`,
			wantClass: payment.ErrDeclined, wantRefusal: true, wantReason: payment.ReasonChargeNotFound, wantMessage: "no charge ch_1",
		},
		{
			name: "402 without a body", status: 402,
			wantClass: payment.ErrDeclined, wantRefusal: true, wantReason: payment.ReasonRefundFailed, wantMessage: "402 Payment Required",
		},
		{
			name: "400 with a reason", status: 400, body: `{"reason":"ChargeNotRefundable","message":"the charge is not settled"}`,
			wantClass: payment.ErrInvalid, wantRefusal: true, wantReason: payment.ReasonChargeNotRefundable, wantMessage: "the charge is not settled",
		},
		{
			name: "400 beyond the charge: the reason names it, as a 402's", status: 400, body: `{"reason":"RefundExceedsCharge","message":"only 300 left"}`,
			wantClass: payment.ErrInvalid, wantRefusal: true, wantReason: payment.ReasonRefundExceedsCharge, wantMessage: "only 300 left",
		},
		{
			name: "402 beyond the charge without a reason: the message is not read", status: 402, body: `{"message":"amount is greater than what is left"}`,
			wantClass: payment.ErrDeclined, wantRefusal: true, wantReason: payment.ReasonRefundFailed, wantMessage: "amount is greater than what is left",
		},
		{
			name: "400 without a reason", status: 400, body: `{"message":"amount must be positive"}`,
			wantClass: payment.ErrInvalid, wantRefusal: true, wantReason: payment.ReasonInvalidRequest, wantMessage: "amount must be positive",
		},
		{
			name: "400 with a reason that is not a condition reason keeps it in the message", status: 400, body: `{"reason":"bad-charge","message":"no"}`,
			wantClass: payment.ErrInvalid, wantRefusal: true, wantReason: payment.ReasonInvalidRequest, wantMessage: "bad-charge: no",
		},
		{
			name: "422 is a reused key", status: 422, body: `{"message":"key used for another refund"}`,
			wantClass: payment.ErrKeyReused, wantRefusal: true, wantReason: payment.ReasonKeyReused, wantMessage: "key used for another refund",
		},

		// Not final, or not known: uncertain.
		{
			name: "200 pending is in flight", status: 200, header: map[string]string{"Retry-After": "5"}, body: `{"id":"re_1","status":"pending"}`,
			wantClass: payment.ErrInFlight, wantRetryAfter: 5 * time.Second, wantMessage: `reported the refund as "pending"`,
		},
		{name: "200 processing is accepted, settling later", status: 200, body: `{"id":"re_1","status":"processing"}`,
			wantSettling: &payment.SettlingError{ID: "re_1", Status: "processing"}},
		{name: "202 without a status is in flight", status: 202, body: `{"id":"re_1"}`, wantClass: payment.ErrInFlight, wantMessage: "accepted the refund without a status"},
		{name: "200 with an unknown status", status: 200, body: `{"id":"re_1","status":"reversed"}`, wantMessage: `refund with the unknown status "reversed"`},
		{name: "200 without an id", status: 200, body: `{"status":"succeeded"}`, wantMessage: "without a refund id, so the refund may have happened"},
		{name: "200 with a malformed created", status: 200, body: `{"id":"re_1","created":"yesterday"}`, wantMessage: "malformed refund"},
		{name: "409 is in flight", status: 409, header: map[string]string{"Retry-After": "3"}, wantClass: payment.ErrInFlight, wantRetryAfter: 3 * time.Second},
		{name: "429", status: 429, header: map[string]string{"Retry-After": "7"}, wantRetryAfter: 7 * time.Second, wantMessage: "429 Too Many Requests"},
		{name: "503", status: 503, body: `{"message":"down"}`, wantMessage: "503 Service Unavailable; the service said: down"},
		{name: "401", status: 401, wantMessage: "401 Unauthorized: check the PaymentProvider's secret (spec.http.secretKeyRef)"},
		{name: "403", status: 403, wantMessage: "may create refunds"},
		{name: "404", status: 404, wantMessage: "404 Not Found: check the PaymentProvider's refund url (spec.http.refundURL)"},
		{name: "308, a redirect", status: 308, wantMessage: "set the PaymentProvider's refund url (spec.http.refundURL) to the refund endpoint itself"},
	}
	runAnswers(t, refundCall, tests)
}

func TestRefundSendsNothingItCannotSend(t *testing.T) {
	t.Run("without a refund url", func(t *testing.T) {
		g := NewWithT(t)
		srv, requests := newServer(t, answer(http.StatusOK, nil, `{"id":"re_1"}`))
		p := newProvider(t, httpprovider.Config{URL: srv.URL + chargePath, LookupURL: srv.URL + lookupPath})

		_, err := p.(payment.Refunder).Refund(context.Background(), testRefundKey, testRefund)

		expectTransient(g, err)
		g.Expect(err.Error()).To(ContainSubstring("refunds need spec.http.refundURL"))
		g.Expect(requests).To(BeEmpty())
	})

	for name, key := range map[string]string{"empty key": "", "key with a space": "a b", "key with a newline": "a\nb"} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			srv, requests := newServer(t, answer(http.StatusOK, nil, `{"id":"re_1"}`))
			p := newRefunder(t, srv.URL, httpprovider.Config{})

			_, err := p.Refund(context.Background(), key, testRefund)

			g.Expect(err).To(MatchError(payment.ErrInvalid))
			g.Expect(requests).To(BeEmpty())
		})
	}
}

func TestNewValidatesTheRefundURL(t *testing.T) {
	tests := map[string]string{
		"ftp refund url":              "ftp://p.example/refunds",
		"relative refund url":         "/refunds",
		"refund url with credentials": "https://u:" + testToken + "@p.example/refunds",
	}
	for name, refundURL := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			p, err := httpprovider.New(httpprovider.Config{URL: "https://p.example/charges", RefundURL: refundURL})
			g.Expect(err).To(MatchError(ContainSubstring("cannot use the payment service refund url")))
			g.Expect(err.Error()).NotTo(ContainSubstring(testToken))
			g.Expect(p).To(BeNil())
		})
	}
	t.Run("a lookup url with a charge parameter", func(t *testing.T) {
		g := NewWithT(t)
		_, err := httpprovider.New(httpprovider.Config{URL: "https://p.example/charges", LookupURL: "https://p.example/lookup?charge=x"})
		g.Expect(err).To(MatchError(ContainSubstring(`must not have a "charge" parameter`)))
	})
}
