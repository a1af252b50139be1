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
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/stripe/stripe-go/v85"

	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// refundForm is a refund request of amount of the intent, changed by the
// edits.
func refundForm(intentID, amount string, edits ...func(url.Values)) string {
	form := url.Values{
		"payment_intent":  {intentID},
		"amount":          {amount},
		"reason":          {"requested_by_customer"},
		"metadata[order]": {"42"},
	}
	for _, edit := range edits {
		edit(form)
	}
	return form.Encode()
}

// postRefund posts a refund form under the key.
func postRefund(g *WithT, srv *httptest.Server, key, form string) apiResponse {
	return send(g, srv, apiRequest{method: http.MethodPost, path: "/v1/refunds", body: form, idempotencyKey: key})
}

// chargedOver returns the ID of a PaymentIntent of amount charged through
// the server.
func chargedOver(g *WithT, srv *httptest.Server, key, amount string) string {
	res := createIntent(g, srv, key, paymentForm(amount, sandbox.PaymentMethodVisa))
	g.ExpectWithOffset(1, res.status).To(Equal(http.StatusOK), string(res.body))
	return res.intentOf(g)["id"].(string)
}

// listOf decodes a list body into its refund IDs and has_more.
func listOf(g *WithT, res apiResponse) ([]string, bool) {
	var body struct {
		Object  string `json:"object"`
		URL     string `json:"url"`
		HasMore bool   `json:"has_more"`
		Data    []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	g.ExpectWithOffset(1, res.status).To(Equal(http.StatusOK), string(res.body))
	g.ExpectWithOffset(1, json.Unmarshal(res.body, &body)).To(Succeed())
	g.ExpectWithOffset(1, body.Object).To(Equal("list"))
	g.ExpectWithOffset(1, body.URL).To(Equal("/v1/refunds"))
	ids := make([]string, 0, len(body.Data))
	for _, d := range body.Data {
		ids = append(ids, d.ID)
	}
	return ids, body.HasMore
}

func TestServerCreatesAndReadsRefunds(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now))
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	pi := chargedOver(g, srv, "ns/order-42", "2000")
	ch := "ch_" + strings.TrimPrefix(pi, "pi_")

	first := postRefund(g, srv, "ns.refund/r1", refundForm(pi, "500"))
	g.Expect(first.status).To(Equal(http.StatusOK), string(first.body))
	g.Expect(first.header.Values("Idempotent-Replayed")).To(BeEmpty())
	id := first.intentOf(g)["id"].(string)
	g.Expect(id).To(MatchRegexp(`^re_[0-9A-Za-z]{24}$`))
	g.Expect(first.body).To(MatchJSON(fmt.Sprintf(`{"id": %q, "object": "refund", "amount": 500, "charge": %q,
		"created": %d, "currency": "eur", "metadata": {"order": "42"}, "payment_intent": %q,
		"reason": "requested_by_customer", "status": "succeeded"}`, id, ch, clock.Now().Unix(), pi)))

	replay := postRefund(g, srv, "ns.refund/r1", refundForm(pi, "500"))
	g.Expect(replay.status).To(Equal(http.StatusOK))
	g.Expect(replay.header.Get("Idempotent-Replayed")).To(Equal("true"))
	g.Expect(replay.body).To(MatchJSON(first.body))

	got := send(g, srv, apiRequest{method: http.MethodGet, path: "/v1/refunds/" + id})
	g.Expect(got.status).To(Equal(http.StatusOK))
	g.Expect(got.body).To(MatchJSON(first.body))
	missing := send(g, srv, apiRequest{method: http.MethodGet, path: "/v1/refunds/re_missing"})
	g.Expect(missing.status).To(Equal(http.StatusNotFound))
	g.Expect(missing.errorOf(g).Code).To(Equal(sandbox.CodeResourceMissing))

	// The charge shows what was refunded of it.
	intent := send(g, srv, apiRequest{method: http.MethodGet, path: "/v1/payment_intents/" + pi + "?expand[]=latest_charge"})
	g.Expect(intent.intentOf(g)["latest_charge"]).To(And(
		HaveKeyWithValue("id", ch), HaveKeyWithValue("amount_refunded", BeEquivalentTo(500)),
		HaveKeyWithValue("refunded", false)))

	// No key: a new refund each time, the rest of the charge by default.
	rest := postRefund(g, srv, "", url.Values{"payment_intent": {pi}}.Encode())
	g.Expect(rest.status).To(Equal(http.StatusOK), string(rest.body))
	g.Expect(rest.intentOf(g)).To(HaveKeyWithValue("amount", BeEquivalentTo(1500)))
	g.Expect(rest.intentOf(g)).To(HaveKeyWithValue("reason", BeNil()))
	intent = send(g, srv, apiRequest{method: http.MethodGet, path: "/v1/payment_intents/" + pi + "?expand[0]=latest_charge"})
	g.Expect(intent.intentOf(g)["latest_charge"]).To(HaveKeyWithValue("refunded", true))
	g.Expect(intent.intentOf(g)).To(HaveKeyWithValue("status", "succeeded"))
}

