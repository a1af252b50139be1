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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// Rewinds: resourceVersions that go backwards.
//
// An etcd restored from a snapshot without --bump-revision, with the
// manager left running, serves pages older than the copies indexed here,
// and numbers new writes with versions this process has seen already; one
// restored with --bump-revision makes the watch relist, with pages older
// than the ones it reported. An index kept across that would call outcomes
// recorded that the restore lost (and never write them), refuse to index
// new entries as "older" (Find misses them) and let the TTL collector
// delete jobs on a Has that is no longer true.
//
// So a version that goes backwards makes the index stale: the watch
// reporting a page at a version older than the last it reported, a read
// returning a page older than a version known before the read, a page
// listed older than the copy indexed, or the newest page gone under an
// append. Until the index is rebuilt from a fresh list of the pages, Has
// says false and Find and Record return ErrRebuilding. The rebuild runs at
// the next Find or append, or in the loop of Start, whichever comes first.

// ErrRebuilding is returned, wrapped, by Find and Record while the ledger
// rebuilds its index after resourceVersions went backwards (an etcd
// restored from a snapshot): the caller retries later.
var ErrRebuilding = errors.New("the outcome ledger is rebuilding its index after resourceVersions went backwards")

const (
	// maxRebuilds bounds the rebuilds one Find or append waits for.
	maxRebuilds = 3
	// verifyInterval is how often the pages are listed, their metadata
	// only, to compare their versions with the index: a watch that
	// resumed after a restore without relisting reports nothing.
	verifyInterval = 20 * time.Second
)

// markStale makes the index stale (called with mu held); why says what
// showed it, as log key/values.
func (l *Ledger) markStale(why ...any) {
	if !l.stale {
		l.stale, l.staleWhy = true, why
	}
	l.head = nil
	select {
	case l.rebuild <- struct{}{}:
	default:
	}
}

// rewound makes the index stale because a page's resourceVersion went
// backwards (called with mu held), and tells Options.OnRewind.
func (l *Ledger) rewound(why ...any) {
	l.markStale(why...)
	if l.opts.OnRewind != nil {
		l.opts.OnRewind(why...)
	}
}

// checkStale returns ErrRebuilding while the index is stale.
func (l *Ledger) checkStale() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stale {
		return ErrRebuilding
	}
	return nil
}

// rebuildIfStale rebuilds a stale index from a fresh list of the pages,
// while no Find or append runs. It returns an error wrapping ErrRebuilding
// when the list fails.
func (l *Ledger) rebuildIfStale(ctx context.Context) error {
	if l.checkStale() == nil {
		return nil
	}
	l.gate.Lock()
	defer l.gate.Unlock()
	l.mu.Lock()
	if !l.stale {
		l.mu.Unlock()
		return nil
	}
	why := l.staleWhy
	l.observed = map[string]string{}
	l.mu.Unlock()

	pages := map[string]*page{}
	err := l.listPages(ctx, func(p *paymentsv1alpha1.PaymentLedger) {
		if pageSeq(p.Name) > 0 {
			pages[p.Name] = l.pageOf(p)
		}
	})

	l.mu.Lock()
	defer l.mu.Unlock()
	observed := l.observed
	l.observed = nil
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRebuilding, err)
	}
	// What the watch reported meanwhile: a write after the list is read
	// again; a report older than the list is of the past, and an older
	// report after this one is a rewind again.
	for name, rv := range observed {
		p, ok := pages[name]
		switch {
		case rv == "" || !ok:
			// A page deleted or created while listing: read when asked.
			if rv != "" {
				pages[name] = &page{seq: pageSeq(name), seen: rv, watched: rv}
			} else {
				delete(pages, name)
			}
		case newer(rv, p.indexed):
			p.seen, p.watched = rv, rv
		default:
			p.watched = rv
		}
	}
	entries := 0
	for _, p := range pages {
		entries += len(p.hashes)
	}
	l.pages, l.head, l.stale, l.staleWhy = pages, nil, false, nil
	indexRebuildsTotal.Inc()
	logger := l.logger
	if logger.GetSink() == nil {
		logger = log.FromContext(ctx).WithName("ledger")
	}
	logger.Info("Ledger index rebuilt after resourceVersions went backwards", append(why, "pages", len(pages), "entries", entries)...)
	return nil
}

// verify lists the pages' metadata and compares it with the index: a page
// older than the copy indexed makes the index stale, a page gone is
// forgotten, and a newer one is read again before the next Find or append.
func (l *Ledger) verify(ctx context.Context) error {
	// Only what was known before the list is compared with it.
	l.mu.Lock()
	before := make(map[string]string, len(l.pages))
	for name, p := range l.pages {
		if p.indexed != "" {
			before[name] = p.indexed
		}
	}
	l.mu.Unlock()
	listed := map[string]string{}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(paymentsv1alpha1.GroupVersion.WithKind("PaymentLedgerList"))
	for cont := ""; ; {
		if err := l.reader.List(ctx, list, client.Limit(verifyListLimit), client.Continue(cont)); err != nil {
			return fmt.Errorf("cannot list ledger pages: %w", err)
		}
		for _, m := range list.Items {
			listed[m.Name] = m.ResourceVersion
		}
		if cont = list.Continue; cont == "" {
			break
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, indexed := range before {
		p, ok := l.pages[name]
		if !ok || p.indexed != indexed {
			continue // changed while listing: compared next time
		}
		rv, ok := listed[name]
		switch {
		case !ok:
			delete(l.pages, name)
			if l.head != nil && l.head.Name == name {
				l.head = nil
			}
		case newer(indexed, rv):
			l.rewound("page", name, "listed", rv, "after", indexed)
		case newer(rv, p.seen):
			p.seen = rv
		}
	}
	return nil
}

// verifyListLimit is how many pages' metadata one list request returns.
const verifyListLimit = 500
