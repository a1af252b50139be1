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
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/sandboxproc"
)

// An operator window: the benchmark creates jobs (or refunds of the jobs
// of an earlier window), the running manager charges (or refunds) them,
// and the window's figures are the differences of the counters around it.

// windowKind is what an operator window creates and follows: PaymentJobs,
// or PaymentRefunds of the jobs an earlier window left behind.
type windowKind struct {
	// plural names the objects in messages: "jobs", "refunds".
	plural string
	// controller is the manager's controller of the kind, as its metrics
	// label it.
	controller string
	// object is the i-th object of a namespace; list is the kind's list.
	object func(ns string, i int) client.Object
	list   func() client.ObjectList
	// index is the i of an object's name.
	index func(name string) (int, bool)
	// writes is the figure that counts the writes to the kind's objects,
	// from which the benchmark's creates are taken off.
	writes func(f *requestFigures) *float64
	// check fails a window whose provider did not move the money of each
	// object exactly once.
	check func(name string, n int, r runResult) error
}

var (
	// jobsKind are PaymentJobs: each is charged exactly once.
	jobsKind = windowKind{
		plural: "jobs", controller: "paymentjob",
		object: func(ns string, i int) client.Object { return newJob(ns, i) },
		list:   func() client.ObjectList { return &paymentsv1alpha1.PaymentJobList{} },
		index:  jobIndex,
		writes: func(f *requestFigures) *float64 { return &f.jobWrites },
		check: func(name string, n int, r runResult) error {
			if r.provider.Charges != int64(n) {
				return fmt.Errorf("%s: the sandbox charged %d times for %d Completed jobs", name, r.provider.Charges, n)
			}
			return nil
		},
	}
	// refundsKind are PaymentRefunds: each is refunded exactly once, and
	// nothing is charged.
	refundsKind = windowKind{
		plural: "refunds", controller: "paymentrefund",
		object: func(ns string, i int) client.Object { return newRefund(ns, i) },
		list:   func() client.ObjectList { return &paymentsv1alpha1.PaymentRefundList{} },
		index:  refundIndex,
		writes: func(f *requestFigures) *float64 { return &f.refundWrites },
		check:  checkRefunds,
	}
)

// runResult is what one operator window measured, or several added up.
type runResult struct {
	n int
	// elapsed is the time from the first create to the last Completed.
	elapsed time.Duration
	// latencies are create to Completed of every job, sorted.
	latencies []time.Duration
	req       requestFigures
	// requests are the API server's requests of the window, by verb,
	// resource and code.
	requests requestCounts
	// provider is the sandbox's counts of the window, refunds its refund
	// counts.
	provider sandboxproc.Counters
	refunds  refundCounters
	// routes are the sandbox's /v1 requests of the window by method and
	// route, from its log.
	routes     map[string]float64
	reconciles float64
	// lookupKeys are the keys the manager looked up.
	lookupKeys float64
	// cpu is the CPU seconds of each process in the window.
	cpu cpuUsage
	// finalizersLeft counts the Completed jobs that still had the
	// finalizer after finalizerWait.
	finalizersLeft int
	// guardedAtCreate counts the objects created with the finalizer.
	guardedAtCreate int
}

// jobsPerSec is the jobs over the time from the first create to the last
// Completed, of all windows added up.
func (r runResult) jobsPerSec() float64 { return float64(r.n) / r.elapsed.Seconds() }

// latency is the p-th percentile of create to Completed.
func (r runResult) latency(p float64) time.Duration { return percentile(r.latencies, p) }

// providerRequests are the sandbox's /v1 requests of the window, from its
// log: every provider call, the account reads and the refund lists
// included.
func (r runResult) providerRequests() int64 {
	var n float64
	for _, v := range r.routes {
		n += v
	}
	return whole(n)
}

// plus adds two windows: their jobs, their elapsed times, their counts.
func (r runResult) plus(o runResult) runResult {
	latencies := slices.Concat(r.latencies, o.latencies)
	slices.Sort(latencies)
	return runResult{
		n:               r.n + o.n,
		elapsed:         r.elapsed + o.elapsed,
		latencies:       latencies,
		req:             r.req.plus(o.req),
		requests:        r.requests.plus(o.requests),
		provider:        r.provider.Plus(o.provider),
		refunds:         r.refunds.plus(o.refunds),
		routes:          addCounts(r.routes, o.routes),
		reconciles:      r.reconciles + o.reconciles,
		lookupKeys:      r.lookupKeys + o.lookupKeys,
		cpu:             r.cpu.plus(o.cpu),
		finalizersLeft:  r.finalizersLeft + o.finalizersLeft,
		guardedAtCreate: r.guardedAtCreate + o.guardedAtCreate,
	}
}