func TestServerRefusesRefunds(t *testing.T) {
	t.Parallel()
	e := sandbox.NewEngine()
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	g := NewWithT(t)
	pi := chargedOver(g, srv, "charge", "1000")
	full := chargedOver(g, srv, "full", "1000")
	g.Expect(postRefund(g, srv, "full refund", refundForm(full, "1000")).status).To(Equal(http.StatusOK))
	waiting := e.PutIntent(sandbox.Intent{Amount: 1000, Currency: "eur", Status: sandbox.StatusProcessing})

	tests := []struct {
		name       string
		form       string
		wantStatus int
		wantType   string
		wantCode   string
		wantParam  string
	}{
		{name: "no payment_intent", form: refundForm(pi, "100", func(f url.Values) { f.Del("payment_intent") }),
			wantStatus: http.StatusBadRequest, wantCode: sandbox.CodeParameterMissing, wantParam: "payment_intent"},
		{name: "a charge instead", form: url.Values{"charge": {"ch_1"}}.Encode(),
			wantStatus: http.StatusBadRequest, wantCode: sandbox.CodeParameterInvalid, wantParam: "charge"},
		{name: "unknown payment_intent", form: refundForm("pi_missing", "100"),
			wantStatus: http.StatusNotFound, wantCode: sandbox.CodeResourceMissing, wantParam: "payment_intent"},
		{name: "unknown reason", form: refundForm(pi, "100", func(f url.Values) { f.Set("reason", "other") }),
			wantStatus: http.StatusBadRequest, wantCode: sandbox.CodeParameterInvalid, wantParam: "reason"},
		{name: "zero amount", form: refundForm(pi, "0"),
			wantStatus: http.StatusBadRequest, wantCode: sandbox.CodeParameterInvalidInteger, wantParam: "amount"},
		{name: "negative amount", form: refundForm(pi, "-5"),
			wantStatus: http.StatusBadRequest, wantCode: sandbox.CodeParameterInvalidInteger, wantParam: "amount"},
		{name: "amount not a number", form: refundForm(pi, "ten"),
			wantStatus: http.StatusBadRequest, wantCode: sandbox.CodeParameterInvalidInteger, wantParam: "amount"},
		{name: "more than the charge", form: refundForm(pi, "1001"),
			wantStatus: http.StatusBadRequest, wantCode: sandbox.CodeAmountTooLarge, wantParam: "amount"},
		{name: "nothing left", form: refundForm(full, "1"),
			wantStatus: http.StatusBadRequest, wantCode: sandbox.CodeChargeAlreadyRefunded},
		{name: "not succeeded", form: refundForm(waiting.ID, "100"),
			wantStatus: http.StatusBadRequest, wantParam: "payment_intent"},
		{name: "key of a payment intent", form: refundForm(pi, "100"),
			wantStatus: http.StatusBadRequest, wantType: sandbox.ErrorTypeIdempotency},
		{name: "key of a refund with other params", form: refundForm(full, "999"),
			wantStatus: http.StatusBadRequest, wantType: sandbox.ErrorTypeIdempotency},
	}
	keys := map[string]string{"key of a payment intent": "charge", "key of a refund with other params": "full refund"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			key := keys[tt.name]
			if key == "" {
				key = "refund/" + tt.name
			}
			res := postRefund(g, srv, key, tt.form)
			g.Expect(res.status).To(Equal(tt.wantStatus), string(res.body))
			got := res.errorOf(g)
			g.Expect(got.Type).To(Equal(cmp.Or(tt.wantType, sandbox.ErrorTypeInvalidRequest)))
			g.Expect(got.Code).To(Equal(tt.wantCode))
			g.Expect(got.Param).To(Equal(tt.wantParam))
		})
	}
	g.Expect(e.Refunded(pi)).To(BeZero())
	g.Expect(e.Refunded(full)).To(BeEquivalentTo(1000))
}

