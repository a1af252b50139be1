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
	"fmt"
	"slices"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/books"
)

// sides are the two sides of a reconciliation.
type sides struct {
	records []books.Record
	objects []books.Object
}

// charge adds a job charged once, as the operator leaves it: the job, its
// ledger entry and the provider's PaymentIntent.
func (b *sides) charge(key string, amount int64) (pi string) {
	pi = "pi_" + key
	b.records = append(b.records,
		books.Record{Kind: books.Charge, Key: key, Object: "billing/" + key, Moved: true, ID: pi, Amount: amount, Currency: "eur"},
		books.Record{Kind: books.Charge, Key: key, InLedger: true, Moved: true, ID: pi})
	b.objects = append(b.objects, books.Object{Kind: books.Charge, ID: pi, Key: key,
		Status: books.StatusSucceeded, Amount: amount, Currency: "EUR"})
	return pi
}

// refund adds a PaymentRefund of a charge, refunded once.
func (b *sides) refund(chargeKey string, amount int64) (re string) {
	key := chargeKey + "-refund"
	re = "re_" + key
	b.records = append(b.records, books.Record{Kind: books.Refund, Key: key, Object: "billing/" + key,
		InLedger: true, Moved: true, ID: re, Amount: amount, Currency: "eur", ChargeKey: chargeKey})
	b.objects = append(b.objects, books.Object{Kind: books.Refund, ID: re, Key: key,
		Status: books.StatusSucceeded, Amount: amount, Currency: "eur", Charge: "pi_" + chargeKey})
	return re
}

// object returns the provider's object with the id, to change it.
func (b *sides) object(id string) *books.Object {
	for i := range b.objects {
		if b.objects[i].ID == id {
			return &b.objects[i]
		}
	}
	panic("no object " + id)
}

// clean is n payments charged once, every third refunded in part; and a
// declined job, refused at both sides.
func clean(n int) *sides {
	b := &sides{}
	for i := range n {
		key := fmt.Sprintf("order-%04d", i)
		b.charge(key, int64(1000+i))
		if i%3 == 0 {
			b.refund(key, 500)
		}
	}
	b.records = append(b.records, books.Record{Kind: books.Charge, Key: "declined", Object: "billing/declined", InLedger: true})
	b.objects = append(b.objects, books.Object{Kind: books.Charge, ID: "pi_declined", Key: "declined",
		Status: books.StatusFailed, Amount: 10, Currency: "eur"})
	return b
}

// want is one expected discrepancy.
type want struct {
	category books.Category
	kind     books.Kind
	key      string
}