// runJobs creates n jobs in ns for the running manager and measures the
// window from the first create until the API server's write counters
// settle. It waits for every job to be terminal, and fails unless every job
// is Completed and charged exactly once. sb is the sandbox the namespace's
// provider reaches; its counts are the difference of two reads around the
// window, so windows against the same sandbox each count their own.
//
// In the window the benchmark only creates jobs and watches them: it
// issues no GET or LIST, so every read the API server counts is someone
// else's (the manager's, or the API server's own background work).
//
// The jobs are deleted afterwards.
func (b *bench) runJobs(ctx context.Context, name, ns string, n int, sb *sandboxproc.Sandbox) (runResult, error) {
	res, err := b.runJobsKeeping(ctx, name, ns, n, sb)
	if err != nil {
		return res, err
	}
	return res, b.deleteJobs(ctx, ns)
}

// runJobsKeeping is runJobs without deleting the jobs.
func (b *bench) runJobsKeeping(ctx context.Context, name, ns string, n int, sb *sandboxproc.Sandbox) (runResult, error) {
	return b.runWindow(ctx, jobsKind, name, ns, n, sb)
}

// runWindow is runJobsKeeping for objects of kind k: it creates n of
// them in ns, follows them until they are terminal and released, and
// fails unless every one is Completed and k.check holds.
func (b *bench) runWindow(ctx context.Context, k windowKind, name, ns string, n int, sb *sandboxproc.Sandbox) (runResult, error) {
	res := runResult{n: n}
	rv, err := b.emptyNamespace(ctx, k, ns)
	if err != nil {
		return res, err
	}
	marked, err := b.markWindow(ctx, sb, k.controller)
	if err != nil {
		return res, err
	}
	before, err := b.cl.requestCounts(ctx)
	if err != nil {
		return res, err
	}
	w, err := b.createAndFollow(ctx, k, name, ns, rv, n)
	if err != nil {
		return res, err
	}
	res.cpu = w.cpu
	res.guardedAtCreate = w.guardedAtCreate
	res.finalizersLeft = w.t.completed + w.t.failed - w.t.released
	if w.t.failed > 0 {
		return res, fmt.Errorf("%s: %d of %d %s Failed, e.g. %s; manager log: %s", name, w.t.failed, n, k.plural, w.t.firstFailure, b.mgr.proc.Log)
	}
	res.elapsed, res.latencies = w.latencies()

	d := w.after.minus(before)
	res.requests = d
	res.req = d.figures()
	*k.writes(&res.req) -= float64(n) // the benchmark's creates
	end, err := b.markWindow(ctx, sb, k.controller)
	if err != nil {
		return res, err
	}
	res.provider = end.provider.Minus(marked.provider)
	res.refunds = end.refunds.minus(marked.refunds)
	res.reconciles = end.reconciles - marked.reconciles
	res.lookupKeys = end.lookupKeys - marked.lookupKeys
	if res.routes, err = providerRoutesSince(sb, marked.logOffset); err != nil {
		return res, err
	}
	pv := res.provider
	step("%s: %d %s, %.1f/s, p50 %s, p99 %s, %d reconciles, %d keys looked up, sandbox: %d creates, %d searches, %d retrieves, %d charges, %d replays, %d refused (429), %d refund requests, %d refunds; API requests: %s",
		name, n, k.plural, res.jobsPerSec(), res.latency(50).Round(time.Millisecond), res.latency(99).Round(time.Millisecond), int(res.reconciles), int(res.lookupKeys),
		pv.Requests, pv.Searches, pv.Retrieves, pv.Charges, pv.Replays, pv.RateLimited, res.refunds.Requests, res.refunds.Refunds, d.breakdown())
	step("%s: the sandbox's /v1 requests: %s", name, routesString(res.routes))
	step("%s: CPU per object: %s", name, res.cpu.perJob(n))
	step("%s: the manager's ledger: %.0f appends, %.0f pages read again after the watch reported a newer version",
		name, end.ledger.appends-marked.ledger.appends, end.ledger.rereads-marked.ledger.rereads)
	if res.finalizersLeft > 0 {
		step("%s: %d Completed %s still hold the finalizer %s after %s", name, res.finalizersLeft, k.plural, paymentsv1alpha1.Finalizer, finalizerWait)
	}
	return res, k.check(name, n, res)
}

