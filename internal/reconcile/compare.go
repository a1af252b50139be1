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

package reconcile

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Kind is what moved money: a charge or a refund.
type Kind string

const (
	// Charge is a payment: a PaymentJob at the cluster, a PaymentIntent
	// (or the HTTP contract's charge) at the provider.
	Charge Kind = "charge"
	// Refund is a PaymentRefund at the cluster, a refund at the provider.
	Refund Kind = "refund"
)

// Status is a provider object's state, as far as money goes.
type Status string

const (
	// StatusSucceeded means the money moved.
	StatusSucceeded Status = "succeeded"
	// StatusPending means the provider accepted it and has not settled it yet
	// (a refund to some payment methods takes days). It counts as money
	// that moves.
	StatusPending Status = "pending"
	// StatusFailed means no money moved, or (a refund) it moved back.
	StatusFailed Status = "failed"
	// StatusCanceled means the object was canceled before money moved.
	StatusCanceled Status = "canceled"
)

// moves reports whether an object in status s moved money, or will.
func (s Status) moves() bool { return s == StatusSucceeded || s == StatusPending }

// Record is the cluster's word on one idempotency key: a PaymentJob or a
// PaymentRefund, its ledger entry, or both.
type Record struct {
	// Kind is Charge for a job, Refund for a refund.
	Kind Kind
	// Key is the idempotency key the operator sent, namespace-scoped as
	// the provider saw it.
	Key string
	// Object names the PaymentJob or PaymentRefund, "<namespace>/<name>";
	// empty when only the ledger holds the key (the job was deleted).
	Object string
	// InLedger says the outcome ledger holds the key.
	InLedger bool
	// Moved says the cluster's outcome is that money moved (Completed);
	// false is a definitive refusal (Failed).
	Moved bool
	// ID is the provider's id the cluster recorded, if any.
	ID string
	// Amount in minor units; 0 when the cluster does not know it.
	Amount int64
	// Currency is the ISO 4217 code; empty when the cluster does not know
	// it.
	Currency string
	// ChargeKey is a refund's charge: the key of the job it refunds.
	ChargeKey string
	// Charge is a refund's charge: the provider's id of the charge it gives
	// money back from, as the PaymentRefund or the ledger recorded it.
	Charge string
	// Exact says, for a refund, that the provider's exact list of its
	// charge's refunds was read (Stripe's list of a charge's refunds has no
	// search lag; the HTTP contract's refund lookup): when nothing under
	// the key moved money there, none did. Without it a refund the
	// provider shows nothing of is reported with what to check, never with
	// the advice to refund again.
	Exact bool
}

// Object is the provider's word on one charge or refund.
type Object struct {
	// Kind is Charge or Refund.
	Kind Kind
	// ID is the provider's id (pi_..., re_...).
	ID string
	// Key is the idempotency key the object carries in its metadata;
	// empty when it carries none (made in the dashboard or by another
	// system).
	Key string
	// Status is where the money is.
	Status Status
	// Amount in minor units.
	Amount int64
	// Currency is the ISO 4217 code, in any case.
	Currency string
	// Charge is a refund's charge: the provider's id of the charge it
	// refunds.
	Charge string
	// Dispute is the id of a dispute on a charge, if there is one.
	Dispute string
}

// Category is what a finding says of a payment or refund.
type Category string

const (
	// Matched means both sides agree, to the minor unit.
	Matched Category = "Matched"
	// MissingAtProvider means the cluster says the money moved and the provider
	// holds nothing that moved under the key.
	MissingAtProvider Category = "MissingAtProvider"
	// UnknownToCluster means the provider moved money under one of our keys
	// and the cluster has no job, refund or ledger entry that says so.
	UnknownToCluster Category = "UnknownToCluster"
	// Duplicate means two or more charges, or refunds, moved money under one
	// key.
	Duplicate Category = "Duplicate"
	// AmountMismatch means the amounts differ.
	AmountMismatch Category = "AmountMismatch"
	// CurrencyMismatch means the currencies differ.
	CurrencyMismatch Category = "CurrencyMismatch"
	// RefundedOutside means a charge of ours was refunded by a refund that
	// carries none of our keys (the dashboard, another system).
	RefundedOutside Category = "RefundedOutsideOperator"
	// Disputed means a charge of ours is disputed.
	Disputed Category = "Disputed"
	// CanceledOutside means the cluster says the charge moved money and the
	// provider holds it canceled.
	CanceledOutside Category = "CanceledOutsideOperator"
	// RefundFailedAfterSuccess means the cluster says the refund moved money
	// back and the provider holds it failed.
	RefundFailedAfterSuccess Category = "RefundFailedAfterSuccess"
	// RefundOfForeignCharge means a refund of ours gave money back from a
	// charge the provider holds under another key than the refunded
	// payment's (another payment's, another tenant's, or none of ours):
	// someone else's customer was refunded.
	RefundOfForeignCharge Category = "RefundOfForeignCharge"
)

// Categories lists every category, in report order.
var Categories = []Category{
	Matched, MissingAtProvider, UnknownToCluster, Duplicate, AmountMismatch, CurrencyMismatch,
	RefundedOutside, Disputed, CanceledOutside, RefundFailedAfterSuccess, RefundOfForeignCharge,
}

// Discrepancy reports whether the category is one a person must look at.
func (c Category) Discrepancy() bool { return c != Matched }