// seeded is clean(n) with one discrepancy of every kind, each on a payment
// of its own, and the discrepancies a reconciliation must report.
func seeded(n int) (*sides, []want) {
	b := clean(n)
	var wants []want
	add := func(c books.Category, k books.Kind, key string) { wants = append(wants, want{c, k, key}) }

	// Charged behind the operator's back with one of our keys, and
	// without (another system's charge: not ours, no finding).
	b.objects = append(b.objects,
		books.Object{Kind: books.Charge, ID: "pi_behind", Key: "behind", Status: books.StatusSucceeded, Amount: 700, Currency: "eur"},
		books.Object{Kind: books.Charge, ID: "pi_other_system", Status: books.StatusSucceeded, Amount: 900, Currency: "eur"})
	add(books.UnknownToCluster, books.Charge, "behind")
	// Refunded behind its back with one of our keys, and without.
	b.objects = append(b.objects,
		books.Object{Kind: books.Refund, ID: "re_behind", Key: "order-0001-refund", Status: books.StatusSucceeded,
			Amount: 100, Currency: "eur", Charge: "pi_order-0001"},
		books.Object{Kind: books.Refund, ID: "re_dashboard", Status: books.StatusSucceeded,
			Amount: 200, Currency: "eur", Charge: "pi_order-0002"})
	add(books.UnknownToCluster, books.Refund, "order-0001-refund")
	add(books.RefundedOutside, books.Refund, "order-0002")
	// A double charge under one key.
	b.objects = append(b.objects, books.Object{Kind: books.Charge, ID: "pi_order-0004-again", Key: "order-0004",
		Status: books.StatusSucceeded, Amount: 1004, Currency: "eur"})
	add(books.Duplicate, books.Charge, "order-0004")
	// A double refund under one key.
	b.objects = append(b.objects, books.Object{Kind: books.Refund, ID: "re_order-0006-refund-again", Key: "order-0006-refund",
		Status: books.StatusSucceeded, Amount: 500, Currency: "eur", Charge: "pi_order-0006"})
	add(books.Duplicate, books.Refund, "order-0006-refund")
	// A charge removed from the provider, and a refund.
	b.objects = slices.DeleteFunc(b.objects, func(o books.Object) bool {
		return o.ID == "pi_order-0005" || o.ID == "re_order-0009-refund"
	})
	add(books.MissingAtProvider, books.Charge, "order-0005")
	add(books.MissingAtProvider, books.Refund, "order-0009-refund")
	// An amount changed, a currency changed, on a charge and a refund.
	b.object("pi_order-0007").Amount++
	add(books.AmountMismatch, books.Charge, "order-0007")
	b.object("pi_order-0008").Currency = "usd"
	add(books.CurrencyMismatch, books.Charge, "order-0008")
	b.object("re_order-0012-refund").Amount = 499
	add(books.AmountMismatch, books.Refund, "order-0012-refund")
	// A refund failed after it succeeded.
	b.object("re_order-0015-refund").Status = books.StatusFailed
	add(books.RefundFailedAfterSuccess, books.Refund, "order-0015-refund")
	// A dispute; a charge canceled at the provider.
	b.object("pi_order-0010").Dispute = "dp_1"
	add(books.Disputed, books.Charge, "order-0010")
	b.object("pi_order-0011").Status = books.StatusCanceled
	add(books.CanceledOutside, books.Charge, "order-0011")
	// A refund that gave money back from another payment's charge.
	b.object("re_order-0018-refund").Charge = "pi_order-0019"
	add(books.RefundOfForeignCharge, books.Refund, "order-0018-refund")
	// A job the cluster holds Failed that the provider charged.
	b.records = append(b.records, books.Record{Kind: books.Charge, Key: "failed-but-charged", Object: "billing/failed-but-charged", InLedger: true})
	b.objects = append(b.objects, books.Object{Kind: books.Charge, ID: "pi_failed-but-charged", Key: "failed-but-charged",
		Status: books.StatusSucceeded, Amount: 300, Currency: "eur"})
	add(books.UnknownToCluster, books.Charge, "failed-but-charged")
	return b, wants
}

// check is the suite: what compare gets wrong on the clean books and on
// the seeded ones. Every implementation must return nothing.
func check(compare func([]books.Record, []books.Object) []books.Finding) []string {
	var problems []string
	b := clean(1000)
	records := map[want]bool{}
	for _, r := range b.records {
		records[want{books.Matched, r.Kind, r.Key}] = true
	}
	matched := map[want]int{}
	for _, f := range compare(b.records, b.objects) {
		if f.Category != books.Matched {
			problems = append(problems, fmt.Sprintf("clean books: %s %s %s: %s", f.Category, f.Kind, f.Key, f.Detail))
			continue
		}
		matched[want{f.Category, f.Kind, f.Key}]++
	}
	for w := range records {
		if matched[w] != 1 {
			problems = append(problems, fmt.Sprintf("clean books: %s %s matched %d times, not once", w.kind, w.key, matched[w]))
		}
	}

	b, wants := seeded(1000)
	got := map[want]int{}
	for _, f := range compare(b.records, b.objects) {
		if f.Category.Discrepancy() {
			got[want{f.Category, f.Kind, f.Key}]++
		}
	}
	for _, w := range wants {
		if got[w] != 1 {
			problems = append(problems, fmt.Sprintf("seeded books: %s %s %s reported %d times, not once", w.category, w.kind, w.key, got[w]))
		}
		delete(got, w)
	}
	for w, n := range got {
		problems = append(problems, fmt.Sprintf("seeded books: %s %s %s reported %d times and not seeded", w.category, w.kind, w.key, n))
	}
	slices.Sort(problems)
	return problems
}

