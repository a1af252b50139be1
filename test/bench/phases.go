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

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	psandbox "github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// The phases of a run, in order, and the namespaces and providers they
// run in. Each phase's windows are in baseline.go, window.go, history.go,
// ledger.go and pgledger.go; their figures in figures.go and pgledger.go.

// Namespaces of the phases.
const (
	nsWarmup   = "bench-warmup"
	nsBaseline = "bench-baseline"
	// nsBaseline2 holds the baseline's second half.
	nsBaseline2 = "bench-baseline-2"
	nsFast      = "bench-operator-0ms"
	nsSlow      = "bench-operator-slow"
	nsHistory   = "bench-history"
)

// phaseCount is the number of phases, for the progress lines.
const phaseCount = 10

// liveRuns are the windows of the lookup phase, at Stripe's live-mode
// limits, in order: without lookups, with, with, without. Each has half of
// -jobs, so that their latencies compare, and the order cancels a drift of
// the API server's cost over the phase instead of favouring either side.
// Each has its own namespace, so that every job has a key the sandbox has
// not seen.
var liveRuns = []struct {
	name, ns string
	policy   paymentsv1alpha1.LookupPolicy
	// second runs the other half of -jobs.
	second bool
}{
	{"live, no lookups 1/2", "bench-live-none-1", paymentsv1alpha1.LookupNever, false},
	{"live, lookups 1/2", "bench-live-lookup-1", paymentsv1alpha1.LookupBeforeFirstCharge, false},
	{"live, lookups 2/2", "bench-live-lookup-2", paymentsv1alpha1.LookupBeforeFirstCharge, true},
	{"live, no lookups 2/2", "bench-live-none-2", paymentsv1alpha1.LookupNever, true},
}

// liveLimits are Stripe's live-mode rate limits, which the sandbox's
// --live-rate-limits sets.
var liveLimits = psandbox.LiveRateLimits()

// nsSweep is the namespace of the sweep's run with w workers.
func nsSweep(w int) string { return fmt.Sprintf("bench-sweep-w%d", w) }

// phases runs the phases in order.
func (b *bench) phases(ctx context.Context) error {
	cfg := b.cfg
	if cfg.only == onlyRecon {
		if _, err := b.emptyStart(ctx); err != nil {
			return err
		}
		return b.runReconPhase(ctx)
	}
	if cfg.only == onlyRefunds {
		if _, err := b.emptyStart(ctx); err != nil {
			return err
		}
		return b.refundsAlone(ctx)
	}
	if cfg.only == onlyDebits {
		if _, err := b.emptyStart(ctx); err != nil {
			return err
		}
		return b.debitsPhase(ctx)
	}
	baselineA, err := b.firstBaselineHalf(ctx)
	if err != nil {
		return err
	}
	empty, err := b.emptyStart(ctx)
	if err != nil {
		return err
	}
	baseline, err := b.fastRun(ctx, baselineA, empty)
	if err != nil {
		return err
	}

	step("phase 4/%d: lookups at Stripe's live-mode limits: %d jobs without lookups and %d with, in halves (without, with, with, without), %d workers", phaseCount, cfg.jobs, cfg.jobs, cfg.workers)
	if err := b.lookupRuns(ctx); err != nil {
		return err
	}
	if err := b.slowRuns(ctx, baseline); err != nil {
		return err
	}

	step("phase 6/%d: history, %d finished jobs", phaseCount, cfg.history)
	b.stopManager()
	pctx, cancel := context.WithTimeout(ctx, 2*cfg.timeout)
	defer cancel()
	if err := b.history(pctx, nsHistory, empty.heap); err != nil {
		return err
	}

	step("phase 7/%d: the ledger's size: %d jobs beside an empty ledger, then %d jobs beside %d entries", phaseCount,
		cfg.ledgerJobs, cfg.ledgerJobs, seedPages*seedEntriesPerPage)
	if err := b.ledgerPhase(ctx); err != nil {
		return err
	}

	if err := b.pgPhaseIfRun(ctx); err != nil {
		return err
	}
	if err := b.runReconPhase(ctx); err != nil {
		return err
	}
	if _, err := b.startManager(ctx, userManager, cfg.workers); err != nil {
		return err
	}
	return b.debitsPhase(ctx)
}

