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

	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/sandboxproc"
)

// The history phase: a manager started beside the finished jobs the
// operator leaves behind must neither write nor call a provider, and must
// still charge a new job at once.

const (
	// historyWriters create the history jobs.
	historyWriters = 32
	// historyHolder is the claim holder of the history jobs.
	historyHolder = "bench-history/00000000"
)

// history creates the jobs the operator leaves behind, then starts a
// manager on them and measures its start, its memory, its requests and
// provider calls while it starts and settles, and one new job.
func (b *bench) history(ctx context.Context, ns string, heap0 float64) error {
	n := b.cfg.history
	if err := b.createHistory(ctx, ns, n); err != nil {
		return err
	}
	auditEnd, err := b.historyStart(ctx, n, heap0)
	if err != nil {
		return err
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

// createHistory creates n jobs in ns as the operator leaves them:
// Completed (the operator's claim and outcome writes, in one status
// update), in the ledger, then without the finalizer (which the admission
// policy added at create) and with the finished label, which the other
// policy allows on finished jobs only.
func (b *bench) createHistory(ctx context.Context, ns string, n int) error {
	uid, err := b.cl.providerUID(ctx, ns)
	if err != nil {
		return err
	}
	provider, err := b.sandboxIdentity(ctx, uid)
	if err != nil {
		return err
	}
	led, err := startLedger(ctx, b.cl.creator)
	if err != nil {
		return err
	}
	prog := startProgress("history: create", n)
	start := time.Now()
	err = runWorkers(ctx, historyWriters, n, func(ctx context.Context, i int) error {
		job := newJob(ns, i)
		if err := b.cl.creator.Create(ctx, job); err != nil {
			return fmt.Errorf("cannot create history job %d: %w", i, err)
		}
		now := time.Now()
		claim(job, provider, historyHolder, now.Add(-100*time.Millisecond))
		complete(job, now)
		if err := b.cl.creator.Status().Update(ctx, job); err != nil {
			return fmt.Errorf("cannot complete history job %d: %w", i, err)
		}
		if err := led.record(ctx, job); err != nil {
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
	return nil
}

// historyStart starts a manager on the n finished jobs and reports its
// start, its memory, and its API requests and provider calls while it
// starts and settles. It returns the size of the audit log at the end.
func (b *bench) historyStart(ctx context.Context, n int, heap0 float64) (int64, error) {
	auditOffset, err := fileSize(b.cl.auditLog)
	if err != nil {
		return 0, err
	}
	providersBefore, err := b.markProviders(ctx)
	if err != nil {
		return 0, err
	}
	before, err := b.cl.requestCounts(ctx)
	if err != nil {
		return 0, err
	}
	step("history: starting the manager on %d finished jobs", n)
	startup, err := b.startManager(ctx, userHistoryManager, b.cfg.workers)
	if err != nil {
		return 0, err
	}
	step("history: manager ready after %s; settling for %s", startup.Round(time.Millisecond), b.cfg.settle)
	if err := b.settle(ctx, b.cfg.settle); err != nil {
		return 0, err
	}
	after, err := b.cl.requestCounts(ctx)
	if err != nil {
		return 0, err
	}
	audit, err := b.cl.auditCountsFrom(auditOffset)
	if err != nil {
		return 0, err
	}
	auditEnd, err := fileSize(b.cl.auditLog)
	if err != nil {
		return 0, err
	}
	providerCalls, err := b.providerCallsSince(ctx, providersBefore)
	if err != nil {
		return 0, err
	}
	heap, rss, err := b.memory(ctx, "history")
	if err != nil {
		return 0, err
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
	return auditEnd, nil
}

// providerMark is where the counters and the logs of the sandboxes stood.
type providerMark struct {
	stats      []sandboxproc.Counters
	logOffsets []int64
}

// sandboxes are the sandboxes of the run.
func (b *bench) sandboxes() []*sandboxproc.Sandbox {
	var l []*sandboxproc.Sandbox
	for _, sb := range []*sandboxproc.Sandbox{b.sb, b.live} {
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
		off, err := fileSize(sb.Proc.Log)
		if err != nil {
			return m, err
		}
		st, err := sb.Stats(ctx)
		if err != nil {
			return m, err
		}
		m.stats = append(m.stats, st.Counters)
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
		st, err := sb.Stats(ctx)
		if err != nil {
			return 0, err
		}
		logged, err := providerRequestsSince(sb, m.logOffsets[i])
		if err != nil {
			return 0, err
		}
		n += max(st.Minus(m.stats[i]).ProviderCalls(), int64(logged))
	}
	return n, nil
}

// providerRequestsSince counts the provider API requests sb logged after
// offset bytes of its log: charges, retrievals and searches alike.
func providerRequestsSince(sb *sandboxproc.Sandbox, offset int64) (int, error) {
	data, err := readFrom(sb.Proc.Log, offset)
	if err != nil {
		return 0, fmt.Errorf("cannot read the sandbox log: %w", err)
	}
	return countProviderRequests(data), nil
}

// providerRoutesSince counts the provider API requests sb logged after
// offset bytes of its log, by method and route.
func providerRoutesSince(sb *sandboxproc.Sandbox, offset int64) (map[string]float64, error) {
	data, err := readFrom(sb.Proc.Log, offset)
	if err != nil {
		return nil, fmt.Errorf("cannot read the sandbox log: %w", err)
	}
	return providerRoutes(data), nil
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
