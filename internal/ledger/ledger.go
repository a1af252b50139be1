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
	"errors"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// DefaultRetention keeps entries for 400 days: longer than a year of
// statements, refunds and disputes.
const DefaultRetention = 400 * 24 * time.Hour

const (
	// maxEntriesPerPage and maxPageBytes bound a page well under etcd's
	// 1.5 MiB request limit and the 1 MiB the operator promises. Small
	// pages also keep each append cheap: an append rewrites its page.
	maxEntriesPerPage = 500
	maxPageBytes      = 128 << 10
	// entryOverhead is the JSON of an entry besides its strings.
	entryOverhead = 120
	// pageListLimit is how many pages one list request returns at startup.
	pageListLimit = 10
	// maxAppendAttempts bounds the retries of an append that conflicts
	// with another replica's.
	maxAppendAttempts = 60
)

// Entry is one finished payment.
type Entry struct {
	// Key is the idempotency key the job sent: "<namespace>/<key>".
	Key string
	// Fingerprint is the job's request fingerprint (status.requestHash).
	Fingerprint string
	// Provider is the account the key was sent to.
	Provider paymentsv1alpha1.ProviderIdentity
	// Charge is the provider's id of the charge, if any.
	Charge string
	// Outcome is Completed or Failed.
	Outcome paymentsv1alpha1.LedgerOutcome
	// Reason is a Failed entry's reason, or why a person resolved it.
	Reason string
	// ResolvedBy names the person who resolved the outcome, if one did.
	ResolvedBy string
	// At is when the outcome was recorded.
	At time.Time
}

// Options configure a Ledger.
type Options struct {
	// Retention is how long entries are kept at least; DefaultRetention
	// when zero.
	Retention time.Duration
	// Clock is the time source of retention; the real clock when nil.
	Clock clock.PassiveClock
	// MaxEntriesPerPage overrides the page size (tests).
	MaxEntriesPerPage int
}

// Ledger is the outcome ledger of one manager process. It is safe for
// concurrent use, and any number of processes may share the same pages.
type Ledger struct {
	writer client.Client
	reader client.Reader
	opts   Options
	seed   maphash.Seed

	loaded chan struct{}
	kick   chan struct{}

	mu sync.Mutex
	// pages indexes every page by name.
	pages map[string]*page
	// head is this process's latest copy of the newest page.
	head *paymentsv1alpha1.PaymentLedger
	// next collects entries for the next append.
	next *batch
	// writing is the page this process is writing now: the watch may
	// report the write before it is indexed, and that is no reason to
	// read the page again.
	writing string
}

// page is what the manager keeps of one PaymentLedger: the hashes of its keys.
type page struct {
	seq int
	// indexed is the resourceVersion the hashes were taken from; seen is
	// the newest one the watch reported. A page is dirty while they differ.
	indexed, seen string
	hashes        []uint64
	newest        time.Time
	// full is true when the copy indexed was full: then it is final,
	// since a full page is never written again.
	full bool
}

// batch is the entries of one append and the callers waiting for it.
type batch struct {
	entries []Entry
	done    chan struct{}
	err     error
}

// New returns a ledger that writes through writer and reads pages through
// reader, which must read from the API server, not from a cache.
func New(writer client.Client, reader client.Reader, opts Options) *Ledger {
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.MaxEntriesPerPage <= 0 {
		opts.MaxEntriesPerPage = maxEntriesPerPage
	}
	return &Ledger{
		writer: writer,
		reader: reader,
		opts:   opts,
		seed:   maphash.MakeSeed(),
		loaded: make(chan struct{}),
		kick:   make(chan struct{}, 1),
		pages:  map[string]*page{},
		next:   &batch{done: make(chan struct{})},
	}
}

// ErrNotLoaded is returned while the ledger has not read its pages yet.
var ErrNotLoaded = errors.New("the outcome ledger is not loaded yet")

