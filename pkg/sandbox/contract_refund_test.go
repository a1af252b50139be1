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
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// refundFingerprint is the fingerprint the contract's refunds send.
const refundFingerprint = "sha256:refund0123"

// refundJSON is a refund body of the HTTP contract, changed by the edits.
func refundJSON(g *WithT, key, charge string, amount int64, edits ...func(map[string]any)) string {
	body := map[string]any{
		"charge":         charge,
		"amount":         amount,
		"currency":       "eur",
		"reason":         "requested_by_customer",
		"metadata":       map[string]string{"paymentrefund": "default/refund-1"},
		"idempotencyKey": key,
		"fingerprint":    refundFingerprint,
	}
	for _, edit := range edits {
		edit(body)
	}
	b, err := json.Marshal(body)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return string(b)
}

// postContractRefund posts a refund body of the contract under key.
func postContractRefund(g *WithT, srv *httptest.Server, key, body string) apiResponse {
	return send(g, srv, apiRequest{method: http.MethodPost, path: "/http/refunds", body: body,
		contentType: "application/json", idempotencyKey: key, authorization: noAuth})
}

// contractCharged returns the ID of a contract charge of amount under the
// key "ns/charge".
func contractCharged(g *WithT, srv *httptest.Server, amount int64) string {
	const key = "ns/charge"
	res := postCharge(g, srv, key, chargeJSON(g, key, amount))
	g.ExpectWithOffset(1, res.status).To(Equal(http.StatusCreated), string(res.body))
	return contractBody(g, res)["id"].(string)
}

func TestContractRefundsAndReplays(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now))
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	charge := contractCharged(g, srv, 2000)
	const key = "ns.refund/r1"

	first := postContractRefund(g, srv, key, refundJSON(g, key, charge, 500))
	g.Expect(first.status).To(Equal(http.StatusCreated), string(first.body))
	id := contractBody(g, first)["id"].(string)
	g.Expect(first.body).To(MatchJSON(fmt.Sprintf(`{"id": %q, "status": "succeeded", "amount": 500,
		"currency": "eur", "created": %d, "replayed": false, "charge": %q}`, id, clock.Now().Unix(), charge)))
	refund, _ := e.GetRefund(id)
	g.Expect(refund.Metadata).To(Equal(map[string]string{"paymentrefund": "default/refund-1",
		payment.MetadataKeyIdempotencyKey: key, payment.MetadataKeyFingerprint: refundFingerprint}))

	// A retry replays; without the fingerprint, it is the same request.
	for _, body := range []string{
		refundJSON(g, key, charge, 500),
		refundJSON(g, key, charge, 500, func(b map[string]any) { delete(b, "fingerprint") }),
	} {
		replay := postContractRefund(g, srv, key, body)
		g.Expect(replay.status).To(Equal(http.StatusOK), string(replay.body))
		g.Expect(replay.header.Get("Idempotent-Replayed")).To(Equal("true"))
		g.Expect(contractBody(g, replay)).To(And(HaveKeyWithValue("id", id), HaveKeyWithValue("replayed", true)))
	}

	reused := postContractRefund(g, srv, key, refundJSON(g, key, charge, 600))
	g.Expect(reused.status).To(Equal(http.StatusUnprocessableEntity))
	g.Expect(contractBody(g, reused)).To(HaveKeyWithValue("reason", payment.ReasonKeyReused))
	// A charge's key is reused too.
	reused = postContractRefund(g, srv, "ns/charge", refundJSON(g, "ns/charge", charge, 600))
	g.Expect(reused.status).To(Equal(http.StatusUnprocessableEntity))

	for name, body := range map[string]string{
		"not JSON":        `{"charge":`,
		"no charge":       refundJSON(g, "k", "", 100),
		"no amount":       refundJSON(g, "k", charge, 0),
		"keys differ":     refundJSON(g, "other", charge, 100),
		"unknown reason":  refundJSON(g, "k", charge, 100, func(b map[string]any) { b["reason"] = "whim" }),
		"other currency":  refundJSON(g, "k", charge, 100, func(b map[string]any) { b["currency"] = "usd" }),
		"amount a string": refundJSON(g, "k", charge, 100, func(b map[string]any) { b["amount"] = "100" }),
	} {
		res := postContractRefund(g, srv, "k", body)
		g.Expect(res.status).To(Equal(http.StatusBadRequest), name)
		g.Expect(contractBody(g, res)).To(HaveKeyWithValue("reason", payment.ReasonInvalidRequest), name)
	}
	g.Expect(e.Refunded(charge)).To(BeEquivalentTo(500))
}

