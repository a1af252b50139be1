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
	"math/rand/v2"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// Appends: group commit onto the newest page, with optimistic concurrency.

// append stores entries on the newest page, starting new pages as pages
// fill. A conflict means another process appended first: its page is read
// again and the append retried, without the entries it already holds. A
// stale index is rebuilt first, and the append retried on the rebuilt one.
// It returns the entry the pages hold under each key of entries: the one
// appended, or the one another append put there first.
func (l *Ledger) append(ctx context.Context, entries []Entry) (map[string]Entry, error) {
	rebuilds := 0
	for attempt := 1; ; attempt++ {
		held := make(map[string]Entry, len(entries))
		err := l.rebuildIfStale(ctx)
		if err == nil {
			err = l.tryAppend(ctx, entries, held)
		}
		if err == nil {
			appendsTotal.Inc()
			return held, nil
		}
		if errors.Is(err, ErrRebuilding) && rebuilds < maxRebuilds {
			rebuilds++
			continue
		}
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) || attempt == maxAppendAttempts {
			return nil, fmt.Errorf("cannot append to the outcome ledger: %w", err)
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
			return nil, fmt.Errorf("cannot append to the outcome ledger: %w", ctx.Err())
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

// tryAppend is one attempt of append. It sets held[key] for each key of
// entries: the entry appended, or the one found on a page.
func (l *Ledger) tryAppend(ctx context.Context, entries []Entry, held map[string]Entry) error {
	l.gate.RLock()
	defer l.gate.RUnlock()
	if err := l.checkStale(); err != nil {
		return err
	}
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
		var dups []Entry
		todo, dups = l.unrecorded(head, todo)
		if len(dups) > 0 {
			// What this process believes recorded is read back before it
			// is left out: a copy or an index kept across an etcd restore
			// holds outcomes the pages lost.
			missing, err := l.notOnPages(ctx, head.Name, dups, held)
			if err != nil {
				return err
			}
			todo = append(todo, missing...)
		}
		if len(todo) == 0 {
			return l.checkStale()
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
		if l.stale {
			// todo was picked on an index that turned out stale.
			l.mu.Unlock()
			return ErrRebuilding
		}
		l.writing = updated.Name
		l.mu.Unlock()
		if head.ResourceVersion == "" {
			err = l.writer.Create(ctx, updated)
			if apierrors.IsAlreadyExists(err) {
				// Another process started this page first: append to
				// its copy on the next attempt.
				_, _, _ = l.readPage(ctx, updated.Name)
			}
		} else {
			err = l.writer.Update(ctx, updated)
		}
		if err != nil {
			l.mu.Lock()
			l.writing = ""
			if apierrors.IsNotFound(err) {
				// The newest page, written or read here, is gone: an
				// etcd restored from a snapshot taken before it was
				// created (or an administrator) took it.
				l.markStale("page", head.Name, "gone", true, "after", head.ResourceVersion)
				err = fmt.Errorf("%w: page %s is gone: %w", ErrRebuilding, head.Name, err)
			}
			l.mu.Unlock()
			return err
		}
		l.index(updated)
		for _, e := range todo[:n] {
			held[e.Key] = e
		}
		l.mu.Lock()
		l.head = updated
		l.writing = ""
		l.mu.Unlock()
		head, todo = updated, todo[n:]
	}
}

// unrecorded is entries without repeated keys, split into the ones to
// append and the dups whose key is on page head or, as far as the index
// knows, on another page.
func (l *Ledger) unrecorded(head *paymentsv1alpha1.PaymentLedger, entries []Entry) (todo, dups []Entry) {
	onHead := make(map[string]bool, len(head.Entries))
	for _, e := range head.Entries {
		onHead[e.Key] = true
	}
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		if seen[e.Key] {
			continue
		}
		seen[e.Key] = true
		if onHead[e.Key] || l.has(e.Key) {
			dups = append(dups, e)
			continue
		}
		todo = append(todo, e)
	}
	return todo, dups
}

// notOnPages returns the entries of dups whose key is on none of the pages
// that may hold it (page head or the ones the index names), read from the
// API server: each page is read once. It sets held[key] for each key it
// finds, to the entry there.
func (l *Ledger) notOnPages(ctx context.Context, head string, dups []Entry, held map[string]Entry) ([]Entry, error) {
	read := map[string]map[string]Entry{}
	var missing []Entry
	for _, e := range dups {
		found := false
		for _, name := range append([]string{head}, l.pagesHolding(l.hash(e.Key))...) {
			entries, ok := read[name]
			if !ok {
				p, exists, err := l.readPage(ctx, name)
				if err != nil {
					return nil, err
				}
				entries = map[string]Entry{}
				if exists {
					for _, pe := range p.Entries {
						entries[pe.Key] = entryOf(p, pe)
					}
				}
				read[name] = entries
			}
			var there Entry
			if there, found = entries[e.Key]; found {
				held[e.Key] = there
				break
			}
		}
		if !found {
			missing = append(missing, e)
		}
	}
	return missing, l.checkStale()
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
	p, ok, err := l.readPage(ctx, newest)
	if err == nil && !ok {
		// Retention never deletes the newest page; an administrator
		// did. Append after it, so no sequence number is used twice.
		return newPage(seq + 1), nil
	}
	return p, err
}

// startPage returns the page after the full page head: created by another
// process already, or new.
func (l *Ledger) startPage(ctx context.Context, head *paymentsv1alpha1.PaymentLedger) (*paymentsv1alpha1.PaymentLedger, error) {
	seq := pageSeq(head.Name) + 1
	p, ok, err := l.readPage(ctx, pageName(seq))
	if err == nil && !ok {
		return newPage(seq), nil
	}
	return p, err
}
