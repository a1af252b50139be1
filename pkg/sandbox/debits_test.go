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

package sandbox_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/stripe/stripe-go/v85"

	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// settleDelay is the debit settle delay of these tests.
const settleDelay = 200 * time.Millisecond

func TestDebitSettlesOrFailsAfterTheDelayOnBothSurfaces(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		method      string
		methodType  string
		wantStatus  string
		wantFailure string
	}{
		{name: "sepa settles", method: sandbox.PaymentMethodSEPADebit, methodType: "sepa_debit",
			wantStatus: sandbox.StatusSucceeded},
		{name: "sepa insufficient funds", method: sandbox.PaymentMethodSEPADebitInsufficientFunds, methodType: "sepa_debit",
			wantStatus: sandbox.StatusRequiresPaymentMethod, wantFailure: "insufficient_funds"},
		{name: "sepa failed", method: sandbox.PaymentMethodSEPADebitFailed, methodType: "sepa_debit",
			wantStatus: sandbox.StatusRequiresPaymentMethod, wantFailure: "generic_decline"},
		{name: "ach settles", method: sandbox.PaymentMethodACHDebit, methodType: "us_bank_account",
			wantStatus: sandbox.StatusSucceeded},
		{name: "ach insufficient funds", method: sandbox.PaymentMethodACHDebitInsufficientFunds, methodType: "us_bank_account",
			wantStatus: sandbox.StatusRequiresPaymentMethod, wantFailure: "insufficient_funds"},
		{name: "ach account closed", method: sandbox.PaymentMethodACHDebitAccountClosed, methodType: "us_bank_account",
			wantStatus: sandbox.StatusRequiresPaymentMethod, wantFailure: "account_closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			ctx := context.Background()
			e := sandbox.NewEngine(sandbox.WithDebitSettleDelay(settleDelay))
			srv := startSandbox(t, e, sandbox.ServerOptions{})
			sc := newStripeClient(srv)

			// Stripe's surface: processing, with its method, until the delay passed.
			pi, err := sc.V1PaymentIntents.Create(ctx, stripeParams("stripe/"+tt.name, 1000, tt.method, nil))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pi.Status).To(Equal(stripe.PaymentIntentStatusProcessing))
			g.Expect(pi.PaymentMethodTypes).To(Equal([]string{tt.methodType}))
			g.Expect(pi.LatestCharge).To(BeNil())

			// The HTTP contract's surface: the same.
			res := postCharge(g, srv, "http/"+tt.name, chargeJSON(g, "http/"+tt.name, 1000,
				func(b map[string]any) { b["paymentMethod"] = tt.method }))
			g.Expect(res.status).To(Equal(http.StatusCreated), string(res.body))
			charge := contractBody(g, res)
			g.Expect(charge).To(And(HaveKeyWithValue("status", "processing"), HaveKeyWithValue("method", tt.methodType)))
			lookup := func() map[string]any {
				res := send(g, srv, apiRequest{method: http.MethodGet, authorization: noAuth,
					path: "/http/charges/lookup?" + url.Values{"charge": {charge["id"].(string)}}.Encode()})
				g.Expect(res.status).To(Equal(http.StatusOK), string(res.body))
				return contractBody(g, res)["charges"].([]any)[0].(map[string]any)
			}
			g.Expect(lookup()).To(HaveKeyWithValue("status", "processing"))
			list := send(g, srv, apiRequest{method: http.MethodGet, authorization: noAuth, path: "/http/list?kind=charges"})
			g.Expect(list.status).To(Equal(http.StatusOK), string(list.body))
			g.Expect(contractBody(g, list)["data"]).To(ContainElement(And(HaveKeyWithValue("id", charge["id"]),
				HaveKeyWithValue("status", "processing"), HaveKeyWithValue("method", tt.methodType))))
			again, err := sc.V1PaymentIntents.Retrieve(ctx, pi.ID, nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(again.Status).To(Equal(stripe.PaymentIntentStatusProcessing))

			// Then the bank decides.
			g.Eventually(func() stripe.PaymentIntentStatus {
				got, err := sc.V1PaymentIntents.Retrieve(ctx, pi.ID, nil)
				g.Expect(err).NotTo(HaveOccurred())
				again = got
				return got.Status
			}).WithTimeout(timeout).Should(Equal(stripe.PaymentIntentStatus(tt.wantStatus)))
			wantContract := contractStatusOf(tt.wantStatus)
			g.Eventually(lookup).WithTimeout(timeout).Should(
				And(HaveKeyWithValue("status", wantContract), HaveKeyWithValue("method", tt.methodType)))
			if tt.wantFailure == "" {
				g.Expect(again.LastPaymentError).To(BeZero())
				g.Expect(again.AmountReceived).To(BeEquivalentTo(1000))
				return
			}
			g.Expect(again.LastPaymentError).To(HaveField("Code", stripe.ErrorCode(tt.wantFailure)))
			g.Expect(lookup()).To(HaveKeyWithValue("reason", tt.wantFailure))
			stats := contractBody(g, send(g, srv, apiRequest{method: http.MethodGet, path: "/_sandbox/stats", authorization: noAuth}))
			g.Expect(stats).To(And(HaveKeyWithValue("debits", BeEquivalentTo(2)), HaveKeyWithValue("debitsFailed", BeEquivalentTo(2)),
				HaveKeyWithValue("debitsSettled", BeEquivalentTo(0)), HaveKeyWithValue("charges", BeEquivalentTo(2))))
		})
	}
}

