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

package books_test

import (
	"testing"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	"k8s.io/utils/ptr"

	"github.com/idempotency-dev/paymentjob-operator/internal/books"
)

// row is what a report row says of the objects it concerns.
type row struct {
	object, chargeObject  string
	inLedger, chargeInLed bool
	chargeID              string
	left                  *int64
}

func rowOf(f books.Finding) row {
	return row{f.Object, f.ChargeObject, f.InLedger, f.ChargeInLedger, f.ChargeID, f.ChargeLeft}
}

// Every row names the PaymentJob or PaymentRefund it concerns, the job
// whose charge it is about, whether the ledger holds them, and what is
// left of the charge.
func TestRowsNameTheirObjectsTheirChargeAndWhatIsLeft(t *testing.T) {
	g := NewWithT(t)
	b, _ := seeded(20)
	got := map[string]row{}
	for _, f := range books.Compare(b.records, b.objects) {
		got[string(f.Category)+" "+string(f.Kind)+" "+f.Key] = rowOf(f)
	}
	left := func(n int64) *int64 { return &n }
	tests := []struct {
		name string
		want row
	}{
		{"Matched charge order-0003", row{"billing/order-0003", "billing/order-0003", true, true, "pi_order-0003", left(1003 - 500)}},
		{"Matched refund order-0003-refund", row{"billing/order-0003-refund", "billing/order-0003", true, true, "pi_order-0003", left(1003 - 500)}},
		{"Matched charge order-0013", row{"billing/order-0013", "billing/order-0013", true, true, "pi_order-0013", left(1013)}},
		// A dashboard refund of 200: no object of its own; the row's key,
		// object and ledger are its charge's.
		{"RefundedOutsideOperator refund order-0002", row{"billing/order-0002", "billing/order-0002", true, true, "pi_order-0002", left(1002 - 200)}},
		{"UnknownToCluster refund order-0001-refund", row{"", "billing/order-0001", false, true, "pi_order-0001", left(1001 - 100)}},
		{"UnknownToCluster charge behind", row{"", "", false, false, "pi_behind", left(700)}},
		{"UnknownToCluster charge failed-but-charged", row{"billing/failed-but-charged", "billing/failed-but-charged", true, true,
			"pi_failed-but-charged", left(300)}},
		{"Duplicate charge order-0004", row{"billing/order-0004", "billing/order-0004", true, true, "pi_order-0004", left(1004)}},
		// Two refunds of 500 moved under one key.
		{"Duplicate refund order-0006-refund", row{"billing/order-0006-refund", "billing/order-0006", true, true, "pi_order-0006",
			left(1006 - 500 - 500)}},
		{"MissingAtProvider charge order-0005", row{"billing/order-0005", "billing/order-0005", true, true, "pi_order-0005", nil}},
		{"MissingAtProvider refund order-0009-refund", row{"billing/order-0009-refund", "billing/order-0009", true, true, "pi_order-0009",
			left(1009)}},
		{"AmountMismatch charge order-0007", row{"billing/order-0007", "billing/order-0007", true, true, "pi_order-0007", left(1008)}},
		{"AmountMismatch refund order-0012-refund", row{"billing/order-0012-refund", "billing/order-0012", true, true, "pi_order-0012",
			left(1012 - 499)}},
		{"Disputed charge order-0010", row{"billing/order-0010", "billing/order-0010", true, true, "pi_order-0010", left(1010)}},
		{"CanceledOutsideOperator charge order-0011", row{"billing/order-0011", "billing/order-0011", true, true, "pi_order-0011", nil}},
		{"RefundFailedAfterSuccess refund order-0015-refund", row{"billing/order-0015-refund", "billing/order-0015", true, true,
			"pi_order-0015", left(1015)}},
		// The refund gave money back from order-0019's charge: the row
		// names that charge's job, and what is left of it.
		{"RefundOfForeignCharge refund order-0018-refund", row{"billing/order-0018-refund", "billing/order-0019", true, true,
			"pi_order-0019", left(1019 - 500)}},
	}
	for _, tt := range tests {
		g.Expect(got).To(HaveKeyWithValue(tt.name, tt.want), tt.name)
	}
}

