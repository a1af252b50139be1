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

	"github.com/idempotency-dev/paymentjob-operator/internal/reconcile"
)

// sides settles what the comparison reads: the provider's objects (see
// lookups) less those under keys still in flight or of other namespaces,
// and the records of the window with those of keys the provider lists in
// it but the cluster recorded outside it (see outside).
func sides(ctx context.Context, rd *reader, l Ledger, b *books, objects []reconcile.Object, listed bool, s scope) ([]reconcile.Record, []reconcile.Object, error) {
	objects, err := lookups(ctx, rd, b, objects, listed)
	if err != nil {
		return nil, nil, providerError{err}
	}
	kept := objects[:0]
	for _, o := range objects {
		switch {
		case b.inFlight[o.Key]:
		case o.Key == "" && o.Kind == reconcile.Charge && len(s.namespaces) > 0:
			// A charge made without a key belongs to no namespace.
		case o.Key != "" && !s.namespace(o.Key):
		default:
			kept = append(kept, o)
		}
	}
	records, err := outside(ctx, l, b, kept, s)
	return records, kept, err
}

// lookups completes the provider's side. Without a list it is what the
// provider holds under the records' keys. With one, a record of the window
// whose object the list does not hold is looked up: the provider may have
// created it a moment before the window, and the cluster recorded it a
// moment after.
func lookups(ctx context.Context, rd *reader, b *books, objects []reconcile.Object, listed bool) ([]reconcile.Object, error) {
	if !listed {
		return rd.lookup(ctx, b.inWindow, b.inWindow)
	}
	has := map[kindKey]bool{}
	ids := map[string]bool{}
	for _, o := range objects {
		has[kindKey{o.Kind, o.Key}], ids[o.ID] = true, true
	}
	var unmatched []record
	for _, rec := range b.inWindow {
		if rec.Moved && !has[kindKey{rec.Kind, rec.Key}] && !ids[rec.ID] {
			unmatched = append(unmatched, rec)
		}
	}
	found, err := rd.lookup(ctx, unmatched, b.inWindow)
	if err != nil {
		return nil, err
	}
	for _, o := range found {
		if !ids[o.ID] {
			ids[o.ID] = true
			objects = append(objects, o)
		}
	}
	return objects, nil
}

// outside returns the records of the window, and those of every key the
// provider's objects carry that the cluster recorded outside it: from the
// jobs and refunds read, or else from the ledger, by key.
func outside(ctx context.Context, l Ledger, b *books, objects []reconcile.Object, s scope) ([]reconcile.Record, error) {
	all := make([]reconcile.Record, 0, len(b.inWindow))
	known := map[kindKey]bool{}
	for _, rec := range b.inWindow {
		all = append(all, rec.Record)
		known[kindKey{rec.Kind, rec.Key}] = true
	}
	var ask []string
	for _, o := range objects {
		k := kindKey{o.Kind, o.Key}
		if o.Key == "" || known[k] {
			continue
		}
		known[k] = true
		if rec, ok := b.others[k]; ok {
			all = append(all, rec.Record)
			continue
		}
		ask = append(ask, o.Key)
	}
	if l == nil || len(ask) == 0 {
		return all, nil
	}
	entries, err := l.FindAll(ctx, ask)
	if err != nil {
		return nil, fmt.Errorf("cannot read the outcome ledger: %w", err)
	}
	for _, e := range entries {
		if s.ours(&e.Provider, e.Key) {
			all = append(all, entryRecord(e).Record)
		}
	}
	return all, nil
}
