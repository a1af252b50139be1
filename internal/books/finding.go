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
	// Object and InLedger are the cluster's side of the row's key
	// (Record.Object and Record.InLedger): the PaymentJob or
	// PaymentRefund, and whether the ledger holds its outcome. Both empty
	// when the cluster knows nothing of the key. For RefundedOutside,
	// whose refund is no object of the cluster's and whose Key is its
	// charge's, they are the charge's job and its outcome in the ledger
	// (as ChargeObject and ChargeInLedger).
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
	// ChargeObject is the PaymentJob of the charge the row concerns,
	// "<namespace>/<name>": a charge row's own job (Object), a refund
	// row's job whose charge it gives money back from, RefundedOutside
	// included. ChargeInLedger says whether the ledger holds that charge's
	// outcome; ChargeID is the provider's id of the charge.
	ChargeObject   string `json:"charge_object"`
	ChargeInLedger bool   `json:"charge_in_ledger"`
	ChargeID       string `json:"charge_id"`
	// ChargeLeft is what is left of the charge at the provider, in minor
	// units: its amount less every refund of it that moved money (succeeded
	// or pending), those made outside the operator included, as far as the
	// provider's lists the run read show them. Nil when the provider holds
	// no charge the row concerns.
	ChargeLeft *int64 `json:"charge_left"`
	// ObjectDeleted and ChargeObjectDeleted say that Object or
	// ChargeObject is no longer in the cluster (deleted after its TTL, or
	// by a person): it is named from its ledger entry's key, which is its
	// name unless its manifest set spec.idempotencyKey (a charge's job
	// named by a PaymentRefund's spec.paymentJobRef is named exactly).
	ObjectDeleted       bool `json:"object_deleted"`
	ChargeObjectDeleted bool `json:"charge_object_deleted"`
}

// add appends a finding about r and objs.
func (c *comparison) add(r Record, cat Category, objs []Object, detail string) {
	f := Finding{
		Category: cat, Kind: r.Kind, Key: r.Key, Object: r.Object, InLedger: r.InLedger, ObjectDeleted: r.ObjectDeleted,
		ClusterID: r.ID, ClusterAmount: r.Amount, ClusterCurrency: strings.ToUpper(r.Currency),
		Detail: detail,
	}
	for _, o := range objs {
		f.ProviderIDs = append(f.ProviderIDs, o.ID)
	}
	slices.Sort(f.ProviderIDs)
	if len(objs) == 1 {
		f.ProviderAmount, f.ProviderCurrency = objs[0].Amount, strings.ToUpper(objs[0].Currency)
	}
	c.chargeSide(&f, r, objs)
	if cat == RefundedOutside {
		// The row's key is its charge's: so are its object and ledger.
		f.Object, f.ObjectDeleted, f.InLedger = f.ChargeObject, f.ChargeObjectDeleted, f.ChargeInLedger
	}
	f.Action = action(f)
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
	f := Finding{
		Category: Duplicate, Kind: o.Kind, Key: o.Key, ProviderIDs: []string{o.ID},
		ProviderAmount: o.Amount, ProviderCurrency: strings.ToUpper(o.Currency),
		Detail: fmt.Sprintf("another %s moved money under a key whose %s was compared already: %s",
			o.Kind, objectName(o.Kind), describe([]Object{o})),
	}
	if o.Kind == Charge {
		f.ChargeID = o.ID
	} else {
		f.ChargeID = o.Charge
	}
	f.Action = action(f)
	return f
}
