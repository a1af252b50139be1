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

package books

import (
	"cmp"
	"fmt"
)

// The charge a row concerns: the PaymentJob that made it, whether the
// ledger holds its outcome, and what is left of it once every refund the
// provider lists for it is taken off. A charge row concerns its own
// charge; a refund row, RefundedOutside included, the charge it gives
// money back from.

// knowCharge adds what o, a charge at the provider, says of its amount
// and refunds: a list of its refunds read (RefundsRead) counts over the
// refunds the comparison holds, and the first amount known stays.
func (c *comparison) knowCharge(o Object) {
	known, ok := c.charges[o.ID]
	if !ok {
		c.charges[o.ID] = o
		return
	}
	known.Amount = cmp.Or(known.Amount, o.Amount)
	if o.RefundsRead && !known.RefundsRead {
		known.Refunded, known.RefundsRead = o.Refunded, true
	}
	c.charges[o.ID] = known
}

// outside adds the finding of o, a refund made without one of our keys of
// a charge of ours: the row is the refund's, joined to the charge's job.
func (c *comparison) outside(o Object) {
	key := c.ourCharges[o.Charge]
	c.add(Record{Kind: Refund, Key: key, ChargeKey: key, Charge: o.Charge}, RefundedOutside, []Object{o},
		fmt.Sprintf("%s refunded %d of %s without one of our keys", o.ID, o.Amount, o.Charge))
}

// chargeSide fills the charge columns of f, a finding about r and objs.
func (c *comparison) chargeSide(f *Finding, r Record, objs []Object) {
	if r.Kind == Charge {
		f.ChargeObject, f.ChargeObjectDeleted, f.ChargeInLedger = r.Object, r.ObjectDeleted, r.InLedger
		f.ChargeID = r.ID
		if f.ChargeID == "" && len(objs) > 0 {
			f.ChargeID = recorded(r, objs).ID
		}
		f.ChargeLeft = c.left(f.ChargeID, 0)
		return
	}
	// The charge the provider says the refund gives money back from,
	// else the one the cluster recorded.
	f.ChargeID = r.Charge
	if len(objs) > 0 {
		f.ChargeID = cmp.Or(recorded(r, objs).Charge, f.ChargeID)
	}
	// The charge's job: the one whose record holds the charge, else the
	// one the refund names, when the refund gives money back from the
	// charge the cluster recorded for it.
	charge, ok := c.chargeByID[f.ChargeID]
	switch {
	case ok:
		f.ChargeObject, f.ChargeObjectDeleted, f.ChargeInLedger = charge.Object, charge.ObjectDeleted, charge.InLedger
		if r.ChargeObject != "" && (f.ChargeObject == "" || f.ChargeObjectDeleted) && r.ChargeKey == charge.Key {
			f.ChargeObject, f.ChargeObjectDeleted = r.ChargeObject, r.ChargeObjectDeleted
		}
		f.ChargeInLedger = f.ChargeInLedger || (r.ChargeInLedger && r.ChargeKey == charge.Key)
	case r.Charge == "" || r.Charge == f.ChargeID:
		charge = c.chargeByKey[r.ChargeKey]
		f.ChargeObject, f.ChargeObjectDeleted = r.ChargeObject, r.ChargeObjectDeleted
		if f.ChargeObject == "" || (f.ChargeObjectDeleted && charge.Object != "" && !charge.ObjectDeleted) {
			f.ChargeObject, f.ChargeObjectDeleted = charge.Object, charge.ObjectDeleted
		}
		f.ChargeInLedger = r.ChargeInLedger || charge.InLedger
		f.ChargeID = cmp.Or(f.ChargeID, charge.ID)
	}
	f.ChargeLeft = c.left(f.ChargeID, cmp.Or(charge.Amount, r.ChargeAmount))
}

// left is what is left of the charge with id: its amount at the provider
// (else amount, the cluster's) less its refunds that moved money, as the
// provider's list of them says, or else as the refunds of it that the
// comparison holds add up. Nil when the provider holds no such charge the
// comparison knows of, the charge moved no money, or its amount is
// unknown.
func (c *comparison) left(id string, amount int64) *int64 {
	charge, ok := c.charges[id]
	if id == "" || (!ok && amount == 0) || (charge.Status != "" && !charge.Status.moves()) {
		return nil
	}
	if !ok {
		// A refund's charge known only to the cluster: the refund shows
		// the provider holds it.
		charge = Object{ID: id}
	}
	amount = cmp.Or(charge.Amount, amount)
	if amount == 0 {
		return nil
	}
	refunded := charge.Refunded
	if !charge.RefundsRead {
		refunded = 0
		seen := map[string]bool{}
		for _, o := range c.objects {
			if o.Kind == Refund && o.Charge == id && o.Status.moves() && !seen[o.ID] {
				seen[o.ID] = true
				refunded += o.Amount
			}
		}
	}
	left := amount - refunded
	return &left
}