// Loaded reports whether the ledger has indexed every page, for a readiness
// check.
func (l *Ledger) Loaded() error {
	select {
	case <-l.loaded:
		return nil
	default:
		return ErrNotLoaded
	}
}

// loadWait bounds how long a caller waits for the pages to be indexed, so
// that a ledger that cannot be read (its CRD missing, the API server down)
// returns errors instead of holding the callers.
const loadWait = 10 * time.Second

// waitLoaded blocks until the pages are indexed, for at most loadWait.
func (l *Ledger) waitLoaded(ctx context.Context) error {
	timer := time.NewTimer(loadWait)
	defer timer.Stop()
	select {
	case <-l.loaded:
		return nil
	case <-timer.C:
		return ErrNotLoaded
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrNotLoaded, ctx.Err())
	}
}

// Find returns the entry recorded under key. It makes an API request only
// when the key's hash is on a page, or when another process wrote a page
// since this one read it.
func (l *Ledger) Find(ctx context.Context, key string) (Entry, bool, error) {
	if err := l.waitLoaded(ctx); err != nil {
		return Entry{}, false, err
	}
	if err := l.refreshDirty(ctx); err != nil {
		return Entry{}, false, err
	}
	if err := l.refreshUnfinished(ctx, l.newestSeq()); err != nil {
		return Entry{}, false, err
	}
	h := l.hash(key)
	for _, name := range l.pagesHolding(h) {
		var p paymentsv1alpha1.PaymentLedger
		if err := l.reader.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
			if apierrors.IsNotFound(err) {
				l.forget(name)
				continue
			}
			return Entry{}, false, fmt.Errorf("cannot read ledger page %s: %w", name, err)
		}
		l.index(&p)
		for _, e := range p.Entries {
			if e.Key == key {
				return entryOf(&p, e), true, nil
			}
		}
	}
	return Entry{}, false, nil
}

// Has reports whether key is on a page as far as this process knows,
// without an API request. It may be wrong in both directions while another
// process's write has not been read yet, and says true for the rare key
// whose 64-bit hash is another key's; use Find to be sure.
func (l *Ledger) Has(key string) bool {
	return len(l.pagesHolding(l.hash(key))) > 0
}

// Record appends e to the ledger and returns once it is stored, or once an
// entry under the same key is found there (the first outcome stays).
// Concurrent calls share one write.
func (l *Ledger) Record(ctx context.Context, e Entry) error {
	if err := l.waitLoaded(ctx); err != nil {
		return err
	}
	l.mu.Lock()
	b := l.next
	b.entries = append(b.entries, e)
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default:
	}
	select {
	case <-b.done:
		return b.err
	case <-ctx.Done():
		// The append goes on without this caller; it may still land.
		return ctx.Err()
	}
}

// NeedLeaderElection is false: every replica records the outcomes it writes.
func (l *Ledger) NeedLeaderElection() bool { return false }

// Start indexes the pages, then appends what Record collects and enforces
// the retention until ctx ends. It is a manager.Runnable.
func (l *Ledger) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("ledger")
	for delay := time.Second; ; delay = min(2*delay, time.Minute) {
		err := l.load(ctx)
		if err == nil {
			break
		}
		logger.Error(err, "Cannot read the outcome ledger, retrying", "after", delay)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
	}
	close(l.loaded)
	l.mu.Lock()
	entries, pages := 0, len(l.pages)
	for _, p := range l.pages {
		entries += len(p.hashes)
	}
	l.mu.Unlock()
	logger.Info("Outcome ledger loaded", "pages", pages, "entries", entries)

	prune := time.NewTicker(pruneInterval)
	defer prune.Stop()
	if err := l.Prune(ctx); err != nil {
		logger.Error(err, "Cannot apply the ledger retention")
	}
	for {
		select {
		case <-ctx.Done():
			l.failPending(ctx.Err())
			return nil
		case <-prune.C:
			if err := l.Prune(ctx); err != nil {
				logger.Error(err, "Cannot apply the ledger retention")
			}
		case <-l.kick:
			l.flush(ctx)
		}
	}
}