func TestContractRefundRefusals(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	charge := contractCharged(g, srv, 1000)
	waiting := e.PutIntent(sandbox.Intent{Amount: 1000, Currency: "eur", Status: sandbox.StatusRequiresPaymentMethod})

	tests := []struct {
		name       string
		charge     string
		amount     int64
		wantReason string
	}{
		{name: "beyond the charge", charge: charge, amount: 1001, wantReason: payment.ReasonRefundExceedsCharge},
		{name: "unknown charge", charge: "pi_missing", amount: 100, wantReason: payment.ReasonChargeNotFound},
		{name: "not succeeded", charge: waiting.ID, amount: 100, wantReason: payment.ReasonChargeNotRefundable},
	}
	for _, tt := range tests {
		key := "refund/" + tt.name
		res := postContractRefund(g, srv, key, refundJSON(g, key, tt.charge, tt.amount))
		g.Expect(res.status).To(Equal(http.StatusPaymentRequired), tt.name)
		g.Expect(contractBody(g, res)).To(And(HaveKeyWithValue("reason", tt.wantReason),
			HaveKeyWithValue("message", Not(BeEmpty()))), tt.name)
	}

	// Nothing left once the charge is refunded.
	g.Expect(postContractRefund(g, srv, "all", refundJSON(g, "all", charge, 1000)).status).To(Equal(http.StatusCreated))
	res := postContractRefund(g, srv, "one more", refundJSON(g, "one more", charge, 1))
	g.Expect(res.status).To(Equal(http.StatusPaymentRequired))
	g.Expect(contractBody(g, res)).To(HaveKeyWithValue("reason", payment.ReasonRefundExceedsCharge))
	// The refusal is saved under its key.
	res = postContractRefund(g, srv, "one more", refundJSON(g, "one more", charge, 1))
	g.Expect(res.status).To(Equal(http.StatusPaymentRequired))
	g.Expect(res.header.Get("Idempotent-Replayed")).To(Equal("true"))
}

func TestContractRefundInFlightFaultsAndOutcomes(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now))
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	charge := contractCharged(g, srv, 1000)

	// In flight: 409 with a Retry-After.
	gate := e.Hold()
	held := make(chan apiResponse, 1)
	go func() { held <- postContractRefund(g, srv, "held", refundJSON(g, "held", charge, 100)) }()
	g.Eventually(gate.Entered()).WithTimeout(timeout).Should(Receive(Equal("held")))
	busy := postContractRefund(g, srv, "held", refundJSON(g, "held", charge, 100))
	g.Expect(busy.status).To(Equal(http.StatusConflict))
	g.Expect(busy.header.Get("Retry-After")).To(Equal("1"))
	gate.Release()
	var res apiResponse
	g.Eventually(held).WithTimeout(timeout).Should(Receive(&res))
	g.Expect(res.status).To(Equal(http.StatusCreated))

	// The answer lost after the refund: the retry finds it.
	e.FailNext(sandbox.FaultAfterCommit, 1)
	lost := postContractRefund(g, srv, "lost", refundJSON(g, "lost", charge, 100))
	g.Expect(lost.status).To(Equal(http.StatusInternalServerError))
	retry := postContractRefund(g, srv, "lost", refundJSON(g, "lost", charge, 100))
	g.Expect(retry.status).To(Equal(http.StatusOK))
	g.Expect(e.Stats().RefundsByKey).To(HaveKeyWithValue("lost", 1))

	// A retry learns the outcome as it is now: pending, then succeeded or
	// failed.
	e.SetRefundSettleDelay(time.Minute)
	pending := postContractRefund(g, srv, "slow", refundJSON(g, "slow", charge, 100))
	g.Expect(contractBody(g, pending)).To(HaveKeyWithValue("status", "pending"))
	clock.Add(time.Minute)
	settled := postContractRefund(g, srv, "slow", refundJSON(g, "slow", charge, 100))
	g.Expect(contractBody(g, settled)).To(HaveKeyWithValue("status", "succeeded"))
	_, err := e.FailRefund(contractBody(g, settled)["id"].(string), "")
	g.Expect(err).NotTo(HaveOccurred())
	failed := postContractRefund(g, srv, "slow", refundJSON(g, "slow", charge, 100))
	g.Expect(failed.status).To(Equal(http.StatusOK))
	g.Expect(contractBody(g, failed)).To(HaveKeyWithValue("status", "failed"))
	g.Expect(e.Refunded(charge)).To(BeEquivalentTo(200))
}

