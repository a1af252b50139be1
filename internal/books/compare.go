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
	"slices"
	"strings"
)

// Compare matches the cluster's records with the provider's objects. It
// returns one finding per discrepancy of a record (Matched when it has
// none) and one per provider object that moved money under one of our keys
// with no record, or refunded one of our charges without a key, in a
// stable order: by category as in Categories, then kind, key and provider
// ids. Records of the same kind and key (a job and its ledger entry given
// separately) are merged first; objects that moved no money and carry none
// of our keys are not ours and are left out.
//
// charges are what the provider said of the charges that refunds give
// money back from (their ids and the keys they were made under), read
// with their refunds: they are no finding of their own, but a refund of
// ours whose charge was made under another key than its payment's is a
// RefundOfForeignCharge. Charges among objects count as well.
func Compare(records []Record, objects []Object, charges ...Object) []Finding {
	c := newComparison(merge(records), objects)
	for _, o := range charges {
		if o.Kind != Charge {
			continue
		}
		if _, ok := c.chargeKeys[o.ID]; !ok && !o.KeyUnknown {
			c.chargeKeys[o.ID] = o.Key
		}
		c.knowCharge(o)
	}
	for _, r := range c.records {
		c.record(r)
	}
	c.unaccounted()
	slices.SortFunc(c.findings, compareFindings)
	return c.findings
}

// comparison is one run of Compare.
type comparison struct {
	records []Record
	// byKey holds the provider's objects by kind and key, byID by id.
	byKey map[Kind]map[string][]Object
	byID  map[string]Object
	// objects are the provider's objects in the order given.
	objects []Object
	// accounted are the ids of objects a record accounts for.
	accounted map[string]bool
	// ourCharges maps the ids of charges of ours (recorded by the cluster
	// or carrying one of our keys) to their key.
	ourCharges map[string]string
	// chargeKeys maps the ids of the provider's charges known to the
	// comparison to the key each carries there ("" for none).
	chargeKeys map[string]string
	// charges are the provider's charges known to the comparison, by id:
	// their amounts and refunds (knowCharge). chargeByID and chargeByKey
	// are the records of charges.
	charges     map[string]Object
	chargeByID  map[string]Record
	chargeByKey map[string]Record
	findings    []Finding
}

func newComparison(records []Record, objects []Object) *comparison {
	c := &comparison{
		records:    records,
		byKey:      map[Kind]map[string][]Object{Charge: {}, Refund: {}},
		byID:       map[string]Object{},
		objects:    objects,
		accounted:  map[string]bool{},
		ourCharges: map[string]string{},
		chargeKeys: map[string]string{},
		charges:    map[string]Object{}, chargeByID: map[string]Record{}, chargeByKey: map[string]Record{},
	}
	for _, o := range objects {
		c.byID[o.ID] = o
		if o.Kind == Charge {
			c.chargeKeys[o.ID] = o.Key
			c.knowCharge(o)
		}
		if o.Key != "" {
			c.byKey[o.Kind][o.Key] = append(c.byKey[o.Kind][o.Key], o)
			if o.Kind == Charge {
				c.ourCharges[o.ID] = o.Key
			}
		}
	}
	for _, r := range records {
		if r.Kind != Charge {
			continue
		}
		c.chargeByKey[r.Key] = r
		if r.ID != "" {
			c.ourCharges[r.ID] = r.Key
			c.chargeByID[r.ID] = r
		}
	}
	return c
}

// merge folds the records of one kind and key into one: the object's
// name from whichever has it (one in the cluster before one named from
// the ledger), InLedger from any, and the cluster's recorded id, amount
// and currency from the first that has them, a record whose money moved
// before one refused.
func merge(records []Record) []Record {
	type kindKey struct {
		kind Kind
		key  string
	}
	index := map[kindKey]int{}
	var out []Record
	for _, r := range records {
		i, ok := index[kindKey{r.Kind, r.Key}]
		if !ok {
			index[kindKey{r.Kind, r.Key}] = len(out)
			out = append(out, r)
			continue
		}
		m := &out[i]
		if r.Moved && !m.Moved {
			// The record whose money moved speaks for the key: a
			// refusal of another request under it (two manifests
			// sharing a key) only fills what it lacks.
			r, *m = *m, r
		}
		if m.Object == "" || (m.ObjectDeleted && r.Object != "" && !r.ObjectDeleted) {
			m.Object, m.ObjectDeleted = r.Object, r.ObjectDeleted
		}
		if m.ChargeObject == "" || (m.ChargeObjectDeleted && r.ChargeObject != "" && !r.ChargeObjectDeleted) {
			m.ChargeObject, m.ChargeObjectDeleted = r.ChargeObject, r.ChargeObjectDeleted
		}
		m.ChargeInLedger = m.ChargeInLedger || r.ChargeInLedger
		m.ChargeAmount = cmp.Or(m.ChargeAmount, r.ChargeAmount)
		m.InLedger = m.InLedger || r.InLedger
		m.Moved = m.Moved || r.Moved
		m.ID = cmp.Or(m.ID, r.ID)
		m.Amount = cmp.Or(m.Amount, r.Amount)
		m.Currency = cmp.Or(m.Currency, r.Currency)
		m.ChargeKey = cmp.Or(m.ChargeKey, r.ChargeKey)
		m.Charge = cmp.Or(m.Charge, r.Charge)
		m.Exact = m.Exact || r.Exact
	}
	return out
}

