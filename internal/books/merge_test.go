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

// Two manifests sharing a key, asking for different amounts: the one sent
// first was charged (Completed), the other refused as a key reused
// (Failed). The key's money is the charge, as asked; the refused job's
// amount says nothing of it, whichever record comes first. Found by the
// campaign (internal/campaign, TestRegressionCorpus/
// SharedKeyRefusedJobIsNoAmountMismatch): the comparison took the amount
// of the first record of the key, the refused one's, and advised to refund
// the difference of a charge made exactly as asked.
func TestRefusedRecordUnderAChargedKeyIsNoAmountMismatch(t *testing.T) {
	g := NewWithT(t)
	refused := books.Record{Kind: books.Charge, Key: "books/order-1", Object: "books/job-1",
		Amount: 500, Currency: "usd"}
	charged := books.Record{Kind: books.Charge, Key: "books/order-1", Object: "books/job-2",
		Moved: true, ID: "pi_2", Amount: 2500, Currency: "usd"}
	entry := books.Record{Kind: books.Charge, Key: "books/order-1", InLedger: true, Moved: true, ID: "pi_2",
		Amount: 2500, Currency: "usd"}
	objects := []books.Object{{Kind: books.Charge, ID: "pi_2", Key: "books/order-1",
		Status: books.StatusSucceeded, Amount: 2500, Currency: "usd"}}
	for name, records := range map[string][]books.Record{
		"refused first":           {refused, charged, entry},
		"charged first":           {charged, refused, entry},
		"ledger entry refused":    {refused, charged},
		"refused, entry, charged": {refused, entry, charged},
	} {
		findings := books.Compare(records, objects)
		g.Expect(findings).To(HaveLen(1), name)
		g.Expect(findings[0].Category).To(Equal(books.Matched), "%s: %+v", name, findings[0])
		g.Expect(findings[0].ClusterAmount).To(Equal(int64(2500)), name)
	}
}
