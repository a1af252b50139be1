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
	"cmp"
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"time"

	"golang.org/x/time/rate"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/books"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// result is what a run found: the report to store (discrepancies, and the
// matched rows too when the spec asks for all), and the counts of every
// finding.
type result struct {
	report books.Report
	counts map[books.Category]int
	// charges and refunds count the findings of each kind.
	charges, refunds int64
	// settling are the ids of the provider's objects that the cluster
	// waits for the provider to settle: not compared, not missing.
	settling map[string]bool
}

// tally adds a run's findings up, slice by slice. It holds the findings it
// keeps and 8 bytes a key judged, not the records or objects.
type tally struct {
	result
	all  bool
	seed maphash.Seed
	// judgedKeys are the hashes of the keys judged in earlier slices,
	// sorted; fresh those of the slice being compared. unmatched holds
	// the few judged keys whose finding was not Matched.
	judgedKeys, fresh []uint64
	unmatched         map[uint64]bool
	// looked are the ids of objects a lookup found: every object under its
	// key, which a later slice may list again.
	looked map[string]bool
	// carry are the refunds made without one of our keys whose charge no
	// slice compared yet.
	carry []books.Object
}

func newTally(all bool) *tally {
	return &tally{result: result{counts: map[books.Category]int{}, settling: map[string]bool{}}, all: all, seed: maphash.MakeSeed(),
		unmatched: map[uint64]bool{}, looked: map[string]bool{}}
}

func (t *tally) hash(k books.Kind, key string) uint64 {
	return maphash.String(t.seed, string(k)+"\x00"+key)
}

// judged reports whether a key was compared in an earlier slice.
func (t *tally) judged(k books.Kind, key string) bool {
	_, ok := slices.BinarySearch(t.judgedKeys, t.hash(k, key))
	return ok
}

// endSlice adds the keys judged in a slice to those of the earlier ones.
func (t *tally) endSlice() {
	// Exactly as long as it must be: a run over a million payments holds 8
	// MB of them, not up to twice that.
	slices.Sort(t.fresh)
	merged := make([]uint64, 0, len(t.judgedKeys)+len(t.fresh))
	i, j := 0, 0
	for i < len(t.judgedKeys) || j < len(t.fresh) {
		switch {
		case j == len(t.fresh) || (i < len(t.judgedKeys) && t.judgedKeys[i] < t.fresh[j]):
			merged = append(merged, t.judgedKeys[i])
			i++
		default:
			merged = append(merged, t.fresh[j])
			j++
		}
	}
	t.judgedKeys = slices.Compact(merged)
	t.fresh = t.fresh[:0]
}

// add counts findings and keeps those the report lists.
func (t *tally) add(findings []books.Finding) {
	for _, f := range findings {
		t.counts[f.Category]++
		if f.Kind == books.Refund {
			t.refunds++
		} else {
			t.charges++
		}
		if f.Key != "" {
			h := t.hash(f.Kind, f.Key)
			t.fresh = append(t.fresh, h)
			if f.Category.Discrepancy() {
				t.unmatched[h] = true
			}
		}
		if t.all || f.Category.Discrepancy() {
			t.report.Findings = append(t.report.Findings, f)
		}
	}
}

// ours keeps the provider's objects a slice compares: not under a key
// still in flight, not of another namespace, and not a charge without a
// key when the run is limited to namespaces. An object under a key judged
// in an earlier slice that no lookup found there is another one under the
// key: it is reported at once.
func (t *tally) ours(objects []books.Object, b *clusterBooks, s scope) []books.Object {
	kept := objects[:0]
	for _, o := range objects {
		switch {
		case b.inFlight[o.Key]:
			if b.settling[o.Key] && o.Status == books.StatusPending {
				t.settling[o.ID] = true
			}
		case o.Key == "" && o.Kind == books.Charge && len(s.namespaces) > 0:
		case o.Key != "" && !s.namespace(o.Key):
		case o.Key != "" && t.judged(o.Kind, o.Key):
			if !t.looked[o.ID] && (o.Status == books.StatusSucceeded || o.Status == books.StatusPending) {
				t.late(o)
			}
		default:
			kept = append(kept, o)
		}
	}
	return kept
}

// late reports an object that moved money under a key judged in an
// earlier slice without it: the key moved money more than once. A Matched
// finding of the key becomes this Duplicate.
func (t *tally) late(o books.Object) {
	if h := t.hash(o.Kind, o.Key); !t.unmatched[h] {
		t.counts[books.Matched]--
		if o.Kind == books.Refund {
			t.refunds--
		} else {
			t.charges--
		}
		t.report.Findings = slices.DeleteFunc(t.report.Findings, func(f books.Finding) bool {
			return f.Category == books.Matched && f.Kind == o.Kind && f.Key == o.Key
		})
	}
	t.add([]books.Finding{books.LateDuplicate(o)})
}

// run gathers both sides, a slice of the window at a time, and compares
// them.
func (r *Reconciler) run(ctx context.Context, pr *paymentsv1alpha1.PaymentReconciliation, provider payment.Provider, s scope) (result, int64, error) {
	perSecond := DefaultRequestsPerSecond
	if pr.Spec.RequestsPerSecond != nil {
		perSecond = int(*pr.Spec.RequestsPerSecond)
	}
	// A second's worth of burst: the time a slice takes to compare is not
	// lost, and no second sends more than the budget allows over two.
	rd := &reader{provider: provider, budget: rate.NewLimiter(rate.Limit(perSecond), perSecond),
		sliceObjects: cmp.Or(r.SliceObjects, DefaultSliceObjects)}
	t := newTally(pr.Spec.Report == paymentsv1alpha1.ReportAll)
	t.report = books.Report{Provider: describeAccount(s.account), From: s.from, To: s.to}
	b, err := gather(ctx, r.Reader, s)
	if err != nil {
		return result{}, rd.requests, err
	}
	var lr LedgerReader
	if r.Ledger != nil {
		if lr, err = r.Ledger.Reader(ctx); err != nil {
			return result{}, rd.requests, ledgerError{fmt.Errorf("cannot read the outcome ledger: %w", err)}
		}
	}
	l, listed := provider.(payment.Lister)
	var disputed map[string]string
	if listed {
		// A provider whose adapter can list may have no list endpoint.
		disputed, listed, err = rd.disputes(ctx, l, s.from, r.Clock.Now())
		if err != nil {
			return result{}, rd.requests, providerError{err}
		}
	}
	t.report.Listed = listed
	if !listed {
		err := compareSlice(ctx, rd, lr, b, s, t, s.from, s.to, nil, false)
		books.Sort(t.report.Findings)
		return t.result, rd.requests, err
	}
	end := s.to
	err = rd.slices(ctx, l, s.from, s.to, rd.sliceObjects, disputed, func(start time.Time, objects []books.Object) error {
		if err := compareSlice(ctx, rd, lr, b, s, t, start, end, objects, true); err != nil {
			return err
		}
		end = start
		return nil
	})
	books.Sort(t.report.Findings)
	return t.result, rd.requests, err
}
