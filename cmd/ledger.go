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
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger/ledgercopy"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger/pgledger"
)

// `manager ledger copy|verify`: the outcome ledger moved between the CRD
// ledger and PostgreSQL, and checked (package ledgercopy).

// The ledger command's exit codes.
const (
	// ledgerExitOK: every entry read from the source is at the destination,
	// with its fingerprint and outcome.
	ledgerExitOK = 0
	// ledgerExitError: the command could not do its work (the API server or
	// the database did not answer, a file could not be read, a signal).
	ledgerExitError = 1
	// ledgerExitIncomplete: entries are missing at the destination or in
	// conflict there; they are listed.
	ledgerExitIncomplete = 2
	// ledgerExitUsage: the command line is wrong.
	ledgerExitUsage = 3
)

// The ledger command's commands.
const (
	commandCopy   = "copy"
	commandVerify = "verify"
)

// The ledger backends, as --from and --to name them.
const (
	backendCRD      = "crd"
	backendPostgres = "postgres"
)

const ledgerUsage = `Usage: manager ledger copy|verify --from=crd|postgres --to=postgres|crd --ledger-postgres-dsn-file=FILE [flags]

Moves the operator's outcome ledger between the CRD ledger (the PaymentLedger pages)
and PostgreSQL, and back, while managers run and record outcomes on either
(docs/postgres-ledger.md, "Moving the ledger to PostgreSQL (and back)").

  copy    records at the destination every entry whose key it lacks, and checks that each
          arrived. It never changes an entry the destination holds: one with another request
          fingerprint or outcome is a conflict, listed. Run it again to copy what the managers
          recorded since; what is there already is counted, not written.
  verify  checks that every entry of the source is at the destination, with the same request
          fingerprint and outcome. It records nothing.

Kubernetes access: --kubeconfig, else $KUBECONFIG, else the in-cluster service account, else
~/.kube/config. It needs get, list and watch on paymentledgers (payments.idempotency.dev), and
create and update too for a copy to the CRD ledger.

Flags:
`

const ledgerExitCodes = `
Exit codes:
  0  every entry read from the source is at the destination, with its fingerprint and outcome
  1  error: the API server or the database did not answer, a file could not be read, interrupted
  2  entries missing at the destination, or in conflict there (a few are listed): copy again, or
     see the docs on conflicts
  3  the command line is wrong
`

// ledgerArgs is a ledger command line.
type ledgerArgs struct {
	// command is copy or verify.
	command string
	// from and to are the backends.
	from, to   string
	pg         *postgresFlags
	kubeconfig string
}

// ledgerCommand runs `manager ledger ARGS` and returns its exit code. What
// it found goes to stdout; progress, errors and logs to stderr. The DSN is
// never printed.
func ledgerCommand(args []string, stdout, stderr io.Writer) int {
	a, code, ok := parseLedgerArgs(args, stdout, stderr)
	if !ok {
		return code
	}
	pgOpts, err := a.pg.options()
	if err != nil {
		// The file's path, never its content.
		fmt.Fprintf(stderr, "manager ledger: %v\n", err)
		return ledgerExitError
	}
	cfg, err := ledgerRESTConfig(a.kubeconfig)
	if err != nil {
		fmt.Fprintf(stderr, "manager ledger: cannot load the Kubernetes configuration: %v\n", err)
		return ledgerExitError
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctrl.SetLogger(zap.New(zap.WriteTo(stderr)))
	db, err := pgledger.Open(ctx, pgOpts.DSN, pgledger.Options{
		Cluster: pgOpts.Cluster, RootCAFile: pgOpts.RootCAFile, MaxConns: pgOpts.MaxConns,
	})
	if err != nil {
		// pgledger keeps the DSN out of its errors.
		fmt.Fprintf(stderr, "manager ledger: %v\n", err)
		return ledgerExitError
	}
	defer db.Close()

	var src ledgercopy.Source
	var dst ledgercopy.Destination
	if a.from == backendCRD {
		c, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			fmt.Fprintf(stderr, "manager ledger: cannot make a client of the API server: %v\n", err)
			return ledgerExitError
		}
		src, dst = ledgercopy.Pages(c), db
	} else {
		fmt.Fprintln(stderr, "Loading the CRD ledger")
		crd, err := ledgercopy.StartCRD(ctx, cfg, ledger.Options{})
		if err != nil {
			fmt.Fprintf(stderr, "manager ledger: %v\n", err)
			return ledgerExitError
		}
		src, dst = db, crd
	}
	run := ledgercopy.Copy
	if a.command == commandVerify {
		run = ledgercopy.Verify
	}
	started, shown := time.Now(), time.Now()
	res, err := run(ctx, src, dst, ledgercopy.Options{Progress: func(r ledgercopy.Result) {
		if time.Since(shown) >= ledgerProgressInterval {
			shown = time.Now()
			fmt.Fprintf(stderr, "%s so far: %s\n", ledgerTitle(a.command), ledgerSummary(a.command, a.from, r))
		}
	}})
	if err != nil {
		fmt.Fprintf(stderr, "manager ledger: %s stopped after %s: %v\n", a.command, ledgerSummary(a.command, a.from, res), err)
		return ledgerExitError
	}
	return ledgerReport(stdout, a.command, a.from, a.to, res, time.Since(started))
}

