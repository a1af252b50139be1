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
// the latency from create to Completed, a scaling sweep over workers with a
// slow provider, and the manager's start, memory, writes and provider calls
// beside a large history of finished jobs.
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

	"github.com/idempotency-dev/paymentjob-operator/internal/controller"
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
	latency      time.Duration
	settle       time.Duration
	assets       string
	crdDir       string
	managerBin   string
	sandboxBin   string
	jsonPath     string
	results      string
	timeout      time.Duration
	keep         bool
	// minRatio is the target of the operator/baseline throughput at 0 ms.
	minRatio float64
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
	fs.DurationVar(&c.latency, "latency", 50*time.Millisecond, "The sandbox's latency in the slow-provider phase and the sweep.")
	fs.DurationVar(&c.settle, "settle", 10*time.Second, "How long a started manager is watched after it is ready before its memory is read.")
	fs.StringVar(&c.assets, "assets", os.Getenv("KUBEBUILDER_ASSETS"), "The folder with etcd and kube-apiserver (default $KUBEBUILDER_ASSETS).")
	fs.StringVar(&c.crdDir, "crds", filepath.Join("config", "crd", "bases"), "The CRDs to install.")
	fs.StringVar(&c.managerBin, "manager", filepath.Join("bin", "manager"), "The manager binary.")
	fs.StringVar(&c.sandboxBin, "sandbox", filepath.Join("bin", "sandbox"), "The sandbox binary.")
	fs.StringVar(&c.jsonPath, "json", "", "Write every figure to this file as one flat JSON object.")
	fs.StringVar(&c.results, "results", filepath.Join("docs", "benchmarks.md"), "Append the results to this Markdown file; empty does not.")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Minute, "The longest wait of each phase.")
	fs.Float64Var(&c.minRatio, "min-ratio", 0.8,
		"The target of the operator/baseline throughput ratio at 0 ms. Throughput needs a quiet machine and the full run; "+
			"CI's short run passes 0 and keeps every other target.")
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
	case c.jobs < 1 || c.workers < 1 || c.history < 1 || (len(c.scaleWorkers) > 0 && c.scaleJobs < 1):
		return c, errors.New("-jobs, -workers, -history and -scale-jobs must be at least 1")
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
		if b.sb != nil {
			b.sb.proc.Stop(10 * time.Second)
		}
		if leftErr := stopAll(10 * time.Second); leftErr != nil {
			err = errors.Join(err, leftErr)
		}
	}()
	step("control plane %s up in %s at %s", b.cl.version, time.Since(started).Round(time.Millisecond), b.cl.admin.Host)
	b.addMeta()

	b.sb, err = startSandbox(ctx, cfg.sandboxBin, filepath.Join(b.dir, "sandbox.log"))
	if err != nil {
		return err
	}
	step("sandbox at %s", b.sb.base)
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

func nsSweep(w int) string { return fmt.Sprintf("bench-sweep-w%d", w) }

// phases runs the five phases in order.
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
	step("phase 1/5: baseline, first half: %d of %d jobs, %d workers, no operator (after a warm-up of %d jobs)", firstHalf, cfg.jobs, cfg.workers, warmup)
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

	step("phase 2/5: manager start on an empty cluster")
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

	namespaces := []string{nsFast, nsSlow, nsHistory}
	for _, w := range cfg.scaleWorkers {
		namespaces = append(namespaces, nsSweep(w))
	}
	for _, ns := range namespaces {
		if err := b.cl.setupNamespace(ctx, ns, b.sb.base, b.secretValue, false); err != nil {
			return err
		}
	}
	if err := b.cl.waitProvidersReady(ctx, namespaces, time.Minute, b.mgr); err != nil {
		return err
	}

	step("phase 3/5: operator, sandbox at 0 ms, %d jobs, %d workers; then the baseline's second half", cfg.jobs, cfg.workers)
	pctx, cancel = context.WithTimeout(ctx, cfg.timeout)
	fast, err := b.runJobs(pctx, "operator 0ms", nsFast, cfg.jobs)
	cancel()
	if err != nil {
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
	b.addMemoryFigures("_0ms", "after the 0 ms run", heapFast, rssFast)
	if _, err := b.startManager(ctx, userManager, cfg.workers); err != nil {
		return err
	}

	slow := fmt.Sprintf("%dms", cfg.latency.Milliseconds())
	step("phase 4/5: operator, sandbox at %s, %d jobs, %d workers, then the sweep %v with %d jobs", cfg.latency, cfg.jobs, cfg.workers, cfg.scaleWorkers, cfg.scaleJobs)
	if err := b.sb.setLatency(ctx, cfg.latency); err != nil {
		return err
	}
	pctx, cancel = context.WithTimeout(ctx, cfg.timeout)
	slowRun, err := b.runJobs(pctx, "operator "+slow, nsSlow, cfg.jobs)
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
		r, err := b.runJobs(pctx, fmt.Sprintf("sweep %s w=%d", slow, w), nsSweep(w), cfg.scaleJobs)
		cancel()
		if err != nil {
			return err
		}
		b.rep.add(figure{key: fmt.Sprintf("jobs_per_sec_%s_w%d", slow, w), label: fmt.Sprintf("%s sweep: throughput, %d workers", slow, w), value: r.jobsPerSec, kind: kindRate})
	}
	if err := b.sb.setLatency(ctx, 0); err != nil {
		return err
	}

	step("phase 5/5: history, %d finished jobs", cfg.history)
	b.stopManager()
	pctx, cancel = context.WithTimeout(ctx, 2*cfg.timeout)
	defer cancel()
	if err := b.history(pctx, nsHistory, heap0); err != nil {
		return err
	}
	b.stopManager()
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
	r.addMeta("latency_ms", "slow provider latency (ms)", cfg.latency.Milliseconds())
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
