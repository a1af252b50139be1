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
	"slices"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/books"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
)

// compareSlice compares one slice of the window, [start, end): the
// cluster's records of the slice (jobs and refunds, the ledger's entries)
// with the provider's objects created in it (listed, or with no list the
// objects the provider holds under the records' keys). A key is judged
// once, in the first slice where either side shows it; its objects and
// records elsewhere are found by key (a lookup at the provider, the jobs
// read and the ledger), so that a payment whose record and charge fall on
// two sides of a slice's edge is compared whole.
func compareSlice(ctx context.Context, rd *reader, lr LedgerReader, b *clusterBooks, s scope, t *tally,
	start, end time.Time, objects []books.Object, listed bool) error {
	records, err := sliceRecords(ctx, lr, b, s, t, start, end)
	if err != nil {
		return err
	}
	var found []books.Object
	if !listed {
		if found, err = rd.lookup(ctx, records, b); err != nil {
			return providerError{err}
		}
		objects = found
	}
	objects = t.ours(objects, b, s)
	if !listed {
		objects = recordsOwn(records, objects, found)
	}
	if listed {
		var err error
		if objects, err = lookups(ctx, rd, t, records, objects, b); err != nil {
			return providerError{err}
		}
	}
	pulled, err := outside(ctx, lr, b, records, objects, s)
	if err != nil {
		return err
	}
	if listed && len(pulled) > 0 {
		// Every object under the keys recorded outside the slice, so that
		// each key is compared whole.
		if objects, err = lookAlso(ctx, rd, t, pulled, objects, b); err != nil {
			return providerError{err}
		}
	}
	if err := rd.chargesOf(ctx, slices.Concat(records, pulled), b); err != nil {
		return providerError{err}
	}
	all := make([]books.Record, 0, len(records)+len(pulled))
	for _, rec := range slices.Concat(records, pulled) {
		if rec.Kind == books.Refund {
			_, rec.Exact = rd.refundsRead[chargeOf(b, rec.Record)]
		}
		all = append(all, rec.Record)
	}
	if err := join(ctx, lr, b, s, &all); err != nil {
		return err
	}
	rd.refunds(objects, listed)
	t.compare(all, objects, rd.charges)
	rd.forget(objects)
	return nil
}

// sliceRecords are the cluster's records of [start, end) whose key no
// earlier slice judged: jobs and refunds, and the ledger's entries.
func sliceRecords(ctx context.Context, lr LedgerReader, b *clusterBooks, s scope, t *tally, start, end time.Time) ([]record, error) {
	var records []record
	for _, rec := range b.inWindow {
		if !rec.at.Before(start) && rec.at.Before(end) && !t.judged(rec.Kind, rec.Key) {
			records = append(records, rec)
		}
	}
	if lr == nil {
		return records, nil
	}
	err := lr.Between(ctx, start, end, func(e ledger.Entry) error {
		if rec := entryRecord(e); s.ours(&e.Provider, e.Key) && !t.judged(rec.Kind, rec.Key) {
			records = append(records, rec)
		}
		return nil
	})
	if err != nil {
		return nil, ledgerError{fmt.Errorf("cannot read the outcome ledger: %w", err)}
	}
	return records, nil
}

// compare compares a slice's records and objects and adds the findings up.
// A refund made without one of our keys counts only once its charge is in
// the comparison: the charge is older, so the refund goes on to the next
// slice until its charge comes.
func (t *tally) compare(records []books.Record, objects, charges []books.Object) {
	objects = append(objects, t.carry...)
	findings := books.Compare(records, objects, charges...)
	mentioned := map[string]bool{}
	for _, f := range findings {
		for _, id := range f.ProviderIDs {
			mentioned[id] = true
		}
	}
	t.carry = t.carry[:0]
	for _, o := range objects {
		if o.Kind == books.Refund && o.Key == "" && !mentioned[o.ID] {
			t.carry = append(t.carry, o)
		}
	}
	t.add(findings)
	t.endSlice()
}

// recordsOwn adds back to objects what the lookup found for a record whose
// money moved and that objects hold nothing of: under its key or with its
// id, whatever else is in flight under the key (tally.ours leaves keys in
// flight out), as lookups does for a listed run. Without it, a finished job
// sharing its key with one in flight would be reported MissingAtProvider.
func recordsOwn(records []record, objects, found []books.Object) []books.Object {
	has := map[kindKey]bool{}
	ids := map[string]bool{}
	for _, o := range objects {
		has[kindKey{o.Kind, o.Key}], ids[o.ID] = true, true
	}
	for _, rec := range records {
		if !rec.Moved || has[kindKey{rec.Kind, rec.Key}] || ids[rec.ID] {
			continue
		}
		for _, o := range found {
			if o.Kind == rec.Kind && (o.Key == rec.Key || (rec.ID != "" && o.ID == rec.ID)) && !ids[o.ID] {
				ids[o.ID] = true
				objects = append(objects, o)
			}
		}
	}
	return objects
}

// lookups looks up the records of the slice whose object the list of the
// slice does not hold: the provider may have created it a moment before
// the slice, and the cluster recorded it a moment after. What it finds is
// every object under the key, wherever in the window it is.
func lookups(ctx context.Context, rd *reader, t *tally, records []record, objects []books.Object, b *clusterBooks) ([]books.Object, error) {
	has := map[kindKey]bool{}
	ids := map[string]bool{}
	for _, o := range objects {
		has[kindKey{o.Kind, o.Key}], ids[o.ID] = true, true
	}
	var unmatched []record
	for _, rec := range records {
		if rec.Moved && !has[kindKey{rec.Kind, rec.Key}] && !ids[rec.ID] {
			unmatched = append(unmatched, rec)
		}
	}
	return lookAlso(ctx, rd, t, unmatched, objects, b)
}

// lookAlso adds to objects what the provider holds under the records'
// keys, wherever in the window it is.
func lookAlso(ctx context.Context, rd *reader, t *tally, records []record, objects []books.Object, b *clusterBooks) ([]books.Object, error) {
	found, err := rd.lookup(ctx, records, b)
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for _, o := range objects {
		ids[o.ID] = true
	}
	for _, o := range found {
		t.looked[o.ID] = true
		if !ids[o.ID] {
			ids[o.ID] = true
			objects = append(objects, o)
		}
	}
	return objects, nil
}

// outside returns the records of the keys the provider's objects carry
// that the cluster recorded outside the slice: from the jobs and refunds
// read, or else from the ledger, by key.
func outside(ctx context.Context, lr LedgerReader, b *clusterBooks, records []record, objects []books.Object, s scope) ([]record, error) {
	known := map[kindKey]bool{}
	for _, rec := range records {
		known[kindKey{rec.Kind, rec.Key}] = true
	}
	var pulled []record
	var ask []string
	for _, o := range objects {
		k := kindKey{o.Kind, o.Key}
		if o.Key == "" || known[k] {
			continue
		}
		known[k] = true
		if rec, ok := b.byKey[k]; ok {
			pulled = append(pulled, rec)
			continue
		}
		ask = append(ask, o.Key)
	}
	if lr == nil || len(ask) == 0 {
		return pulled, nil
	}
	entries, err := lr.FindAll(ctx, ask)
	if err != nil {
		return nil, ledgerError{fmt.Errorf("cannot read the outcome ledger: %w", err)}
	}
	for _, e := range entries {
		if s.ours(&e.Provider, e.Key) {
			pulled = append(pulled, entryRecord(e))
		}
	}
	return pulled, nil
}