func TestCompareFindsEachDiscrepancyOnceInItsCategory(t *testing.T) {
	g := NewWithT(t)
	g.Expect(check(func(records []books.Record, objects []books.Object) []books.Finding {
		return books.Compare(records, objects)
	})).To(BeEmpty())

	// Every category but Matched is seeded.
	_, wants := seeded(30)
	seededCategories := map[books.Category]bool{}
	for _, w := range wants {
		seededCategories[w.category] = true
	}
	for _, c := range books.Categories {
		g.Expect(seededCategories[c]).To(Equal(c.Discrepancy()), "category %s", c)
	}
}

// TestBrokenComparisonsFailTheSuite: the suite catches a comparison that
// ignores refunds, one that ignores amounts, and one that reports only
// what the cluster knows.
func TestBrokenComparisonsFailTheSuite(t *testing.T) {
	broken := map[string]func([]books.Record, []books.Object) []books.Finding{
		"ignores refunds": func(records []books.Record, objects []books.Object) []books.Finding {
			isRefund := func(k books.Kind) bool { return k == books.Refund }
			return books.Compare(
				slices.DeleteFunc(slices.Clone(records), func(r books.Record) bool { return isRefund(r.Kind) }),
				slices.DeleteFunc(slices.Clone(objects), func(o books.Object) bool { return isRefund(o.Kind) }))
		},
		"ignores amounts": func(records []books.Record, objects []books.Object) []books.Finding {
			records = slices.Clone(records)
			for i := range records {
				records[i].Amount = 0
			}
			return books.Compare(records, objects)
		},
		"reports only the cluster's keys": func(records []books.Record, objects []books.Object) []books.Finding {
			known := map[string]bool{}
			for _, r := range records {
				known[r.Key] = true
			}
			return books.Compare(records, slices.DeleteFunc(slices.Clone(objects), func(o books.Object) bool {
				return o.Key != "" && !known[o.Key]
			}))
		},
	}
	for name, compare := range broken {
		t.Run(name, func(t *testing.T) {
			problems := check(compare)
			NewWithT(t).Expect(problems).NotTo(BeEmpty())
			if len(problems) == 0 {
				return
			}
			t.Logf("the suite reports %d problems, first %q", len(problems), problems[0])
		})
	}
}

func TestFindingsNameBothSidesAndWhatToDo(t *testing.T) {
	g := NewWithT(t)
	b, _ := seeded(20)
	for _, f := range books.Compare(b.records, b.objects) {
		if !f.Category.Discrepancy() {
			g.Expect(f.Action).To(BeEmpty())
			continue
		}
		g.Expect(f.Action).NotTo(BeEmpty(), "%s %s", f.Category, f.Key)
		g.Expect(f.Detail).NotTo(BeEmpty(), "%s %s", f.Category, f.Key)
		switch f.Category {
		case books.MissingAtProvider:
			g.Expect(f.Object).NotTo(BeEmpty(), "the cluster's side of %s", f.Key)
		case books.UnknownToCluster, books.RefundedOutside:
			g.Expect(f.ProviderIDs).To(HaveLen(1), "the provider's side of %s", f.Key)
		default:
			g.Expect(f.Object).NotTo(BeEmpty(), "the cluster's side of %s", f.Key)
			g.Expect(f.ProviderIDs).NotTo(BeEmpty(), "the provider's side of %s", f.Key)
		}
	}

	findings := books.Compare(b.records, b.objects)
	var dup, amount books.Finding
	for _, f := range findings {
		switch {
		case f.Category == books.Duplicate && f.Kind == books.Charge:
			dup = f
		case f.Category == books.AmountMismatch && f.Kind == books.Charge:
			amount = f
		}
	}
	g.Expect(dup.ProviderIDs).To(Equal([]string{"pi_order-0004", "pi_order-0004-again"}))
	g.Expect(dup.InLedger).To(BeTrue())
	g.Expect([]int64{amount.ClusterAmount, amount.ProviderAmount}).To(Equal([]int64{1007, 1008}), "to the minor unit")
}

func TestCompareOrderIsStable(t *testing.T) {
	g := NewWithT(t)
	b, _ := seeded(50)
	first := books.Compare(b.records, b.objects)
	slices.Reverse(b.records)
	slices.Reverse(b.objects)
	g.Expect(books.Compare(b.records, b.objects)).To(Equal(first), "the order of the input does not matter")
}
