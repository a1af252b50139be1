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

package reconcile_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/reconcile"
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
	refund := reconcile.Record{Kind: reconcile.Refund, Key: refundKey, Object: "shop/back-a", InLedger: true, Moved: true,
		ID: "re_1", Amount: 400, Currency: "eur", ChargeKey: keyA, Charge: chargeA}
	refundObject := reconcile.Object{Kind: reconcile.Refund, ID: "re_1", Key: refundKey, Status: reconcile.StatusSucceeded,
		Amount: 400, Currency: "eur", Charge: chargeA}
	with := func(r reconcile.Record, f func(*reconcile.Record)) reconcile.Record { f(&r); return r }
	tests := []struct {
		name    string
		records []reconcile.Record
		objects []reconcile.Object
		// charges are what the provider says of the refunds' charges: the
		// key each was made under.
		charges  []reconcile.Object
		category reconcile.Category
		// advice is part of the action; never, what it must not say.
		advice, never string
	}{
		{
			name: "a ledger-finished refund found through its charge is matched",
			records: []reconcile.Record{with(refund, func(r *reconcile.Record) {
				r.Object, r.ChargeKey, r.Exact = "", "", true
			})},
			objects:  []reconcile.Object{refundObject},
			charges:  []reconcile.Object{{Kind: reconcile.Charge, ID: chargeA, Key: keyA}},
			category: reconcile.Matched,
		},
		{
			name:     "nothing under the key, its charge's refunds never read: check, do not refund again",
			records:  []reconcile.Record{refund},
			category: reconcile.MissingAtProvider,
			advice:   "refunds of charge " + chargeA, never: "refund with a new PaymentRefund",
		},
		{
			name:     "nothing under the key, the charge's exact list read: refund with a new PaymentRefund",
			records:  []reconcile.Record{with(refund, func(r *reconcile.Record) { r.Exact = true })},
			category: reconcile.MissingAtProvider,
			advice:   "refund with a new PaymentRefund",
		},
		{
			name:     "a refund of a charge made under another payment's key",
			records:  []reconcile.Record{with(refund, func(r *reconcile.Record) { r.Charge, r.Exact = chargeB, true })},
			objects:  []reconcile.Object{with2(refundObject, chargeB)},
			charges:  []reconcile.Object{{Kind: reconcile.Charge, ID: chargeB, Key: keyB}},
			category: reconcile.RefundOfForeignCharge,
			advice:   keyB, never: "refund with a new PaymentRefund",
		},
		{
			name:     "a refund of a charge made under no key of ours",
			records:  []reconcile.Record{with(refund, func(r *reconcile.Record) { r.Charge = chargeB })},
			objects:  []reconcile.Object{with2(refundObject, chargeB)},
			charges:  []reconcile.Object{{Kind: reconcile.Charge, ID: chargeB}},
			category: reconcile.RefundOfForeignCharge,
		},
		{
			name:     "a refund of its own payment's charge",
			records:  []reconcile.Record{refund},
			objects:  []reconcile.Object{refundObject},
			charges:  []reconcile.Object{{Kind: reconcile.Charge, ID: chargeA, Key: keyA}},
			category: reconcile.Matched,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			findings := reconcile.Compare(tt.records, tt.objects, tt.charges...)
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
func with2(o reconcile.Object, charge string) reconcile.Object {
	o.Charge = charge
	return o
}
