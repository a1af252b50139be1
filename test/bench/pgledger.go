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
	"math"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// Phase 8: the outcome ledger on PostgreSQL (--ledger-backend=postgres)
// against the CRD ledger, the same jobs through the same control plane:
// the API writes a job costs, the throughput, the database's statements,
// the manager's heap beside a large outcome table, and what a finished job
// leaves in etcd once its TTL deleted it.

// Namespaces of phase 8: each side runs its jobs in two halves, each half
// in a namespace of its own.
var (
	nsPGCRD   = [2]string{"bench-pg-crd-1", "bench-pg-crd-2"}
	nsPGEmpty = [2]string{"bench-pg-empty-1", "bench-pg-empty-2"}
	nsPGFull  = [2]string{"bench-pg-full-1", "bench-pg-full-2"}
)

// Targets of phase 8.
const (
	// pgWritesPerJob are the API writes of a job on the PostgreSQL ledger,
	// in hundredths: claim, outcome, finish, and no ledger page.
	pgWritesPerJob = 300
	// maxPGHeapRatio bounds the heap beside -pg-rows rows over the heap
	// beside an empty table: the manager holds nothing per key.
	maxPGHeapRatio = 1.1
)

// quietFor is how long the API server's resource requests and the ledger
// database's statements stay unchanged before a manager that just started
// counts as done with its start.
const quietFor = time.Second

// pgSide is one side of phase 8: its two windows added up, the manager's
// memory after them, and the ledger database's statements from the first
// window's start to the second's end.
type pgSide struct {
	run        runResult
	heap, rss  float64
	statements statementCounts
}

// pgTTL is what the TTL of the PostgreSQL side's jobs left behind.
type pgTTL struct {
	// deleted counts the jobs the manager's collector deleted.
	deleted int
	// pages is what etcd stores for the ledger's pages afterwards.
	pages storedSize
	// statements are the ledger database's statements meanwhile.
	statements statementCounts
}

// pgLoad is the large outcome table.
type pgLoad struct {
	rows    int
	elapsed time.Duration
	// bytes is the table's size, indexes included.
	bytes float64
}

// pgPhase is phase 8. Each side runs -pg-jobs jobs at 0 ms in two halves,
// with the same workers: the CRD ledger's halves bracket the PostgreSQL
// ledger's (CRD, PostgreSQL, PostgreSQL, CRD), as the baseline's bracket
// the operator's, so that a drift of the API server's cost over the phase
// favours neither; then the PostgreSQL ledger again beside -pg-rows rows.
// Between, the jobs of the PostgreSQL side's first half are deleted after
// their TTL, and etcd is read for the ledger's pages. Every manager starts on a ledger without pages (the collector's sweep
// then records the history phase's finished jobs in it), and a window
// starts once the manager is done with that.
func (b *bench) pgPhase(ctx context.Context) error {
	n := b.cfg.pgSideJobs()
	halves := [2]int{n / 2, n - n/2}
	if err := b.setupPGNamespaces(ctx); err != nil {
		return err
	}
	var crd, empty, full pgSide
	if err := b.startOnLedger(ctx, "pg: CRD ledger"); err != nil {
		return err
	}
	if err := b.pgWindow(ctx, "pg: CRD ledger 1/2", nsPGCRD[0], halves[0], &crd, false); err != nil {
		return err
	}

	if err := b.startOnLedger(ctx, "pg: PostgreSQL ledger", b.pg.managerArgs()...); err != nil {
		return err
	}
	if err := b.pgSide(ctx, "pg: PostgreSQL ledger", nsPGEmpty, halves, &empty, true); err != nil {
		return err
	}
	// The TTL of the first half's jobs: each costs the API server four
	// writes more (the user's patch, the manager's status and finish
	// writes, the collector's delete), which one half shows as well as
	// both; the bench deletes the other half.
	ttl, err := b.pgExpire(ctx, nsPGEmpty[:1])
	if err != nil {
		return err
	}
	if err := b.deleteJobs(ctx, nsPGEmpty[1]); err != nil {
		return err
	}

	if err := b.startOnLedger(ctx, "pg: CRD ledger"); err != nil {
		return err
	}
	if err := b.pgWindow(ctx, "pg: CRD ledger 2/2", nsPGCRD[1], halves[1], &crd, false); err != nil {
		return err
	}

	b.stopManager()
	load := pgLoad{rows: b.cfg.pgRows}
	start := time.Now()
	if load.bytes, err = b.pg.loadRows(ctx, load.rows); err != nil {
		return err
	}
	load.elapsed = time.Since(start)
	step("pg: %d rows inserted and vacuumed in %s; the table takes %.0f MiB with its indexes", load.rows, load.elapsed.Round(time.Millisecond), load.bytes/(1<<20))
	if err := b.startOnLedger(ctx, fmt.Sprintf("pg: PostgreSQL ledger beside %d rows", load.rows), b.pg.managerArgs()...); err != nil {
		return err
	}
	if err := b.pgSide(ctx, fmt.Sprintf("pg: PostgreSQL ledger beside %d rows", load.rows), nsPGFull, halves, &full, false); err != nil {
		return err
	}
	b.addPGFigures(crd, empty, full, ttl, load)
	return nil
}