func TestContractLookupAnswersTheRefundsOfACharge(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now), sandbox.WithAccount("acct_refunds"),
		sandbox.WithSearchLag(time.Hour))
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	charge := contractCharged(g, srv, 1000)
	ours := postContractRefund(g, srv, "ns.refund/r1", refundJSON(g, "ns.refund/r1", charge, 300))
	oursID := contractBody(g, ours)["id"].(string)
	clock.Add(time.Second)
	// Behind the operator's back: no metadata of ours.
	theirs, _, err := e.CreateRefund("dashboard", sandbox.RefundParams{PaymentIntent: charge, Amount: 200})
	g.Expect(err).NotTo(HaveOccurred())
	lookup := func(query url.Values) apiResponse {
		return send(g, srv, apiRequest{method: http.MethodGet, authorization: noAuth,
			path: "/http/charges/lookup?" + query.Encode()})
	}

	// No search lag for a charge asked by its ID.
	res := lookup(url.Values{"charge": {charge}})
	g.Expect(res.status).To(Equal(http.StatusOK), string(res.body))
	g.Expect(res.body).To(MatchJSON(fmt.Sprintf(`{"account": "acct_refunds",
		"charges": [{"idempotencyKey": "ns/charge", "id": %q, "status": "succeeded", "amount": 1000,
			"currency": "eur", "created": %d, "fingerprint": %q, "method": "card"}],
		"refunds": [
			{"idempotencyKey": "", "id": %q, "status": "succeeded", "amount": 200, "currency": "eur",
			 "created": %d, "fingerprint": "", "charge": %q},
			{"idempotencyKey": "ns.refund/r1", "id": %q, "status": "succeeded", "amount": 300, "currency": "eur",
			 "created": %d, "fingerprint": %q, "charge": %q}]}`,
		charge, clock.Now().Add(-time.Second).Unix(), contractFingerprint,
		theirs.ID, clock.Now().Unix(), charge,
		oursID, clock.Now().Add(-time.Second).Unix(), refundFingerprint, charge)))

	// With keys too: the charge is listed once.
	clock.Add(time.Hour)
	body := contractBody(g, lookup(url.Values{"charge": {charge}, "key": {"ns/charge"}}))
	g.Expect(body["charges"]).To(HaveLen(1))
	g.Expect(body["refunds"]).To(HaveLen(2))
	body = contractBody(g, lookup(url.Values{"key": {"ns/charge"}}))
	g.Expect(body["charges"]).To(HaveLen(1))
	g.Expect(body["refunds"]).To(BeEmpty())
	body = contractBody(g, lookup(url.Values{"charge": {"pi_missing"}}))
	g.Expect(body["charges"]).To(BeEmpty())
	g.Expect(body["refunds"]).To(BeEmpty())

	// A failed refund is listed as failed.
	_, err = e.FailRefund(theirs.ID, "")
	g.Expect(err).NotTo(HaveOccurred())
	body = contractBody(g, lookup(url.Values{"charge": {charge}}))
	g.Expect(body["refunds"]).To(ContainElement(And(HaveKeyWithValue("id", theirs.ID),
		HaveKeyWithValue("status", "failed"))))

	// The lookup's switch and rate limit apply.
	g.Expect(e.SetRateLimits(sandbox.RateLimits{Searches: 1})).To(Succeed())
	g.Expect(lookup(url.Values{"charge": {charge}}).status).To(Equal(http.StatusOK))
	g.Expect(lookup(url.Values{"charge": {charge}}).status).To(Equal(http.StatusTooManyRequests))
	e.SetLookupEnabled(false)
	g.Expect(lookup(url.Values{"charge": {charge}}).status).To(Equal(http.StatusNotFound))
}
