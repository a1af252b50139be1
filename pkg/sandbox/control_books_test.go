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
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// TestServerAnswersTheBooks reads GET /_sandbox/books after two charges
// (one refunded twice, once through a lost answer) and decodes it into
// the Engine's own types: every intent and refund with the key it was
// created with, and the counters, as Engine.Books returns them.
func TestServerAnswersTheBooks(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now), sandbox.WithAccount("acct_books"))
	srv := startSandbox(t, e, sandbox.ServerOptions{})
	first := chargedOver(g, srv, "shop/order-1", "2000")
	clock.Add(time.Second)
	second := chargedOver(g, srv, "books/order-2", "500")
	g.Expect(postRefund(g, srv, "shop.refund/r1", refundForm(first, "700")).status).To(Equal(http.StatusOK))
	e.FailNextAny(sandbox.FaultAfterCommit, 1)
	g.Expect(postRefund(g, srv, "shop.refund/r2", refundForm(first, "300")).status).To(Equal(http.StatusInternalServerError))

	res := send(g, srv, apiRequest{method: http.MethodGet, path: "/_sandbox/books"})
	g.Expect(res.status).To(Equal(http.StatusOK), string(res.body))
	var b sandbox.Books
	g.Expect(json.Unmarshal(res.body, &b)).To(Succeed())

	g.Expect(b.Account).To(Equal("acct_books"))
	g.Expect(b.Intents).To(HaveLen(2))
	g.Expect([]string{b.Intents[0].ID, b.Intents[1].ID}).To(Equal([]string{first, second}), "oldest first")
	g.Expect(b.Intents[0].IdempotencyKey).To(Equal("shop/order-1"))
	g.Expect(b.Intents[0].Amount).To(BeEquivalentTo(2000))
	g.Expect(b.Intents[0].Status).To(Equal(sandbox.StatusSucceeded))
	g.Expect(b.Intents[1].IdempotencyKey).To(Equal("books/order-2"))
	g.Expect(b.Refunds).To(HaveLen(2), "the refund whose answer was lost is in the books")
	for i, want := range []struct {
		key    string
		amount int64
	}{{"shop.refund/r1", 700}, {"shop.refund/r2", 300}} {
		g.Expect(b.Refunds[i].IdempotencyKey).To(Equal(want.key))
		g.Expect(b.Refunds[i].Amount).To(Equal(want.amount))
		g.Expect(b.Refunds[i].PaymentIntent).To(Equal(first))
	}
	g.Expect(b.Stats.Charges).To(BeEquivalentTo(2))
	g.Expect(b.Stats.ChargesByKey).To(Equal(map[string]int{"shop/order-1": 1, "books/order-2": 1}))
	g.Expect(b.Stats.RefundsByKey).To(Equal(map[string]int{"shop.refund/r1": 1, "shop.refund/r2": 1}))
	g.Expect(b.Stats.Faults).To(BeEquivalentTo(1))
	g.Expect(b.Stats).To(Equal(e.Books().Stats), "the books count no list of their own")
}
