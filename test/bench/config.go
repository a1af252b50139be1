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
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/pkg/operator"
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
	// minRefundRatio is the target of the refunds' throughput over the
	// jobs' at 0 ms, in the same manager; 0 does not enforce it.
	minRefundRatio float64
	// minRefundRatioSlow is the same target at -latency.
	minRefundRatioSlow float64
	// maxRefundWrites is the target of the API writes per refund, in
	// hundredths.
	maxRefundWrites int64
	// pg runs phase 8, the outcome ledger on PostgreSQL.
	pg bool
	// pgJobs are the jobs of each side of phase 8 (the CRD ledger, the
	// PostgreSQL ledger, and beside pgRows rows); 0 is jobs.
	pgJobs int
	// pgRows are the rows of the outcome table beside which phase 8 reads
	// the manager's heap.
	pgRows int
	// minPGRatio is the target of the throughput on the PostgreSQL ledger
	// over the throughput on the CRD ledger; 0 does not enforce it.
	minPGRatio float64
	// reconPayments are the payments phase 9 seeds and reconciles;
	// reconJobs the jobs it charges beside the run, and as many without.
	reconPayments, reconJobs int
	// maxReconRatio and maxReconHeapRatio are the targets of the run's
	// wall time over its floor and of the heap during it over before;
	// minReconChargeRatio of the throughput beside it over without. 0
	// does not enforce them.
	maxReconRatio, maxReconHeapRatio, minReconChargeRatio float64
	// only runs the manager's start and one phase: "recon", "refunds",
	// "debits", or "" for all.
	only string
	// debits is the bank debits of phase 10, each way (without events,
	// with).
	debits int
}

// pgSideJobs are the jobs of each side of phase 8.
func (c config) pgSideJobs() int {
	if c.pgJobs == 0 {
		return c.jobs
	}
	return c.pgJobs
}

// The phases -only runs alone.
const (
	onlyRecon   = "recon"
	onlyRefunds = "refunds"
	onlyDebits  = "debits"
)

// parseFlags reads the command line; flag.ErrHelp when it asked for help.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	var sweep string
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.jobs, "jobs", 5000, "Jobs of the baseline and of each operator phase (0 ms and slow provider).")
	fs.IntVar(&c.workers, "workers", 16, "The manager's --max-concurrent-reconciles, and the concurrency of the baseline and of the creators.")
	fs.Float64Var(&c.qps, "qps", operator.DefaultKubeAPIQPS, "The manager's --kube-api-qps, and the client-side limit of the baseline's writes.")
	fs.IntVar(&c.burst, "burst", operator.DefaultKubeAPIBurst, "The manager's --kube-api-burst, and the burst of the baseline's writes.")
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
	fs.Float64Var(&c.minRefundRatio, "min-refund-ratio", 0.85,
		"The target of the refunds' throughput over the jobs' at 0 ms (one PaymentRefund per job of that run, same manager); "+
			"0 does not enforce it. CI's short run passes 0, as for -min-ratio.")
	fs.Float64Var(&c.minRefundRatioSlow, "min-refund-ratio-slow", 0.95,
		"The target of the refunds' throughput over the jobs' at -latency (one PaymentRefund per job of the slow-provider run, same manager); "+
			"0 does not enforce it. CI's short run passes 0, as for -min-ratio.")
	var maxRefundWrites float64
	fs.Float64Var(&maxRefundWrites, "max-refund-writes", float64(maxRefundWritesPerRefund)/100,
		"The target of the API writes per refund, the ledger's share included. CI's short run on a shared runner passes "+
			"3.4: the ledger's share (one append for several outcomes) varies with how the refunds finish together.")
	fs.BoolVar(&c.pg, "pg", true,
		"Run phase 8, the outcome ledger on PostgreSQL, on a server the bench starts (Debian's postgresql-15, or PG_BIN "+
			"naming the folder of initdb and postgres); false skips it.")
	fs.IntVar(&c.pgJobs, "pg-jobs", 0,
		"Jobs of each side of phase 8: the CRD ledger, the PostgreSQL ledger, and the PostgreSQL ledger beside -pg-rows rows, "+
			"each in two halves; 0 is -jobs.")
	fs.IntVar(&c.pgRows, "pg-rows", 10_000_000,
		"Rows of the outcome table beside which phase 8 reads the manager's heap (pg_heap_ratio_10m), inserted by the bench.")
	fs.Float64Var(&c.minPGRatio, "min-pg-ratio", 1.0,
		"The target of the throughput on the PostgreSQL ledger over the throughput on the CRD ledger, same jobs, workers "+
			"and control plane; 0 does not enforce it. CI's short run passes 0, as for -min-ratio.")
	fs.IntVar(&c.reconPayments, "recon-payments", 100_000,
		"Payments of phase 9, the reconciliation: seeded as outcome ledger entries and as the live sandbox's PaymentIntents, then reconciled.")
	fs.IntVar(&c.reconJobs, "recon-jobs", 1000,
		"Jobs phase 9 charges at Stripe's live-mode limits beside the reconciliation, and as many without it (in two halves, before and after).")
	fs.Float64Var(&c.maxReconRatio, "max-recon-ratio", 1.3,
		"The target of the reconciliation's wall time (create to Completed) over its floor (its list pages at its requests/s); 0 does not enforce it.")
	fs.Float64Var(&c.maxReconHeapRatio, "max-recon-heap-ratio", 1.5,
		"The target of the manager's heap during the reconciliation (peak of post-GC samples) over before it; 0 does not enforce it.")
	fs.Float64Var(&c.minReconChargeRatio, "min-recon-charge-ratio", 0.9,
		"The target of the throughput of jobs charged beside the reconciliation over without it, at Stripe's live-mode limits; "+
			"0 does not enforce it. CI's short run passes 0, as for -min-ratio.")
	fs.StringVar(&c.only, "only", "",
		"Run only the manager's start on an empty cluster and one phase: recon (phase 9), refunds (the jobs and refunds of phases 3 "+
			"and 5, at 0 ms and at -latency, without the baseline, the sweep or the memory figures), or debits (phase 10); "+
			"empty runs every phase.")
	fs.IntVar(&c.debits, "debits", 100, "Bank debits of phase 10, settled without events and again with signed events.")
	fs.BoolVar(&c.keep, "keep", false, "Keep the logs of a successful run too (they are kept after a failure).")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if math.IsNaN(maxRefundWrites) {
		maxRefundWrites = 0
	}
	c.maxRefundWrites = int64(math.Round(maxRefundWrites * 100))
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
	return c, c.check()
}