// contractStatusOf is a final PaymentIntent status in the contract's words.
func contractStatusOf(status string) string {
	if status == sandbox.StatusRequiresPaymentMethod {
		return "failed"
	}
	return status
}

func TestDebitIsDecidedOnlyAfterTheDelayByTheEngineClock(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	e := sandbox.NewEngine(sandbox.WithClock(func() time.Time { return now }), sandbox.WithDebitSettleDelay(time.Hour))
	in, _, err := e.CreatePaymentIntent("k", sandbox.PaymentIntentParams{Amount: 500, Currency: "eur",
		PaymentMethod: sandbox.PaymentMethodSEPADebit})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(in.Status).To(Equal(sandbox.StatusProcessing))
	g.Expect(in.PaymentMethodType).To(Equal(sandbox.MethodTypeSEPADebit))

	now = now.Add(59 * time.Minute)
	got, _ := e.GetPaymentIntent(in.ID)
	g.Expect(got.Status).To(Equal(sandbox.StatusProcessing))
	now = now.Add(time.Minute)
	got, _ = e.GetPaymentIntent(in.ID)
	g.Expect(got.Status).To(Equal(sandbox.StatusSucceeded))
	g.Expect(e.Stats().DebitsSettled).To(BeEquivalentTo(1))
	g.Expect(e.Stats().ChargesByKey).To(HaveKeyWithValue("k", 1))
}

func TestRefundOfProcessingDebitIsRefusedThenAllowed(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	e := sandbox.NewEngine(sandbox.WithDebitSettleDelay(settleDelay))
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	sc := newStripeClient(srv)
	pi, err := sc.V1PaymentIntents.Create(ctx, stripeParams("debit", 1000, sandbox.PaymentMethodSEPADebit, nil))
	g.Expect(err).NotTo(HaveOccurred())

	// Stripe's surface: an invalid_request_error that says the charge is pending.
	refund := &stripe.RefundCreateParams{PaymentIntent: stripe.String(pi.ID), Amount: stripe.Int64(300)}
	refund.SetIdempotencyKey("refund/stripe")
	_, err = sc.V1Refunds.Create(ctx, refund)
	var se *stripe.Error
	g.Expect(errors.As(err, &se)).To(BeTrue(), "%v", err)
	g.Expect(se.HTTPStatusCode).To(Equal(http.StatusBadRequest))
	g.Expect(se.Type).To(Equal(stripe.ErrorTypeInvalidRequest))
	g.Expect(se.Msg).To(And(ContainSubstring("pending"), ContainSubstring("has not succeeded")))

	// The HTTP contract's: a 409 ChargePending.
	res := postContractRefund(g, srv, "refund/http", refundJSON(g, "refund/http", pi.ID, 200))
	g.Expect(res.status).To(Equal(http.StatusConflict), string(res.body))
	g.Expect(contractBody(g, res)).To(HaveKeyWithValue("reason", sandbox.ReasonChargePending))
	g.Expect(e.Refunded(pi.ID)).To(BeZero())

	// Once settled, the same keys refund.
	g.Eventually(func() string {
		in, _ := e.GetPaymentIntent(pi.ID)
		return in.Status
	}).WithTimeout(timeout).Should(Equal(sandbox.StatusSucceeded))
	r, err := sc.V1Refunds.Create(ctx, refund)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Status).To(Equal(stripe.RefundStatusSucceeded))
	res = postContractRefund(g, srv, "refund/http", refundJSON(g, "refund/http", pi.ID, 200))
	g.Expect(res.status).To(Equal(http.StatusCreated), string(res.body))
	g.Expect(e.Refunded(pi.ID)).To(BeEquivalentTo(500))
}

func TestDebitControlSetsTheSettleDelay(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	control := func(method, body string) apiResponse {
		return send(g, srv, apiRequest{method: method, path: "/_sandbox/debits", body: body,
			contentType: "application/json", authorization: noAuth})
	}
	g.Expect(control(http.MethodGet, "").body).To(MatchJSON(`{"settleDelay": "5s"}`))
	res := control(http.MethodPut, `{"settleDelay": "200ms"}`)
	g.Expect(res.status).To(Equal(http.StatusOK), string(res.body))
	g.Expect(res.body).To(MatchJSON(`{"settleDelay": "200ms"}`))
	g.Expect(e.DebitSettleDelay()).To(Equal(200 * time.Millisecond))
	for _, bad := range []string{`{"settleDelay": "-1s"}`, `{"settleDelay": "soon"}`, `{"delay": "1s"}`} {
		g.Expect(control(http.MethodPut, bad).status).To(Equal(http.StatusBadRequest), bad)
	}
	g.Expect(e.DebitSettleDelay()).To(Equal(200 * time.Millisecond))
}