// setupPGNamespaces creates the namespaces of phase 8 with their providers,
// which reach the sandbox without rate limits, and waits until the running
// manager has them Ready.
func (b *bench) setupPGNamespaces(ctx context.Context) error {
	var namespaces []string
	for _, ns := range [][2]string{nsPGCRD, nsPGEmpty, nsPGFull} {
		namespaces = append(namespaces, ns[:]...)
	}
	for _, ns := range namespaces {
		if err := b.cl.setupNamespace(ctx, ns, &providerSetup{apiBase: b.sb.URL, secretValue: b.secretValue}); err != nil {
			return err
		}
	}
	return b.cl.waitProvidersReady(ctx, namespaces, time.Minute, b.mgr)
}

// startOnLedger stops the running manager, deletes the ledger's pages (a
// manager on PostgreSQL refuses to start beside pages that hold outcomes
// its database lacks, and every side starts without them), starts a
// manager with args and waits until it is quiet.
func (b *bench) startOnLedger(ctx context.Context, name string, args ...string) error {
	b.stopManager()
	if err := b.cl.deleteLedger(ctx); err != nil {
		return err
	}
	startup, err := b.startManager(ctx, userManager, b.cfg.workers, args...)
	if err != nil {
		return err
	}
	quiet, err := b.waitQuiet(ctx)
	if err != nil {
		return err
	}
	step("%s: manager ready after %s, done with its start %s later", name, startup.Round(time.Millisecond), quiet.Round(time.Millisecond))
	return nil
}

// waitQuiet waits until the manager that just started is done with its
// start: its collector's sweep of the finished jobs (the history phase's)
// lists them from the API server and records them in the ledger, and the
// CRD ledger reads its pages. That is over once neither the API server's
// resource requests nor the ledger database's statements change for
// quietFor. It returns the time it waited, at most -timeout; a manager
// that is not quiet by then is reported and not waited for.
func (b *bench) waitQuiet(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	var last float64
	lastChange := start
	for first := true; ; first = false {
		reqs, err := b.cl.requestCounts(ctx)
		if err != nil {
			return 0, err
		}
		stmts, err := b.pg.statementCounts(ctx)
		if err != nil {
			return 0, err
		}
		cur := reqs.sum(func(k requestKey) bool { return k.resource != "" })
		if t := stmts.total(); !math.IsNaN(t) {
			cur += t
		}
		now := time.Now()
		switch {
		case first || cur != last:
			last, lastChange = cur, now
		case now.Sub(lastChange) >= quietFor:
			return now.Sub(start), nil
		}
		if b.mgr.proc.Exited() {
			return 0, b.mgr.proc.ExitError()
		}
		if now.Sub(start) > b.cfg.timeout {
			step("the manager was still making requests %s after it was ready; going on", b.cfg.timeout)
			return now.Sub(start), nil
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return 0, err
		}
	}
}