// runReconPhase runs phase 9 and reports its wall time, seeding included.
func (b *bench) runReconPhase(ctx context.Context) error {
	started := time.Now()
	step("phase 9/%d: reconciliation of %d payments at Stripe's live-mode limits, %d jobs charged beside it and %d without",
		phaseCount, b.cfg.reconPayments, b.cfg.reconJobs, b.cfg.reconJobs)
	if err := b.reconPhase(ctx); err != nil {
		return err
	}
	took := time.Since(started)
	b.rep.add(figure{key: "recon_phase_seconds", label: "reconciliation phase: wall time", value: took.Seconds(), kind: kindSeconds, jsonOnly: true})
	step("phase 9/%d took %s", phaseCount, took.Round(time.Second))
	b.stopManager()
	return nil
}

// pgPhaseIfRun is phase 8, when PostgreSQL runs.
func (b *bench) pgPhaseIfRun(ctx context.Context) error {
	cfg := b.cfg
	if b.pg == nil {
		step("phase 8/%d: the outcome ledger on PostgreSQL: skipped", phaseCount)
		b.stopManager()
		return nil
	}
	n := cfg.pgSideJobs()
	step("phase 8/%d: the outcome ledger on PostgreSQL: %d jobs on the CRD ledger and %d on PostgreSQL, in halves (CRD, PostgreSQL, PostgreSQL, CRD), "+
		"then %d beside %d rows, %d workers", phaseCount, n, n, n, cfg.pgRows, cfg.workers)
	started := time.Now()
	if err := b.pgPhase(ctx); err != nil {
		return err
	}
	took := time.Since(started)
	b.rep.add(figure{key: "pg_phase_seconds", label: "PostgreSQL phase: wall time", value: took.Seconds(), kind: kindSeconds, jsonOnly: true})
	step("phase 8/%d took %s", phaseCount, took.Round(time.Second))
	b.stopManager()
	return nil
}

// firstBaselineHalf is phase 1. A fresh API server is busy for a while
// (OpenAPI of the CRDs, caches): a few jobs through the baseline's path let
// it settle first. The baseline then runs in two halves, before and after
// the operator's 0 ms run: the API server's cost per request drifts up over
// a run (etcd history, its own heap), and bracketing cancels that drift
// instead of favouring whichever runs first.
func (b *bench) firstBaselineHalf(ctx context.Context) (baselineResult, error) {
	cfg := b.cfg
	warmup := min(cfg.jobs, 200)
	firstHalf := cfg.jobs / 2
	step("phase 1/%d: baseline, first half: %d of %d jobs, %d workers, no operator (after a warm-up of %d jobs)", phaseCount, firstHalf, cfg.jobs, cfg.workers, warmup)
	pctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	if _, err := b.baseline(pctx, "warm-up", nsWarmup, warmup); err != nil {
		return baselineResult{}, err
	}
	return b.baseline(pctx, "baseline 1/2", nsBaseline, firstHalf)
}

// managerStart is the start of a manager and its memory once it settled.
type managerStart struct {
	startup   time.Duration
	heap, rss float64
}

// emptyStart is phase 2: a manager started on an empty cluster, which
// then creates the providers of the operator phases.
func (b *bench) emptyStart(ctx context.Context) (managerStart, error) {
	step("phase 2/%d: manager start on an empty cluster", phaseCount)
	var s managerStart
	var err error
	if s.startup, err = b.startManager(ctx, userManager, b.cfg.workers); err != nil {
		return s, err
	}
	if err := b.settle(ctx, b.cfg.settle); err != nil {
		return s, err
	}
	if s.heap, s.rss, err = b.memory(ctx, "empty"); err != nil {
		return s, err
	}
	step("manager ready after %s; heap %.1f MiB, RSS %.1f MiB", s.startup.Round(time.Millisecond), s.heap/(1<<20), s.rss/(1<<20))
	return s, b.setupProviders(ctx)
}

