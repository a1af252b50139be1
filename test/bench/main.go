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

// Command bench measures the operator on one local control plane: the
// throughput of charging PaymentJobs against a baseline that only makes the
// same API writes, the API requests, conflicts and provider calls per job,
// the latency from create to Completed, what looking keys up before the
// first charge costs at Stripe's live-mode rate limits, a scaling sweep over
// workers with a slow provider, the manager's start, memory, writes and
// provider calls beside a large history of finished jobs, what etcd stores
// for a finished job, and what the outcome ledger's size costs the
// manager's heap and API requests.
//
// The admission policies of config/policy are installed first, as the
// deployment installs them; one adds the finalizer at create.
//
// etcd and kube-apiserver come from -assets (KUBEBUILDER_ASSETS), and
// bin/sandbox and bin/manager run as processes, everything on 127.0.0.1.
// It prints a table with a target per figure, appends it to
// docs/benchmarks.md, writes every figure to -json if set, and exits 1 if a
// target is missed. Run it with `make bench`; see docs/benchmarks.md.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controller"
	psandbox "github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// config is the command line.
type config struct {
	jobs         int
	workers      int
	qps          float64
	burst        int
	history      int
	scaleWorkers []int
	scaleJobs    int
	// ledgerJobs are the jobs of each run of the ledger phase.
	ledgerJobs int
	latency    time.Duration
	settle     time.Duration
	assets     string
	crdDir     string
	policyDir  string
	managerBin string
	sandboxBin string
	jsonPath   string
	results    string
	timeout    time.Duration
	keep       bool
	// minRatio is the target of the operator/baseline throughput at 0 ms;
	// 0 does not enforce it.
	minRatio float64
	// minLookupRatio is the target of the throughput with lookups over the
	// throughput without, at Stripe's live-mode limits; 0 does not enforce
	// it.
	minLookupRatio float64
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	var sweep string
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.jobs, "jobs", 5000, "Jobs of the baseline and of each operator phase (0 ms and slow provider).")
	fs.IntVar(&c.workers, "workers", 16, "The manager's --max-concurrent-reconciles, and the concurrency of the baseline and of the creators.")
	fs.Float64Var(&c.qps, "qps", controller.DefaultKubeAPIQPS, "The manager's --kube-api-qps, and the client-side limit of the baseline's writes.")
	fs.IntVar(&c.burst, "burst", controller.DefaultKubeAPIBurst, "The manager's --kube-api-burst, and the burst of the baseline's writes.")
	fs.IntVar(&c.history, "history", 20000, "Finished jobs left in the cluster for the history phase.")
	fs.StringVar(&sweep, "scale-workers", "4,16,64", "The --max-concurrent-reconciles of the scaling sweep with a slow provider, comma-separated; empty skips it.")
	fs.IntVar(&c.scaleJobs, "scale-jobs", 1000, "Jobs of each run of the scaling sweep.")
	fs.IntVar(&c.ledgerJobs, "ledger-jobs", 1000, "Jobs of each run of the ledger phase (empty ledger, then 100,000 entries).")
	fs.DurationVar(&c.latency, "latency", 50*time.Millisecond, "The sandbox's latency in the slow-provider phase and the sweep.")
	fs.DurationVar(&c.settle, "settle", 10*time.Second, "How long a started manager is watched after it is ready before its memory is read.")
	fs.StringVar(&c.assets, "assets", os.Getenv("KUBEBUILDER_ASSETS"), "The folder with etcd and kube-apiserver (default $KUBEBUILDER_ASSETS).")
	fs.StringVar(&c.crdDir, "crds", filepath.Join("config", "crd", "bases"), "The CRDs to install.")
	fs.StringVar(&c.policyDir, "policies", filepath.Join("config", "policy"), "The admission policies to install (every *.yaml but kustomize's), as config/default does.")
	fs.StringVar(&c.managerBin, "manager", filepath.Join("bin", "manager"), "The manager binary.")
	fs.StringVar(&c.sandboxBin, "sandbox", filepath.Join("bin", "sandbox"), "The sandbox binary.")
	fs.StringVar(&c.jsonPath, "json", "", "Write every figure to this file as one flat JSON object.")
	fs.StringVar(&c.results, "results", filepath.Join("docs", "benchmarks.md"), "Append the results to this Markdown file; empty does not.")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Minute, "The longest wait of each phase.")
	fs.Float64Var(&c.minRatio, "min-ratio", 0.8,
		"The target of the operator/baseline throughput ratio at 0 ms; 0 does not enforce it. Throughput needs a quiet machine and the full run; "+
			"CI's short run passes 0 and keeps every other target.")
	fs.Float64Var(&c.minLookupRatio, "min-lookup-ratio", 0.9,
		"The target of the throughput with lookups over the throughput without (policy Never), at Stripe's live-mode rate limits; "+
			"0 does not enforce it. CI's short run passes 0, as for -min-ratio.")
	fs.BoolVar(&c.keep, "keep", false, "Keep the logs of a successful run too (they are kept after a failure).")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	for _, s := range strings.Split(sweep, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		w, err := strconv.Atoi(s)
		if err != nil || w < 1 {
			return c, fmt.Errorf("invalid -scale-workers value %q", s)
		}
		c.scaleWorkers = append(c.scaleWorkers, w)
	}
	switch {
	case c.jobs < 1 || c.workers < 1 || c.history < 1 || c.ledgerJobs < 1 || (len(c.scaleWorkers) > 0 && c.scaleJobs < 1):
		return c, errors.New("-jobs, -workers, -history, -ledger-jobs and -scale-jobs must be at least 1")
	case c.jobs < 2:
		return c, errors.New("-jobs must be at least 2: the baseline and the run without lookups run in two halves")
	case !(c.minRatio >= 0) || !(c.minLookupRatio >= 0):
		// Written so that NaN is refused too.
		return c, errors.New("-min-ratio and -min-lookup-ratio must be 0 (not enforced) or more")
	case c.qps <= 0 || c.burst < 1:
		return c, errors.New("-qps and -burst must be positive")
	case c.assets == "":
		return c, errors.New("-assets or KUBEBUILDER_ASSETS must name the control plane folder: run `make bench`")
	}
	return c, nil
}