func TestServerListsRefundsAPageAtATime(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	a := chargedOver(g, srv, "a", "1000")
	b := chargedOver(g, srv, "b", "1000")
	var made []string // newest first
	for i := range 5 {
		res := postRefund(g, srv, fmt.Sprintf("r%d", i), refundForm(a, "100"))
		made = append([]string{res.intentOf(g)["id"].(string)}, made...)
	}
	other := postRefund(g, srv, "other", refundForm(b, "100")).intentOf(g)["id"].(string)
	list := func(query string) apiResponse {
		return send(g, srv, apiRequest{method: http.MethodGet, path: "/v1/refunds?" + query})
	}

	ids, more := listOf(g, list("payment_intent="+a+"&limit=2"))
	g.Expect(ids).To(Equal(made[:2]))
	g.Expect(more).To(BeTrue())
	ids, more = listOf(g, list("payment_intent="+a+"&limit=2&starting_after="+made[1]))
	g.Expect(ids).To(Equal(made[2:4]))
	g.Expect(more).To(BeTrue())
	ids, more = listOf(g, list("payment_intent="+a+"&limit=2&starting_after="+made[3]))
	g.Expect(ids).To(Equal(made[4:]))
	g.Expect(more).To(BeFalse())
	ids, more = listOf(g, list("payment_intent="+a+"&limit=2&ending_before="+made[4]))
	g.Expect(ids).To(Equal(made[2:4]))
	g.Expect(more).To(BeTrue())
	ids, more = listOf(g, list("payment_intent="+a+"&ending_before="+made[2]))
	g.Expect(ids).To(Equal(made[:2]))
	g.Expect(more).To(BeFalse())
	ids, _ = listOf(g, list(""))
	g.Expect(ids).To(Equal(append([]string{other}, made...)))
	ids, _ = listOf(g, list("payment_intent="+b))
	g.Expect(ids).To(Equal([]string{other}))

	for query, wantStatus := range map[string]int{
		"limit=0":   http.StatusBadRequest,
		"limit=101": http.StatusBadRequest,
		// A cursor that is not in the list is a bad parameter.
		"starting_after=re_missing":                               http.StatusBadRequest,
		"payment_intent=" + b + "&starting_after=" + made[0]:      http.StatusBadRequest,
		"payment_intent=pi_missing":                               http.StatusNotFound,
		"starting_after=" + made[0] + "&ending_before=" + made[1]: http.StatusBadRequest,
	} {
		res := list(query)
		g.Expect(res.status).To(Equal(wantStatus), query)
		g.Expect(res.errorOf(g).Type).To(Equal(sandbox.ErrorTypeInvalidRequest), query)
	}
	g.Expect(send(g, srv, apiRequest{method: http.MethodGet, path: "/v1/refunds", authorization: noAuth}).status).
		To(Equal(http.StatusUnauthorized))
}