// Finding is one line of a reconciliation: a record, a provider object
// or both, what they say, and what to do.
type Finding struct {
	Category Category `json:"category"`
	Kind     Kind     `json:"kind"`
	// Key is the idempotency key; for RefundedOutside, whose refund
	// carries none, the key of the charge it refunded.
	Key string `json:"key"`
	// Object and InLedger are the cluster's side (Record.Object and
	// Record.InLedger); both empty when the cluster knows nothing of the
	// key.
	Object   string `json:"object"`
	InLedger bool   `json:"in_ledger"`
	// ClusterID, ClusterAmount and ClusterCurrency are what the cluster
	// recorded.
	ClusterID       string `json:"cluster_id"`
	ClusterAmount   int64  `json:"cluster_amount"`
	ClusterCurrency string `json:"cluster_currency"`
	// ProviderIDs are the provider's objects the finding is about, sorted.
	ProviderIDs      []string `json:"provider_ids"`
	ProviderAmount   int64    `json:"provider_amount"`
	ProviderCurrency string   `json:"provider_currency"`
	// Detail says what differs, in a sentence.
	Detail string `json:"detail"`
	// Action says what a person should do.
	Action string `json:"action"`
}

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
		if _, ok := c.chargeKeys[o.ID]; !ok && o.Kind == Charge {
			c.chargeKeys[o.ID] = o.Key
		}
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
	findings   []Finding
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
	}
	for _, o := range objects {
		c.byID[o.ID] = o
		if o.Kind == Charge {
			c.chargeKeys[o.ID] = o.Key
		}
		if o.Key != "" {
			c.byKey[o.Kind][o.Key] = append(c.byKey[o.Kind][o.Key], o)
			if o.Kind == Charge {
				c.ourCharges[o.ID] = o.Key
			}
		}
	}
	for _, r := range records {
		if r.Kind == Charge && r.ID != "" {
			c.ourCharges[r.ID] = r.Key
		}
	}
	return c
}

// merge folds the records of one kind and key into one: the object's
// name from whichever has it, InLedger from any, and the cluster's
// recorded id, amount and currency from the first that has them.
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
		m.Object = cmp.Or(m.Object, r.Object)
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

// foreign adds the finding of a refund of ours whose provider object o
// gave money back from a charge made under another key than the refunded
// payment's, when the comparison knows that charge's key.
func (c *comparison) foreign(r Record, o Object) {
	charge := cmp.Or(o.Charge, r.Charge)
	key, known := c.chargeKeys[charge]
	if charge == "" || r.ChargeKey == "" || !known || key == r.ChargeKey {
		return
	}
	under := "no key of ours"
	if key != "" {
		under = "the key " + key
	}
	c.add(r, RefundOfForeignCharge, []Object{o}, fmt.Sprintf("%s gave money back from %s, which the provider holds under %s, not under %s, the refunded payment's",
		o.ID, charge, under, r.ChargeKey))
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
			c.add(Record{Kind: Refund, Key: c.ourCharges[o.Charge]}, RefundedOutside, []Object{o},
				fmt.Sprintf("%s refunded %d of %s without one of our keys", o.ID, o.Amount, o.Charge))
		}
	}
}

// add appends a finding about r and objs.
func (c *comparison) add(r Record, cat Category, objs []Object, detail string) {
	f := Finding{
		Category: cat, Kind: r.Kind, Key: r.Key, Object: r.Object, InLedger: r.InLedger,
		ClusterID: r.ID, ClusterAmount: r.Amount, ClusterCurrency: strings.ToUpper(r.Currency),
		Detail: detail, Action: action(cat, r.Kind),
	}
	for _, o := range objs {
		f.ProviderIDs = append(f.ProviderIDs, o.ID)
	}
	slices.Sort(f.ProviderIDs)
	if len(objs) == 1 {
		f.ProviderAmount, f.ProviderCurrency = objs[0].Amount, strings.ToUpper(objs[0].Currency)
	}
	c.findings = append(c.findings, f)
}

// describe lists objects as "id (status, amount currency)".
func describe(objs []Object) string {
	parts := make([]string, 0, len(objs))
	for _, o := range objs {
		parts = append(parts, fmt.Sprintf("%s (%s, %d %s)", o.ID, o.Status, o.Amount, strings.ToUpper(o.Currency)))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// objectName is the cluster's kind for k.
func objectName(k Kind) string {
	if k == Refund {
		return "PaymentRefund"
	}
	return "PaymentJob"
}

// compareFindings orders findings by category (as in Categories), kind,
// key and provider ids.
func compareFindings(a, b Finding) int {
	return cmp.Or(
		cmp.Compare(slices.Index(Categories, a.Category), slices.Index(Categories, b.Category)),
		strings.Compare(string(a.Kind), string(b.Kind)),
		strings.Compare(a.Key, b.Key),
		slices.Compare(a.ProviderIDs, b.ProviderIDs),
	)
}

// Sort orders findings as Compare returns them: by category (as in
// Categories), kind, key and provider ids. A caller that compares a
// window in slices sorts the findings of all of them with it.
func Sort(findings []Finding) { slices.SortFunc(findings, compareFindings) }

// LateDuplicate is the finding of an object that moved money under a key
// already compared without it: a caller that compares a window in slices
// finds it in a slice after the one where the key was judged. The key
// moved money more than once.
func LateDuplicate(o Object) Finding {
	return Finding{
		Category: Duplicate, Kind: o.Kind, Key: o.Key, ProviderIDs: []string{o.ID},
		ProviderAmount: o.Amount, ProviderCurrency: strings.ToUpper(o.Currency),
		Detail: fmt.Sprintf("another %s moved money under a key whose %s was compared already: %s",
			o.Kind, objectName(o.Kind), describe([]Object{o})),
		Action: action(Duplicate, o.Kind),
	}
}
