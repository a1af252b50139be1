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

	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// contractListed is a page of GET /http/list.
type contractListed struct {
	Account string           `json:"account"`
	Data    []map[string]any `json:"data"`
	Next    string           `json:"next"`
}

// listContract sends GET /http/list with the query, without an API key.
func listContract(g *WithT, srv *httptest.Server, q url.Values) apiResponse {
	return send(g, srv, apiRequest{method: http.MethodGet, path: "/http/list?" + q.Encode(), authorization: noAuth})
}

// listContractAll pages through the contract's list of q and returns its
// objects and the number of pages.
func listContractAll(g *WithT, srv *httptest.Server, q url.Values) ([]map[string]any, int) {
	var all []map[string]any
	for pages := 1; ; pages++ {
		res := listContract(g, srv, q)
		g.ExpectWithOffset(1, res.status).To(Equal(http.StatusOK), string(res.body))
		var page contractListed
		g.ExpectWithOffset(1, json.Unmarshal(res.body, &page)).To(Succeed())
		g.ExpectWithOffset(1, page.Account).To(HavePrefix("acct_"))
		all = append(all, page.Data...)
		if page.Next == "" {
			return all, pages
		}
		q.Set("after", page.Next)
	}
}

func TestContractListsChargesAPageAtATime(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	want := putIntents(g, e, 1050)

	all, pages := listContractAll(g, srv, url.Values{"kind": {"charges"}})
	g.Expect(pages).To(Equal(11), "100 a page by default")
	got := make([]string, 0, len(all))
	for _, c := range all {
		got = append(got, c["id"].(string))
		g.Expect(c).To(HaveKeyWithValue("status", "succeeded"))
		g.Expect(c).NotTo(HaveKey("idempotencyKey"), "put without the operator's metadata")
		g.Expect(c).NotTo(HaveKey("dispute"))
		g.Expect(c).NotTo(HaveKey("charge"))
	}
	g.Expect(got).To(Equal(ids(want)))

	// The window, in Unix seconds: createdFrom inclusive, createdTo
	// exclusive; the cursor goes on after the object it names is deleted.
	from, to := listStart.Add(10*time.Second).Unix(), listStart.Add(20*time.Second).Unix()
	q := url.Values{"kind": {"charges"}, "createdFrom": {fmt.Sprint(from)}, "createdTo": {fmt.Sprint(to)}, "limit": {"7"}}
	res := listContract(g, srv, q)
	var first contractListed
	g.Expect(json.Unmarshal(res.body, &first)).To(Succeed())
	g.Expect(first.Data).To(HaveLen(7))
	g.Expect(first.Next).NotTo(BeEmpty())
	g.Expect(e.DeleteIntent(first.Data[6]["id"].(string))).To(Succeed())
	rest, pages := listContractAll(g, srv, url.Values{"kind": {"charges"}, "createdFrom": {fmt.Sprint(from)},
		"createdTo": {fmt.Sprint(to)}, "limit": {"7"}, "after": {first.Next}})
	g.Expect(pages).To(Equal(4))
	g.Expect(len(first.Data) + len(rest)).To(Equal(30))
	for _, c := range append(first.Data, rest...) {
		created := int64(c["created"].(float64))
		g.Expect(created).To(BeNumerically(">=", from))
		g.Expect(created).To(BeNumerically("<", to))
	}
}

