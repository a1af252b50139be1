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

package paymentreconciliation

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/books"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/sandboxprovider"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// lister is the sandbox's in-process provider with a list of two charges a
// page, newest first: a window of a few dozen charges is many pages, and
// many slices.
type lister struct {
	*sandboxprovider.Provider
	engine *sandbox.Engine
	pages  int
}

func (l *lister) List(_ context.Context, req payment.ListRequest) (payment.ListPage, error) {
	l.pages++
	q := sandbox.ListQuery{From: req.From, To: req.To, Limit: 2, StartingAfter: req.After}
	var out payment.ListPage
	var more bool
	switch req.Kind {
	case payment.KindCharges:
		intents, hasMore, err := l.engine.ListIntents(q)
		if err != nil {
			return out, err
		}
		for _, in := range intents {
			state := payment.StatePending
			switch in.Status {
			case sandbox.StatusSucceeded:
				state = payment.StateSucceeded
			case sandbox.StatusCanceled, sandbox.StatusRequiresPaymentMethod:
				state = payment.StateNotCharged
			}
			out.Objects = append(out.Objects, payment.Listed{ID: in.ID, Key: in.Metadata[payment.MetadataKeyIdempotencyKey],
				Status: in.Status, State: state, Amount: in.Amount, Currency: in.Currency, Created: in.Created})
		}
		more = hasMore
	case payment.KindRefunds:
		refunds, hasMore, err := l.engine.ListRefundsPage(q)
		if err != nil {
			return out, err
		}
		for _, rf := range refunds {
			out.Objects = append(out.Objects, payment.Listed{ID: rf.ID, Key: rf.Metadata[payment.MetadataKeyIdempotencyKey],
				Status: rf.Status, State: payment.StateSucceeded, Amount: rf.Amount, Currency: rf.Currency, Created: rf.Created,
				Charge: rf.PaymentIntent})
		}
		more = hasMore
	case payment.KindDisputes:
		// None in these books.
	}
	if more {
		out.Next = out.Objects[len(out.Objects)-1].ID
	}
	return out, nil
}

// entries is a ledger held in memory.
type entries []ledger.Entry

func (es entries) Reader(context.Context) (LedgerReader, error) { return es, nil }

func (es entries) Between(_ context.Context, from, to time.Time, fn func(ledger.Entry) error) error {
	for _, e := range es {
		if !e.At.Before(from) && e.At.Before(to) {
			if err := fn(e); err != nil {
				return err
			}
		}
	}
	return nil
}

func (es entries) FindAll(_ context.Context, keys []string) (map[string]ledger.Entry, error) {
	found := map[string]ledger.Entry{}
	for _, e := range es {
		for _, k := range keys {
			if e.Key == k {
				found[k] = e
			}
		}
	}
	return found, nil
}

// A window compared in slices of three charges says what it says compared
// whole: 40 payments over 20 seconds whose ledger entries are recorded
// 700 ms after their charges (so that many fall on the other side of a
// slice's edge), a second charge under one key made 10 seconds after the
// first (another slice), and a payment the provider does not hold.
func TestSlicesFindWhatTheWholeWindowFinds(t *testing.T) {
	g := NewWithT(t)
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	// The sandbox's clock stamps refunds: 15 seconds into the window.
	engine := sandbox.NewEngine(sandbox.WithAccount("acct_slices"), sandbox.WithClock(func() time.Time { return base.Add(15 * time.Second) }))
	account := paymentsv1alpha1.ProviderIdentity{UID: "uid", Endpoint: "https://api.stripe.com", Account: "acct_slices", Mode: "test"}
	inLedger := make(entries, 0, 41)
	for i := range 40 {
		key := fmt.Sprintf("shop/order-%02d", i)
		in := engine.PutIntent(sandbox.Intent{Amount: 1000 + int64(i), Currency: "eur", Created: base.Add(time.Duration(i) * 500 * time.Millisecond),
			Metadata: map[string]string{payment.MetadataKeyIdempotencyKey: key}})
		inLedger = append(inLedger, ledger.Entry{Key: key, Provider: account, Charge: in.ID, Amount: in.Amount, Currency: "eur",
			Outcome: paymentsv1alpha1.LedgerCompleted, At: in.Created.Add(700 * time.Millisecond)})
	}
	double := engine.PutIntent(sandbox.Intent{Amount: 1005, Currency: "eur", Created: base.Add(12500 * time.Millisecond),
		Metadata: map[string]string{payment.MetadataKeyIdempotencyKey: "shop/order-05"}})
	// A refund made in the dashboard, without our key, 13 seconds after
	// its charge: in another slice.
	refunded, _ := engine.GetPaymentIntent(inLedger[3].Charge)
	_, _, err := engine.CreateRefund("dashboard", sandbox.RefundParams{PaymentIntent: refunded.ID, Amount: 100})
	g.Expect(err).NotTo(HaveOccurred())
	inLedger = append(inLedger, ledger.Entry{Key: "shop/order-99", Provider: account, Charge: "pi_gone", Amount: 500, Currency: "eur",
		Outcome: paymentsv1alpha1.LedgerCompleted, At: base.Add(15 * time.Second)})

	scheme := runtime.NewScheme()
	g.Expect(paymentsv1alpha1.AddToScheme(scheme)).To(Succeed())
	s := scope{account: account, accountsOnly: true, from: base, to: base.Add(time.Minute)}
	perSecond := int32(100)
	pr := &paymentsv1alpha1.PaymentReconciliation{Spec: paymentsv1alpha1.PaymentReconciliationSpec{RequestsPerSecond: &perSecond}}
	run := func(slice int) (result, *lister) {
		r := &Reconciler{Reader: fake.NewClientBuilder().WithScheme(scheme).Build(), Ledger: inLedger,
			Clock: clock.RealClock{}, SliceObjects: slice}
		l := &lister{Provider: sandboxprovider.NewProvider(engine), engine: engine}
		res, _, err := r.run(t.Context(), pr, l, s)
		g.Expect(err).NotTo(HaveOccurred())
		return res, l
	}
	whole, lw := run(1 << 20)
	sliced, l := run(3)
	t.Logf("whole: %v, %d list requests; in slices of 3: %v, %d list requests", whole.counts, lw.pages, sliced.counts, l.pages)

	want := map[books.Category]int{books.Matched: 39, books.Duplicate: 1, books.MissingAtProvider: 1,
		books.RefundedOutside: 1}
	g.Expect(whole.counts).To(Equal(want))
	g.Expect(sliced.counts).To(Equal(want), "slices find what the whole window finds")
	g.Expect(sliced.report.CSV()).To(Equal(whole.report.CSV()), "the same report, row for row")
	dup := sliced.report.Findings[1]
	g.Expect(sliced.report.Findings[2].Category).To(Equal(books.RefundedOutside), "a refund without our key, in a later slice than its charge")
	g.Expect(dup.Category).To(Equal(books.Duplicate))
	g.Expect(dup.Key).To(Equal("shop/order-05"))
	g.Expect(strings.Join(dup.ProviderIDs, " ")).To(ContainSubstring(double.ID))
	g.Expect(dup.ProviderIDs).To(HaveLen(2), "both charges, found together")
	g.Expect(dup.InLedger).To(BeTrue())
	g.Expect(l.pages).To(Equal(lw.pages), "slices are cut from one list of the window: they cost no request")
}
