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
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/idempotency-dev/paymentjob-operator/internal/books"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// reader reads the provider's books under a run's own rate budget.
type reader struct {
	provider payment.Provider
	budget   *rate.Limiter
	requests int64
	// sliceObjects: see DefaultSliceObjects.
	sliceObjects int
	// refundsRead are the refunds of the charges whose refunds the run
	// read, by charge: the provider's exact list of them. charges holds
	// what the provider said of those charges: the key each was made
	// under.
	refundsRead map[string][]books.Object
	charges     []books.Object
	// listedRefunds sums, by charge, the refunds that moved money among
	// those the list of the window gave: what is left of a charge whose
	// own list of refunds the run did not read.
	listedRefunds map[string]int64
	// booked is, by charge, what the provider's own list of the charge's
	// refunds says was refunded of it, where the run read a complete one.
	booked map[string]int64
}

// readRefunds reads the refunds of a charge, once a run: the refunds
// found, and what the provider says of the charge.
func (r *reader) readRefunds(ctx context.Context, refunder payment.Refunder, id string) ([]books.Object, error) {
	if found, ok := r.refundsRead[id]; ok {
		return found, nil
	}
	if err := r.wait(ctx); err != nil {
		return nil, err
	}
	book, err := payment.ListRefunds(ctx, refunder, id)
	if err != nil {
		return nil, fmt.Errorf("cannot read the refunds of charge %s at the provider: %w", id, err)
	}
	objects := []books.Object{}
	for key, fs := range book.Refunds {
		for _, f := range fs {
			objects = append(objects, foundObject(books.Refund, key, f, id))
		}
	}
	if r.refundsRead == nil {
		r.refundsRead = map[string][]books.Object{}
	}
	r.refundsRead[id] = objects
	// A charge's key is known only where the provider kept it: an empty
	// one may be a provider that does not say, never a reason to report.
	charge := books.Object{Kind: books.Charge, ID: id, Key: book.Charge.Key,
		KeyUnknown: book.Charge.Key == "", Amount: book.Charge.Amount, Refunded: book.Refunded, RefundsRead: book.Complete}
	r.charges = append(r.charges, charge)
	if charge.RefundsRead {
		if r.booked == nil {
			r.booked = map[string]int64{}
		}
		r.booked[id] = charge.Refunded
	}
	return objects, nil
}

// listed counts a refund the list of the window gave towards what is left
// of its charge.
func (r *reader) listed(o books.Object) {
	if o.Kind != books.Refund || o.Charge == "" || (o.Status != books.StatusSucceeded && o.Status != books.StatusPending) {
		return
	}
	if r.listedRefunds == nil {
		r.listedRefunds = map[string]int64{}
	}
	r.listedRefunds[o.Charge] += o.Amount
}

// forget drops the sums of the listed refunds of the charges among
// objects, once their slice is compared: no later slice holds a refund of
// theirs, so a run holds sums only for the charges it has not reached.
func (r *reader) forget(objects []books.Object) {
	for _, o := range objects {
		if o.Kind == books.Charge {
			delete(r.listedRefunds, o.ID)
		}
	}
}

// refunds sets, on the charges among objects, what was refunded of them:
// as the provider's own list of the charge's refunds says, where the run
// read it, else as the list of the window does when the window was
// listed (a charge's refunds come after it, so the list gave them all
// before the charge's slice). A charge's refunds made after the window
// count only in its own list.
func (r *reader) refunds(objects []books.Object, listed bool) {
	for i := range objects {
		o := &objects[i]
		if o.Kind != books.Charge {
			continue
		}
		if refunded, ok := r.booked[o.ID]; ok {
			o.Refunded, o.RefundsRead = refunded, true
		} else if listed {
			o.Refunded, o.RefundsRead = r.listedRefunds[o.ID], true
		}
	}
}

// chargesOf reads the refunds of the charges that refund records give
// money back from, when the run has not read them yet: so that every
// refund is judged against its charge (the key it was made under), and a
// refund the provider shows nothing of is judged on its charge's exact
// list of refunds.
func (r *reader) chargesOf(ctx context.Context, records []record, b *clusterBooks) error {
	refunder, ok := r.provider.(payment.Refunder)
	if !ok {
		return nil
	}
	for _, rec := range records {
		if rec.Kind != books.Refund {
			continue
		}
		if id := chargeOf(b, rec.Record); id != "" {
			if _, err := r.readRefunds(ctx, refunder, id); err != nil {
				return err
			}
		}
	}
	return nil
}

