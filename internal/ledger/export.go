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

package ledger

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// Reading the ledger in bulk, for a copy to another backend and its
// verification: every entry (ReadAll), or the entries of many keys at once
// (FindAll).

// ReadAll hands every entry of the PaymentLedger pages to fn, page after
// page in the order of their names (oldest first), as reader reads them
// from the API server: pageListLimit pages a request, so that memory holds
// a few pages whatever the ledger's size. It needs no Ledger, and reader
// must not be a cache (a manager's APIReader is fine). An error of fn ends
// it and is returned.
//
// The pages are read as they were when the first request was answered; a
// later entry is left for the next call. A list that outlives the API
// server's compaction of that version (some minutes) goes on from where it
// was, reading the pages after it as they are then: an entry is never read
// twice, and entries appended meanwhile to a page already read are left
// for the next call.
func ReadAll(ctx context.Context, reader client.Reader, fn func(Entry) error) error {
	cont := ""
	for {
		var list paymentsv1alpha1.PaymentLedgerList
		err := reader.List(ctx, &list, client.Limit(pageListLimit), client.Continue(cont))
		if next, ok := expiredContinue(err); ok && cont != "" {
			// The API server says where to go on, at its newest version.
			cont = next
			continue
		}
		if err != nil {
			return fmt.Errorf("cannot list ledger pages: %w", err)
		}
		for i := range list.Items {
			p := &list.Items[i]
			for _, e := range p.Entries {
				if err := fn(entryOf(p, e)); err != nil {
					return err
				}
			}
		}
		if cont = list.Continue; cont == "" {
			return nil
		}
	}
}

// expiredContinue returns the token the API server gives to go on with a
// list whose continue token expired (410 Gone: the version it was taken at
// is compacted), reading the rest at the newest version.
func expiredContinue(err error) (string, bool) {
	if !apierrors.IsResourceExpired(err) {
		return "", false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Continue == "" {
		return "", false
	}
	return status.Status().Continue, true
}

// FindAll returns the entries recorded under keys, by key; a key that is
// not recorded has none. It is Find for many keys: keys the index does not
// hold cost no API request, and a page that holds any of them is read once.
// Where a key is on two pages, the entry of the first page is returned, as
// Find does.
func (l *Ledger) FindAll(ctx context.Context, keys []string) (map[string]Entry, error) {
	if err := l.waitLoaded(ctx); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		if err := l.rebuildIfStale(ctx); err != nil {
			return nil, err
		}
		found, err := l.findAll(ctx, keys)
		if errors.Is(err, ErrRebuilding) && attempt < maxRebuilds {
			continue
		}
		return found, err
	}
}

// findAll is FindAll on an index that is not known to be stale, as find is
// Find.
func (l *Ledger) findAll(ctx context.Context, keys []string) (map[string]Entry, error) {
	l.gate.RLock()
	defer l.gate.RUnlock()
	if err := l.checkStale(); err != nil {
		return nil, err
	}
	if err := l.refreshDirty(ctx); err != nil {
		return nil, err
	}
	if err := l.refreshUnfinished(ctx, l.newestSeq()); err != nil {
		return nil, err
	}
	wanted := make(map[string]bool, len(keys))
	holding := map[string]bool{}
	for _, key := range keys {
		wanted[key] = true
		for _, name := range l.pagesHolding(l.hash(key)) {
			holding[name] = true
		}
	}
	found := map[string]Entry{}
	for _, name := range slices.Sorted(maps.Keys(holding)) {
		p, ok, err := l.readPage(ctx, name)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		for _, e := range p.Entries {
			if _, done := found[e.Key]; wanted[e.Key] && !done {
				found[e.Key] = entryOf(p, e)
			}
		}
	}
	if err := l.checkStale(); err != nil {
		return nil, err
	}
	return found, nil
}

// PageSpan is a page's name and the time span of its entries.
type PageSpan struct {
	Name           string
	Oldest, Newest time.Time
}

// Spans lists the span of every page, pageListLimit pages a request: what a
// reader of one time window uses to read only the pages that overlap it.
// Entries are appended as outcomes are recorded, so a page spans a short
// time and a window overlaps few pages.
func Spans(ctx context.Context, reader client.Reader) ([]PageSpan, error) {
	var spans []PageSpan
	cont := ""
	for {
		var list paymentsv1alpha1.PaymentLedgerList
		err := reader.List(ctx, &list, client.Limit(pageListLimit), client.Continue(cont))
		if token, expired := expiredContinue(err); expired {
			cont = token
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, p := range list.Items {
			s := PageSpan{Name: p.Name}
			if p.Summary.Oldest != nil && p.Summary.Newest != nil {
				s.Oldest, s.Newest = p.Summary.Oldest.Time, p.Summary.Newest.Time
			} else if len(p.Entries) > 0 {
				// A page without a summary is read for any window.
				s.Oldest, s.Newest = time.Time{}, time.Unix(1<<62, 0)
			}
			spans = append(spans, s)
		}
		if cont = list.Continue; cont == "" {
			return spans, nil
		}
	}
}

// ReadPage hands fn every entry of the page name; a page deleted meanwhile
// (retention) has none.
func ReadPage(ctx context.Context, reader client.Reader, name string, fn func(Entry) error) error {
	var p paymentsv1alpha1.PaymentLedger
	if err := reader.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
		return client.IgnoreNotFound(err)
	}
	for _, e := range p.Entries {
		if err := fn(entryOf(&p, e)); err != nil {
			return err
		}
	}
	return nil
}

// IndexedSpans returns the span of every page from this process's index,
// with no API request, and false when the index cannot be trusted for it
// (not loaded yet, or stale after resourceVersions went backwards): then
// use Spans. A page another process wrote since this one read it, and the
// newest page, which appends still change, span to the end of time, so that
// a window reads them whatever they hold now.
func (l *Ledger) IndexedSpans() ([]PageSpan, bool) {
	select {
	case <-l.loaded:
	default:
		return nil, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stale {
		return nil, false
	}
	spans := make([]PageSpan, 0, len(l.pages))
	newestSeq := 0
	for _, p := range l.pages {
		newestSeq = max(newestSeq, p.seq)
	}
	for name, p := range l.pages {
		s := PageSpan{Name: name, Oldest: p.oldest, Newest: p.newest}
		if p.indexed != p.seen || p.seq == newestSeq || p.indexed == "" {
			s.Newest = time.Unix(1<<62, 0)
		}
		spans = append(spans, s)
	}
	slices.SortFunc(spans, func(a, b PageSpan) int { return strings.Compare(a.Name, b.Name) })
	return spans, true
}
