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

// Package ledger keeps the operator's outcome ledger: the durable record of
// every finished payment, "<namespace>/<key> → fingerprint, provider
// account, charge, outcome, time", that outlives the PaymentJob, its
// PaymentProvider, its Secret and its namespace.
//
// The ledger is a sequence of cluster-scoped PaymentLedger pages. Entries are
// appended to the newest page with resourceVersion-guarded updates, so two
// replicas never lose or overwrite each other's entries; concurrent appends
// share one write (group commit). A full page is never written again, and
// retention deletes whole pages once their newest entry is older than the
// retention.
//
// The manager does not hold the entries: it keeps a 64-bit hash of every key
// (8 bytes an entry) and reads a page only when a key's hash is on it. New
// jobs are almost never in the ledger, so finding out costs no API request.
// Pages written by another replica are re-read when their resourceVersion
// moves past the one this process indexed.
package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// The index: what the manager keeps of the pages (the hashes of their keys),
// and how it stays current with what other processes write.

// Observe tells the ledger that the watch saw page name at resourceVersion
// rv; a page another process wrote is read again before the next Find or
// append. A deleted page is passed with an empty rv. A version older than
// the last one the watch reported (the watch relisted an etcd restored
// from a snapshot) makes the index stale until it is rebuilt.
func (l *Ledger) Observe(name, rv string) {
	if pageSeq(name) <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.observed != nil {
		l.observed[name] = rv
	}
	p, ok := l.pages[name]
	if rv == "" {
		delete(l.pages, name)
		if l.head != nil && l.head.Name == name {
			l.head = nil
		}
		return
	}
	if !ok {
		l.pages[name] = &page{seq: pageSeq(name), seen: rv, watched: rv}
		return
	}
	if p.watched != "" && newer(p.watched, rv) {
		l.rewound("page", name, "watched", rv, "after", p.watched)
	}
	p.watched = rv
	if newer(rv, p.seen) {
		p.seen = rv
	}
}

// WatchPages feeds Observe from an informer of the pages' metadata (the
// manager's cache holds a few hundred bytes a page, never the entries).
func (l *Ledger) WatchPages(ctx context.Context, informers cache.Informers) error {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(paymentsv1alpha1.GroupVersion.WithKind("PaymentLedger"))
	informer, err := informers.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("cannot watch ledger pages: %w", err)
	}
	observe := func(o any, deleted bool) {
		if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o, deleted = d.Obj, true
		}
		m, ok := o.(metav1.Object)
		if !ok {
			return
		}
		rv := m.GetResourceVersion()
		if deleted {
			rv = ""
		}
		l.Observe(m.GetName(), rv)
	}
	_, err = informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { observe(o, false) },
		UpdateFunc: func(_, o any) { observe(o, false) },
		DeleteFunc: func(o any) { observe(o, true) },
	})
	if err != nil {
		return fmt.Errorf("cannot watch ledger pages: %w", err)
	}
	return nil
}

// refreshDirty reads again every page another process wrote since this one
// read it.
func (l *Ledger) refreshDirty(ctx context.Context) error {
	return l.reread(ctx, func(name string, p *page) bool {
		return p.seen != "" && newer(p.seen, p.indexed) && name != l.writing
	}, false)
}

// refreshUnfinished reads again the pages before page seq that were not
// full when indexed: a later page exists, so they are full now, and the
// index may lack their last entries.
func (l *Ledger) refreshUnfinished(ctx context.Context, seq int) error {
	return l.reread(ctx, func(_ string, p *page) bool { return p.seq < seq && !p.full }, true)
}

// reread reads again the pages that stale picks (called with the lock
// held). final marks them final: full, whatever size this process would
// fill them to, as a later page exists.
func (l *Ledger) reread(ctx context.Context, stale func(name string, p *page) bool, final bool) error {
	// One caller at a time, and the pages are picked once the lock is
	// held: the workers that ask at once read a page once, not each.
	l.rereading.Lock()
	defer l.rereading.Unlock()
	l.mu.Lock()
	var names []string
	for name, p := range l.pages {
		if stale(name, p) {
			names = append(names, name)
		}
	}
	l.mu.Unlock()
	for _, name := range names {
		if _, _, err := l.readPage(ctx, name); err != nil {
			return err
		}
		pageRereadsTotal.Inc()
		if final {
			l.mu.Lock()
			if p, ok := l.pages[name]; ok {
				p.full = true
			}
			l.mu.Unlock()
		}
	}
	return nil
}