// pgSide runs the two halves of a side of phase 8 with the running
// manager, then reads its memory, and counts the ledger database's
// statements from the first window's start to the second's end. keep keeps
// the jobs.
func (b *bench) pgSide(ctx context.Context, name string, namespaces [2]string, halves [2]int, side *pgSide, keep bool) error {
	before, err := b.pg.statementCounts(ctx)
	if err != nil {
		return err
	}
	for i := range 2 {
		if err := b.pgWindow(ctx, fmt.Sprintf("%s %d/2", name, i+1), namespaces[i], halves[i], side, keep); err != nil {
			return err
		}
	}
	after, err := b.pg.statementCounts(ctx)
	if err != nil {
		return err
	}
	side.statements = after.minus(before)
	step("%s: the ledger database's statements in both windows: %s", name, side.statements.breakdown())
	if side.heap, side.rss, err = b.memory(ctx, namespaces[0]); err != nil {
		return err
	}
	step("%s: heap %.1f MiB, RSS %.1f MiB after %d jobs", name, side.heap/(1<<20), side.rss/(1<<20), side.run.n)
	return nil
}

// pgWindow runs a window of n jobs in ns and adds it to side. keep keeps
// the jobs.
func (b *bench) pgWindow(ctx context.Context, name, ns string, n int, side *pgSide, keep bool) error {
	pctx, cancel := context.WithTimeout(ctx, b.cfg.timeout)
	r, err := b.runJobsKeeping(pctx, name, ns, n, b.sb)
	cancel()
	if err != nil {
		return err
	}
	side.run = side.run.plus(r)
	if keep {
		return nil
	}
	return b.deleteJobs(ctx, ns)
}

// ttlPatch sets a job's TTL to 0, as a user's patch (GitOps, kubectl)
// does.
var ttlPatch = client.RawPatch(types.MergePatchType, []byte(`{"spec":{"ttlSecondsAfterFinished":0}}`))

