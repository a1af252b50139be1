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
// the latency from create to Completed, the throughput and the API writes
// of refunding those jobs (PaymentRefunds) against the jobs', what looking
// keys up before the first charge costs at Stripe's live-mode rate limits,
// a scaling sweep over workers with a slow provider, the manager's start,
// memory, writes and provider calls beside a large history of finished
// jobs, what etcd stores for a finished job, what the outcome ledger's
// size costs the manager's heap and API requests, and the outcome ledger
// on PostgreSQL against the CRD ledger: API writes, throughput, database
// statements, the heap beside a large table, etcd after the TTL; and a
// PaymentReconciliation of a large seeded history at Stripe's live-mode
// limits: its wall time over the floor its list rate sets, the manager's
// heap during it, and the charges made beside it.
//
// The admission policies of config/policy are installed first, as the
// deployment installs them; one adds the finalizer at create.
//
// etcd and kube-apiserver come from -assets (KUBEBUILDER_ASSETS), a
// PostgreSQL server from internal/testing/pgserver, and bin/sandbox and
// bin/manager run as processes, everything on 127.0.0.1.
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
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/idempotency-dev/paymentjob-operator/internal/testing/sandboxproc"
)

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

	// Started first, so that a machine without PostgreSQL fails at once, and
	// stopped last, after every manager.
	if err := b.startPostgres(ctx, flags["ledger-backend"]); err != nil {
		return err
	}
	if b.pg != nil {
		b.pg.durabilityFlag = flags["ledger-postgres-durability"]
	}
	defer func() {
		if stopErr := b.pg.stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("cannot stop PostgreSQL: %w", stopErr))
		}
	}()

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
			sb.Proc.Stop(10 * time.Second)
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

	b.sb, err = b.startSandbox(ctx, "sandbox.log")
	if err != nil {
		return err
	}
	step("sandbox at %s", b.sb.URL)
	b.live, err = b.startSandbox(ctx, "sandbox-live.log", "--live-rate-limits")
	if err != nil {
		return err
	}
	step("sandbox at Stripe's live-mode rate limits (%.0f writes/s, %.0f searches/s) at %s", liveLimits.Writes, liveLimits.Searches, b.live.URL)
	return b.phases(ctx)
}

// startSandbox starts a sandbox with flags, logging to logName in the work
// folder, registered with the benchmark's processes.
func (b *bench) startSandbox(ctx context.Context, logName string, flags ...string) (*sandboxproc.Sandbox, error) {
	return sandboxproc.Start(ctx, sandboxproc.Options{
		Bin:      b.cfg.sandboxBin,
		LogPath:  filepath.Join(b.dir, logName),
		Flags:    flags,
		Register: track,
	})
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