// fastRun is phase 3: the operator against the sandbox at 0 ms, what etcd
// stores for its finished jobs, a refund of every one of them by the same
// manager, then the baseline's second half without the manager. It
// reports both baseline halves, the empty start, the run and the refunds,
// restarts the manager and returns the baseline's throughput.
func (b *bench) fastRun(ctx context.Context, baselineA baselineResult, empty managerStart) (float64, error) {
	cfg := b.cfg
	step("phase 3/%d: operator, sandbox at 0 ms, %d jobs, %d workers, then a partial refund of each; then the baseline's second half", phaseCount, cfg.jobs, cfg.workers)
	pctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	fast, err := b.runJobsKeeping(pctx, "operator 0ms", nsFast, cfg.jobs, b.sb)
	cancel()
	if err != nil {
		return 0, err
	}
	stored, err := b.cl.etcd.storedFinishedJobs(ctx, nsFast)
	if err != nil {
		return 0, err
	}
	step("etcd holds %d finished jobs of %s in %d bytes (keys and values), %.0f bytes a job", stored.objects, nsFast, stored.bytes, stored.perObject())
	// Read before the refunds, so that it stays the heap after the jobs;
	// the finished jobs are out of the manager's cache, so their deletion
	// after the refunds does not change it.
	heapFast, rssFast, err := b.memory(ctx, "after_0ms")
	if err != nil {
		return 0, err
	}
	refunds, err := b.refundRun(ctx, "refunds 0ms", nsFast)
	if err != nil {
		return 0, err
	}
	if err := b.deleteJobs(ctx, nsFast); err != nil {
		return 0, err
	}
	b.stopManager()
	pctx, cancel = context.WithTimeout(ctx, cfg.timeout)
	baselineB, err := b.baseline(pctx, "baseline 2/2", nsBaseline2, cfg.jobs-cfg.jobs/2)
	cancel()
	if err != nil {
		return 0, err
	}
	baseline := b.addBaseline(baselineA.plus(baselineB))
	b.rep.add(figure{key: "startup_seconds_0", label: "start to ready, empty cluster", value: empty.startup.Seconds(), kind: kindSeconds})
	b.rep.add(figure{key: "heap_bytes_0", label: "heap after sync, empty cluster", value: empty.heap, kind: kindBytes})
	b.rep.add(figure{key: "rss_bytes_0", label: "RSS after sync, empty cluster", value: empty.rss, kind: kindBytes})
	b.addRun(fast, "_0ms", "0 ms", baseline, true)
	b.addStored(stored)
	b.addMemoryFigures("_0ms", "after the 0 ms run", heapFast, rssFast)
	b.addRefundRun(refunds, fast)
	_, err = b.startManager(ctx, userManager, cfg.workers)
	return baseline, err
}

// slowRuns is phase 5: the operator against the sandbox at -latency, a
// refund of every job of that run by the same manager, then the sweep over
// the workers with -scale-jobs each.
func (b *bench) slowRuns(ctx context.Context, baseline float64) error {
	cfg := b.cfg
	slow := fmt.Sprintf("%dms", cfg.latency.Milliseconds())
	step("phase 5/%d: operator, sandbox at %s, %d jobs, %d workers, then a partial refund of each, then the sweep %v with %d jobs",
		phaseCount, cfg.latency, cfg.jobs, cfg.workers, cfg.scaleWorkers, cfg.scaleJobs)
	if err := b.sb.SetLatency(ctx, cfg.latency); err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	slowRun, err := b.runJobsKeeping(pctx, "operator "+slow, nsSlow, cfg.jobs, b.sb)
	cancel()
	if err != nil {
		return err
	}
	b.addRun(slowRun, "_"+slow, slow, baseline, false)
	// Read before the refunds, as after the 0 ms run.
	if err := b.addMemory(ctx, "_"+slow, "after the "+slow+" run"); err != nil {
		return err
	}
	if err := b.refundsAfter(ctx, slowRun, slow, nsSlow); err != nil {
		return err
	}
	for _, w := range cfg.scaleWorkers {
		b.stopManager()
		if _, err := b.startManager(ctx, userManager, w); err != nil {
			return err
		}
		pctx, cancel = context.WithTimeout(ctx, cfg.timeout)
		r, err := b.runJobs(pctx, fmt.Sprintf("sweep %s w=%d", slow, w), nsSweep(w), cfg.scaleJobs, b.sb)
		cancel()
		if err != nil {
			return err
		}
		b.rep.add(figure{key: fmt.Sprintf("jobs_per_sec_%s_w%d", slow, w), label: fmt.Sprintf("%s sweep: throughput, %d workers", slow, w), value: r.jobsPerSec(), kind: kindRate})
	}
	return b.sb.SetLatency(ctx, 0)
}

// refundsAfter refunds every job that jobs, the run at the sandbox's
// latency slow, left in ns, deletes the jobs and reports the refunds
// beside them.
func (b *bench) refundsAfter(ctx context.Context, jobs runResult, slow, ns string) error {
	refunds, err := b.refundRun(ctx, "refunds "+slow, ns)
	if err != nil {
		return err
	}
	if err := b.deleteJobs(ctx, ns); err != nil {
		return err
	}
	b.addSlowRefundRun(refunds, jobs, slow)
	return nil
}

