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
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

const (
	// maxEntriesPerPage and maxPageBytes bound a page well under etcd's
	// 1.5 MiB request limit and the 1 MiB the operator promises. Small
	// pages also keep each append cheap: an append rewrites its page.
	maxEntriesPerPage = 500
	maxPageBytes      = 160 << 10
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
	// Amount and Currency are the money the payment moves, in minor units
	// and the lower-case ISO 4217 code: what reconciliation compares with
	// the provider's books once the job is gone. Zero and empty for an
	// entry recorded before the ledger kept them.
	Amount   int64
	Currency string
	// RefundedCharge is, for a refund, the provider's id of the charge it
	// gives money back from; empty for a charge.
	RefundedCharge string
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
	// OnRewind, when set, is told each time a page's resourceVersion went
	// backwards (an etcd restored from a snapshot; rewind.go), with what
	// showed it as log key/values. It is called with the ledger's lock
	// held: it must return at once and not call the ledger. The manager
	// stops on it (internal/controllers/rewind).
	OnRewind func(why ...any)
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
	// logger is the ledger's own, set by Start before the pages are
	// loaded: what it logs is no caller's.
	logger logr.Logger
	// rebuild asks the loop of Start to rebuild a stale index.
	rebuild chan struct{}

	// rereading lets one caller at a time read pages again.
	rereading sync.Mutex
	// gate is held for reading by every Find and append, and for writing
	// by a rebuild of the index (rewind.go), which none may overlap.
	gate sync.RWMutex

	mu sync.Mutex
	// pages indexes every page by name.
	pages map[string]*page
	// head is this process's latest copy of the newest page.
	head *paymentsv1alpha1.PaymentLedger
	// next collects entries for the next append.
	next *Batch
	// writing is the page this process is writing now: the watch may
	// report the write before it is indexed, and that is no reason to
	// read the page again.
	writing string
	// stale is set when a page's resourceVersion went backwards (an etcd
	// restored from a snapshot): the index is not trusted, Has says false
	// and Find and Record return ErrRebuilding until it is rebuilt from a
	// fresh list. staleWhy says what showed it.
	stale    bool
	staleWhy []any
	// observed collects what the watch reports while a rebuild lists the
	// pages (nil when none runs), so that no write it missed is lost.
	observed map[string]string
}

// page is what the manager keeps of one PaymentLedger: the hashes of its keys.
type page struct {
	seq int
	// indexed is the resourceVersion the hashes were taken from; seen is
	// the newest one the watch reported. A page is dirty while they differ.
	indexed, seen string
	// watched is the last resourceVersion the watch reported. The watch
	// reports a page's versions in order; one older than the last means
	// the versions went backwards.
	watched string
	hashes  []uint64
	// oldest and newest bound the times of the page's entries.
	oldest, newest time.Time
	// bytes is the size of the copy indexed as the API server stores it
	// (storedSize), for paymentjob_ledger_bytes.
	bytes int
	// full is true when the copy indexed was full: then it is final,
	// since a full page is never written again.
	full bool
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
		writer:  writer,
		reader:  reader,
		opts:    opts,
		seed:    maphash.MakeSeed(),
		loaded:  make(chan struct{}),
		kick:    make(chan struct{}, 1),
		rebuild: make(chan struct{}, 1),
		pages:   map[string]*page{},
		next:    NewBatch(),
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
	for attempt := 1; ; attempt++ {
		if err := l.rebuildIfStale(ctx); err != nil {
			return Entry{}, false, err
		}
		e, found, err := l.find(ctx, key)
		if errors.Is(err, ErrRebuilding) && attempt < maxRebuilds {
			continue
		}
		return e, found, err
	}
}

// find is Find on an index that is not known to be stale. A key not found
// while the index turned out stale is an error, not an answer.
func (l *Ledger) find(ctx context.Context, key string) (Entry, bool, error) {
	l.gate.RLock()
	defer l.gate.RUnlock()
	if err := l.checkStale(); err != nil {
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
		p, ok, err := l.readPage(ctx, name)
		if err != nil {
			return Entry{}, false, err
		}
		if !ok {
			continue
		}
		for _, e := range p.Entries {
			if e.Key == key {
				return entryOf(p, e), true, nil
			}
		}
	}
	if err := l.checkStale(); err != nil {
		return Entry{}, false, err
	}
	return Entry{}, false, nil
}

// Has reports whether key is on a page as far as this process knows,
// without an API request. It may be wrong in both directions while another
// process's write has not been read yet, and says true for the rare key
// whose 64-bit hash is another key's; use Find to be sure. It says false
// while the index is stale (resourceVersions went backwards) and not
// rebuilt yet: a caller that deletes what the ledger holds keeps it then.
// It never fails; the error is the OutcomeLedger's, whose other backends
// ask a database.
func (l *Ledger) Has(_ context.Context, key string) (bool, error) {
	return l.has(key), nil
}

// has is Has without the interface's error.
func (l *Ledger) has(key string) bool {
	return len(l.pagesHolding(l.hash(key))) > 0
}

// Record appends e to the ledger and returns once it is stored, or once an
// entry under the same key is found there: the first outcome stays, and
// Record returns nil when it is e's (Entry.SameOutcome: recorded again)
// and a *ConflictError holding it when it is another. Concurrent calls
// share one write.
func (l *Ledger) Record(ctx context.Context, e Entry) error {
	if err := l.waitLoaded(ctx); err != nil {
		return err
	}
	l.mu.Lock()
	b := l.next
	b.Entries = append(b.Entries, e)
	l.mu.Unlock()
	return b.Wait(ctx, l.kick, e)
}

// NeedLeaderElection is false: every replica records the outcomes it writes.
func (l *Ledger) NeedLeaderElection() bool { return false }

// Start indexes the pages, then appends what Record collects and enforces
// the retention until ctx ends. It is a manager.Runnable.
func (l *Ledger) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("ledger")
	l.logger = logger
	// The size gauges report this ledger while it runs.
	defer sizes.track(l)()
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
	verify := time.NewTicker(verifyInterval)
	defer verify.Stop()
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
		case <-verify.C:
			// A watch that resumed after a restore without relisting
			// reports nothing: compare the index with the pages.
			if err := l.verify(ctx); err != nil {
				logger.Error(err, "Cannot compare the ledger index with the pages")
			}
			if err := l.rebuildIfStale(ctx); err != nil {
				logger.Error(err, "Cannot rebuild the ledger index")
			}
		case <-l.rebuild:
			if err := l.rebuildIfStale(ctx); err != nil {
				logger.Error(err, "Cannot rebuild the ledger index")
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
	return l.listPages(ctx, func(p *paymentsv1alpha1.PaymentLedger) { l.index(p) })
}

// listPages reads every page from the API server, a few at a time, and
// hands each to use.
func (l *Ledger) listPages(ctx context.Context, use func(*paymentsv1alpha1.PaymentLedger)) error {
	var list paymentsv1alpha1.PaymentLedgerList
	cont := ""
	for {
		if err := l.reader.List(ctx, &list, client.Limit(pageListLimit), client.Continue(cont)); err != nil {
			return fmt.Errorf("cannot list ledger pages: %w", err)
		}
		for i := range list.Items {
			use(&list.Items[i])
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
		if len(b.Entries) == 0 {
			l.mu.Unlock()
			return
		}
		l.next = NewBatch()
		l.mu.Unlock()
		b.Finish(l.append(ctx, b.Entries))
	}
}

// failPending ends the waits of entries that will not be appended.
func (l *Ledger) failPending(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next.Finish(nil, err)
	l.next = NewBatch()
}