// parseLedgerArgs reads a ledger command line. When it is wrong, or asks
// for help, it says so (the usage) and returns false with the exit code.
func parseLedgerArgs(args []string, stdout, stderr io.Writer) (ledgerArgs, int, bool) {
	fs := flag.NewFlagSet("manager ledger", flag.ContinueOnError)
	fs.SetOutput(stderr)
	a := ledgerArgs{pg: &postgresFlags{}}
	fs.StringVar(&a.from, "from", "", "The ledger to read: `crd` (the PaymentLedger pages) or postgres.")
	fs.StringVar(&a.to, "to", "", "The ledger to copy to or to check: `postgres` or crd.")
	// The manager's flags of the database, worded for this command; the
	// DSN file is read as the manager reads it (postgresFlags.options).
	fs.StringVar(&a.pg.dsnFile, "ledger-postgres-dsn-file", "",
		"A `file` holding the database's connection string, as the manager's flag of that name: mounted from a Secret. "+
			"Its content is never printed.")
	fs.StringVar(&a.pg.caFile, "ledger-postgres-ca-file", "",
		"A PEM `file` of the certificate authorities the database's certificate must chain to, as the manager's flag "+
			"of that name: TLS with sslmode=verify-full.")
	fs.StringVar(&a.pg.cluster, "ledger-cluster-name", "",
		"The `name` stored with each entry a copy to PostgreSQL records: the manager's --ledger-cluster-name.")
	// Not controller-runtime's --kubeconfig, which it defines on the
	// manager's flags: this command has its own.
	fs.StringVar(&a.kubeconfig, "kubeconfig", "",
		"A kubeconfig `file`; else $KUBECONFIG, the in-cluster service account, ~/.kube/config.")
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprint(out, ledgerUsage)
		fs.PrintDefaults()
		fmt.Fprint(out, ledgerExitCodes)
	}
	usage := func(format string, args ...any) (ledgerArgs, int, bool) {
		fmt.Fprintf(stderr, "manager ledger: "+format+"\n\n", args...)
		fs.Usage()
		return a, ledgerExitUsage, false
	}

	if len(args) == 0 {
		return usage("copy or verify?")
	}
	switch a.command = args[0]; a.command {
	case commandCopy, commandVerify:
	case "help", "-h", "-help", "--help":
		fs.SetOutput(stdout)
		fs.Usage()
		return a, ledgerExitOK, false
	default:
		return usage("unknown command %q: copy or verify?", a.command)
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return a, ledgerExitOK, false
		}
		return a, ledgerExitUsage, false
	}
	switch {
	case fs.NArg() > 0:
		return usage("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	case !validLedgerBackend(a.from) || !validLedgerBackend(a.to):
		return usage("--from and --to must each be %s or %s", backendCRD, backendPostgres)
	case a.from == a.to:
		return usage("--from and --to name the same ledger")
	case a.pg.dsnFile == "":
		return usage("--ledger-postgres-dsn-file is required: a file holding the database's connection string")
	}
	return a, ledgerExitOK, true
}

// ledgerReport writes what a copy or a verify found to w, and returns the exit
// code it means.
func ledgerReport(w io.Writer, sub, from, to string, res ledgercopy.Result, took time.Duration) int {
	fmt.Fprintf(w, "%s, in %s\n", ledgerSummary(sub, from, res), took.Round(time.Second))
	for _, key := range res.MissingKeys {
		fmt.Fprintf(w, "missing: %s\n", key)
	}
	for _, c := range res.ConflictExamples {
		fmt.Fprintf(w, "conflict: %s\n", c)
	}
	if res.Complete() {
		return ledgerExitOK
	}
	if res.Missing > 0 {
		fmt.Fprintf(w, "Entries are missing at %s: run `manager ledger copy --from=%s --to=%s` (again).\n", backendName(to), from, to)
	}
	if res.Conflicts > 0 {
		fmt.Fprintf(w, "Conflicts: %s keeps its entries; a person decides which is right "+
			"(docs/postgres-ledger.md, \"Moving the ledger to PostgreSQL (and back)\").\n", backendName(to))
	}
	return ledgerExitIncomplete
}

// ledgerProgressInterval is the time between two progress lines.
const ledgerProgressInterval = 5 * time.Second

// validLedgerBackend reports whether b names a backend.
func validLedgerBackend(b string) bool {
	return b == backendCRD || b == backendPostgres
}

// backendName is how messages name a backend.
func backendName(backend string) string {
	if backend == backendCRD {
		return "the CRD ledger"
	}
	return "PostgreSQL"
}

// ledgerTitle names what command sub is doing, for a progress line.
func ledgerTitle(sub string) string {
	if sub == commandCopy {
		return "Copying"
	}
	return "Verifying"
}

// ledgerSummary is the line that says what a copy or a verify found.
func ledgerSummary(sub, from string, r ledgercopy.Result) string {
	if sub == commandCopy {
		return fmt.Sprintf("copied %d, already present %d, conflicts %d, missing %d (%d entries read from %s)",
			r.Copied, r.Present, r.Conflicts, r.Missing, r.Read, backendName(from))
	}
	return fmt.Sprintf("present %d, conflicts %d, missing %d (%d entries read from %s)",
		r.Present, r.Conflicts, r.Missing, r.Read, backendName(from))
}

// ledgerRESTConfig loads the configuration of the Kubernetes API server: from
// the kubeconfig at path, else as controller-runtime finds it ($KUBECONFIG,
// in-cluster, ~/.kube/config).
func ledgerRESTConfig(path string) (*rest.Config, error) {
	if path == "" {
		return config.GetConfig()
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, err
	}
	// As config.GetConfig: no client-side limit; the API server's
	// priority and fairness applies.
	if cfg.QPS == 0 {
		cfg.QPS = -1
	}
	return cfg, nil
}
