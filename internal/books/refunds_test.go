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

	"github.com/idempotency-dev/paymentjob-operator/internal/books"
)

// Refunds are matched to the charge they give money back from, and no
// finding advises moving money again unless the provider's exact list of
// that charge's refunds shows that none moved.
func TestRefundsAreJudgedThroughTheirCharge(t *testing.T) {
	const (
		chargeA, chargeB = "pi_a", "pi_b"
		keyA, keyB       = "shop/order-a", "tenant-b/order-b"
		refundKey        = "shop.refund/back-a"
	)
	refund := books.Record{Kind: books.Refund, Key: refundKey, Object: "shop/back-a", InLedger: true, Moved: true,
		ID: "re_1", Amount: 400, Currency: "eur", ChargeKey: keyA, Charge: chargeA}
	refundObject := books.Object{Kind: books.Refund, ID: "re_1", Key: refundKey, Status: books.StatusSucceeded,
		Amount: 400, Currency: "eur", Charge: chargeA}
	with := func(r books.Record, f func(*books.Record)) books.Record { f(&r); return r }
	tests := []struct {
		name    string
		records []books.Record
		objects []books.Object
		// charges are what the provider says of the refunds' charges: the
		// key each was made under.
		charges  []books.Object
		category books.Category
		// advice is part of the action; never, what it must not say.
		advice, never string
	}{
		{
			name: "a ledger-finished refund found through its charge is matched",
			records: []books.Record{with(refund, func(r *books.Record) {
				r.Object, r.ChargeKey, r.Exact = "", "", true
			})},
			objects:  []books.Object{refundObject},
			charges:  []books.Object{{Kind: books.Charge, ID: chargeA, Key: keyA}},
			category: books.Matched,
		},
		{
			name:     "nothing under the key, its charge's refunds never read: check, do not refund again",
			records:  []books.Record{refund},
			category: books.MissingAtProvider,
			advice:   "refunds of charge " + chargeA, never: "refund with a new PaymentRefund",
		},
		{
			name:     "nothing under the key, the charge's exact list read: refund with a new PaymentRefund",
			records:  []books.Record{with(refund, func(r *books.Record) { r.Exact = true })},
			category: books.MissingAtProvider,
			advice:   "refund with a new PaymentRefund",
		},
		{
			name:     "a refund of a charge made under another payment's key",
			records:  []books.Record{with(refund, func(r *books.Record) { r.Charge, r.Exact = chargeB, true })},
			objects:  []books.Object{with2(refundObject, chargeB)},
			charges:  []books.Object{{Kind: books.Charge, ID: chargeB, Key: keyB}},
			category: books.RefundOfForeignCharge,
			advice:   keyB, never: "refund with a new PaymentRefund",
		},
		{
			name:     "a refund of a charge made under no key of ours",
			records:  []books.Record{with(refund, func(r *books.Record) { r.Charge = chargeB })},
			objects:  []books.Object{with2(refundObject, chargeB)},
			charges:  []books.Object{{Kind: books.Charge, ID: chargeB}},
			category: books.RefundOfForeignCharge,
		},
		{
			name:     "a refund of its own payment's charge",
			records:  []books.Record{refund},
			objects:  []books.Object{refundObject},
			charges:  []books.Object{{Kind: books.Charge, ID: chargeA, Key: keyA}},
			category: books.Matched,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			findings := books.Compare(tt.records, tt.objects, tt.charges...)
			g.Expect(findings).To(HaveLen(1), "%+v", findings)
			f := findings[0]
			g.Expect(f.Category).To(Equal(tt.category), "%+v", f)
			g.Expect(f.Key).To(Equal(refundKey))
			if tt.advice != "" {
				g.Expect(f.Action + " " + f.Detail).To(ContainSubstring(tt.advice))
			}
			if tt.never != "" {
				g.Expect(f.Action).NotTo(ContainSubstring(tt.never))
			}
		})
	}
}

// with2 is a refund object of another charge.
func with2(o books.Object, charge string) books.Object {
	o.Charge = charge
	return o
}