// pruneInterval is how often expired pages are looked for.
const pruneInterval = time.Hour

// load indexes every page, a few at a time, so that the manager's memory
// holds their hashes only.
func (l *Ledger) load(ctx context.Context) error {
	var list paymentsv1alpha1.PaymentLedgerList
	cont := ""
	for {
		if err := l.reader.List(ctx, &list, client.Limit(pageListLimit), client.Continue(cont)); err != nil {
			return fmt.Errorf("cannot list ledger pages: %w", err)
		}
		for i := range list.Items {
			l.index(&list.Items[i])
		}
		if cont = list.Continue; cont == "" {
			return nil
		}
		list = paymentsv1alpha1.PaymentLedgerList{}
	}
}

// flush appends every collected entry, batch after batch.
func (l *Ledger) flush(ctx context.Context) {
	for {
		l.mu.Lock()
		b := l.next
		if len(b.entries) == 0 {
			l.mu.Unlock()
			return
		}
		l.next = &batch{done: make(chan struct{})}
		l.mu.Unlock()
		b.err = l.append(ctx, b.entries)
		close(b.done)
	}
}

// failPending ends the waits of entries that will not be appended.
func (l *Ledger) failPending(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next.err = err
	close(l.next.done)
	l.next = &batch{done: make(chan struct{})}
}

// append stores entries on the newest page, starting new pages as pages
// fill. A conflict means another process appended first: its page is read
// again and the append retried, without the entries it already holds.
func (l *Ledger) append(ctx context.Context, entries []Entry) error {
	for attempt := 1; ; attempt++ {
		err := l.tryAppend(ctx, entries)
		if err == nil {
			appendsTotal.Inc()
			return nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) || attempt == maxAppendAttempts {
			return fmt.Errorf("cannot append to the outcome ledger: %w", err)
		}
		appendConflictsTotal.Inc()
		l.mu.Lock()
		l.head = nil
		l.mu.Unlock()
		// Many processes appending at once take turns: exponential
		// backoff with full jitter, so that they do not collide again.
		backoff := min(appendBackoff<<min(attempt, 6), maxAppendBackoff)
		select {
		case <-ctx.Done():
			return fmt.Errorf("cannot append to the outcome ledger: %w", ctx.Err())
		case <-time.After(time.Duration(rand.Int64N(int64(backoff)))):
		}
	}
}

// appendBackoff and maxAppendBackoff pace the retries of appends that
// conflict.
const (
	appendBackoff    = 5 * time.Millisecond
	maxAppendBackoff = 250 * time.Millisecond
)

func (l *Ledger) tryAppend(ctx context.Context, entries []Entry) error {
	if err := l.refreshDirty(ctx); err != nil {
		return err
	}
	head, err := l.newestPage(ctx)
	if err != nil {
		return err
	}
	todo := entries
	for {
		// Every page before this one is full, so final: one indexed
		// before it filled is read again, or an outcome another process
		// put there last could be appended a second time here.
		if err := l.refreshUnfinished(ctx, pageSeq(head.Name)); err != nil {
			return err
		}
		// Entries already on a page stay as they are: the first outcome
		// wins. Checked again on each page written to, since another
		// process may have put the same outcome there.
		if todo = l.unrecorded(head, todo); len(todo) == 0 {
			return nil
		}
		if full(head, l.opts.MaxEntriesPerPage) {
			if head, err = l.startPage(ctx, head); err != nil {
				return err
			}
			continue
		}
		updated := head.DeepCopy()
		n := 0
		for n < len(todo) && !full(updated, l.opts.MaxEntriesPerPage) {
			addEntry(updated, todo[n])
			n++
		}
		l.mu.Lock()
		l.writing = updated.Name
		l.mu.Unlock()
		if head.ResourceVersion == "" {
			err = l.writer.Create(ctx, updated)
			if apierrors.IsAlreadyExists(err) {
				// Another process started this page first: append to
				// its copy on the next attempt.
				var theirs paymentsv1alpha1.PaymentLedger
				if getErr := l.reader.Get(ctx, client.ObjectKey{Name: updated.Name}, &theirs); getErr == nil {
					l.index(&theirs)
				}
			}
		} else {
			err = l.writer.Update(ctx, updated)
		}
		if err != nil {
			l.mu.Lock()
			l.writing = ""
			l.mu.Unlock()
			return err
		}
		l.index(updated)
		l.mu.Lock()
		l.head = updated
		l.writing = ""
		l.mu.Unlock()
		head, todo = updated, todo[n:]
	}
}

