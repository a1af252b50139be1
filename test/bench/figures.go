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
	"runtime"
	"slices"
	"strings"
	"time"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
)

// The figures of the phases and their targets: what each window adds to
// the report.

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
	b.rep.add(figure{key: key("reads_per_job"), label: title + ": API reads/job (GET, LIST)", value: r.req.reads / n, kind: kindPerJob, target: tg(fewReads())})
	b.rep.add(perJob(key("ledger_reads_per_job"), title+": of which ledger page reads/job", whole(r.req.ledgerReads), jobs, nil))
	b.rep.add(figure{key: key("conflicts_per_job"), label: title + ": conflicts (409)/job", value: r.req.conflicts / n, kind: kindPerJob})
	b.rep.add(perJob(key("provider_calls_per_job"), title+": provider calls/job (creates, searches, retrieves)",
		r.provider.ProviderCalls(), jobs, tg(perJobAtMost(maxProviderCallsPerJob))))
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
		lookup.provider.ProviderCalls(), jobs, perJobAtMost(maxProviderCallsPerJob)))
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
	b.rep.add(perJob("provider_calls_per_job_live_none", title+": provider calls/job (creates, searches, retrieves)", none.provider.ProviderCalls(), jobs, nil))
	b.rep.add(perJob("charges_per_job_live_none", title+": charges/job", none.provider.Charges, jobs, onePerJob()))
	b.rep.add(perJob("rate_limited_per_job_live_none", title+": refused (429)/job", none.provider.RateLimited, jobs, nil))
	b.rep.add(figure{key: "reconciles_per_job_live_none", label: title + ": reconciles/job", value: none.reconciles / float64(none.n), kind: kindPerJob})
	b.addCPU(none.cpu, none.n, title, "_live_none")
	b.noteFinalizers(none, title)
}

// whole is a counter read as a float, as the whole number it is.
func whole(v float64) int64 { return int64(math.Round(v)) }

// addCPU reports the CPU milliseconds per job of all processes of a
// window (on a small machine, throughput is the cores divided by it) and,
// in the JSON only, of each process.
func (b *bench) addCPU(cpu cpuUsage, n int, title, suffix string) {
	b.addCPUOf(cpu, n, "job", title, suffix)
}

// addCPUOf is addCPU for a window of n objects called noun (job, refund).
func (b *bench) addCPUOf(cpu cpuUsage, n int, noun, title, suffix string) {
	names := make([]string, 0, len(cpu))
	total := 0.0
	for k, v := range cpu {
		names = append(names, k)
		total += v
	}
	slices.Sort(names)
	b.rep.add(figure{
		key:   "cpu_ms_per_" + noun + "_total" + suffix,
		label: title + ": CPU/" + noun + ", all processes", value: total * 1000 / float64(n), kind: kindMillis,
	})
	for _, k := range names {
		b.rep.add(figure{
			key:   "cpu_ms_per_" + noun + "_" + strings.ReplaceAll(k, "-", "_") + suffix,
			label: fmt.Sprintf("CPU of %s per %s%s", k, noun, suffix), value: cpu[k] * 1000 / float64(n), kind: kindMillis, jsonOnly: true,
		})
	}
}

// maxStoredBytesPerJob is the target of what etcd stores for a finished
// job: managedFields, conditions and the provider's response add up.
const maxStoredBytesPerJob = 4096

// addStored reports what etcd stores for a finished job.
func (b *bench) addStored(s storedSize) {
	b.rep.add(figure{
		key: "etcd_bytes_per_finished_job", label: fmt.Sprintf("etcd bytes per finished job (key + value, %d jobs)", s.objects),
		value: s.perObject(), kind: kindByteCount, target: atMost(maxStoredBytesPerJob, "%.0f"),
	})
}

// addMemory reports the running manager's heap and RSS.
func (b *bench) addMemory(ctx context.Context, suffix, when string) error {
	heap, rss, err := b.memory(ctx, "after"+suffix)
	if err != nil {
		return err
	}
	b.addMemoryFigures(suffix, when, heap, rss)
	return nil
}

// addMemoryFigures reports a heap and RSS measured earlier.
func (b *bench) addMemoryFigures(suffix, when string, heap, rss float64) {
	b.rep.add(figure{key: "heap_bytes_after" + suffix, label: "heap " + when, value: heap, kind: kindBytes})
	b.rep.add(figure{key: "rss_bytes_after" + suffix, label: "RSS " + when, value: rss, kind: kindBytes})
}

// addMeta records the machine and the settings of the run.
func (b *bench) addMeta() {
	cfg := b.cfg
	r := b.rep
	r.addMeta("date", "date", time.Now().UTC().Format(time.RFC3339))
	r.addMeta("cpu", "CPU", cpuModel())
	r.addMeta("cores", "cores", runtime.NumCPU())
	r.addMeta("go_version", "Go", runtime.Version())
	r.addMeta("gomaxprocs", "GOMAXPROCS", runtime.GOMAXPROCS(0))
	r.addMeta("kube_apiserver_version", "kube-apiserver", b.cl.version)
	r.addMeta("qps", "client QPS (manager and baseline)", cfg.qps)
	r.addMeta("burst", "client burst", cfg.burst)
	r.addMeta("workers", "workers (--max-concurrent-reconciles)", cfg.workers)
	r.addMeta("jobs", "jobs per phase", cfg.jobs)
	r.addMeta("history", "finished jobs in the history phase", cfg.history)
	r.addMeta("scale_jobs", "jobs per sweep run", cfg.scaleJobs)
	r.addMeta("ledger_jobs", "jobs per run of the ledger phase", cfg.ledgerJobs)
	r.addMeta("ledger_seeded_entries", "entries of the seeded ledger", seedPages*seedEntriesPerPage)
	if b.pg != nil {
		r.addMeta("pg_jobs", "jobs per side of the PostgreSQL phase (CRD ledger, PostgreSQL ledger, beside the large table)", cfg.pgSideJobs())
		r.addMeta("pg_rows", "rows of the large outcome table (PostgreSQL phase)", cfg.pgRows)
	}
	r.addMeta("latency_ms", "slow provider latency (ms)", cfg.latency.Milliseconds())
	r.addMeta("live_write_rate", "lookup runs: sandbox writes/s (Stripe live mode; also the providers' requestsPerSecond)", liveLimits.Writes)
	r.addMeta("live_search_rate", "lookup runs: sandbox searches/s (Stripe live mode)", liveLimits.Searches)
	r.addMeta("lookup_requests_per_second", "lookup runs: the manager's lookup requests/s (spec.lookup default)", providercache.DefaultLookupRequestsPerSecond)
}