func TestStripeGoRefunds(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	e := sandbox.NewEngine()
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	sc := newStripeClient(srv)
	pi, err := sc.V1PaymentIntents.Create(ctx, stripeParams("charge", 1200, sandbox.PaymentMethodVisa, nil))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pi.LatestCharge.ID).To(Equal("ch_" + strings.TrimPrefix(pi.ID, "pi_")))

	params := func(key string, amount int64) *stripe.RefundCreateParams {
		p := &stripe.RefundCreateParams{PaymentIntent: stripe.String(pi.ID), Amount: stripe.Int64(amount),
			Reason: stripe.String(string(stripe.RefundReasonDuplicate)), Metadata: map[string]string{"order": "42"}}
		p.SetIdempotencyKey(key)
		return p
	}
	refund, err := sc.V1Refunds.Create(ctx, params("r0", 100))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refund.Status).To(Equal(stripe.RefundStatusSucceeded))
	g.Expect(refund.Amount).To(BeEquivalentTo(100))
	g.Expect(refund.PaymentIntent.ID).To(Equal(pi.ID))
	g.Expect(refund.Charge.ID).To(Equal(pi.LatestCharge.ID))
	g.Expect(refund.Reason).To(Equal(stripe.RefundReasonDuplicate))
	replay, err := sc.V1Refunds.Create(ctx, params("r0", 100))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replay.ID).To(Equal(refund.ID))
	g.Expect(replay.LastResponse.Header.Get("Idempotent-Replayed")).To(Equal("true"))
	for i := 1; i < 12; i++ {
		_, err = sc.V1Refunds.Create(ctx, params(fmt.Sprintf("r%d", i), 100))
		g.Expect(err).NotTo(HaveOccurred())
	}
	_, err = sc.V1Refunds.Create(ctx, params("r12", 100))
	se := asStripeError(g, err)
	g.Expect(se.Code).To(Equal(stripe.ErrorCodeChargeAlreadyRefunded))

	// stripe-go pages with starting_after through every refund.
	list := &stripe.RefundListParams{PaymentIntent: stripe.String(pi.ID)}
	list.Limit = stripe.Int64(5)
	var total int64
	var n int
	for r, err := range sc.V1Refunds.List(ctx, list).All(ctx) {
		g.Expect(err).NotTo(HaveOccurred())
		total += r.Amount
		n++
	}
	g.Expect(n).To(Equal(12))
	g.Expect(total).To(BeEquivalentTo(1200))

	got, err := sc.V1Refunds.Retrieve(ctx, refund.ID, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.ID).To(Equal(refund.ID))
	retrieve := &stripe.PaymentIntentRetrieveParams{}
	retrieve.AddExpand("latest_charge")
	paid, err := sc.V1PaymentIntents.Retrieve(ctx, pi.ID, retrieve)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(paid.LatestCharge.AmountRefunded).To(BeEquivalentTo(1200))
	g.Expect(paid.LatestCharge.Refunded).To(BeTrue())
}

func TestServerRefundFaultsAndIdempotencyOff(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	pi := chargedOver(g, srv, "charge", "1000")

	// The answer is lost after the refund; the retry replays it.
	e.FailNext(sandbox.FaultAfterCommit, 1)
	lost := postRefund(g, srv, "r", refundForm(pi, "400"))
	g.Expect(lost.status).To(Equal(http.StatusInternalServerError))
	g.Expect(e.Refunded(pi)).To(BeEquivalentTo(400))
	retry := postRefund(g, srv, "r", refundForm(pi, "400"))
	g.Expect(retry.status).To(Equal(http.StatusOK), string(retry.body))
	g.Expect(retry.header.Get("Idempotent-Replayed")).To(Equal("true"))
	g.Expect(e.ListRefunds(pi)).To(HaveLen(1))

	e.FailNextAny(sandbox.FaultRateLimit, 1)
	limited := postRefund(g, srv, "r", refundForm(pi, "400"))
	g.Expect(limited.status).To(Equal(http.StatusTooManyRequests))
	g.Expect(limited.header.Get("Retry-After")).To(Equal("1"))

	// Off, the same key refunds again, never beyond the charge.
	e.SetIdempotency(false)
	g.Expect(postRefund(g, srv, "r", refundForm(pi, "400")).status).To(Equal(http.StatusOK))
	over := postRefund(g, srv, "r", refundForm(pi, "400"))
	g.Expect(over.status).To(Equal(http.StatusBadRequest))
	g.Expect(over.errorOf(g).Code).To(Equal(sandbox.CodeAmountTooLarge))
	g.Expect(e.Stats().RefundsByKey).To(Equal(map[string]int{"r": 2}))
	g.Expect(e.Refunded(pi)).To(BeEquivalentTo(800))
}