// emptyNamespace waits for the manager to be idle and checks that ns holds
// no object of kind k; it returns the resourceVersion to watch them from.
func (b *bench) emptyNamespace(ctx context.Context, k windowKind, ns string) (string, error) {
	if err := b.mgr.waitIdle(ctx, idleWait); err != nil {
		return "", err
	}
	existing := k.list()
	if err := b.cl.creator.List(ctx, existing, client.InNamespace(ns)); err != nil {
		return "", fmt.Errorf("cannot list the %s of %s: %w", k.plural, ns, err)
	}
	if n := apimeta.LenList(existing); n > 0 {
		return "", fmt.Errorf("namespace %s already holds %d %s", ns, n, k.plural)
	}
	return existing.GetResourceVersion(), nil
}

// windowMark is where the counters of the sandbox and of the manager stood.
type windowMark struct {
	provider sandboxproc.Counters
	refunds  refundCounters
	// logOffset is the size of the sandbox's log.
	logOffset  int64
	reconciles float64
	lookupKeys float64
	ledger     ledgerCounters
}

// markWindow reads the counters of sb and of the running manager, its
// reconciles those of its controller.
func (b *bench) markWindow(ctx context.Context, sb *sandboxproc.Sandbox, controller string) (windowMark, error) {
	var m windowMark
	var err error
	if m.logOffset, err = fileSize(sb.Proc.Log); err != nil {
		return m, err
	}
	st, err := sb.Stats(ctx)
	if err != nil {
		return m, err
	}
	m.provider = st.Counters
	if m.refunds, err = readRefundCounters(ctx, sb); err != nil {
		return m, err
	}
	if m.reconciles, err = b.mgr.reconciles(ctx, controller); err != nil {
		return m, err
	}
	if m.lookupKeys, err = b.mgr.lookupKeys(ctx); err != nil {
		return m, err
	}
	m.ledger, err = b.mgr.ledgerCounters(ctx)
	return m, err
}

// followedWindow is what the jobs (or refunds) of a window did, as the watch saw it.
type followedWindow struct {
	t *tracker
	// start is the time of the first create, createdAt that of each job.
	start     time.Time
	createdAt []time.Time
	// guardedAtCreate counts the objects that the API server stored with
	// the finalizer at create (the admission policy added it).
	guardedAtCreate int
	// after are the API server's request counts once they settled.
	after requestCounts
	cpu   cpuUsage
}

// createAndFollow creates the objects of kind k of a window in ns,
// watched from resourceVersion rv, and waits until every one is terminal,
// then (for a while) released, and the API server's write counters settle.
func (b *bench) createAndFollow(ctx context.Context, k windowKind, name, ns, rv string, n int) (followedWindow, error) {
	w, err := b.watchKind(ctx, k, ns, rv, "")
	if err != nil {
		return followedWindow{}, err
	}
	prog := startProgress(name, n)
	fw := followedWindow{t: newTrackerOf(k.index, 0, n), createdAt: make([]time.Time, n)}
	t := fw.t
	go t.follow(w.ResultChan(), prog)
	stopWatch := func() {
		w.Stop()
		<-t.exited
	}

	var guarded atomic.Int64
	cpuBefore := cpuNow()
	fw.start = time.Now()
	err = runWorkers(ctx, b.cfg.workers, n, func(ctx context.Context, i int) error {
		fw.createdAt[i] = time.Now()
		obj := k.object(ns, i)
		if err := b.cl.creator.Create(ctx, obj); err != nil {
			return fmt.Errorf("cannot create %s %d: %w", k.plural, i, err)
		}
		// The object as stored: an admission policy may have added it.
		if controllerutil.ContainsFinalizer(obj, paymentsv1alpha1.Finalizer) {
			guarded.Add(1)
		}
		return nil
	})
	fw.guardedAtCreate = int(guarded.Load())
	if err == nil {
		err = b.waitFor(ctx, t, t.allTerminal, b.cfg.timeout-time.Since(fw.start), "terminal")
	}
	prog.stop()
	if err != nil {
		stopWatch()
		return fw, fmt.Errorf("%s: %w (%d of %d Completed; manager log: %s)", name, err, t.completed, n, b.mgr.proc.Log)
	}
	if err := b.waitFor(ctx, t, t.allReleased, finalizerWait, "released"); err != nil {
		step("%s: %v", name, err)
	}
	fw.after, err = b.cl.quiesce(ctx, quiesceWait)
	fw.cpu = cpuNow().minus(cpuBefore)
	stopWatch()
	return fw, err
}

// latencies returns the time from the first create to the last Completed,
// and create to Completed of every job, sorted.
func (fw followedWindow) latencies() (time.Duration, []time.Duration) {
	last := fw.start
	latencies := make([]time.Duration, 0, len(fw.createdAt))
	for i, done := range fw.t.completedAt {
		if done.After(last) {
			last = done
		}
		latencies = append(latencies, done.Sub(fw.createdAt[i]))
	}
	slices.Sort(latencies)
	return last.Sub(fw.start), latencies
}
