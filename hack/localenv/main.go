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

// Command localenv runs the operator locally, with nothing installed but Go:
// etcd and kube-apiserver from bin/k8s, the CRDs, the admission policies,
// the user roles of config/rbac, bin/sandbox on 127.0.0.1:12111 and
// bin/manager, all as processes of this one; with --ledger=postgres also a
// PostgreSQL server (Debian's postgresql-15) for the manager's outcome
// ledger. Arguments after -- are passed to the manager.
//
// The sandbox settles bank debits after 5 seconds and sends signed Stripe
// events to the manager's events endpoint (--events-bind-address, a free
// loopback port), with the whsec_ secret of the samples' events Secret in
// its environment; the manager serves its metrics over plain http on
// another.
//
// With --demo it applies config/samples, waits until every sample (the
// PaymentJobs and the PaymentRefund) reaches its expected phase, showing
// the SEPA debit sample with `kubectl payments status` while it waits
// (AwaitingSettlement), then how it settled: its events, the sandbox's
// webhooks and the manager's event metrics (a wake counted). It prints the
// results and the sandbox's charges and refunds, reconciles the sandbox
// account (balanced), charges a sample again at the sandbox behind the
// operator's back and reconciles again (one Duplicate), shows a payment's
// story with `kubectl payments status` (bin/kubectl-payments, found on PATH
// by the self-built kubectl), and stops everything (make demo).
//
// Without it, it applies config/samples, prints the export lines of a shell
// for kubectl and the plugin, and stays up until Ctrl-C (make run-local).
// When the manager exits (kill its pid), the environment stays up with
// every object: it says so, with the exit code and the log, and prints the
// command that starts a manager again, with other flags if you like.
// --no-manager starts none and prints that command at once.
package main

import (
	"context"
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

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// sandboxAddr is where config/samples expects the sandbox.
const sandboxAddr = "127.0.0.1:12111"

// expectation is the phase a sample must reach, and why.
type expectation struct {
	namespace, name string
	phase           paymentsv1alpha1.PaymentJobPhase
	note            string
}

// refundSamples are the PaymentRefunds of config/samples.
var refundSamples = []expectation{
	{"payments-demo", "invoice-2026-0042-partial", paymentsv1alpha1.PhaseCompleted, "500 of invoice-2026-0042's 2000 given back"},
}

// Refunds the sandbox must hold once the samples are done: one per
// refund sample, for this much in all.
const (
	wantRefunds        = 1
	wantRefundedAmount = 500
)

var samples = []expectation{
	{"payments-demo", "coffee-subscription", paymentsv1alpha1.PhaseCompleted, "plain payment, key = name"},
	{"payments-demo", "invoice-2026-0042", paymentsv1alpha1.PhaseCompleted, "explicit idempotency key"},
	{"payments-demo", "declined-card", paymentsv1alpha1.PhaseFailed, "card declined: nothing charged"},
	{"payments-demo", "held-until-approved", paymentsv1alpha1.PhaseCompleted, "suspended, then resumed by the demo"},
	{debitNamespace, debitJob, paymentsv1alpha1.PhaseCompleted, "SEPA debit: settles later, woken by a signed event"},
	{"payments-demo", "order-1001", paymentsv1alpha1.PhaseCompleted, "same key as in payments-demo-b"},
	{"payments-demo-b", "order-1001", paymentsv1alpha1.PhaseCompleted, "same key as in payments-demo: a second payment"},
}

// options are localenv's flags.
type options struct {
	demo, noManager bool
	root, assets    string
	// work holds the kubeconfig, the logs and the DSN file.
	work    string
	ledger  string
	timeout time.Duration
	// managerArgs are the arguments after --, passed to the manager after
	// its local defaults (a flag given twice takes the last value).
	managerArgs []string
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "\nlocalenv: %v\n", err)
		os.Exit(1)
	}
}