// unrecorded is entries without the ones whose key is on page head or, as
// far as the index knows, on another page, and without repeated keys.
func (l *Ledger) unrecorded(head *paymentsv1alpha1.PaymentLedger, entries []Entry) []Entry {
	seen := make(map[string]bool, len(head.Entries)+len(entries))
	for _, e := range head.Entries {
		seen[e.Key] = true
	}
	var todo []Entry
	for _, e := range entries {
		if seen[e.Key] || l.Has(e.Key) {
			continue
		}
		seen[e.Key] = true
		todo = append(todo, e)
	}
	return todo
}

// newestPage returns the page appends go to: this process's copy of it, or
// the page with the highest sequence read from the API server, or a new
// first page not created yet.
func (l *Ledger) newestPage(ctx context.Context) (*paymentsv1alpha1.PaymentLedger, error) {
	l.mu.Lock()
	head := l.head
	newest, seq := "", 0
	for name, p := range l.pages {
		if p.seq > seq {
			newest, seq = name, p.seq
		}
	}
	l.mu.Unlock()
	if head != nil && head.Name == newest {
		return head, nil
	}
	if newest == "" {
		return newPage(1), nil
	}
	var p paymentsv1alpha1.PaymentLedger
	if err := l.reader.Get(ctx, client.ObjectKey{Name: newest}, &p); err != nil {
		if apierrors.IsNotFound(err) {
			l.forget(newest)
			// Retention never deletes the newest page; an administrator
			// did. Append after it, so no sequence number is used twice.
			return newPage(seq + 1), nil
		}
		return nil, fmt.Errorf("cannot read ledger page %s: %w", newest, err)
	}
	l.index(&p)
	return &p, nil
}

// startPage returns the page after the full page head: created by another
// process already, or new.
func (l *Ledger) startPage(ctx context.Context, head *paymentsv1alpha1.PaymentLedger) (*paymentsv1alpha1.PaymentLedger, error) {
	seq := pageSeq(head.Name) + 1
	var p paymentsv1alpha1.PaymentLedger
	err := l.reader.Get(ctx, client.ObjectKey{Name: pageName(seq)}, &p)
	switch {
	case err == nil:
		l.index(&p)
		return &p, nil
	case apierrors.IsNotFound(err):
		return newPage(seq), nil
	default:
		return nil, fmt.Errorf("cannot read ledger page %s: %w", pageName(seq), err)
	}
}

// Prune deletes the pages whose newest entry is older than the retention,
// except the newest page, which appends still go to.
func (l *Ledger) Prune(ctx context.Context) error {
	cutoff := l.opts.Clock.Now().Add(-l.opts.Retention)
	l.mu.Lock()
	type expired struct{ name, rv string }
	var victims []expired
	maxSeq := 0
	for _, p := range l.pages {
		maxSeq = max(maxSeq, p.seq)
	}
	for name, p := range l.pages {
		if p.seq < maxSeq && p.newest.Before(cutoff) && p.indexed == p.seen {
			victims = append(victims, expired{name, p.indexed})
		}
	}
	l.mu.Unlock()
	var errs []error
	for _, v := range victims {
		p := &paymentsv1alpha1.PaymentLedger{ObjectMeta: metav1.ObjectMeta{Name: v.name}}
		err := l.writer.Delete(ctx, p, client.Preconditions{ResourceVersion: &v.rv})
		switch {
		case err == nil || apierrors.IsNotFound(err):
			l.forget(v.name)
			prunedPagesTotal.Inc()
		case apierrors.IsConflict(err):
			// Written since it was read: looked at again next time.
		default:
			errs = append(errs, fmt.Errorf("cannot delete expired ledger page %s: %w", v.name, err))
		}
	}
	return errors.Join(errs...)
}

