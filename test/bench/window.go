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
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/test/internal/sandboxproc"
)

// An operator window: the benchmark creates jobs, the running manager
// charges them, and the window's figures are the differences of the
// counters around it.

// runResult is what one operator window measured, or several added up.
type runResult struct {
	n int
	// elapsed is the time from the first create to the last Completed.
	elapsed time.Duration
	// latencies are create to Completed of every job, sorted.
	latencies []time.Duration
	req       requestFigures
	// provider is the sandbox's counts of the window.
	provider   sandboxproc.Counters
	reconciles float64
	// lookupKeys are the keys the manager looked up.
	lookupKeys float64
	// cpu is the CPU seconds of each process in the window.
	cpu cpuUsage
	// finalizersLeft counts the Completed jobs that still had the
	// finalizer after finalizerWait.
	finalizersLeft int
}

// jobsPerSec is the jobs over the time from the first create to the last
// Completed, of all windows added up.
func (r runResult) jobsPerSec() float64 { return float64(r.n) / r.elapsed.Seconds() }

// latency is the p-th percentile of create to Completed.
func (r runResult) latency(p float64) time.Duration { return percentile(r.latencies, p) }

// plus adds two windows: their jobs, their elapsed times, their counts.
func (r runResult) plus(o runResult) runResult {
	latencies := slices.Concat(r.latencies, o.latencies)
	slices.Sort(latencies)
	return runResult{
		n:              r.n + o.n,
		elapsed:        r.elapsed + o.elapsed,
		latencies:      latencies,
		req:            r.req.plus(o.req),
		provider:       r.provider.Plus(o.provider),
		reconciles:     r.reconciles + o.reconciles,
		lookupKeys:     r.lookupKeys + o.lookupKeys,
		cpu:            r.cpu.plus(o.cpu),
		finalizersLeft: r.finalizersLeft + o.finalizersLeft,
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
	res := runResult{n: n}
	rv, err := b.emptyNamespace(ctx, ns)
	if err != nil {
		return res, err
	}
	marked, err := b.markWindow(ctx, sb)
	if err != nil {
		return res, err
	}
	before, err := b.cl.requestCounts(ctx)
	if err != nil {
		return res, err
	}
	w, err := b.createAndFollow(ctx, name, ns, rv, n)
	if err != nil {
		return res, err
	}
	res.cpu = w.cpu
	res.finalizersLeft = w.t.completed + w.t.failed - w.t.released
	if w.t.failed > 0 {
		return res, fmt.Errorf("%s: %d of %d jobs Failed, e.g. %s; manager log: %s", name, w.t.failed, n, w.t.firstFailure, b.mgr.proc.Log)
	}
	res.elapsed, res.latencies = w.latencies()

	d := w.after.minus(before)
	res.req = d.figures()
	res.req.jobWrites -= float64(n) // the benchmark's creates
	end, err := b.markWindow(ctx, sb)
	if err != nil {
		return res, err
	}
	res.provider = end.provider.Minus(marked.provider)
	res.reconciles = end.reconciles - marked.reconciles
	res.lookupKeys = end.lookupKeys - marked.lookupKeys
	pv := res.provider
	step("%s: %d jobs, %.1f jobs/s, p50 %s, p99 %s, %d reconciles, %d keys looked up, sandbox: %d creates, %d searches, %d retrieves, %d charges, %d replays, %d refused (429); API requests: %s",
		name, n, res.jobsPerSec(), res.latency(50).Round(time.Millisecond), res.latency(99).Round(time.Millisecond), int(res.reconciles), int(res.lookupKeys),
		pv.Requests, pv.Searches, pv.Retrieves, pv.Charges, pv.Replays, pv.RateLimited, d.breakdown())
	step("%s: CPU per job: %s", name, res.cpu.perJob(n))
	step("%s: the manager's ledger: %.0f appends, %.0f pages read again after the watch reported a newer version",
		name, end.ledger.appends-marked.ledger.appends, end.ledger.rereads-marked.ledger.rereads)
	if res.finalizersLeft > 0 {
		step("%s: %d Completed jobs still hold the finalizer %s after %s", name, res.finalizersLeft, paymentsv1alpha1.Finalizer, finalizerWait)
	}
	if pv.Charges != int64(n) {
		return res, fmt.Errorf("%s: the sandbox charged %d times for %d Completed jobs", name, pv.Charges, n)
	}
	return res, nil
}

// emptyNamespace waits for the manager to be idle and checks that ns holds
// no job; it returns the resourceVersion to watch the jobs from.
func (b *bench) emptyNamespace(ctx context.Context, ns string) (string, error) {
	if err := b.mgr.waitIdle(ctx, idleWait); err != nil {
		return "", err
	}
	var existing paymentsv1alpha1.PaymentJobList
	if err := b.cl.creator.List(ctx, &existing, client.InNamespace(ns)); err != nil {
		return "", fmt.Errorf("cannot list the jobs of %s: %w", ns, err)
	}
	if len(existing.Items) > 0 {
		return "", fmt.Errorf("namespace %s already holds %d jobs", ns, len(existing.Items))
	}
	return existing.ResourceVersion, nil
}

// windowMark is where the counters of the sandbox and of the manager stood.
type windowMark struct {
	provider   sandboxproc.Counters
	reconciles float64
	lookupKeys float64
	ledger     ledgerCounters
}

// markWindow reads the counters of sb and of the running manager.
func (b *bench) markWindow(ctx context.Context, sb *sandboxproc.Sandbox) (windowMark, error) {
	var m windowMark
	st, err := sb.Stats(ctx)
	if err != nil {
		return m, err
	}
	m.provider = st.Counters
	if m.reconciles, err = b.mgr.reconciles(ctx); err != nil {
		return m, err
	}
	if m.lookupKeys, err = b.mgr.lookupKeys(ctx); err != nil {
		return m, err
	}
	m.ledger, err = b.mgr.ledgerCounters(ctx)
	return m, err
}

// followedWindow is what the jobs of a window did, as the watch saw it.
type followedWindow struct {
	t *tracker
	// start is the time of the first create, createdAt that of each job.
	start     time.Time
	createdAt []time.Time
	// after are the API server's request counts once they settled.
	after requestCounts
	cpu   cpuUsage
}

// createAndFollow creates the jobs of a window in ns, watched from
// resourceVersion rv, and waits until every one is terminal, then (for a
// while) released, and the API server's write counters settle.
func (b *bench) createAndFollow(ctx context.Context, name, ns, rv string, n int) (followedWindow, error) {
	w, err := b.watchJobs(ctx, ns, rv, "")
	if err != nil {
		return followedWindow{}, err
	}
	prog := startProgress(name, n)
	fw := followedWindow{t: newTracker(0, n), createdAt: make([]time.Time, n)}
	t := fw.t
	go t.follow(w.ResultChan(), prog)
	stopWatch := func() {
		w.Stop()
		<-t.exited
	}

	cpuBefore := cpuNow()
	fw.start = time.Now()
	err = runWorkers(ctx, b.cfg.workers, n, func(ctx context.Context, i int) error {
		fw.createdAt[i] = time.Now()
		if err := b.cl.creator.Create(ctx, newJob(ns, i)); err != nil {
			return fmt.Errorf("cannot create job %d: %w", i, err)
		}
		return nil
	})
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