func main() {
	os.Exit(run(os.Args[1:]))
}

// run returns the exit status: 0 when every target is met, 1 when one is
// missed or the run failed, 2 for an invalid command line.
func run(args []string) int {
	cfg, err := parseFlags(args, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	// The benchmark's own clients log nothing; the processes log to files.
	discard := zap.New(zap.WriteTo(io.Discard))
	log.SetLogger(discard)
	klog.SetLogger(discard)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// A second Ctrl-C ends the benchmark at once.
		<-ctx.Done()
		stop()
	}()

	began := time.Now()
	b := &bench{cfg: cfg, rep: &report{}}
	runErr := b.run(ctx)
	wall := time.Since(began)
	b.rep.addMeta("wall_seconds", "wall time of the run", wall.Round(time.Second).Seconds())

	if off := b.rep.unenforced(); len(off) > 0 {
		b.rep.note("Not enforced in this run (a minimum of 0 on the command line): %s.", strings.Join(off, ", "))
	}
	fmt.Println()
	if err := b.rep.writeTable(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
	}
	status := 0
	if runErr != nil && ctx.Err() != nil && errors.Is(runErr, context.Canceled) {
		runErr = errors.New("interrupted")
	}
	if runErr != nil {
		fmt.Fprintf(os.Stderr, "\nbench: FAILED after %s: %v\n", wall.Round(time.Second), runErr)
		b.rep.addMeta("error", "error", runErr.Error())
		status = 1
	}
	if cfg.jsonPath != "" {
		if err := writeFile(cfg.jsonPath, b.rep.writeJSON); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			status = 1
		} else {
			step("figures written to %s", cfg.jsonPath)
		}
	}
	// A run that failed half way leaves no section: its figures are
	// incomplete.
	if runErr == nil && cfg.results != "" {
		if err := appendResults(cfg.results, b.rep, began); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			status = 1
		} else {
			step("results appended to %s", cfg.results)
		}
	}
	if failed := b.rep.failed(); len(failed) > 0 {
		fmt.Fprintf(os.Stderr, "bench: targets missed: %s\n", strings.Join(failed, ", "))
		status = 1
	}
	return status
}