func parseFlags() (options, error) {
	var o options
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: localenv [flags] [-- manager flags]\n\n"+
			"The operator on a local control plane (make demo, make run-local). Flags:\n")
		flag.PrintDefaults()
	}
	flag.BoolVar(&o.demo, "demo", false, "Apply config/samples, wait for the expected phases, print the results and stop.")
	flag.BoolVar(&o.noManager, "no-manager", false, "Start everything but the manager, and print the command that starts one.")
	flag.StringVar(&o.root, "root", ".", "The repository root.")
	flag.StringVar(&o.work, "work", "", "The folder of the kubeconfig, the logs and the DSN file (default <root>/bin/local).")
	flag.StringVar(&o.assets, "assets", os.Getenv("KUBEBUILDER_ASSETS"), "The folder with etcd, kube-apiserver and kubectl (bin/k8s/<version>-<os>-<arch>).")
	flag.StringVar(&o.ledger, "ledger", ledgerCRD, "The manager's outcome ledger: crd, or postgres (a local PostgreSQL server this command starts).")
	flag.DurationVar(&o.timeout, "timeout", 3*time.Minute, "How long the demo waits for the samples.")
	flag.Parse()
	o.managerArgs = flag.Args()

	root, err := filepath.Abs(o.root)
	if err != nil {
		return o, err
	}
	o.root = root
	if o.work == "" {
		o.work = filepath.Join(root, "bin", "local")
	}
	if o.work, err = filepath.Abs(o.work); err != nil {
		return o, err
	}
	switch {
	case o.assets == "":
		return o, errors.New("--assets or KUBEBUILDER_ASSETS must name the control plane folder: run `make demo` or `make run-local`")
	case o.ledger != ledgerCRD && o.ledger != ledgerPostgres:
		return o, fmt.Errorf("--ledger (make run-local LEDGER=) must be %s or %s, not %q", ledgerCRD, ledgerPostgres, o.ledger)
	case o.demo && o.noManager:
		return o, errors.New("--demo needs the manager: drop --no-manager")
	}
	return o, nil
}

func run() error {
	o, err := parseFlags()
	if err != nil {
		return err
	}
	log.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	if err := os.MkdirAll(o.work, 0o755); err != nil {
		return err
	}

	// Ctrl-C and SIGTERM stop everything this command started; so do a
	// closed terminal (SIGHUP) and a closed pipe of its output (SIGPIPE,
	// make demo | head), which would otherwise end this command and leave
	// its children, in process groups of their own, running.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	defer stop()

	e := &localEnv{options: o}
	defer e.stop()
	if err := e.start(ctx); err != nil {
		return err
	}
	if !o.noManager {
		if err := e.startManager(); err != nil {
			return err
		}
	}
	started := time.Now()
	if err := e.applySamples(ctx); err != nil {
		return err
	}
	if !o.demo {
		return e.stayUp(ctx)
	}
	return e.runDemo(ctx, started)
}

// runDemo waits for the samples and checks what the demo promises.
func (e *localEnv) runDemo(ctx context.Context, started time.Time) error {
	procs := []*process{e.manager, e.sandbox}
	if err := waitForSamples(ctx, e.client, e.kubectl, e.timeout, procs...); err != nil {
		return err
	}
	for _, kind := range []string{"pj", "prefund"} {
		out, err := e.kubectl("get", kind, "-A")
		if err != nil {
			return err
		}
		fmt.Println()
		step("kubectl get %s -A", kind)
		fmt.Print(indent(out))
	}
	if err := e.showDebit(ctx, e.client); err != nil {
		return err
	}
	if err := printStats(ctx); err != nil {
		return err
	}
	if err := checkRefunds(ctx, e.client); err != nil {
		return err
	}
	if err := reconcileBooks(ctx, e.client, e.kubectl, started, e.timeout, procs...); err != nil {
		return err
	}
	if err := pluginStatus(e.root, e.kubectl); err != nil {
		return err
	}
	fmt.Println()
	step("Demo passed: every sample reached its expected phase, a signed event woke the settled bank debit, the books balanced, the charge made behind the operator's back was found, and kubectl payments told a payment's story. Stopping everything.")
	return nil
}

func step(format string, args ...any) {
	fmt.Printf("==> "+format+"\n", args...)
}

func indent(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("    " + line + "\n")
	}
	return b.String()
}

func rel(root, path string) string {
	if r, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}
