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

	"github.com/idempotency-dev/paymentjob-operator/internal/books"
)

// join completes a slice's records with what the cluster holds of their
// keys elsewhere, so that every row names its object and its charge's job
// and says whether the ledger holds them: a job or refund still in the
// cluster whose ledger entry the slice holds (the object is judged with
// its entry), the ledger entry of a job or refund recorded in another
// slice, and a refund's charge's job and ledger entry. A job no longer in
// the cluster is named from its ledger entry's key, marked deleted. It
// reads the ledger once, for the keys it lacks, and asks the provider
// nothing.
func join(ctx context.Context, lr LedgerReader, b *clusterBooks, s scope, records *[]books.Record) error {
	ask := joinCluster(b, records)
	if lr == nil || len(ask) == 0 {
		return nil
	}
	entries, err := lr.FindAll(ctx, ask)
	if err != nil {
		return ledgerError{fmt.Errorf("cannot read the outcome ledger: %w", err)}
	}
	held := func(key string) bool {
		e, ok := entries[key]
		return ok && s.ours(&e.Provider, e.Key)
	}
	for i := range *records {
		r := &(*records)[i]
		r.InLedger = r.InLedger || held(r.Key)
		if r.Kind != books.Refund || r.ChargeKey == "" || !held(r.ChargeKey) {
			continue
		}
		r.ChargeInLedger = true
		if r.ChargeObject == "" {
			r.ChargeObject = nameOfKey(r.ChargeKey)
			r.ChargeObjectDeleted = r.ChargeObject != ""
		}
	}
	return nil
}

// joinCluster adds to records the cluster's records of their keys that
// they lack (a job or refund whose ledger entry alone is in the slice),
// names each refund's charge's job as the cluster holds it, and returns
// the keys whose ledger entries the records do not say anything of.
func joinCluster(b *clusterBooks, records *[]books.Record) []string {
	inLedger := map[kindKey]bool{}
	inCluster := map[kindKey]bool{}
	for _, r := range *records {
		k := kindKey{r.Kind, r.Key}
		inLedger[k] = inLedger[k] || r.InLedger
		inCluster[k] = inCluster[k] || (r.Object != "" && !r.ObjectDeleted)
	}
	for _, r := range *records {
		k := kindKey{r.Kind, r.Key}
		if rec, ok := b.byKey[k]; ok && !inCluster[k] {
			inCluster[k] = true
			*records = append(*records, rec.Record)
		}
	}
	var ask []string
	asked := map[string]bool{}
	want := func(key string) {
		if key != "" && !asked[key] {
			asked[key] = true
			ask = append(ask, key)
		}
	}
	for i := range *records {
		r := &(*records)[i]
		if !inLedger[kindKey{r.Kind, r.Key}] {
			want(r.Key)
		}
		if r.Kind != books.Refund || r.ChargeKey == "" {
			continue
		}
		charge := kindKey{books.Charge, r.ChargeKey}
		if job, ok := b.byKey[charge]; ok {
			r.ChargeObject, r.ChargeObjectDeleted = job.Object, false
		} else {
			// The job is gone: the PaymentRefund still names it.
			r.ChargeObjectDeleted = r.ChargeObject != ""
		}
		if r.ChargeInLedger = inLedger[charge]; !r.ChargeInLedger {
			want(r.ChargeKey)
		}
	}
	return ask
}