// record adds the findings of one record.
func (c *comparison) record(r Record) {
	mine := slices.Clone(c.byKey[r.Kind][r.Key])
	// The object the cluster recorded belongs to the key even when it
	// lost its metadata.
	if o, ok := c.byID[r.ID]; ok && r.ID != "" && o.Key != r.Key {
		mine = append(mine, o)
	}
	var moved, stopped []Object
	for _, o := range mine {
		c.accounted[o.ID] = true
		if o.Status.moves() {
			moved = append(moved, o)
		} else {
			stopped = append(stopped, o)
		}
	}
	if !r.Moved {
		if len(moved) > 0 {
			c.add(r, UnknownToCluster, moved, fmt.Sprintf("the cluster recorded a definitive refusal and the provider moved money: %s",
				describe(moved)))
		} else {
			c.add(r, Matched, nil, "refused at both")
		}
		return
	}
	if len(moved) == 0 {
		c.missing(r, stopped)
		return
	}
	before := len(c.findings)
	if len(moved) > 1 {
		c.add(r, Duplicate, moved, fmt.Sprintf("%d %ss moved money under one key: %s", len(moved), r.Kind, describe(moved)))
	}
	o := recorded(r, moved)
	if r.Amount != 0 && o.Amount != r.Amount {
		c.add(r, AmountMismatch, []Object{o}, fmt.Sprintf("the cluster recorded %d, the provider %d", r.Amount, o.Amount))
	}
	if r.Currency != "" && !strings.EqualFold(o.Currency, r.Currency) {
		c.add(r, CurrencyMismatch, []Object{o}, fmt.Sprintf("the cluster recorded %s, the provider %s",
			strings.ToUpper(r.Currency), strings.ToUpper(o.Currency)))
	}
	if o.Dispute != "" {
		c.add(r, Disputed, []Object{o}, fmt.Sprintf("dispute %s on %s", o.Dispute, o.ID))
	}
	if r.Kind == Refund {
		c.foreign(r, o)
	}
	if len(c.findings) == before {
		c.add(r, Matched, []Object{o}, "")
	}
}

// missing adds the finding of a record whose money moved at the cluster
// and not at the provider: stopped are the objects under its key that
// moved none.
func (c *comparison) missing(r Record, stopped []Object) {
	for _, o := range stopped {
		if o.ID != r.ID {
			continue
		}
		switch {
		case r.Kind == Charge && o.Status == StatusCanceled:
			c.add(r, CanceledOutside, []Object{o}, fmt.Sprintf("%s is canceled at the provider", o.ID))
			return
		case r.Kind == Refund && o.Status == StatusFailed:
			c.add(r, RefundFailedAfterSuccess, []Object{o}, fmt.Sprintf("%s failed at the provider after it succeeded", o.ID))
			return
		}
	}
	detail := "the provider holds nothing under the key"
	if len(stopped) > 0 {
		detail = "nothing under the key moved money: " + describe(stopped)
	}
	c.add(r, MissingAtProvider, stopped, detail)
	if r.Kind == Refund && !r.Exact {
		// Only the provider's exact list of the charge's refunds proves
		// that no money went back; without it, say where to look.
		f := &c.findings[len(c.findings)-1]
		charge := cmp.Or(r.Charge, "it gives money back from")
		f.Detail += "; the run could not read the refunds of charge " + charge + " at the provider"
		f.Action = unreadRefundAction(charge)
	}
}

// recorded is the object of moved that the cluster recorded: the one
// with its id, else the first.
func recorded(r Record, moved []Object) Object {
	for _, o := range moved {
		if o.ID == r.ID {
			return o
		}
	}
	return slices.MinFunc(moved, func(a, b Object) int { return strings.Compare(a.ID, b.ID) })
}

// unaccounted adds the findings of the provider's objects no record
// accounts for: money moved under one of our keys, or a refund without a
// key of a charge of ours.
func (c *comparison) unaccounted() {
	for _, o := range c.objects {
		if c.accounted[o.ID] || !o.Status.moves() {
			continue
		}
		switch {
		case o.Key != "":
			c.add(Record{Kind: o.Kind, Key: o.Key}, UnknownToCluster, []Object{o},
				fmt.Sprintf("%s moved money under the key and the cluster has no %s or ledger entry for it", o.ID, objectName(o.Kind)))
		case o.Kind == Refund && c.ourCharges[o.Charge] != "":
			c.outside(o)
		}
	}
}
