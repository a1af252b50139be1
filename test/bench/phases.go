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
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

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
	// historyWriters create the history jobs.
	historyWriters = 32
)

// bench is one run of the benchmark.
type bench struct {
	cfg config
	dir string
	rep *report

	cl *cluster
	// sb is the sandbox without rate limits, live the one at Stripe's
	// live-mode limits.
	sb, live *sandbox
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
}

// startManager starts a manager as user with workers and waits until it is
// ready; it returns the time from the start of the process to ready.
func (b *bench) startManager(ctx context.Context, user string, workers int) (time.Duration, error) {
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

// baselineResult is what one baseline window measured.
type baselineResult struct {
	n       int
	elapsed time.Duration
	req     requestCounts
	cpu     cpuUsage
}

// plus adds two windows of the baseline.
func (r baselineResult) plus(o baselineResult) baselineResult {
	req := requestCounts{}
	for k, v := range r.req {
		req[k] += v
	}
	for k, v := range o.req {
		req[k] += v
	}
	cpu := cpuUsage{}
	for k, v := range r.cpu {
		cpu[k] += v
	}
	for k, v := range o.cpu {
		cpu[k] += v
	}
	return baselineResult{n: r.n + o.n, elapsed: r.elapsed + o.elapsed, req: req, cpu: cpu}
}

// baseline does, for n jobs and without the operator, what the operator
// does for each job: create it (the admission policy adds the finalizer),
// the finalizer patch only if it did not, the claim and outcome status
// updates, one event, the outcome recorded in the ledger (the operator's
// internal/ledger, whose appends share one write between the jobs waiting
// for it) and the finalizer removal with the finished label, each write on
// the object the previous one returned. The writes share one client with
// the manager's client-side limit, and the events have a client of their
// own, as the manager's event recorder has; the creates come from a client
// without a practical limit, as in the operator phases.
func (b *bench) baseline(ctx context.Context, name, ns string, n int) (baselineResult, error) {
	workers := b.cfg.workers
	if err := b.cl.setupNamespace(ctx, ns, nil); err != nil {
		return baselineResult{}, err
	}
	writer, err := b.cl.client(b.cfg.qps, b.cfg.burst)
	if err != nil {
		return baselineResult{}, err
	}
	events, err := b.cl.client(b.cfg.qps, b.cfg.burst)
	if err != nil {
		return baselineResult{}, err
	}
	holder := "bench-baseline/00000000"
	// The outcome ledger of the operator's own code, as the manager runs
	// it: loaded (a LIST of its pages) before the window, appending with
	// group commit through the writes' client.
	led, err := startLedger(ctx, writer)
	if err != nil {
		return baselineResult{}, err
	}
	defer led.stop()
	provider := paymentsv1alpha1.ProviderIdentity{UID: "bench-baseline", Endpoint: b.sb.base}
	// The benchmark watches the jobs as it does in the operator phases, so
	// that the API server serves the same observer in both.
	var existing paymentsv1alpha1.PaymentJobList
	if err := b.cl.creator.List(ctx, &existing, client.InNamespace(ns)); err != nil {
		return baselineResult{}, fmt.Errorf("cannot list the jobs of %s: %w", ns, err)
	}
	w, err := b.watchJobs(ctx, ns, existing.ResourceVersion, "")
	if err != nil {
		return baselineResult{}, err
	}
	t := newTracker(0, n)
	go t.follow(w.ResultChan(), nil)
	before, err := b.cl.requestCounts(ctx)
	if err != nil {
		w.Stop()
		<-t.exited
		return baselineResult{}, err
	}
	cpuBefore := cpuNow()

	prog := startProgress(name, n)
	start := time.Now()
	err = runWorkers(ctx, workers, n, func(ctx context.Context, i int) error {
		job := newJob(ns, i)
		if err := b.cl.creator.Create(ctx, job); err != nil {
			return fmt.Errorf("cannot create %s: %w", job.Name, err)
		}
		// The admission policy adds the finalizer at create; the operator
		// adds it only when the policy did not.
		if !controllerutil.ContainsFinalizer(job, paymentsv1alpha1.Finalizer) {
			patch := client.MergeFromWithOptions(job.DeepCopy(), client.MergeFromWithOptimisticLock{})
			controllerutil.AddFinalizer(job, paymentsv1alpha1.Finalizer)
			if err := writer.Patch(ctx, job, patch); err != nil {
				return fmt.Errorf("cannot add the finalizer of %s: %w", job.Name, err)
			}
		}
		claim(job, holder, time.Now())
		if err := writer.Status().Update(ctx, job); err != nil {
			return fmt.Errorf("cannot claim %s: %w", job.Name, err)
		}
		now := time.Now()
		msg := complete(job, now)
		if err := writer.Status().Update(ctx, job); err != nil {
			return fmt.Errorf("cannot record the outcome of %s: %w", job.Name, err)
		}
		if err := events.Create(ctx, successEvent(job, holder, msg, now)); err != nil {
			return fmt.Errorf("cannot create the event of %s: %w", job.Name, err)
		}
		if err := led.record(ctx, job, provider); err != nil {
			return err
		}
		if err := finish(ctx, writer, job); err != nil {
			return err
		}
		prog.add(1)
		return nil
	})
	elapsed := time.Since(start)
	if err == nil {
		// The watch has seen (almost) every job by now; wait for the rest so
		// that the CPU of the window includes all of its events.
		err = b.waitFor(ctx, t, t.allReleased, finalizerWait, "released")
	}
	cpu := cpuNow().minus(cpuBefore)
	prog.stop()
	w.Stop()
	<-t.exited
	if err != nil {
		return baselineResult{}, fmt.Errorf("%s: %w", name, err)
	}
	after, err := b.cl.requestCounts(ctx)
	if err != nil {
		return baselineResult{}, err
	}
	d := after.minus(before)
	step("%s: %d jobs in %s; API requests: %s; CPU per job: %s", name, n, elapsed.Round(time.Millisecond), d.breakdown(), cpu.perJob(n))
	return baselineResult{n: n, elapsed: elapsed, req: d, cpu: cpu}, b.deleteJobs(ctx, ns)
}

// finish is the operator's last write of a job: the finalizer removed and
// the finished label set, in one merge patch with the resourceVersion.
func finish(ctx context.Context, c client.Client, job *paymentsv1alpha1.PaymentJob) error {
	patch := client.MergeFromWithOptions(job.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(job, paymentsv1alpha1.Finalizer)
	if job.Labels == nil {
		job.Labels = map[string]string{}
	}
	job.Labels[paymentsv1alpha1.LabelFinished] = "true"
	if err := c.Patch(ctx, job, patch); err != nil {
		return fmt.Errorf("cannot remove the finalizer of %s: %w", job.Name, err)
	}
	return nil
}

// addBaseline reports the baseline's windows together and returns its
// throughput.
func (b *bench) addBaseline(r baselineResult) float64 {
	f := r.req.figures()
	rate := float64(r.n) / r.elapsed.Seconds()
	b.rep.add(figure{key: "baseline_jobs_per_sec", label: "baseline (API writes only, no operator)", value: rate, kind: kindRate})
	b.rep.add(figure{
		key: "baseline_writes_per_job", label: "baseline: job writes/job (check: 3, the finalizer added at create)",
		value: (f.jobWrites - float64(r.n)) / float64(r.n), kind: kindPerJob,
	})
	b.rep.add(figure{key: "baseline_ledger_writes_per_job", label: "baseline: ledger writes/job", value: f.ledgerWrites / float64(r.n), kind: kindPerJob})
	b.rep.add(figure{key: "baseline_events_per_job", label: "baseline: events/job (check: 1)", value: f.eventPosts / float64(r.n), kind: kindPerJob})
	b.addCPU(r.cpu, r.n, "baseline", "_baseline")
	return rate
}

// runResult is what one operator window measured, or several added up.
type runResult struct {
	n int
	// elapsed is the time from the first create to the last Completed.
	elapsed time.Duration
	// latencies are create to Completed of every job, sorted.
	latencies []time.Duration
	req       requestFigures
	// provider is the sandbox's counts of the window.
	provider   sandboxStats
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
	cpu := cpuUsage{}
	for k, v := range r.cpu {
		cpu[k] += v
	}
	for k, v := range o.cpu {
		cpu[k] += v
	}
	latencies := slices.Concat(r.latencies, o.latencies)
	slices.Sort(latencies)
	return runResult{
		n:              r.n + o.n,
		elapsed:        r.elapsed + o.elapsed,
		latencies:      latencies,
		req:            r.req.plus(o.req),
		provider:       r.provider.plus(o.provider),
		reconciles:     r.reconciles + o.reconciles,
		lookupKeys:     r.lookupKeys + o.lookupKeys,
		cpu:            cpu,
		finalizersLeft: r.finalizersLeft + o.finalizersLeft,
	}
}

// tracker follows the jobs of a window through a watch: when each was first
// seen Completed, and when each was terminal without the finalizer.
type tracker struct {
	// first is the index of the first job followed, n how many.
	first       int
	n           int
	completedAt []time.Time
	// terminal marks the jobs seen Completed or Failed, finished those
	// also seen without the finalizer.
	terminal  []bool
	finished  []bool
	completed int
	failed    int
	released  int
	// firstFailure describes the first Failed job.
	firstFailure string
	// allTerminal is closed when every job is Completed or Failed, and
	// allReleased when every one also lost its finalizer.
	allTerminal chan struct{}
	allReleased chan struct{}
	// exited is closed when the watch ended; err says why, if it failed.
	exited chan struct{}
	err    error
}

func newTracker(first, n int) *tracker {
	return &tracker{
		first: first, n: n, completedAt: make([]time.Time, n), terminal: make([]bool, n), finished: make([]bool, n),
		allTerminal: make(chan struct{}), allReleased: make(chan struct{}), exited: make(chan struct{}),
	}
}

// follow consumes the watch until it is stopped. Only its goroutine touches
// the tracker's fields until exited is closed.
func (t *tracker) follow(events <-chan watch.Event, prog *progress) {
	defer close(t.exited)
	for ev := range events {
		switch ev.Type {
		case watch.Added, watch.Modified:
		case watch.Error:
			t.err = fmt.Errorf("the watch of the jobs failed: %v", ev.Object)
			return
		default:
			continue
		}
		job, ok := ev.Object.(*paymentsv1alpha1.PaymentJob)
		if !ok {
			continue
		}
		i, ok := jobIndex(job.Name)
		i -= t.first
		if !ok || i < 0 || i >= t.n {
			continue
		}
		phase := job.Status.Phase
		if phase != paymentsv1alpha1.PhaseCompleted && phase != paymentsv1alpha1.PhaseFailed {
			continue
		}
		if !t.terminal[i] {
			t.terminal[i] = true
			if phase == paymentsv1alpha1.PhaseCompleted {
				t.completedAt[i] = time.Now()
				t.completed++
				if prog != nil {
					prog.set(t.completed)
				}
			} else {
				t.failed++
				if t.firstFailure == "" {
					t.firstFailure = fmt.Sprintf("%s/%s: %+v", job.Namespace, job.Name, job.Status.Failure)
				}
			}
			if t.completed+t.failed == t.n {
				close(t.allTerminal)
			}
		}
		// Released: the finish patch removed the finalizer and set the
		// finished label in one write (the baseline makes the same patch).
		if len(job.Finalizers) == 0 && job.Labels[paymentsv1alpha1.LabelFinished] == "true" && !t.finished[i] {
			t.finished[i] = true
			t.released++
			if t.released == t.n {
				close(t.allReleased)
			}
		}
	}
}

// watchJobs starts a watch of the jobs of ns from resourceVersion rv,
// restarted from the last event if the API server closes it.
func (b *bench) watchJobs(ctx context.Context, ns, rv, fieldSelector string) (*watchtools.RetryWatcher, error) {
	w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, jobWatcher{c: b.cl.creator, ns: ns, fieldSelector: fieldSelector})
	if err != nil {
		return nil, fmt.Errorf("cannot watch the jobs of %s: %w", ns, err)
	}
	return w, nil
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
func (b *bench) runJobs(ctx context.Context, name, ns string, n int, sb *sandbox) (runResult, error) {
	res, err := b.runJobsKeeping(ctx, name, ns, n, sb)
	if err != nil {
		return res, err
	}
	return res, b.deleteJobs(ctx, ns)
}

// runJobsKeeping is runJobs without deleting the jobs.
func (b *bench) runJobsKeeping(ctx context.Context, name, ns string, n int, sb *sandbox) (runResult, error) {
	res := runResult{n: n}
	if err := b.mgr.waitIdle(ctx, idleWait); err != nil {
		return res, err
	}
	var existing paymentsv1alpha1.PaymentJobList
	if err := b.cl.creator.List(ctx, &existing, client.InNamespace(ns)); err != nil {
		return res, fmt.Errorf("cannot list the jobs of %s: %w", ns, err)
	}
	if len(existing.Items) > 0 {
		return res, fmt.Errorf("namespace %s already holds %d jobs", ns, len(existing.Items))
	}
	sbBefore, err := sb.stats(ctx)
	if err != nil {
		return res, err
	}
	recBefore, err := b.mgr.reconciles(ctx)
	if err != nil {
		return res, err
	}
	keysBefore, err := b.mgr.lookupKeys(ctx)
	if err != nil {
		return res, err
	}
	ledgerBefore, err := b.mgr.ledgerCounters(ctx)
	if err != nil {
		return res, err
	}
	before, err := b.cl.requestCounts(ctx)
	if err != nil {
		return res, err
	}

	w, err := b.watchJobs(ctx, ns, existing.ResourceVersion, "")
	if err != nil {
		return res, err
	}
	prog := startProgress(name, n)
	t := newTracker(0, n)
	go t.follow(w.ResultChan(), prog)
	stopWatch := func() {
		w.Stop()
		<-t.exited
	}

	createdAt := make([]time.Time, n)
	cpuBefore := cpuNow()
	start := time.Now()
	err = runWorkers(ctx, b.cfg.workers, n, func(ctx context.Context, i int) error {
		createdAt[i] = time.Now()
		if err := b.cl.creator.Create(ctx, newJob(ns, i)); err != nil {
			return fmt.Errorf("cannot create job %d: %w", i, err)
		}
		return nil
	})
	if err == nil {
		err = b.waitFor(ctx, t, t.allTerminal, b.cfg.timeout-time.Since(start), "terminal")
	}
	prog.stop()
	if err != nil {
		stopWatch()
		return res, fmt.Errorf("%s: %w (%d of %d Completed; manager log: %s)", name, err, t.completed, n, b.mgr.proc.Log)
	}
	if err := b.waitFor(ctx, t, t.allReleased, finalizerWait, "released"); err != nil {
		step("%s: %v", name, err)
	}
	after, err := b.cl.quiesce(ctx, quiesceWait)
	res.cpu = cpuNow().minus(cpuBefore)
	stopWatch()
	if err != nil {
		return res, err
	}
	res.finalizersLeft = t.completed + t.failed - t.released

	if t.failed > 0 {
		return res, fmt.Errorf("%s: %d of %d jobs Failed, e.g. %s; manager log: %s", name, t.failed, n, t.firstFailure, b.mgr.proc.Log)
	}
	last := start
	latencies := make([]time.Duration, 0, n)
	for i, done := range t.completedAt {
		if done.After(last) {
			last = done
		}
		latencies = append(latencies, done.Sub(createdAt[i]))
	}
	slices.Sort(latencies)
	res.elapsed = last.Sub(start)
	res.latencies = latencies

	d := after.minus(before)
	res.req = d.figures()
	res.req.jobWrites -= float64(n) // the benchmark's creates
	sbAfter, err := sb.stats(ctx)
	if err != nil {
		return res, err
	}
	res.provider = sbAfter.minus(sbBefore)
	recAfter, err := b.mgr.reconciles(ctx)
	if err != nil {
		return res, err
	}
	res.reconciles = recAfter - recBefore
	keysAfter, err := b.mgr.lookupKeys(ctx)
	if err != nil {
		return res, err
	}
	res.lookupKeys = keysAfter - keysBefore
	ledgerAfter, err := b.mgr.ledgerCounters(ctx)
	if err != nil {
		return res, err
	}
	pv := res.provider
	step("%s: %d jobs, %.1f jobs/s, p50 %s, p99 %s, %d reconciles, %d keys looked up, sandbox: %d creates, %d searches, %d retrieves, %d charges, %d replays, %d refused (429); API requests: %s",
		name, n, res.jobsPerSec(), res.latency(50).Round(time.Millisecond), res.latency(99).Round(time.Millisecond), int(res.reconciles), int(res.lookupKeys),
		pv.Requests, pv.Searches, pv.Retrieves, pv.Charges, pv.Replays, pv.RateLimited, d.breakdown())
	step("%s: CPU per job: %s", name, res.cpu.perJob(n))
	step("%s: the manager's ledger: %.0f appends, %.0f pages read again after the watch reported a newer version",
		name, ledgerAfter.appends-ledgerBefore.appends, ledgerAfter.rereads-ledgerBefore.rereads)
	if res.finalizersLeft > 0 {
		step("%s: %d Completed jobs still hold the finalizer %s after %s", name, res.finalizersLeft, paymentsv1alpha1.Finalizer, finalizerWait)
	}
	if pv.Charges != int64(n) {
		return res, fmt.Errorf("%s: the sandbox charged %d times for %d Completed jobs", name, pv.Charges, n)
	}
	return res, nil
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
		return errors.New("the watch of the jobs ended")
	case <-mgrDone:
		return b.mgr.proc.ExitError()
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return fmt.Errorf("not every job was %s within %s", what, timeout.Round(time.Second))
	}
}

// deleteJobs deletes every job of ns and waits until they are gone.
func (b *bench) deleteJobs(ctx context.Context, ns string) error {
	if err := b.cl.creator.DeleteAllOf(ctx, &paymentsv1alpha1.PaymentJob{}, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("cannot delete the jobs of %s: %w", ns, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var l paymentsv1alpha1.PaymentJobList
		if err := b.cl.creator.List(ctx, &l, client.InNamespace(ns), client.Limit(1)); err != nil {
			return fmt.Errorf("cannot list the jobs of %s: %w", ns, err)
		}
		if len(l.Items) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("jobs of %s are not gone a minute after their deletion (finalizers %v)", ns, l.Items[0].Finalizers)
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
}

// Targets of the per-job tallies, in hundredths per job. Lookups (one
// search request for up to 10 keys) may add up to 0.15 provider calls per
// job to the one create of each job.
const (
	maxJobWritesPerJob     = 400
	maxProviderCallsPerJob = 115
	maxLookupsPerJob       = 15
)

// addRun reports the figures of an operator window with the key suffix
// (_0ms, _50ms) and, for the 0 ms window, the primary per-job keys and
// their targets.
func (b *bench) addRun(r runResult, suffix, title string, baseline float64, primary bool) {
	n := float64(r.n)
	jobs := int64(r.n)
	b.rep.add(figure{key: "jobs_per_sec" + suffix, label: title + ": throughput", value: r.jobsPerSec(), kind: kindRate})
	var ratioTarget *target
	if primary {
		ratioTarget = atLeastUnlessZero(b.cfg.minRatio)
	}
	b.rep.add(figure{key: "ratio" + suffix, label: title + ": throughput / baseline", value: r.jobsPerSec() / baseline, kind: kindRatio, target: ratioTarget})
	b.addLatency(r, suffix, title)
	key := func(k string) string {
		if primary {
			return k
		}
		return k + suffix
	}
	tg := func(t *target) *target {
		if primary {
			return t
		}
		return nil
	}
	b.rep.add(perJob(key("writes_per_job"), title+": API writes/job (jobs: PATCH, PUT; ledger pages: POST, PUT, DELETE)",
		whole(r.req.jobWrites+r.req.ledgerWrites), jobs, tg(perJobAtMost(maxJobWritesPerJob))))
	b.rep.add(perJob(key("ledger_writes_per_job"), title+": of which ledger page writes/job", whole(r.req.ledgerWrites), jobs, nil))
	b.rep.add(figure{key: key("events_per_job"), label: title + ": events/job", value: r.req.eventPosts / n, kind: kindPerJob})
	b.rep.add(figure{key: key("reads_per_job"), label: title + ": API reads/job (GET, LIST)", value: r.req.reads / n, kind: kindPerJob, target: tg(below(0.05))})
	b.rep.add(perJob(key("ledger_reads_per_job"), title+": of which ledger page reads/job", whole(r.req.ledgerReads), jobs, nil))
	b.rep.add(figure{key: key("conflicts_per_job"), label: title + ": conflicts (409)/job", value: r.req.conflicts / n, kind: kindPerJob})
	b.rep.add(perJob(key("provider_calls_per_job"), title+": provider calls/job (creates, searches, retrieves)",
		r.provider.providerCalls(), jobs, tg(perJobAtMost(maxProviderCallsPerJob))))
	b.rep.add(perJob(key("charges_per_job"), title+": charges/job", r.provider.Charges, jobs, tg(onePerJob())))
	b.rep.add(figure{key: key("reconciles_per_job"), label: title + ": reconciles/job", value: r.reconciles / n, kind: kindPerJob})
	b.addCPU(r.cpu, r.n, title, suffix)
	b.noteFinalizers(r, title)
}

// addLatency reports the p50 and p99 of create to Completed.
func (b *bench) addLatency(r runResult, suffix, title string) {
	b.rep.add(figure{key: "p50_ms" + suffix, label: title + ": create to Completed, p50", value: float64(r.latency(50)) / float64(time.Millisecond), kind: kindMillis})
	b.rep.add(figure{key: "p99_ms" + suffix, label: title + ": create to Completed, p99", value: float64(r.latency(99)) / float64(time.Millisecond), kind: kindMillis})
}

// noteFinalizers notes the Completed jobs of a window that kept the
// finalizer.
func (b *bench) noteFinalizers(r runResult, title string) {
	if r.finalizersLeft > 0 {
		b.rep.note("%s: %d Completed jobs still held the finalizer %s after %s.", title, r.finalizersLeft, paymentsv1alpha1.Finalizer, finalizerWait)
	}
}

// addLookupRuns reports the runs at Stripe's live-mode rate limits with
// lookups (the default policy) and without (policy Never): what the
// lookups cost in provider requests and in throughput.
func (b *bench) addLookupRuns(lookup, none runResult) {
	b.rep.add(figure{key: "jobs_per_sec_live_none", label: "live limits, no lookups: throughput", value: none.jobsPerSec(), kind: kindRate})
	b.rep.add(figure{key: "jobs_per_sec_live_lookup", label: "live limits, lookups: throughput", value: lookup.jobsPerSec(), kind: kindRate})
	b.rep.add(figure{
		key: "ratio_lookup_vs_none", label: "live limits: throughput, lookups / no lookups",
		value: lookup.jobsPerSec() / none.jobsPerSec(), kind: kindRatio, target: atLeastUnlessZero(b.cfg.minLookupRatio),
	})

	jobs := int64(lookup.n)
	title := "live limits, lookups"
	b.addLatency(lookup, "_live_lookup", title)
	b.rep.add(perJob("lookups_per_job", title+": lookup requests/job", lookup.provider.Searches, jobs, perJobAtMost(maxLookupsPerJob)))
	// 1 when every key was looked up once: lookup requests/job is then 1
	// over the keys a request carried.
	b.rep.add(perJob("lookup_keys_per_job_live_lookup", title+": keys looked up/job (manager's count)", whole(lookup.lookupKeys), jobs, nil))
	b.rep.add(perJob("provider_calls_per_job_live_lookup", title+": provider calls/job (creates, searches, retrieves)",
		lookup.provider.providerCalls(), jobs, perJobAtMost(maxProviderCallsPerJob)))
	b.rep.add(perJob("charges_per_job_live_lookup", title+": charges/job", lookup.provider.Charges, jobs, onePerJob()))
	b.rep.add(perJob("rate_limited_per_job_live_lookup", title+": refused (429)/job", lookup.provider.RateLimited, jobs, nil))
	b.rep.add(figure{key: "reconciles_per_job_live_lookup", label: title + ": reconciles/job", value: lookup.reconciles / float64(lookup.n), kind: kindPerJob})
	b.addCPU(lookup.cpu, lookup.n, title, "_live_lookup")
	b.noteFinalizers(lookup, title)

	// Policy Never: not one lookup, only the creates.
	jobs = int64(none.n)
	title = "live limits, no lookups"
	b.addLatency(none, "_live_none", title)
	b.rep.add(perJob("lookups_per_job_live_none", title+": lookup requests/job", none.provider.Searches, jobs, zero()))
	b.rep.add(perJob("provider_calls_per_job_live_none", title+": provider calls/job (creates, searches, retrieves)", none.provider.providerCalls(), jobs, nil))
	b.rep.add(perJob("charges_per_job_live_none", title+": charges/job", none.provider.Charges, jobs, onePerJob()))
	b.rep.add(perJob("rate_limited_per_job_live_none", title+": refused (429)/job", none.provider.RateLimited, jobs, nil))
	b.rep.add(figure{key: "reconciles_per_job_live_none", label: title + ": reconciles/job", value: none.reconciles / float64(none.n), kind: kindPerJob})
	b.addCPU(none.cpu, none.n, title, "_live_none")
	b.noteFinalizers(none, title)
}

// whole is a counter read as a float, as the whole number it is.
func whole(v float64) int64 { return int64(math.Round(v)) }

// history creates the jobs the operator leaves behind, then starts a
// manager on them and measures its start, its memory, its requests and
// provider calls while it starts and settles, and one new job.
func (b *bench) history(ctx context.Context, ns string, heap0 float64) error {
	n := b.cfg.history
	provider, err := b.cl.providerIdentity(ctx, ns, b.sb.base)
	if err != nil {
		return err
	}
	led, err := startLedger(ctx, b.cl.creator)
	if err != nil {
		return err
	}
	prog := startProgress("history: create", n)
	start := time.Now()
	holder := "bench-history/00000000"
	// As the operator leaves them: Completed, in the ledger, then without
	// the finalizer (which the admission policy added at create) and with
	// the finished label, which the other policy allows on finished jobs
	// only.
	err = runWorkers(ctx, historyWriters, n, func(ctx context.Context, i int) error {
		job := newJob(ns, i)
		if err := b.cl.creator.Create(ctx, job); err != nil {
			return fmt.Errorf("cannot create history job %d: %w", i, err)
		}
		now := time.Now()
		claim(job, holder, now.Add(-100*time.Millisecond))
		complete(job, now)
		if err := b.cl.creator.Status().Update(ctx, job); err != nil {
			return fmt.Errorf("cannot complete history job %d: %w", i, err)
		}
		if err := led.record(ctx, job, provider); err != nil {
			return err
		}
		if err := finish(ctx, b.cl.creator, job); err != nil {
			return err
		}
		prog.add(1)
		return nil
	})
	prog.stop()
	led.stop()
	if err != nil {
		return err
	}
	step("history: %d Completed jobs written, and recorded in the ledger, in %s", n, time.Since(start).Round(time.Millisecond))

	auditOffset, err := fileSize(b.cl.auditLog)
	if err != nil {
		return err
	}
	providersBefore, err := b.markProviders(ctx)
	if err != nil {
		return err
	}
	before, err := b.cl.requestCounts(ctx)
	if err != nil {
		return err
	}
	step("history: starting the manager on %d finished jobs", n)
	startup, err := b.startManager(ctx, userHistoryManager, b.cfg.workers)
	if err != nil {
		return err
	}
	step("history: manager ready after %s; settling for %s", startup.Round(time.Millisecond), b.cfg.settle)
	if err := b.settle(ctx, b.cfg.settle); err != nil {
		return err
	}
	after, err := b.cl.requestCounts(ctx)
	if err != nil {
		return err
	}
	audit, err := b.cl.auditCountsFrom(auditOffset)
	if err != nil {
		return err
	}
	auditEnd, err := fileSize(b.cl.auditLog)
	if err != nil {
		return err
	}
	providerCalls, err := b.providerCallsSince(ctx, providersBefore)
	if err != nil {
		return err
	}
	heap, rss, err := b.memory(ctx, "history")
	if err != nil {
		return err
	}
	all := after.minus(before)
	step("history: the manager's requests while starting and settling: %s", audit)
	step("history: all clients' API requests in that window: %s", all.breakdown())

	b.rep.add(figure{key: "startup_seconds_history", label: fmt.Sprintf("start to ready, %d finished jobs", n), value: startup.Seconds(), kind: kindSeconds})
	b.rep.add(figure{key: "heap_bytes_history", label: fmt.Sprintf("heap after sync, %d finished jobs", n), value: heap, kind: kindBytes})
	b.rep.add(figure{key: "rss_bytes_history", label: fmt.Sprintf("RSS after sync, %d finished jobs", n), value: rss, kind: kindBytes})
	b.rep.add(figure{key: "heap_ratio_history", label: "heap ratio, history / empty", value: heap / heap0, kind: kindRatio, target: atMost(1.5, "%.1f")})
	b.rep.add(figure{key: "startup_writes", label: fmt.Sprintf("manager API writes, start + %s", b.cfg.settle), value: float64(audit.writes), kind: kindCount, target: zero()})
	b.rep.add(figure{key: "startup_provider_calls", label: fmt.Sprintf("provider calls, start + %s", b.cfg.settle), value: float64(providerCalls), kind: kindCount, target: zero()})
	b.rep.add(figure{key: "startup_reads", label: fmt.Sprintf("manager API reads, start + %s", b.cfg.settle), value: float64(audit.reads), kind: kindCount})
	b.rep.add(figure{key: "startup_writes_all_clients", label: "API writes of all clients in that window", value: all.figures().writes, kind: kindCount})
	if w := all.figures().writes; w > float64(audit.writes) {
		b.rep.note("The API server's own background work (e.g. its identity lease renewals) made %.0f writes while the history manager started; startup_writes counts the manager's writes only, from the audit log.", w-float64(audit.writes))
	}

	seconds, err := b.oneJob(ctx, ns, n)
	if err != nil {
		return err
	}
	b.rep.add(figure{key: "new_job_seconds_history", label: fmt.Sprintf("one new job, create to Completed, beside %d finished", n), value: seconds, kind: kindSeconds})
	newJobAudit, err := b.cl.auditCountsFrom(auditEnd)
	if err != nil {
		return err
	}
	step("history: one new job Completed in %.3fs; the manager's requests for it: %s", seconds, newJobAudit)
	return nil
}

// providerMark is where the counters and the logs of the sandboxes stood.
type providerMark struct {
	stats      []sandboxStats
	logOffsets []int64
}

// sandboxes are the sandboxes of the run.
func (b *bench) sandboxes() []*sandbox {
	var l []*sandbox
	for _, sb := range []*sandbox{b.sb, b.live} {
		if sb != nil {
			l = append(l, sb)
		}
	}
	return l
}

// markProviders reads the counters and the log sizes of every sandbox.
func (b *bench) markProviders(ctx context.Context) (providerMark, error) {
	var m providerMark
	for _, sb := range b.sandboxes() {
		off, err := fileSize(sb.proc.Log)
		if err != nil {
			return m, err
		}
		st, err := sb.stats(ctx)
		if err != nil {
			return m, err
		}
		m.stats = append(m.stats, st)
		m.logOffsets = append(m.logOffsets, off)
	}
	return m, nil
}

// providerCallsSince counts the provider requests every sandbox received
// since m: per sandbox, the larger of its counters' difference (creates,
// searches, retrieves) and the /v1 requests of its log (those and the
// account reads).
func (b *bench) providerCallsSince(ctx context.Context, m providerMark) (int64, error) {
	var n int64
	for i, sb := range b.sandboxes() {
		st, err := sb.stats(ctx)
		if err != nil {
			return 0, err
		}
		logged, err := sb.providerRequestsSince(m.logOffsets[i])
		if err != nil {
			return 0, err
		}
		n += max(st.minus(m.stats[i]).providerCalls(), int64(logged))
	}
	return n, nil
}

// oneJob creates the i-th job of ns and returns the seconds until it is
// Completed.
func (b *bench) oneJob(ctx context.Context, ns string, i int) (float64, error) {
	name := jobName(i)
	var l paymentsv1alpha1.PaymentJobList
	if err := b.cl.creator.List(ctx, &l, client.InNamespace(ns), client.MatchingFields{"metadata.name": name}); err != nil {
		return 0, fmt.Errorf("cannot list job %s: %w", name, err)
	}
	w, err := b.watchJobs(ctx, ns, l.ResourceVersion, "metadata.name="+name)
	if err != nil {
		return 0, err
	}
	t := newTracker(i, 1)
	go t.follow(w.ResultChan(), nil)
	defer func() {
		w.Stop()
		<-t.exited
	}()
	start := time.Now()
	if err := b.cl.creator.Create(ctx, newJob(ns, i)); err != nil {
		return 0, fmt.Errorf("cannot create job %s: %w", name, err)
	}
	if err := b.waitFor(ctx, t, t.allTerminal, time.Minute, "terminal"); err != nil {
		return 0, fmt.Errorf("the new job %s/%s: %w; manager log: %s", ns, name, err, b.mgr.proc.Log)
	}
	if t.failed > 0 {
		return 0, fmt.Errorf("the new job %s/%s Failed: %s", ns, name, t.firstFailure)
	}
	return t.completedAt[0].Sub(start).Seconds(), nil
}

// addCPU reports the CPU milliseconds per job of all processes of a
// window (on a small machine, throughput is the cores divided by it) and,
// in the JSON only, of each process.
func (b *bench) addCPU(cpu cpuUsage, n int, title, suffix string) {
	names := make([]string, 0, len(cpu))
	total := 0.0
	for k, v := range cpu {
		names = append(names, k)
		total += v
	}
	slices.Sort(names)
	b.rep.add(figure{
		key:   "cpu_ms_per_job_total" + suffix,
		label: title + ": CPU/job, all processes", value: total * 1000 / float64(n), kind: kindMillis,
	})
	for _, k := range names {
		b.rep.add(figure{
			key:   "cpu_ms_per_job_" + strings.ReplaceAll(k, "-", "_") + suffix,
			label: fmt.Sprintf("CPU of %s per job%s", k, suffix), value: cpu[k] * 1000 / float64(n), kind: kindMillis, jsonOnly: true,
		})
	}
}