// pgExpire deletes the finished jobs of namespaces after a TTL of 0, the
// way a user does it: it patches each job's spec.ttlSecondsAfterFinished
// to 0, which takes the finished job back into the running manager's cache
// (the release-on-spec-change admission policy), the manager finishes it
// again and its collector deletes it once the ledger holds its outcome. It
// waits until every job is gone and reads what etcd then holds for the
// ledger's pages.
func (b *bench) pgExpire(ctx context.Context, namespaces []string) (pgTTL, error) {
	var res pgTTL
	var jobs []types.NamespacedName
	for _, ns := range namespaces {
		var l paymentsv1alpha1.PaymentJobList
		if err := b.cl.creator.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return res, fmt.Errorf("cannot list the jobs of %s: %w", ns, err)
		}
		for _, j := range l.Items {
			jobs = append(jobs, client.ObjectKeyFromObject(&j))
		}
	}
	deletedBefore, err := b.mgr.ttlDeletions(ctx)
	if err != nil {
		return res, err
	}
	stmtsBefore, err := b.pg.statementCounts(ctx)
	if err != nil {
		return res, err
	}
	start := time.Now()
	err = runWorkers(ctx, b.cfg.workers, len(jobs), func(ctx context.Context, i int) error {
		job := &paymentsv1alpha1.PaymentJob{}
		job.Name, job.Namespace = jobs[i].Name, jobs[i].Namespace
		if err := b.cl.creator.Patch(ctx, job, ttlPatch); err != nil {
			return fmt.Errorf("cannot set the TTL of job %s: %w", jobs[i], err)
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	if err := b.waitJobsGone(ctx, namespaces); err != nil {
		return res, err
	}
	deletedAfter, err := b.mgr.ttlDeletions(ctx)
	if err != nil {
		return res, err
	}
	res.deleted = int(whole(deletedAfter - deletedBefore))
	if res.deleted != len(jobs) {
		return res, fmt.Errorf("pg: the manager's collector deleted %d of the %d jobs whose TTL was set to 0", res.deleted, len(jobs))
	}
	stmtsAfter, err := b.pg.statementCounts(ctx)
	if err != nil {
		return res, err
	}
	res.statements = stmtsAfter.minus(stmtsBefore)
	if res.pages, err = b.cl.etcd.storedLedgerPages(ctx); err != nil {
		return res, err
	}
	step("pg: %d jobs deleted by the collector %s after their TTL was set to 0; the ledger database's statements meanwhile: %s; etcd holds %d ledger pages in %d bytes",
		res.deleted, time.Since(start).Round(time.Millisecond), res.statements.breakdown(), res.pages.objects, res.pages.bytes)
	return res, nil
}

// waitJobsGone waits until the namespaces hold no job, for at most -timeout.
func (b *bench) waitJobsGone(ctx context.Context, namespaces []string) error {
	deadline := time.Now().Add(b.cfg.timeout)
	for {
		left := 0
		for _, ns := range namespaces {
			var l paymentsv1alpha1.PaymentJobList
			if err := b.cl.creator.List(ctx, &l, client.InNamespace(ns)); err != nil {
				return fmt.Errorf("cannot list the jobs of %s: %w", ns, err)
			}
			left += len(l.Items)
		}
		if left == 0 {
			return nil
		}
		if b.mgr.proc.Exited() {
			return b.mgr.proc.ExitError()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pg: %d jobs of %v are still there %s after their TTL was set to 0; manager log: %s", left, namespaces, b.cfg.timeout, b.mgr.proc.Log)
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
}

// addPGFigures reports phase 8.
func (b *bench) addPGFigures(crd, empty, full pgSide, ttl pgTTL, load pgLoad) {
	jobs := int64(empty.run.n)
	beside := fmt.Sprintf("PostgreSQL ledger beside %d rows", load.rows)
	b.rep.add(figure{key: "jobs_per_sec_pg_crd", label: "PostgreSQL phase, CRD ledger: throughput", value: crd.run.jobsPerSec(), kind: kindRate})
	b.rep.add(figure{key: "jobs_per_sec_pg", label: "PostgreSQL ledger: throughput", value: empty.run.jobsPerSec(), kind: kindRate})
	b.rep.add(figure{
		key: "pg_ratio_vs_crd", label: "throughput, PostgreSQL ledger / CRD ledger (same jobs, workers, control plane)",
		value: empty.run.jobsPerSec() / crd.run.jobsPerSec(), kind: kindRatio, target: atLeastUnlessZero(b.cfg.minPGRatio),
	})
	b.addLatency(crd.run, "_pg_crd", "PostgreSQL phase, CRD ledger")
	b.addLatency(empty.run, "_pg", "PostgreSQL ledger")
	b.rep.add(perJob("writes_per_job_pg_crd", "PostgreSQL phase, CRD ledger: API writes/job (jobs and ledger pages)",
		whole(crd.run.req.jobWrites+crd.run.req.ledgerWrites), int64(crd.run.n), nil))
	b.rep.add(perJob("pg_writes_per_job", "PostgreSQL ledger: API writes/job (jobs: PATCH, PUT; ledger pages: POST, PUT, DELETE)",
		whole(empty.run.req.jobWrites+empty.run.req.ledgerWrites), jobs, perJobExactly(pgWritesPerJob)))
	b.rep.add(perJob("pg_ledger_writes_per_job", "PostgreSQL ledger: of which ledger page writes/job", whole(empty.run.req.ledgerWrites), jobs, nil))
	b.rep.add(figure{key: "pg_reads_per_job", label: "PostgreSQL ledger: API reads/job (GET, LIST)", value: empty.run.req.reads / float64(jobs), kind: kindPerJob, jsonOnly: true})
	b.rep.add(figure{key: "pg_conflicts_per_job", label: "PostgreSQL ledger: conflicts (409)/job", value: empty.run.req.conflicts / float64(jobs), kind: kindPerJob, jsonOnly: true})
	b.rep.add(statementsPerJob("pg_statements_per_job", "PostgreSQL ledger: database statements/job (pg_stat_statements calls)", empty.statements, jobs))
	b.rep.add(statementsPerJob("pg_statements_per_job_ttl", "PostgreSQL ledger: database statements per job deleted after its TTL", ttl.statements, int64(ttl.deleted)))
	perDeleted := notMeasured
	if ttl.deleted > 0 {
		perDeleted = float64(ttl.pages.bytes) / float64(ttl.deleted)
	}
	b.rep.add(figure{
		key: "pg_etcd_bytes_per_job_after_ttl", label: fmt.Sprintf("PostgreSQL ledger: etcd bytes of ledger pages per finished job after its TTL (%d jobs)", ttl.deleted),
		value: perDeleted, kind: kindByteCount, target: zero(),
	})
	b.addCPU(crd.run.cpu, crd.run.n, "PostgreSQL phase, CRD ledger", "_pg_crd")
	b.addCPU(empty.run.cpu, empty.run.n, "PostgreSQL ledger", "_pg")

	b.rep.add(figure{key: "pg_load_seconds_10m", label: fmt.Sprintf("PostgreSQL: %d rows inserted and vacuumed in", load.rows), value: load.elapsed.Seconds(), kind: kindSeconds})
	b.rep.add(figure{key: "pg_table_bytes_10m", label: fmt.Sprintf("PostgreSQL: the outcome table of %d rows, indexes included", load.rows), value: load.bytes, kind: kindBytes})
	b.rep.add(figure{key: "jobs_per_sec_pg_10m", label: beside + ": throughput", value: full.run.jobsPerSec(), kind: kindRate})
	b.rep.add(statementsPerJob("pg_statements_per_job_10m", beside+": database statements/job", full.statements, int64(full.run.n)))
	b.rep.add(figure{key: "heap_bytes_pg_empty", label: fmt.Sprintf("PostgreSQL ledger: heap after %d jobs, empty table", empty.run.n), value: empty.heap, kind: kindBytes})
	b.rep.add(figure{key: "heap_bytes_pg_10m", label: fmt.Sprintf("%s: heap after %d jobs", beside, full.run.n), value: full.heap, kind: kindBytes})
	b.rep.add(figure{key: "rss_bytes_pg_empty", label: "PostgreSQL ledger: RSS, empty table", value: empty.rss, kind: kindBytes, jsonOnly: true})
	b.rep.add(figure{key: "rss_bytes_pg_10m", label: beside + ": RSS", value: full.rss, kind: kindBytes, jsonOnly: true})
	b.rep.add(figure{
		key: "pg_heap_ratio_10m", label: fmt.Sprintf("heap ratio, PostgreSQL ledger beside %d rows / beside an empty table", load.rows),
		value: full.heap / empty.heap, kind: kindRatio, target: atMost(maxPGHeapRatio, "%.1f"),
	})
	b.noteFinalizers(crd.run, "PostgreSQL phase, CRD ledger")
	b.noteFinalizers(empty.run, "PostgreSQL ledger")
	b.noteFinalizers(full.run, beside)
}

// statementsPerJob is a figure of the statements counted over jobs; not
// measured without pg_stat_statements.
func statementsPerJob(key, label string, c statementCounts, jobs int64) figure {
	if c == nil {
		return figure{key: key, label: label, value: notMeasured, kind: kindPerJob}
	}
	return perJob(key, label, whole(c.total()), jobs, nil)
}