func TestContractListsKeysRefundsAndDisputes(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now), sandbox.WithAccount("acct_list"))
	srv := startSandbox(t, e, sandbox.ServerOptions{})

	ours := contractCharged(g, srv, 5000)
	clock.Add(time.Second)
	behind := chargedOver(g, srv, "", "700")
	clock.Add(time.Second)
	dispute, err := e.OpenDispute(behind, sandbox.DisputeReasonFraudulent)
	g.Expect(err).NotTo(HaveOccurred())
	res := postContractRefund(g, srv, "ns/refund", refundJSON(g, "ns/refund", ours, 1500))
	g.Expect(res.status).To(Equal(http.StatusCreated), string(res.body))
	refund := contractBody(g, res)["id"].(string)
	clock.Add(time.Second)
	_, _, err = e.CreateRefund("other", sandbox.RefundParams{PaymentIntent: ours, Amount: 100})
	g.Expect(err).NotTo(HaveOccurred())

	res = listContract(g, srv, url.Values{"kind": {"charges"}})
	g.Expect(res.status).To(Equal(http.StatusOK))
	g.Expect(res.body).To(MatchJSON(fmt.Sprintf(`{"account": "acct_list", "data": [
		{"id": %q, "status": "succeeded", "amount": 700, "currency": "eur", "created": %d, "dispute": %q, "method": "card"},
		{"id": %q, "idempotencyKey": "ns/charge", "status": "succeeded", "amount": 5000, "currency": "eur", "created": %d, "method": "card"}
	]}`, behind, listStart.Add(time.Second).Unix(), dispute.ID, ours, listStart.Unix())))

	all, _ := listContractAll(g, srv, url.Values{"kind": {"refunds"}, "limit": {"1"}})
	g.Expect(all).To(HaveLen(2))
	g.Expect(all[1]).To(Equal(map[string]any{"id": refund, "idempotencyKey": "ns/refund", "status": "succeeded",
		"amount": 1500.0, "currency": "eur", "created": float64(listStart.Add(2 * time.Second).Unix()), "charge": ours}))
	g.Expect(all[0]).NotTo(HaveKey("idempotencyKey"))
	g.Expect(all[0]).To(HaveKeyWithValue("charge", ours))
}

func TestContractListRefusesBadParameters(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	putIntents(g, e, 3)
	res := listContract(g, srv, url.Values{"kind": {"charges"}, "limit": {"1"}})
	var page contractListed
	g.Expect(json.Unmarshal(res.body, &page)).To(Succeed())
	g.Expect(page.Next).NotTo(BeEmpty())

	for _, tt := range []struct {
		query     url.Values
		wantParam string
	}{
		{url.Values{}, "kind"},
		{url.Values{"kind": {"disputes"}}, "kind"},
		{url.Values{"kind": {"charges"}, "createdFrom": {"yesterday"}}, "createdFrom"},
		{url.Values{"kind": {"charges"}, "createdTo": {"-1"}}, "createdTo"},
		{url.Values{"kind": {"charges"}, "limit": {"0"}}, "limit"},
		{url.Values{"kind": {"charges"}, "limit": {"101"}}, "limit"},
		{url.Values{"kind": {"charges"}, "after": {"not-a-cursor"}}, "after"},
		{url.Values{"kind": {"refunds"}, "after": {page.Next}}, "after"},
	} {
		res := listContract(g, srv, tt.query)
		g.Expect(res.status).To(Equal(http.StatusBadRequest), tt.query.Encode())
		body := contractBody(g, res)
		g.Expect(body).To(HaveKeyWithValue("reason", "InvalidRequest"))
		g.Expect(body["message"]).To(ContainSubstring(tt.wantParam), tt.query.Encode())
	}
	g.Expect(send(g, srv, apiRequest{method: http.MethodPost, path: "/http/list?kind=charges", authorization: noAuth}).status).
		To(Equal(http.StatusMethodNotAllowed))
}