// What is left of a charge of 1000 after partial, outside and full
// refunds, on the charge's row and on each refund's.
func TestChargeLeftCountsEveryRefundTheProviderLists(t *testing.T) {
	const pi, key = "pi_1", "shop/order-1"
	job := books.Record{Kind: books.Charge, Key: key, Object: "shop/order-1", InLedger: true, Moved: true, ID: pi,
		Amount: 1000, Currency: "eur"}
	charge := books.Object{Kind: books.Charge, ID: pi, Key: key, Status: books.StatusSucceeded, Amount: 1000, Currency: "eur"}
	ours := func(name string, amount int64) (books.Record, books.Object) {
		k := "shop.refund/" + name
		return books.Record{Kind: books.Refund, Key: k, Object: "shop/" + name, InLedger: true, Moved: true, ID: "re_" + name,
				Amount: amount, Currency: "eur", ChargeKey: key, Charge: pi, ChargeObject: "shop/order-1", ChargeAmount: 1000},
			books.Object{Kind: books.Refund, ID: "re_" + name, Key: k, Status: books.StatusSucceeded, Amount: amount,
				Currency: "eur", Charge: pi}
	}
	dashboard := func(id string, amount int64, status books.Status) books.Object {
		return books.Object{Kind: books.Refund, ID: id, Status: status, Amount: amount, Currency: "eur", Charge: pi}
	}
	partial, partialAt := ours("partial", 300)
	full, fullAt := ours("full", 1000)
	tests := []struct {
		name    string
		records []books.Record
		objects []books.Object
		charges []books.Object
		left    int64
	}{
		{name: "not refunded", records: []books.Record{job}, objects: []books.Object{charge}, left: 1000},
		{name: "a partial refund", records: []books.Record{job, partial}, objects: []books.Object{charge, partialAt}, left: 700},
		{name: "a partial refund and a dashboard refund", records: []books.Record{job, partial},
			objects: []books.Object{charge, partialAt, dashboard("re_dash", 200, books.StatusSucceeded)}, left: 500},
		{name: "a dashboard refund pending, another failed", records: []books.Record{job},
			objects: []books.Object{charge, dashboard("re_dash", 200, books.StatusPending),
				dashboard("re_failed", 300, books.StatusFailed)}, left: 800},
		{name: "a full refund", records: []books.Record{job, full}, objects: []books.Object{charge, fullAt}, left: 0},
		{name: "a full dashboard refund", records: []books.Record{job},
			objects: []books.Object{charge, dashboard("re_dash", 1000, books.StatusSucceeded)}, left: 0},
		{name: "the provider's list of the charge's refunds counts more than the comparison holds",
			records: []books.Record{job, partial},
			objects: []books.Object{func() books.Object { c := charge; c.Refunded, c.RefundsRead = 900, true; return c }(), partialAt},
			left:    100},
		{name: "a refund's charge out of the comparison, its list read", records: []books.Record{partial},
			objects: []books.Object{partialAt},
			charges: []books.Object{{Kind: books.Charge, ID: pi, KeyUnknown: true, Refunded: 800, RefundsRead: true}}, left: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			findings := books.Compare(tt.records, tt.objects, tt.charges...)
			g.Expect(findings).NotTo(BeEmpty())
			for _, f := range findings {
				g.Expect(f.ChargeLeft).To(HaveValue(Equal(tt.left)), "%s %s %s", f.Category, f.Kind, f.Key)
				g.Expect(f.ChargeID).To(Equal(pi))
				g.Expect(f.Category).To(BeElementOf(books.Matched, books.RefundedOutside), "%+v", f)
				if f.Category == books.RefundedOutside {
					g.Expect(f.Object).To(Equal("shop/order-1"), "the row leads to the job whose charge was refunded")
					g.Expect(f.InLedger).To(BeTrue(), "the ledger holds the charge, whose key the row shows")
					g.Expect(f.ChargeObject).To(Equal("shop/order-1"))
					g.Expect(f.ChargeInLedger).To(BeTrue())
					g.Expect(f.Action).To(ContainSubstring("kubectl payments status pj/order-1 -n shop --check-provider"))
				}
			}
		})
	}
}

// A job deleted after its TTL is named from its ledger entry, and the row
// says so; a job still in the cluster is named as it is.
func TestDeletedJobIsNamedFromTheLedgerAndSaysSo(t *testing.T) {
	const pi, key = "pi_1", "shop/order-1"
	fromLedger := books.Record{Kind: books.Charge, Key: key, Object: "shop/order-1", ObjectDeleted: true, InLedger: true,
		Moved: true, ID: pi, Amount: 1000, Currency: "eur"}
	charge := books.Object{Kind: books.Charge, ID: pi, Key: key, Status: books.StatusSucceeded, Amount: 1000, Currency: "eur"}
	dash := books.Object{Kind: books.Refund, ID: "re_dash", Status: books.StatusSucceeded, Amount: 250, Currency: "eur", Charge: pi}
	tests := []struct {
		name    string
		records []books.Record
		deleted bool
		action  types.GomegaMatcher
	}{
		{name: "deleted", records: []books.Record{fromLedger}, deleted: true,
			action: ContainSubstring("pj/order-1 is deleted: kubectl payments ledger find pj/order-1 -n shop")},
		{name: "in the cluster, its ledger entry given first", deleted: false, records: []books.Record{fromLedger,
			{Kind: books.Charge, Key: key, Object: "shop/order-1", Moved: true, ID: pi, Amount: 1000, Currency: "eur"}},
			action: ContainSubstring("kubectl payments status pj/order-1 -n shop --check-provider")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			findings := books.Compare(tt.records, []books.Object{charge, dash})
			g.Expect(findings).To(HaveLen(2))
			for _, f := range findings {
				g.Expect(f.ChargeObject).To(Equal("shop/order-1"))
				g.Expect(f.ChargeObjectDeleted).To(Equal(tt.deleted))
				g.Expect(f.ChargeInLedger).To(BeTrue())
				g.Expect(f.ChargeLeft).To(Equal(ptr.To(int64(750))))
				if f.Kind == books.Charge {
					g.Expect([]any{f.Object, f.ObjectDeleted, f.InLedger}).To(Equal([]any{"shop/order-1", tt.deleted, true}))
				} else {
					g.Expect(f.Action).To(tt.action)
				}
			}
		})
	}
}