// run starts the control plane, the sandbox and the managers, runs the
// phases and stops everything it started, whatever happens.
func (b *bench) run(ctx context.Context) (err error) {
	cfg := b.cfg
	b.dir, err = os.MkdirTemp("", "paymentjob-bench-")
	if err != nil {
		return fmt.Errorf("cannot create the work folder: %w", err)
	}
	step("work folder (logs, kubeconfigs, audit log): %s", b.dir)
	defer func() {
		if err != nil || cfg.keep {
			step("logs kept in %s", b.dir)
			return
		}
		_ = os.RemoveAll(b.dir)
	}()

	flags, err := managerFlags(cfg.managerBin)
	if err != nil {
		return err
	}
	b.pprof = flags["pprof-bind-address"]
	if !b.pprof {
		b.rep.note("%s has no --pprof-bind-address: the heap was not measured.", cfg.managerBin)
	}
	b.ledgerFlag = flags["ledger"]
	if !b.ledgerFlag {
		b.rep.note("%s has no --ledger: the manager ran without an outcome ledger.", cfg.managerBin)
	}
	b.secretValue = "sk_test_bench_" + rand.Text()

	step("starting etcd and kube-apiserver from %s", cfg.assets)
	started := time.Now()
	b.cl, err = startCluster(cfg.assets, cfg.crdDir, b.dir)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := b.cl.stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
	}()
	// Runs before the control plane stops: every process of the run ends.
	defer func() {
		b.stopManager()
		for _, sb := range b.sandboxes() {
			sb.proc.Stop(10 * time.Second)
		}
		if leftErr := stopAll(10 * time.Second); leftErr != nil {
			err = errors.Join(err, leftErr)
		}
	}()
	step("control plane %s up in %s at %s", b.cl.version, time.Since(started).Round(time.Millisecond), b.cl.admin.Host)
	policies, err := b.cl.installPolicies(ctx, cfg.policyDir)
	if err != nil {
		return err
	}
	step("admission policies served (a new job gets the finalizer at create): %s", strings.Join(policies, ", "))
	b.addMeta()
	b.rep.addMeta("policies", "admission policies (config/policy)", strings.Join(policies, ", "))

	b.sb, err = startSandbox(ctx, cfg.sandboxBin, filepath.Join(b.dir, "sandbox.log"))
	if err != nil {
		return err
	}
	step("sandbox at %s", b.sb.base)
	b.live, err = startSandbox(ctx, cfg.sandboxBin, filepath.Join(b.dir, "sandbox-live.log"), "--live-rate-limits")
	if err != nil {
		return err
	}
	step("sandbox at Stripe's live-mode rate limits (%.0f writes/s, %.0f searches/s) at %s", liveLimits.Writes, liveLimits.Searches, b.live.base)
	return b.phases(ctx)
}

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
const phaseCount = 7

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

func nsSweep(w int) string { return fmt.Sprintf("bench-sweep-w%d", w) }

