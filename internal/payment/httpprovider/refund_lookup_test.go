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

// The tests of the refunds the lookup endpoint answers: LookupRefunds and
// SettleRefund.

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/httpprovider"
)

func TestLookupRefundsReadsTheChargeAndEveryRefund(t *testing.T) {
	g := NewWithT(t)
	const otherRefundKey = "billing.refund/invoice-2026-0001-b"
	charge := `{"idempotencyKey":"billing/invoice-2026-0001","id":"ch_1","status":"succeeded","amount":1999,"currency":"eur","created":1772368200,"fingerprint":"sha256:charge"}`
	srv, requests := newServer(t, answer(http.StatusOK, nil, book(
		[]string{`{"idempotencyKey":"billing/other","id":"ch_9","status":"succeeded","amount":1,"currency":"eur"}`, charge},
		[]string{
			refundEntry(testRefundKey, "re_1", "succeeded", 500, createdEpoch),
			refundEntry(testRefundKey, "re_2", "failed", 500, createdEpoch+60),
			refundEntry(otherRefundKey, "re_3", "pending", 300, createdEpoch),
			refundEntry("", "re_4", "completed", 100, createdEpoch),
			// Another charge's refund, should the service answer one.
			refundEntry(testRefundKey, "re_9", "succeeded", 900, createdEpoch, `"charge":"ch_9"`),
		},
	)))
	p := newLooker(t, srv, httpprovider.Config{Token: testToken})

	got, err := p.LookupRefunds(context.Background(), "ch_1")
	g.Expect(err).NotTo(HaveOccurred())

	sent := drain(requests)
	g.Expect(sent).To(HaveLen(1))
	g.Expect(sent[0].method).To(Equal(http.MethodGet))
	g.Expect(sent[0].path).To(Equal(lookupPath))
	g.Expect(sent[0].query).To(HaveLen(1))
	g.Expect(sent[0].query["charge"]).To(Equal([]string{"ch_1"}))
	g.Expect(sent[0].header.Get("Authorization")).To(Equal("Bearer " + testToken))

	created := time.Unix(createdEpoch, 0).UTC()
	g.Expect(got.Charge).To(Equal(payment.Found{
		Key:         testKey,
		Outcome:     payment.Outcome{ID: "ch_1", Status: "succeeded", Amount: 1999, Currency: "eur", Created: created},
		State:       payment.StateSucceeded,
		Fingerprint: "sha256:charge",
	}))
	g.Expect(got.Complete).To(BeTrue())
	g.Expect(got.Refunded).To(Equal(int64(500+300+100)), "succeeded and pending refunds, with or without a key; not the failed one")
	g.Expect(got.Refunds).To(HaveLen(2))
	g.Expect(got.Refunds[testRefundKey]).To(Equal([]payment.Found{
		{
			Key:         testRefundKey,
			Outcome:     payment.Outcome{ID: "re_2", Status: "failed", Amount: 500, Currency: "eur", Created: created.Add(time.Minute)},
			State:       payment.StateNotCharged,
			Fingerprint: "sha256:re_2",
		},
		{
			Key:         testRefundKey,
			Outcome:     payment.Outcome{ID: "re_1", Status: "succeeded", Amount: 500, Currency: "eur", Created: created},
			State:       payment.StateSucceeded,
			Fingerprint: "sha256:re_1",
		},
	}), "newest first")
	g.Expect(got.Refunds[otherRefundKey]).To(HaveLen(1))
	g.Expect(got.Refunds[otherRefundKey][0].State).To(Equal(payment.StatePending))
}

func TestLookupRefundsOfAChargeTheAnswerDoesNotHold(t *testing.T) {
	g := NewWithT(t)
	srv, _ := newServer(t, answer(http.StatusOK, nil, `{"refunds":[]}`))
	p := newLooker(t, srv, httpprovider.Config{})

	got, err := p.LookupRefunds(context.Background(), "ch_1")

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(payment.RefundBook{
		Charge:   payment.Found{Outcome: payment.Outcome{ID: "ch_1"}},
		Refunds:  map[string][]payment.Found{},
		Complete: true,
	}))
}

func TestLookupRefundsTreatsEveryOtherAnswerAsTransient(t *testing.T) {
	tests := []answerCase{
		{name: "no refunds array", status: 200, body: noCharges, wantMessage: "the lookup endpoint does not answer refunds (charge=ch_1)"},
		{name: "refunds is not an array", status: 200, body: `{"refunds":{}}`, wantMessage: "not the expected JSON object"},
		{name: "a refund without an id", status: 200, body: book(nil, []string{`{"idempotencyKey":"k","status":"succeeded","amount":1,"currency":"eur"}`}), wantMessage: "answered a refund without an id"},
		{name: "a refund without an amount", status: 200, body: book(nil, []string{`{"idempotencyKey":"k","id":"re_1","status":"succeeded","currency":"eur"}`}), wantMessage: "refund re_1 without an amount"},
		{name: "a refund with a malformed created", status: 200, body: book(nil, []string{`{"id":"re_1","amount":1,"currency":"eur","created":"soon"}`}), wantMessage: "refund re_1 that is malformed"},
		{name: "a refund with a negative amount", status: 200, body: book(nil, []string{refundEntry(testRefundKey, "re_1", "succeeded", -500, 1)}), wantMessage: "refund re_1 with an amount that is negative"},
		{name: "refunds whose sum overflows", status: 200, body: book(nil, []string{
			refundEntry(testRefundKey, "re_1", "pending", 1<<62, 1), refundEntry(testRefundKey, "re_2", "pending", 1<<62, 1),
		}), wantMessage: "too large"},
		{name: "the charge without a currency", status: 200, body: book([]string{`{"id":"ch_1","amount":1}`}, nil), wantMessage: "answered a charge ch_1 without an amount or a currency"},
		{name: "404", status: 404, wantMessage: "check the PaymentProvider's lookup url (spec.http.lookupURL)"},
		{name: "500", status: 500, wantMessage: "lookup endpoint answered 500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			srv, _ := newServer(t, answer(tt.status, nil, tt.body))
			p := newLooker(t, srv, httpprovider.Config{Token: testToken})

			got, err := p.LookupRefunds(context.Background(), "ch_1")

			expectTransient(g, err)
			g.Expect(err.Error()).To(ContainSubstring(tt.wantMessage))
			expectNoToken(g, err)
			g.Expect(got).To(Equal(payment.RefundBook{}))
		})
	}
}

