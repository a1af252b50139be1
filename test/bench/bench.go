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

package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/idempotency-dev/paymentjob-operator/internal/testing/sandboxproc"
)

// The state of a run and what every phase does with it: the manager it
// starts and stops, the watch of a namespace's jobs, the waits around a
// window and the deletion of its jobs.

// Bounds of the waits around the measured windows.
const (
	// finalizerWait bounds the wait for the finalizers after the last job
	// is Completed.
	finalizerWait = 15 * time.Second
	// quiesceWait bounds the wait for the API server's write counters to
	// settle at the end of a window (events are sent asynchronously).
	quiesceWait = 10 * time.Second
	// idleWait bounds the wait for the manager's work queue to drain before
	// a window.
	idleWait = 2 * time.Minute
)

// bench is one run of the benchmark.
type bench struct {
	cfg config
	dir string
	rep *report

	cl *cluster
	// sb is the sandbox without rate limits, live the one at Stripe's
	// live-mode limits.
	sb, live *sandboxproc.Sandbox
	// mgr is the manager process running, if any.
	mgr *manager
	// managerSeq numbers the manager processes' logs.
	managerSeq int
	// pprof says whether the manager binary has --pprof-bind-address.
	pprof bool
	// ledgerFlag says whether the manager binary has --ledger; the
	// benchmark turns the ledger on explicitly.
	ledgerFlag bool
	// secretValue is the fake Stripe key of every namespace; never printed.
	secretValue string
	// pg is the PostgreSQL server of phase 8, when it runs.
	pg *pgServer
}

// startManager starts a manager as user with workers, and args if any,
// and waits until it is ready; it returns the time from the start of the
// process to ready.
func (b *bench) startManager(ctx context.Context, user string, workers int, args ...string) (time.Duration, error) {
	if b.mgr != nil {
		return 0, errors.New("a manager is already running")
	}
	b.managerSeq++
	m, err := startManager(managerOptions{
		bin:        b.cfg.managerBin,
		kubeconfig: b.cl.kubeconfigs[user],
		logPath:    filepath.Join(b.dir, fmt.Sprintf("manager-%02d-w%d.log", b.managerSeq, workers)),
		workers:    workers,
		qps:        b.cfg.qps,
		burst:      b.cfg.burst,
		pprof:      b.pprof,
		ledger:     b.ledgerFlag,
		args:       args,
	})
	if err != nil {
		return 0, err
	}
	b.mgr = m
	return m.waitReady(ctx, b.cfg.timeout)
}

// stopManager stops the running manager, if any.
func (b *bench) stopManager() {
	b.mgr.stop()
	b.mgr = nil
}

// settle waits for d while the manager runs.
func (b *bench) settle(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-b.mgr.proc.Done():
		return b.mgr.proc.ExitError()
	case <-time.After(d):
		return nil
	}
}

// memory returns the manager's post-GC live heap and its RSS, in bytes,
// and keeps its heap profile as heap-<name>.pprof in the work folder.
func (b *bench) memory(ctx context.Context, name string) (heap, rss float64, err error) {
	if err := b.mgr.saveHeapProfile(ctx, filepath.Join(b.dir, "heap-"+name+".pprof")); err != nil {
		step("%v", err)
	}
	heap, err = b.mgr.heapAlloc(ctx)
	if err != nil {
		return 0, 0, err
	}
	rss, err = b.mgr.rss()
	return heap, rss, err
}

// watchJobs starts a watch of the jobs of ns from resourceVersion rv,
// restarted from the last event if the API server closes it.
func (b *bench) watchJobs(ctx context.Context, ns, rv, fieldSelector string) (*watchtools.RetryWatcher, error) {
	return b.watchKind(ctx, jobsKind, ns, rv, fieldSelector)
}

// watchKind starts a watch of the objects of kind k in ns from
// resourceVersion rv, restarted from the last event if the API server
// closes it.
func (b *bench) watchKind(ctx context.Context, k windowKind, ns, rv, fieldSelector string) (*watchtools.RetryWatcher, error) {
	w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, objectWatcher{c: b.cl.creator, ns: ns, newList: k.list, fieldSelector: fieldSelector})
	if err != nil {
		return nil, fmt.Errorf("cannot watch the %s of %s: %w", k.plural, ns, err)
	}
	return w, nil
}

// waitFor waits until done is closed, and fails on a timeout, a failed
// watch, a manager that exited or an interrupt.
func (b *bench) waitFor(ctx context.Context, t *tracker, done <-chan struct{}, timeout time.Duration, what string) error {
	timer := time.NewTimer(max(timeout, time.Second))
	defer timer.Stop()
	var mgrDone <-chan struct{}
	if b.mgr != nil {
		mgrDone = b.mgr.proc.Done()
	}
	select {
	case <-done:
		return nil
	case <-t.exited:
		if t.err != nil {
			return t.err
		}
		return errors.New("the watch ended")
	case <-mgrDone:
		return b.mgr.proc.ExitError()
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return fmt.Errorf("not all were %s within %s", what, timeout.Round(time.Second))
	}
}

// deleteJobs deletes every job of ns and waits until they are gone.
func (b *bench) deleteJobs(ctx context.Context, ns string) error {
	return b.deleteAll(ctx, jobsKind, ns)
}

// deleteAll deletes every object of kind k in ns and waits until they are
// gone.
func (b *bench) deleteAll(ctx context.Context, k windowKind, ns string) error {
	if err := b.cl.creator.DeleteAllOf(ctx, k.object(ns, 0), client.InNamespace(ns)); err != nil {
		return fmt.Errorf("cannot delete the %s of %s: %w", k.plural, ns, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		l := k.list()
		if err := b.cl.creator.List(ctx, l, client.InNamespace(ns), client.Limit(1)); err != nil {
			return fmt.Errorf("cannot list the %s of %s: %w", k.plural, ns, err)
		}
		items, err := apimeta.ExtractList(l)
		if err != nil {
			return err
		}
		if len(items) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			var finalizers []string
			if o, ok := items[0].(client.Object); ok {
				finalizers = o.GetFinalizers()
			}
			return fmt.Errorf("%s of %s are not gone a minute after their deletion (finalizers %v)", k.plural, ns, finalizers)
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
}