// phases runs the phases in order.
func (b *bench) phases(ctx context.Context) error {
	cfg := b.cfg

	// A fresh API server is busy for a while (OpenAPI of the CRDs, caches):
	// a few jobs through the baseline's path let it settle first. The
	// baseline then runs in two halves, before and after the operator's
	// 0 ms run: the API server's cost per request drifts up over a run
	// (etcd history, its own heap), and bracketing cancels that drift
	// instead of favouring whichever runs first.
	warmup := min(cfg.jobs, 200)
	firstHalf := cfg.jobs / 2
	step("phase 1/%d: baseline, first half: %d of %d jobs, %d workers, no operator (after a warm-up of %d jobs)", phaseCount, firstHalf, cfg.jobs, cfg.workers, warmup)
	pctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	_, err := b.baseline(pctx, "warm-up", nsWarmup, warmup)
	var baselineA baselineResult
	if err == nil {
		baselineA, err = b.baseline(pctx, "baseline 1/2", nsBaseline, firstHalf)
	}
	cancel()
	if err != nil {
		return err
	}

	step("phase 2/%d: manager start on an empty cluster", phaseCount)
	startup0, err := b.startManager(ctx, userManager, cfg.workers)
	if err != nil {
		return err
	}
	if err := b.settle(ctx, cfg.settle); err != nil {
		return err
	}
	heap0, rss0, err := b.memory(ctx, "empty")
	if err != nil {
		return err
	}
	step("manager ready after %s; heap %.1f MiB, RSS %.1f MiB", startup0.Round(time.Millisecond), heap0/(1<<20), rss0/(1<<20))
	if err := b.setupProviders(ctx); err != nil {
		return err
	}

	step("phase 3/%d: operator, sandbox at 0 ms, %d jobs, %d workers; then the baseline's second half", phaseCount, cfg.jobs, cfg.workers)
	pctx, cancel = context.WithTimeout(ctx, cfg.timeout)
	fast, err := b.runJobsKeeping(pctx, "operator 0ms", nsFast, cfg.jobs, b.sb)
	cancel()
	if err != nil {
		return err
	}
	stored, err := b.cl.etcd.storedFinishedJobs(ctx, nsFast)
	if err != nil {
		return err
	}
	step("etcd holds %d finished jobs of %s in %d bytes (keys and values), %.0f bytes a job", stored.objects, nsFast, stored.bytes, stored.perObject())
	if err := b.deleteJobs(ctx, nsFast); err != nil {
		return err
	}
	heapFast, rssFast, err := b.memory(ctx, "after_0ms")
	if err != nil {
		return err
	}
	b.stopManager()
	pctx, cancel = context.WithTimeout(ctx, cfg.timeout)
	baselineB, err := b.baseline(pctx, "baseline 2/2", nsBaseline2, cfg.jobs-firstHalf)
	cancel()
	if err != nil {
		return err
	}
	baseline := b.addBaseline(baselineA.plus(baselineB))
	b.rep.add(figure{key: "startup_seconds_0", label: "start to ready, empty cluster", value: startup0.Seconds(), kind: kindSeconds})
	b.rep.add(figure{key: "heap_bytes_0", label: "heap after sync, empty cluster", value: heap0, kind: kindBytes})
	b.rep.add(figure{key: "rss_bytes_0", label: "RSS after sync, empty cluster", value: rss0, kind: kindBytes})
	b.addRun(fast, "_0ms", "0 ms", baseline, true)
	b.addStored(stored)
	b.addMemoryFigures("_0ms", "after the 0 ms run", heapFast, rssFast)
	if _, err := b.startManager(ctx, userManager, cfg.workers); err != nil {
		return err
	}

	step("phase 4/%d: lookups at Stripe's live-mode limits: %d jobs without lookups and %d with, in halves (without, with, with, without), %d workers", phaseCount, cfg.jobs, cfg.jobs, cfg.workers)
	if err := b.lookupRuns(ctx); err != nil {
		return err
	}

	slow := fmt.Sprintf("%dms", cfg.latency.Milliseconds())
	step("phase 5/%d: operator, sandbox at %s, %d jobs, %d workers, then the sweep %v with %d jobs", phaseCount, cfg.latency, cfg.jobs, cfg.workers, cfg.scaleWorkers, cfg.scaleJobs)
	if err := b.sb.setLatency(ctx, cfg.latency); err != nil {
		return err
	}
	pctx, cancel = context.WithTimeout(ctx, cfg.timeout)
	slowRun, err := b.runJobs(pctx, "operator "+slow, nsSlow, cfg.jobs, b.sb)
	cancel()
	if err != nil {
		return err
	}
	b.addRun(slowRun, "_"+slow, slow, baseline, false)
	if err := b.addMemory(ctx, "_"+slow, "after the "+slow+" run"); err != nil {
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
	if err := b.sb.setLatency(ctx, 0); err != nil {
		return err
	}

	step("phase 6/%d: history, %d finished jobs", phaseCount, cfg.history)
	b.stopManager()
	pctx, cancel = context.WithTimeout(ctx, 2*cfg.timeout)
	defer cancel()
	if err := b.history(pctx, nsHistory, heap0); err != nil {
		return err
	}

	step("phase 7/%d: the ledger's size: %d jobs beside an empty ledger, then %d jobs beside %d entries", phaseCount,
		cfg.ledgerJobs, cfg.ledgerJobs, seedPages*seedEntriesPerPage)
	if err := b.ledgerPhase(ctx); err != nil {
		return err
	}
	b.stopManager()
	return nil
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
		if err := b.cl.setupNamespace(ctx, ns, &providerSetup{apiBase: b.sb.base, secretValue: b.secretValue}); err != nil {
			return err
		}
	}
	for _, r := range liveRuns {
		p := &providerSetup{apiBase: b.live.base, secretValue: b.secretValue, requestsPerSecond: int32(liveLimits.Writes), lookup: r.policy}
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
	r.addMeta("latency_ms", "slow provider latency (ms)", cfg.latency.Milliseconds())
	r.addMeta("live_write_rate", "lookup runs: sandbox writes/s (Stripe live mode; also the providers' requestsPerSecond)", liveLimits.Writes)
	r.addMeta("live_search_rate", "lookup runs: sandbox searches/s (Stripe live mode)", liveLimits.Searches)
	r.addMeta("lookup_requests_per_second", "lookup runs: the manager's lookup requests/s (spec.lookup default)", controller.DefaultLookupRequestsPerSecond)
}

// appendResults appends the run's Markdown section to path.
func appendResults(path string, r *report, date time.Time) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("cannot open %s: %w", path, err)
	}
	if err := r.writeMarkdown(f, date); err != nil {
		_ = f.Close()
		return fmt.Errorf("cannot append to %s: %w", path, err)
	}
	return f.Close()
}

// writeFile writes path with write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("cannot create %s: %w", path, err)
	}
	if err := write(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	return f.Close()
}

// step prints one line of the run's progress on stderr.
func step(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}