// Observe tells the ledger that the watch saw page name at resourceVersion
// rv; a page another process wrote is read again before the next Find or
// append. A deleted page is passed with an empty rv.
func (l *Ledger) Observe(name, rv string) {
	if pageSeq(name) <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.pages[name]
	if rv == "" {
		delete(l.pages, name)
		if l.head != nil && l.head.Name == name {
			l.head = nil
		}
		return
	}
	if !ok {
		l.pages[name] = &page{seq: pageSeq(name), seen: rv}
		return
	}
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
	l.mu.Lock()
	var dirty []string
	for name, p := range l.pages {
		if p.seen != "" && newer(p.seen, p.indexed) && name != l.writing {
			dirty = append(dirty, name)
		}
	}
	l.mu.Unlock()
	for _, name := range dirty {
		var p paymentsv1alpha1.PaymentLedger
		if err := l.reader.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
			if apierrors.IsNotFound(err) {
				l.forget(name)
				continue
			}
			return fmt.Errorf("cannot read ledger page %s: %w", name, err)
		}
		pageRereadsTotal.Inc()
		l.index(&p)
	}
	return nil
}

// refreshUnfinished reads again the pages before page seq that were not
// full when indexed: a later page exists, so they are full now, and the
// index may lack their last entries.
func (l *Ledger) refreshUnfinished(ctx context.Context, seq int) error {
	l.mu.Lock()
	var stale []string
	for name, p := range l.pages {
		if p.seq < seq && !p.full {
			stale = append(stale, name)
		}
	}
	l.mu.Unlock()
	for _, name := range stale {
		var p paymentsv1alpha1.PaymentLedger
		if err := l.reader.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
			if apierrors.IsNotFound(err) {
				l.forget(name)
				continue
			}
			return fmt.Errorf("cannot read ledger page %s: %w", name, err)
		}
		pageRereadsTotal.Inc()
		l.index(&p)
		l.mu.Lock()
		if ip, ok := l.pages[name]; ok && !ip.full {
			// Not full by this process's measure (another process may
			// fill pages to another size): final all the same, as a
			// later page exists.
			ip.full = true
		}
		l.mu.Unlock()
	}
	return nil
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
	seq := pageSeq(p.Name)
	if seq <= 0 {
		return
	}
	hashes := make([]uint64, len(p.Entries))
	for i, e := range p.Entries {
		hashes[i] = l.hash(e.Key)
	}
	slices.Sort(hashes)
	var newest time.Time
	for _, e := range p.Entries {
		if e.At.After(newest) {
			newest = e.At.Time
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	old, ok := l.pages[p.Name]
	if ok && old.indexed != "" && !newer(p.ResourceVersion, old.indexed) {
		return
	}
	seen := p.ResourceVersion
	if ok && newer(old.seen, seen) {
		seen = old.seen
	}
	l.pages[p.Name] = &page{seq: seq, indexed: p.ResourceVersion, seen: seen, hashes: hashes, newest: newest,
		full: full(p, l.opts.MaxEntriesPerPage)}
	if l.head != nil && l.head.Name == p.Name && newer(p.ResourceVersion, l.head.ResourceVersion) {
		l.head = nil
	}
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
func (l *Ledger) pagesHolding(h uint64) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
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