func TestControlRoutesSeedTheBooks(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	paid := chargedOver(g, srv, "default/order-1", "2000")

	// A charge the operator never made, put at a given second.
	res := sendControl(g, srv, http.MethodPut, "/_sandbox/intents/pi_seeded000000000000000001",
		`{"amount": 900, "currency": "usd", "created": 1772368200, "metadata": {"paymentjob_idempotency_key": "ns/ghost"}}`)
	g.Expect(res.status).To(Equal(http.StatusCreated), string(res.body))
	seeded, ok := e.GetPaymentIntent("pi_seeded000000000000000001")
	g.Expect(ok).To(BeTrue())
	g.Expect(seeded.Created.Unix()).To(BeEquivalentTo(1772368200))
	g.Expect(seeded.Status).To(Equal(sandbox.StatusSucceeded))

	// The amount changed at the provider; the rest is kept.
	res = sendControl(g, srv, http.MethodPut, "/_sandbox/intents/"+paid, `{"amount": 2500}`)
	g.Expect(res.status).To(Equal(http.StatusOK), string(res.body))
	g.Expect(res.intentOf(g)).To(HaveKeyWithValue("amount", 2500.0))
	changed, _ := e.GetPaymentIntent(paid)
	g.Expect(changed.Currency).To(Equal("eur"))
	g.Expect(changed.Metadata).To(HaveKeyWithValue("paymentjob", "default/order-42"))

	res = sendControl(g, srv, http.MethodPost, "/_sandbox/intents/"+paid+"/dispute", `{"reason": "duplicate"}`)
	g.Expect(res.status).To(Equal(http.StatusOK), string(res.body))
	dispute := contractBody(g, res)
	g.Expect(dispute).To(HaveKeyWithValue("reason", "duplicate"))
	g.Expect(dispute).To(HaveKeyWithValue("status", "needs_response"))
	g.Expect(dispute).To(HaveKeyWithValue("amount", 2500.0))
	res = sendControl(g, srv, http.MethodPost, "/_sandbox/disputes/"+dispute["id"].(string)+"/status", `{"status": "lost"}`)
	g.Expect(res.status).To(Equal(http.StatusOK), string(res.body))
	g.Expect(contractBody(g, res)).To(HaveKeyWithValue("status", "lost"))

	res = sendControl(g, srv, http.MethodPost, "/_sandbox/intents/pi_seeded000000000000000001/status", `{"status": "processing"}`)
	g.Expect(res.status).To(Equal(http.StatusOK), string(res.body))
	g.Expect(res.intentOf(g)).To(HaveKeyWithValue("status", "processing"))

	res = sendControl(g, srv, http.MethodDelete, "/_sandbox/intents/"+paid, "")
	g.Expect(res.status).To(Equal(http.StatusOK), string(res.body))
	g.Expect(res.body).To(MatchJSON(fmt.Sprintf(`{"id": %q, "object": "payment_intent", "deleted": true}`, paid)))
	listed := getList(g, srv, "/v1/payment_intents", url.Values{})
	g.Expect(listed.Data).To(HaveLen(1))
	g.Expect(listed.Data[0]).To(HaveKeyWithValue("id", "pi_seeded000000000000000001"))

	for _, tt := range []struct {
		method, path, body string
		wantStatus         int
	}{
		{http.MethodDelete, "/_sandbox/intents/" + paid, "", http.StatusNotFound},
		{http.MethodPost, "/_sandbox/intents/" + paid + "/dispute", "", http.StatusNotFound},
		{http.MethodPost, "/_sandbox/intents/" + paid + "/status", `{"status": "succeeded"}`, http.StatusNotFound},
		{http.MethodPost, "/_sandbox/disputes/dp_missing/status", `{"status": "won"}`, http.StatusNotFound},
		{http.MethodPut, "/_sandbox/intents/pi_new", `{"amount": 100}`, http.StatusBadRequest},
		{http.MethodPut, "/_sandbox/intents/ch_new", `{"amount": 100, "currency": "eur"}`, http.StatusBadRequest},
		{http.MethodPut, "/_sandbox/intents/pi_new", `{"amount": -1, "currency": "eur"}`, http.StatusBadRequest},
		{http.MethodPut, "/_sandbox/intents/pi_new", `{"amount": 1, "currency": "EUR"}`, http.StatusBadRequest},
		{http.MethodPut, "/_sandbox/intents/pi_new", `{"amount": 1, "currency": "eur", "colour": "red"}`, http.StatusBadRequest},
		{http.MethodPost, "/_sandbox/intents/pi_seeded000000000000000001/status", `{"status": "paid"}`, http.StatusBadRequest},
		{http.MethodPost, "/_sandbox/intents/pi_seeded000000000000000001/dispute", "", http.StatusBadRequest},
	} {
		res := sendControl(g, srv, tt.method, tt.path, tt.body)
		g.Expect(res.status).To(Equal(tt.wantStatus), tt.method+" "+tt.path+" "+tt.body)
		g.Expect(res.errorOf(g).Type).To(Equal(sandbox.ErrorTypeInvalidRequest))
	}
}