// refundsAlone is -only refunds: the jobs and refunds of phases 3 and 5,
// at 0 ms and at -latency, with the manager of the empty start, and their
// throughputs and ratios; no baseline, etcd, memory or sweep.
func (b *bench) refundsAlone(ctx context.Context) error {
	cfg := b.cfg
	slow := fmt.Sprintf("%dms", cfg.latency.Milliseconds())
	step("refunds alone: %d jobs and a partial refund of each at 0 ms, then at %s, %d workers", cfg.jobs, cfg.latency, cfg.workers)
	pctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	fast, err := b.runJobsKeeping(pctx, "operator 0ms", nsFast, cfg.jobs, b.sb)
	cancel()
	if err != nil {
		return err
	}
	refunds, err := b.refundRun(ctx, "refunds 0ms", nsFast)
	if err != nil {
		return err
	}
	if err := b.deleteJobs(ctx, nsFast); err != nil {
		return err
	}
	b.rep.add(figure{key: "jobs_per_sec_0ms", label: "0 ms: throughput", value: fast.jobsPerSec(), kind: kindRate})
	b.addRefundRun(refunds, fast)
	if err := b.sb.SetLatency(ctx, cfg.latency); err != nil {
		return err
	}
	pctx, cancel = context.WithTimeout(ctx, cfg.timeout)
	slowRun, err := b.runJobsKeeping(pctx, "operator "+slow, nsSlow, cfg.jobs, b.sb)
	cancel()
	if err != nil {
		return err
	}
	b.rep.add(figure{key: "jobs_per_sec_" + slow, label: slow + ": throughput", value: slowRun.jobsPerSec(), kind: kindRate})
	if err := b.refundsAfter(ctx, slowRun, slow, nsSlow); err != nil {
		return err
	}
	b.stopManager()
	return b.sb.SetLatency(ctx, 0)
}

// setupProviders creates the namespaces of the operator phases with their
// providers and waits until every provider is Ready. The phases of the
// baseline and of the slow provider reach the sandbox without rate limits,
// with the provider's client-side limit off and the default lookup policy,
// so that they measure the operator and the API server. The lookup runs
// reach the sandbox at Stripe's live-mode limits, with the charge requests
// limited to its write rate on the client side as a user of live mode sets
// them, and the lookup requests at their default limit.
func (b *bench) setupProviders(ctx context.Context) error {
	namespaces := []string{nsFast, nsSlow, nsHistory, nsLedgerEmpty, nsLedgerFull}
	for _, w := range b.cfg.scaleWorkers {
		namespaces = append(namespaces, nsSweep(w))
	}
	for _, ns := range namespaces {
		if err := b.cl.setupNamespace(ctx, ns, &providerSetup{apiBase: b.sb.URL, secretValue: b.secretValue}); err != nil {
			return err
		}
	}
	// Phase 9's providers reach the live sandbox as the lookup runs' do,
	// without lookups: the sandbox's search scans every intent under its
	// lock, and beside the phase's seeded intents it would be the
	// bottleneck of the jobs and stall the reconciliation's list requests,
	// which Stripe's indexed search does not.
	for _, ns := range reconNamespaces {
		p := &providerSetup{apiBase: b.live.URL, secretValue: b.secretValue, requestsPerSecond: int32(liveLimits.Writes),
			lookup: paymentsv1alpha1.LookupNever}
		if err := b.cl.setupNamespace(ctx, ns, p); err != nil {
			return err
		}
		namespaces = append(namespaces, ns)
	}
	for _, r := range liveRuns {
		p := &providerSetup{apiBase: b.live.URL, secretValue: b.secretValue, requestsPerSecond: int32(liveLimits.Writes), lookup: r.policy}
		if err := b.cl.setupNamespace(ctx, r.ns, p); err != nil {
			return err
		}
		namespaces = append(namespaces, r.ns)
	}
	return b.cl.waitProvidersReady(ctx, namespaces, time.Minute, b.mgr)
}

// lookupRuns charges -jobs jobs at Stripe's live-mode limits with lookups
// (the default policy) and -jobs without (policy Never), in the windows of
// liveRuns, and reports what the lookups cost. Every window waits for all
// its jobs to be terminal and counts its own provider requests (the
// difference of the sandbox's counters around it).
func (b *bench) lookupRuns(ctx context.Context) error {
	var lookup, none runResult
	for _, r := range liveRuns {
		n := b.cfg.jobs / 2
		if r.second {
			n = b.cfg.jobs - n
		}
		pctx, cancel := context.WithTimeout(ctx, b.cfg.timeout)
		res, err := b.runJobs(pctx, r.name, r.ns, n, b.live)
		cancel()
		if err != nil {
			return err
		}
		if r.policy == paymentsv1alpha1.LookupNever {
			none = none.plus(res)
		} else {
			lookup = lookup.plus(res)
		}
	}
	b.addLookupRuns(lookup, none)
	return nil
}