func TestServerRefundControls(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now))
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	pi := chargedOver(g, srv, "charge", "1000")

	g.Expect(sendControl(g, srv, http.MethodGet, "/_sandbox/refunds", "").body).
		To(MatchJSON(`{"settleDelay": "0s", "amountTooLargeCode": true}`))
	put := sendControl(g, srv, http.MethodPut, "/_sandbox/refunds", `{"settleDelay": "30s"}`)
	g.Expect(put.status).To(Equal(http.StatusOK), string(put.body))
	g.Expect(put.body).To(MatchJSON(`{"settleDelay": "30s", "amountTooLargeCode": true}`))
	g.Expect(e.RefundSettleDelay()).To(Equal(30 * time.Second))
	for _, body := range []string{`{}`, `{"settleDelay": "-1s"}`, `{"settleDelay": "soon"}`, `{"delay": "1s"}`,
		`{"amountTooLargeCode": "no"}`} {
		g.Expect(sendControl(g, srv, http.MethodPut, "/_sandbox/refunds", body).status).To(Equal(http.StatusBadRequest), body)
	}
	// A field left out keeps its value.
	put = sendControl(g, srv, http.MethodPut, "/_sandbox/refunds", `{"amountTooLargeCode": false}`)
	g.Expect(put.status).To(Equal(http.StatusOK), string(put.body))
	g.Expect(put.body).To(MatchJSON(`{"settleDelay": "30s", "amountTooLargeCode": false}`))
	g.Expect(e.AmountTooLargeCode()).To(BeFalse())

	pending := postRefund(g, srv, "r1", refundForm(pi, "1000"))
	g.Expect(pending.intentOf(g)).To(HaveKeyWithValue("status", "pending"))
	id := pending.intentOf(g)["id"].(string)
	clock.Add(30 * time.Second)
	got := send(g, srv, apiRequest{method: http.MethodGet, path: "/v1/refunds/" + id})
	g.Expect(got.intentOf(g)).To(HaveKeyWithValue("status", "succeeded"))

	failed := sendControl(g, srv, http.MethodPost, "/_sandbox/refunds/"+id+"/fail", "")
	g.Expect(failed.status).To(Equal(http.StatusOK), string(failed.body))
	g.Expect(failed.intentOf(g)).To(And(HaveKeyWithValue("status", "failed"),
		HaveKeyWithValue("failure_reason", sandbox.RefundFailureUnknown)))
	g.Expect(e.Refunded(pi)).To(BeZero())
	again := sendControl(g, srv, http.MethodPost, "/_sandbox/refunds/"+id+"/fail", "")
	g.Expect(again.status).To(Equal(http.StatusBadRequest))
	g.Expect(sendControl(g, srv, http.MethodPost, "/_sandbox/refunds/re_missing/fail", "").status).
		To(Equal(http.StatusNotFound))

	second := postRefund(g, srv, "r2", refundForm(pi, "1000")).intentOf(g)["id"].(string)
	withReason := sendControl(g, srv, http.MethodPost, "/_sandbox/refunds/"+second+"/fail",
		`{"failureReason": "expired_or_canceled_card"}`)
	g.Expect(withReason.intentOf(g)).To(HaveKeyWithValue("failure_reason", "expired_or_canceled_card"))

	var stats map[string]any
	g.Expect(json.Unmarshal(sendControl(g, srv, http.MethodGet, "/_sandbox/stats", "").body, &stats)).To(Succeed())
	g.Expect(stats).To(And(HaveKeyWithValue("refundRequests", BeEquivalentTo(2)),
		HaveKeyWithValue("refunds", BeEquivalentTo(2)), HaveKeyWithValue("refundsFailed", BeEquivalentTo(2)),
		HaveKeyWithValue("refundRefusals", BeEquivalentTo(0)),
		HaveKeyWithValue("refundsByKey", Equal(map[string]any{"r1": 1.0, "r2": 1.0}))))

	// amountTooLargeCode false: a refund beyond what is left is refused
	// on its amount, with Stripe's message and without a code.
	over := postRefund(g, srv, "r3", refundForm(pi, "1001"))
	g.Expect(over.status).To(Equal(http.StatusBadRequest))
	g.Expect(string(over.body)).NotTo(ContainSubstring(`"code"`))
	g.Expect(over.errorOf(g)).To(Equal(apiError{Type: sandbox.ErrorTypeInvalidRequest, Param: "amount",
		Message: "Refund amount (1001 eur) is greater than unrefunded amount on charge (1000 eur)."}))
}