// readPage reads page name from the API server and indexes it; false when
// it is gone, and then forgotten.
//
// A read from the API server is never older than a version this process
// knew before it asked (indexed, written or watched): a copy that is, is a
// page of an etcd restored from a snapshot, and makes the index stale.
func (l *Ledger) readPage(ctx context.Context, name string) (*paymentsv1alpha1.PaymentLedger, bool, error) {
	known := l.known(name)
	var p paymentsv1alpha1.PaymentLedger
	if err := l.reader.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
		if apierrors.IsNotFound(err) {
			l.forget(name)
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("cannot read ledger page %s: %w", name, err)
	}
	if known != "" && newer(known, p.ResourceVersion) {
		l.mu.Lock()
		l.rewound("page", name, "read", p.ResourceVersion, "after", known)
		l.mu.Unlock()
		return nil, false, fmt.Errorf("%w: page %s read at resourceVersion %s after %s", ErrRebuilding, name, p.ResourceVersion, known)
	}
	l.index(&p)
	return &p, true, nil
}

// known is the newest resourceVersion of page name this process indexed,
// wrote or saw in the watch.
func (l *Ledger) known(name string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.pages[name]
	if !ok {
		return ""
	}
	if newer(p.indexed, p.seen) {
		return p.indexed
	}
	return p.seen
}

// newestSeq is the highest page sequence known.
func (l *Ledger) newestSeq() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	seq := 0
	for _, p := range l.pages {
		seq = max(seq, p.seq)
	}
	return seq
}

// index takes the hashes of p's keys, unless this process holds a newer copy.
func (l *Ledger) index(p *paymentsv1alpha1.PaymentLedger) {
	if pageSeq(p.Name) <= 0 {
		return
	}
	indexed := l.pageOf(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	old, ok := l.pages[p.Name]
	if ok && old.indexed != "" && !newer(p.ResourceVersion, old.indexed) {
		return
	}
	seen, watched := p.ResourceVersion, ""
	if ok {
		watched = old.watched
		if newer(old.seen, seen) {
			seen = old.seen
		}
	}
	indexed.seen, indexed.watched = seen, watched
	l.pages[p.Name] = indexed
	if l.head != nil && l.head.Name == p.Name && newer(p.ResourceVersion, l.head.ResourceVersion) {
		l.head = nil
	}
}

// pageOf is what the index keeps of p, seen at the version it was read.
func (l *Ledger) pageOf(p *paymentsv1alpha1.PaymentLedger) *page {
	hashes := make([]uint64, len(p.Entries))
	for i, e := range p.Entries {
		hashes[i] = l.hash(e.Key)
	}
	slices.Sort(hashes)
	var oldest, newest time.Time
	for _, e := range p.Entries {
		if e.At.After(newest) {
			newest = e.At.Time
		}
		if oldest.IsZero() || e.At.Time.Before(oldest) {
			oldest = e.At.Time
		}
	}
	return &page{seq: pageSeq(p.Name), indexed: p.ResourceVersion, seen: p.ResourceVersion, hashes: hashes,
		oldest: oldest, newest: newest, full: full(p, l.opts.MaxEntriesPerPage), bytes: storedSize(p)}
}

// storedSize is the size of p as the API server stores it in etcd: the
// JSON encoding of the object with its apiVersion and kind and without its
// resourceVersion (etcd keeps that as the key's revision), ended by the
// newline of Go's JSON encoder, which the API server encodes custom
// resources with. TestLedgerSizeAfterAppends compares it with etcd, to the
// byte.
func storedSize(p *paymentsv1alpha1.PaymentLedger) int {
	stored := *p
	stored.TypeMeta = metav1.TypeMeta{APIVersion: paymentsv1alpha1.GroupVersion.String(), Kind: "PaymentLedger"}
	stored.ResourceVersion = ""
	var n byteCounter
	if err := json.NewEncoder(&n).Encode(&stored); err != nil {
		// Never for a page the API server returned; counted as empty.
		return 0
	}
	return int(n)
}

// byteCounter is an io.Writer that counts the bytes written to it.
type byteCounter int

// Write counts b.
func (c *byteCounter) Write(b []byte) (int, error) {
	*c += byteCounter(len(b))
	return len(b), nil
}

// forget drops a page that is gone.
func (l *Ledger) forget(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.pages, name)
	if l.head != nil && l.head.Name == name {
		l.head = nil
	}
}

// pagesHolding names the pages on which a key with hash h may be.
// None while the index is stale.
func (l *Ledger) pagesHolding(h uint64) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stale {
		return nil
	}
	var names []string
	for name, p := range l.pages {
		if _, ok := slices.BinarySearch(p.hashes, h); ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

func (l *Ledger) hash(key string) uint64 {
	return maphash.String(l.seed, key)
}

// newer reports whether resourceVersion a is newer than b. Versions that
// cannot be compared count as newer, so the page is read again.
func newer(a, b string) bool {
	if b == "" {
		return a != ""
	}
	c, err := resourceversion.CompareResourceVersion(a, b)
	if err != nil {
		return a != b
	}
	return c > 0
}
