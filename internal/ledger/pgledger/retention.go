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

package pgledger

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
)

// pruneBatch bounds the rows one DELETE removes: each statement holds its
// locks briefly, and a large backlog is deleted in steps.
const pruneBatch = 1000

// pruneQuery deletes up to $2 entries older than $1. SKIP LOCKED lets two
// processes prune at once, each deleting rows the other did not take.
const pruneQuery = `DELETE FROM paymentjob_outcomes WHERE key IN (
	SELECT key FROM paymentjob_outcomes WHERE at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`

// Prune deletes the entries recorded more than Options.Retention ago, by
// their time (Entry.At), pruneBatch entries a statement, and returns how
// many it deleted. An error leaves the rest for the next call. A read-only
// ledger (Options.ReadOnly) returns ErrReadOnly.
func (l *Ledger) Prune(ctx context.Context) (int64, error) {
	if l.isClosed() {
		return 0, ErrClosed
	}
	if l.opts.ReadOnly {
		return 0, ErrReadOnly
	}
	cutoff := l.opts.Clock.Now().Add(-l.opts.Retention)
	var total int64
	for {
		var deleted int64
		err := l.do(ctx, func(ctx context.Context) error {
			tag, err := l.pool.Exec(ctx, pruneQuery, cutoff, pruneBatch)
			deleted = tag.RowsAffected()
			return err
		})
		if err != nil {
			return total, wrapErr("delete expired ledger entries", err)
		}
		total += deleted
		if deleted < pruneBatch {
			return total, nil
		}
	}
}

// NeedLeaderElection tells a controller-runtime manager to run the ledger
// on every replica: each records the outcomes of the jobs it finishes.
func (l *Ledger) NeedLeaderElection() bool { return false }

// Start runs Prune at once and every Options.PruneInterval until ctx ends,
// then closes the ledger (Close): it is a controller-runtime Runnable,
// added to the manager that uses the ledger. Two replicas pruning at once
// delete each row once. A Prune that fails is logged and tried again at
// the next interval; the rows stay meanwhile. A read-only ledger prunes
// nothing: Start waits for ctx to end and closes it.
func (l *Ledger) Start(ctx context.Context) error {
	defer l.Close()
	if l.opts.ReadOnly {
		<-ctx.Done()
		return nil
	}
	logger := log.FromContext(ctx).WithName("outcome-ledger")
	tick := time.NewTicker(l.opts.PruneInterval)
	defer tick.Stop()
	for {
		if n, err := l.Prune(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "Cannot delete the expired outcomes; they stay until the next try", "retention", l.opts.Retention)
		} else if n > 0 {
			logger.Info("Deleted the expired outcomes", "entries", n, "retention", l.opts.Retention)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
