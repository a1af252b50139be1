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

package stripe_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/stripe"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// sandboxLister serves a new Engine's Stripe routes on a loopback server
// closed with the test, and returns the adapter talking to them.
func sandboxLister(t *testing.T) (*sandbox.Engine, *stripe.Provider) {
	t.Helper()
	e := sandbox.NewEngine()
	srv := httptest.NewServer(sandbox.NewServer(e, sandbox.ServerOptions{}))
	t.Cleanup(srv.Close)
	p, err := stripe.New(stripe.Config{APIKey: "sk_test_x", APIBase: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return e, p
}

// listAll lists every page of kind in [from, to) at l, and returns the
// objects and the number of requests.
func listAll(g Gomega, l payment.Lister, kind payment.ListKind, from, to time.Time) ([]payment.Listed, int) {
	var listed []payment.Listed
	requests := 0
	err := payment.ListAll(context.Background(), l, payment.ListRequest{Kind: kind, From: from, To: to},
		func(context.Context) error { requests++; return nil },
		func(page payment.ListPage) error {
			g.Expect(len(page.Objects)).To(BeNumerically("<=", payment.MaxListPage))
			listed = append(listed, page.Objects...)
			return nil
		})
	g.Expect(err).NotTo(HaveOccurred())
	return listed, requests
}

func TestListWalksTheSandboxsBooks(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e, p := sandboxLister(t)
	from := time.Now().Add(-24 * time.Hour).Truncate(time.Second)
	to := from.Add(250 * time.Second)
	want := map[string]payment.Listed{}
	for i := range 250 {
		key := fmt.Sprintf("billing/list-%d", i)
		in := e.PutIntent(sandbox.Intent{Amount: int64(1000 + i), Currency: "eur", Created: from.Add(time.Duration(i) * time.Second),
			Metadata: map[string]string{payment.MetadataKeyIdempotencyKey: key}})
		want[in.ID] = payment.Listed{ID: in.ID, Key: key, Status: "succeeded", State: payment.StateSucceeded,
			Amount: in.Amount, Currency: "eur", Created: in.Created.UTC()}
	}
	// Outside the window: a second before it, and at its end.
	e.PutIntent(sandbox.Intent{Amount: 1, Currency: "eur", Created: from.Add(-time.Second)})
	e.PutIntent(sandbox.Intent{Amount: 1, Currency: "eur", Created: to})

	listed, requests := listAll(g, p, payment.KindCharges, from, to)

	g.Expect(requests).To(Equal(3), "pages of 100, 100 and 50")
	got := map[string]payment.Listed{}
	for _, l := range listed {
		g.Expect(got).NotTo(HaveKey(l.ID), "each charge exactly once")
		got[l.ID] = l
	}
	g.Expect(got).To(Equal(want))
	for i := 1; i < len(listed); i++ {
		g.Expect(listed[i].Created.Before(listed[i-1].Created)).To(BeTrue(), "newest first")
	}
}

func TestListReadsTheSandboxsRefundsAndDisputes(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e, p := sandboxLister(t)
	paid := e.PutIntent(sandbox.Intent{Amount: 2000, Currency: "eur"})
	disputed := e.PutIntent(sandbox.Intent{Amount: 3000, Currency: "usd"})
	won := e.PutIntent(sandbox.Intent{Amount: 4000, Currency: "usd"})
	refund, _, err := e.CreateRefund("refund/1", sandbox.RefundParams{PaymentIntent: paid.ID, Amount: 500,
		Metadata: map[string]string{payment.MetadataKeyIdempotencyKey: "refund/1"}})
	g.Expect(err).NotTo(HaveOccurred())
	open, err := e.OpenDispute(disputed.ID, sandbox.DisputeReasonFraudulent)
	g.Expect(err).NotTo(HaveOccurred())
	closed, err := e.OpenDispute(won.ID, sandbox.DisputeReasonGeneral)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = e.SetDisputeStatus(closed.ID, sandbox.DisputeStatusWon)
	g.Expect(err).NotTo(HaveOccurred())
	from, to := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)

	refunds, _ := listAll(g, p, payment.KindRefunds, from, to)
	disputes, _ := listAll(g, p, payment.KindDisputes, from, to)

	g.Expect(refunds).To(ConsistOf(payment.Listed{ID: refund.ID, Key: "refund/1", Status: "succeeded", State: payment.StateSucceeded,
		Amount: 500, Currency: "eur", Created: refund.Created.Truncate(time.Second).UTC(), Charge: paid.ID}))
	g.Expect(disputes).To(HaveLen(2))
	byCharge := map[string]payment.Listed{}
	for _, d := range disputes {
		byCharge[d.Charge] = d
	}
	g.Expect(byCharge[disputed.ID].ID).To(Equal(open.ID))
	g.Expect(byCharge[disputed.ID].State).To(Equal(payment.StateSucceeded))
	g.Expect(byCharge[disputed.ID].Amount).To(Equal(int64(3000)))
	g.Expect(byCharge[won.ID].ID).To(Equal(closed.ID))
	g.Expect(byCharge[won.ID].State).To(Equal(payment.StateNotCharged))
}
