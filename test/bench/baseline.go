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
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
)

// The baseline: the operator's API writes for each job, made by the
// benchmark with the operator not running, so that the operator's
// throughput has something to be compared with.

// baselineHolder is the claim holder of the baseline's writes.
const baselineHolder = "bench-baseline/00000000"

// baselineResult is what one baseline window measured.
type baselineResult struct {
	n       int
	elapsed time.Duration
	req     requestCounts
	cpu     cpuUsage
}

// plus adds two windows of the baseline.
func (r baselineResult) plus(o baselineResult) baselineResult {
	return baselineResult{n: r.n + o.n, elapsed: r.elapsed + o.elapsed, req: r.req.plus(o.req), cpu: r.cpu.plus(o.cpu)}
}

// baselineWriter makes the operator's writes for the jobs of one baseline
// window.
type baselineWriter struct {
	ns string
	// creator creates the jobs, without a practical client-side limit, as
	// in the operator phases.
	creator client.Client
	// writer makes the operator's writes, with the manager's client-side
	// limit.
	writer client.Client
	// events is the manager's event recorder, on a client of its own.
	events *eventRecorder
	// ledger is the operator's outcome ledger, writing through writer.
	ledger *recorder
	// provider is the provider the jobs are charged through.
	provider paymentsv1alpha1.ProviderIdentity
}

// startBaselineWriter makes the clients, the event recorder and the
// ledger of a baseline window in ns.
func (b *bench) startBaselineWriter(ctx context.Context, ns string) (*baselineWriter, error) {
	writer, err := b.cl.client(b.cfg.qps, b.cfg.burst)
	if err != nil {
		return nil, err
	}
	events, err := b.cl.startEventRecorder(ctx, b.cfg.qps, b.cfg.burst)
	if err != nil {
		return nil, err
	}
	// The outcome ledger of the operator's own code, as the manager runs
	// it: loaded (a LIST of its pages) before the window, appending with
	// group commit through the writes' client.
	led, err := startLedger(ctx, writer)
	if err != nil {
		events.stop()
		return nil, err
	}
	// The namespace has no PaymentProvider: the identity is the sandbox's,
	// under a made-up uid.
	provider, err := b.sandboxIdentity(ctx, "bench-baseline")
	if err != nil {
		led.stop()
		events.stop()
		return nil, err
	}
	return &baselineWriter{ns: ns, creator: b.cl.creator, writer: writer, events: events, ledger: led, provider: provider}, nil
}

// stop stops the ledger and the event recorder.
func (w *baselineWriter) stop() {
	w.ledger.stop()
	w.events.stop()
}

// job does for the i-th job what the operator does: create it (the
// admission policy adds the finalizer), the finalizer patch only if it did
// not, the claim and outcome status updates (paymentjob.ClaimStatus and
// CompletedStatus), one event from the manager's recorder, the outcome
// recorded in the ledger (the operator's internal/ledger, whose appends
// share one write between the jobs waiting for it) and the finalizer
// removal with the finished label, each write on the object the previous
// one returned.
func (w *baselineWriter) job(ctx context.Context, i int) error {
	job := newJob(w.ns, i)
	if err := w.creator.Create(ctx, job); err != nil {
		return fmt.Errorf("cannot create %s: %w", job.Name, err)
	}
	// The admission policy adds the finalizer at create; the operator
	// adds it only when the policy did not.
	if !controllerutil.ContainsFinalizer(job, paymentsv1alpha1.Finalizer) {
		patch := client.MergeFromWithOptions(job.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(job, paymentsv1alpha1.Finalizer)
		if err := w.writer.Patch(ctx, job, patch); err != nil {
			return fmt.Errorf("cannot add the finalizer of %s: %w", job.Name, err)
		}
	}
	claim(job, w.provider, baselineHolder, time.Now())
	if err := w.writer.Status().Update(ctx, job); err != nil {
		return fmt.Errorf("cannot claim %s: %w", job.Name, err)
	}
	reason, msg := complete(job, time.Now())
	if err := w.writer.Status().Update(ctx, job); err != nil {
		return fmt.Errorf("cannot record the outcome of %s: %w", job.Name, err)
	}
	w.events.Eventf(job, nil, corev1.EventTypeNormal, reason, chargeAction, "%s", msg)
	if err := w.ledger.record(ctx, job); err != nil {
		return err
	}
	return finish(ctx, w.writer, job)
}

// baseline runs the operator's writes (baselineWriter.job) for n jobs in
// ns, from the manager's number of workers, and measures the window until
// every job is released and every event sent. The writes share one client
// with the manager's client-side limit, and the events have a client of
// their own, as the manager's event recorder has; the creates come from a
// client without a practical limit, as in the operator phases.
func (b *bench) baseline(ctx context.Context, name, ns string, n int) (baselineResult, error) {
	if err := b.cl.setupNamespace(ctx, ns, nil); err != nil {
		return baselineResult{}, err
	}
	w, err := b.startBaselineWriter(ctx, ns)
	if err != nil {
		return baselineResult{}, err
	}
	defer w.stop()
	// The benchmark watches the jobs as it does in the operator phases, so
	// that the API server serves the same observer in both.
	var existing paymentsv1alpha1.PaymentJobList
	if err := b.cl.creator.List(ctx, &existing, client.InNamespace(ns)); err != nil {
		return baselineResult{}, fmt.Errorf("cannot list the jobs of %s: %w", ns, err)
	}
	watcher, err := b.watchJobs(ctx, ns, existing.ResourceVersion, "")
	if err != nil {
		return baselineResult{}, err
	}
	t := newTracker(0, n)
	go t.follow(watcher.ResultChan(), nil)
	stopWatch := func() {
		watcher.Stop()
		<-t.exited
	}
	before, err := b.cl.requestCounts(ctx)
	if err != nil {
		stopWatch()
		return baselineResult{}, err
	}
	cpuBefore := cpuNow()

	prog := startProgress(name, n)
	start := time.Now()
	err = runWorkers(ctx, b.cfg.workers, n, func(ctx context.Context, i int) error {
		if err := w.job(ctx, i); err != nil {
			return err
		}
		prog.add(1)
		return nil
	})
	elapsed := time.Since(start)
	if err == nil {
		// The watch has seen (almost) every job by now; wait for the rest,
		// and for the events the recorder is still sending, so that the
		// CPU and the requests of the window include all of its work.
		err = b.waitFor(ctx, t, t.allReleased, finalizerWait, "released")
	}
	if err == nil {
		err = w.events.waitSent(ctx, n, quiesceWait)
	}
	cpu := cpuNow().minus(cpuBefore)
	prog.stop()
	stopWatch()
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
	engine.MarkFinished(job)
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