// wait takes one request from the budget.
func (r *reader) wait(ctx context.Context) error {
	if err := r.budget.Wait(ctx); err != nil {
		return err
	}
	r.requests++
	providerRequestsTotal.Inc()
	return nil
}

// disputes lists the disputes created since from (a dispute comes weeks
// after its charge) that can still take the money or took it: the
// disputed charges' ids, with their disputes'. It reports false when the
// provider has no list after all (an HTTP service without listURL).
func (r *reader) disputes(ctx context.Context, l payment.Lister, from, now time.Time) (map[string]string, bool, error) {
	disputed := map[string]string{}
	err := payment.ListAll(ctx, l, payment.ListRequest{Kind: payment.KindDisputes, From: from, To: now.Add(time.Second)}, r.wait,
		func(p payment.ListPage) error {
			for _, d := range p.Objects {
				if d.State != payment.StateNotCharged && d.Charge != "" {
					disputed[d.Charge] = d.ID
				}
			}
			return nil
		})
	switch {
	case errors.Is(err, payment.ErrListUnsupported):
		return nil, false, nil
	case err != nil:
		return nil, true, fmt.Errorf("cannot list the provider's disputes: %w", err)
	}
	return disputed, true, nil
}

// lookup asks the provider for what it holds under the records' keys:
// charges by key (a Looker), refunds by their charge (a Refunder). It is
// how a provider without a list is reconciled, and how a record whose
// object the list of the window does not hold is checked just outside it.
func (r *reader) lookup(ctx context.Context, records []record, b *clusterBooks) ([]books.Object, error) {
	var objects []books.Object
	var keys []string
	asked := map[string]bool{}
	charges := map[string]bool{}
	for _, rec := range records {
		switch rec.Kind {
		case books.Charge:
			// A job and its ledger entry are two records of one key.
			if !asked[rec.Key] {
				asked[rec.Key] = true
				keys = append(keys, rec.Key)
			}
		default:
			if id := chargeOf(b, rec.Record); id != "" {
				charges[id] = true
			}
		}
	}
	if looker, ok := r.provider.(payment.Looker); ok {
		for i := 0; i < len(keys); i += payment.MaxLookupKeys {
			batch := keys[i:min(i+payment.MaxLookupKeys, len(keys))]
			if err := r.wait(ctx); err != nil {
				return nil, err
			}
			found, err := looker.Lookup(ctx, batch)
			if err != nil {
				return nil, fmt.Errorf("cannot look the cluster's keys up at the provider: %w", err)
			}
			for key, fs := range found {
				for _, f := range fs {
					objects = append(objects, foundObject(books.Charge, key, f, ""))
				}
			}
		}
	}
	if refunder, ok := r.provider.(payment.Refunder); ok {
		ids := slices.Sorted(maps.Keys(charges))
		for _, id := range ids {
			found, err := r.readRefunds(ctx, refunder, id)
			if err != nil {
				return nil, err
			}
			objects = append(objects, found...)
		}
	}
	return objects, nil
}

// chargeOf is the provider's id of the charge a refund record gives money
// back from: as the PaymentRefund or the ledger recorded it, or else the
// id recorded for its payment's key, in the window or not.
func chargeOf(b *clusterBooks, refund books.Record) string {
	if refund.Charge != "" {
		return refund.Charge
	}
	if refund.ChargeKey == "" {
		return ""
	}
	return b.byKey[kindKey{books.Charge, refund.ChargeKey}].ID
}

// objectOf is a listed charge or refund as the comparison reads it.
func objectOf(kind payment.ListKind, o payment.Listed) books.Object {
	k := books.Charge
	if kind == payment.KindRefunds {
		k = books.Refund
	}
	return books.Object{Kind: k, ID: o.ID, Key: o.Key, Status: statusOf(o.Status, o.State), Amount: o.Amount,
		Currency: strings.ToLower(o.Currency), Charge: o.Charge}
}

// foundObject is a charge or refund found by its key.
func foundObject(k books.Kind, key string, f payment.Found, charge string) books.Object {
	return books.Object{Kind: k, ID: f.ID, Key: key, Status: statusOf(f.Status, f.State), Amount: f.Amount,
		Currency: strings.ToLower(f.Currency), Charge: charge}
}

// statusOf reads a provider's state as the comparison does: a canceled
// object apart from other ones that moved no money.
func statusOf(word string, state payment.ChargeState) books.Status {
	switch {
	case state == payment.StateSucceeded:
		return books.StatusSucceeded
	case state == payment.StatePending:
		return books.StatusPending
	case strings.EqualFold(word, "canceled") || strings.EqualFold(word, "cancelled"):
		return books.StatusCanceled
	}
	return books.StatusFailed
}