// check refuses settings the bench cannot run with.
func (c config) check() error {
	switch {
	case c.jobs < 1 || c.workers < 1 || c.history < 1 || c.ledgerJobs < 1 || (len(c.scaleWorkers) > 0 && c.scaleJobs < 1):
		return errors.New("-jobs, -workers, -history, -ledger-jobs and -scale-jobs must be at least 1")
	case c.jobs < 2:
		return errors.New("-jobs must be at least 2: the baseline and the run without lookups run in two halves")
	case !(c.minRatio >= 0) || !(c.minLookupRatio >= 0) || !(c.minRefundRatio >= 0) || !(c.minRefundRatioSlow >= 0) || !(c.minPGRatio >= 0):
		// Written so that NaN is refused too.
		return errors.New("-min-ratio, -min-lookup-ratio, -min-refund-ratio, -min-refund-ratio-slow and -min-pg-ratio must be 0 (not enforced) or more")
	case c.pgJobs < 0 || c.pgJobs == 1 || c.pgRows < 1:
		return errors.New("-pg-jobs must be 0 (-jobs) or at least 2, it runs in two halves, and -pg-rows at least 1")
	case c.maxRefundWrites < 300:
		return errors.New("-max-refund-writes must be at least 3 (claim, outcome, finish)")
	case c.qps <= 0 || c.burst < 1:
		return errors.New("-qps and -burst must be positive")
	case c.assets == "":
		return errors.New("-assets or KUBEBUILDER_ASSETS must name the control plane folder: run `make bench`")
	}
	return c.checkRecon()
}

// checkRecon refuses settings phase 9 cannot run with.
func (c config) checkRecon() error {
	switch {
	case c.reconPayments < 1 || c.reconJobs < 2:
		return errors.New("-recon-payments must be at least 1 and -recon-jobs at least 2 (the jobs without the run run in two halves)")
	case !(c.maxReconRatio >= 0) || !(c.maxReconHeapRatio >= 0) || !(c.minReconChargeRatio >= 0):
		// Written so that NaN is refused too.
		return errors.New("-max-recon-ratio, -max-recon-heap-ratio and -min-recon-charge-ratio must be 0 (not enforced) or more")
	case c.only != "" && c.only != onlyRecon && c.only != onlyRefunds && c.only != onlyDebits:
		return fmt.Errorf("-only %q: the phases that run alone are recon, refunds and debits", c.only)
	}
	return nil
}