func TestRefundLookupsNeedALookupURL(t *testing.T) {
	g := NewWithT(t)
	srv, requests := newServer(t, answer(http.StatusOK, nil, book(nil, nil)))
	p := newRefunder(t, srv.URL, httpprovider.Config{})

	_, err := p.LookupRefunds(context.Background(), "ch_1")
	expectTransient(g, err)
	g.Expect(err.Error()).To(ContainSubstring("refunds need spec.http.lookupURL too"))
	_, err = p.SettleRefund(context.Background(), testRefundKey, "re_1")
	expectTransient(g, err)
	g.Expect(err.Error()).To(ContainSubstring("refunds need spec.http.lookupURL too"))
	g.Expect(requests).To(BeEmpty())
}

func TestRefundLookupsSendNothingTheyCannotAsk(t *testing.T) {
	g := NewWithT(t)
	srv, requests := newServer(t, answer(http.StatusOK, nil, book(nil, nil)))
	p := newLooker(t, srv, httpprovider.Config{})

	for _, charge := range []string{"", "ch 1", "ch_1\n"} {
		_, err := p.LookupRefunds(context.Background(), charge)
		expectTransient(g, err)
	}
	_, err := p.SettleRefund(context.Background(), testRefundKey, "")
	expectTransient(g, err)
	_, err = p.SettleRefund(context.Background(), "", "re_1")
	expectTransient(g, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = p.LookupRefunds(ctx, "ch_1")
	g.Expect(err).To(MatchError(context.Canceled))
	g.Expect(requests).To(BeEmpty())
}

func TestSettleRefundLooksTheKeyUpUntilTheRefundIsFinal(t *testing.T) {
	pending := refundEntry(testRefundKey, "re_1", "pending", 500, createdEpoch)
	// Another key's refund with the same id is not the one settled.
	impostor := refundEntry("billing.refund/other", "re_1", "succeeded", 500, createdEpoch)
	tests := map[string]struct {
		// answers are the lookup's answers, in order.
		answers []string
		// want is what the last answer must be made into.
		want answerCase
	}{
		"pending, then succeeded": {
			answers: []string{book(nil, []string{impostor, pending}), book(nil, []string{refundEntry(testRefundKey, "re_1", "succeeded", 500, createdEpoch)})},
			want: answerCase{wantOutcome: &payment.Outcome{
				ID: "re_1", Status: "succeeded", Amount: 500, Currency: "eur", Created: time.Unix(createdEpoch, 0).UTC()}},
		},
		"pending, then failed without a reason": {
			answers: []string{book(nil, []string{pending}), book(nil, []string{refundEntry(testRefundKey, "re_1", "failed", 500, createdEpoch)})},
			want: answerCase{wantClass: payment.ErrDeclined, wantRefusal: true, wantReason: payment.ReasonRefundFailed,
				wantMessage: `payment service reported refund re_1 as "failed"`},
		},
		"canceled with a reason": {
			answers: []string{book(nil, []string{refundEntry(testRefundKey, "re_1", "canceled", 500, 1, `"reason":"ChargeNotRefundable"`)})},
			want:    answerCase{wantClass: payment.ErrDeclined, wantRefusal: true, wantReason: payment.ReasonChargeNotRefundable, wantMessage: `"canceled"`},
		},
		"only another key's refund with the id": {
			answers: []string{book(nil, []string{impostor})},
			want:    answerCase{wantMessage: "holds no refund with this id under the key"},
		},
		"an answer without refunds": {
			answers: []string{noCharges},
			want:    answerCase{wantMessage: "cannot settle refund re_1: the lookup endpoint does not answer refunds under the asked key"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			s := settleAgainst(t, tt.answers, func(ctx context.Context, p *httpprovider.LookupProvider) (payment.Outcome, error) {
				return p.SettleRefund(ctx, testRefundKey, "re_1")
			})

			tt.want.check(g, s.got, s.err)
			g.Expect(s.sent).To(HaveLen(len(tt.answers)))
			for _, r := range s.sent {
				g.Expect(r.method).To(Equal(http.MethodGet), "settling never refunds")
				g.Expect(r.query).To(Equal(url.Values{"key": {testRefundKey}}))
			}
		})
	}

	t.Run("still pending when the context ends", func(t *testing.T) {
		g := NewWithT(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		srv, _ := newServer(t, answer(http.StatusOK, nil, book(nil, []string{pending})))
		client := &http.Client{Transport: cancelAfterAnswer{next: srv.Client().Transport, cancel: cancel}}
		p := newLooker(t, srv, httpprovider.Config{HTTPClient: client, PollInterval: time.Hour})

		_, err := p.SettleRefund(ctx, testRefundKey, "re_1")

		g.Expect(err).To(MatchError(context.Canceled))
		g.Expect(err).To(MatchError(payment.ErrInFlight))
		g.Expect(err.Error()).To(ContainSubstring(`refund re_1 is still "pending"`))
	})
}
