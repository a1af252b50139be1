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

package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/idempotency-dev/paymentjob-operator/pkg/ledger"
)

// The outcome ledger's backends, as --ledger names them.
const (
	backendCRD      = "crd"
	backendPostgres = "postgres"
)

// The environment variables that give --ledger and --ledger-postgres-dsn-file
// their defaults, so that a shell set up once for a cluster whose operator
// keeps its ledger in PostgreSQL needs neither flag (a flag wins).
const (
	envLedger        = "KUBECTL_PAYMENTS_LEDGER"
	envLedgerDSNFile = "KUBECTL_PAYMENTS_LEDGER_DSN_FILE"
)

// ledgerFlags choose the outcome ledger the operator was configured with.
// addFlags takes their defaults from envLedger and envLedgerDSNFile.
type ledgerFlags struct {
	backend string
	dsnFile string
	// backendFlag and dsnFileFlag tell a value given on the command line
	// from one taken from the environment, for the errors.
	backendFlag, dsnFileFlag *pflag.Flag
}

func (f *ledgerFlags) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.backend, "ledger", cmp.Or(os.Getenv(envLedger), backendCRD),
		"The operator's outcome ledger: crd (the PaymentLedger pages) or postgres (as the manager's --ledger-backend); "+
			"default $"+envLedger+", else crd")
	cmd.Flags().StringVar(&f.dsnFile, "ledger-postgres-dsn-file", os.Getenv(envLedgerDSNFile),
		"With --ledger=postgres: a file holding the database's connection string (read-only use; never printed); "+
			"default $"+envLedgerDSNFile)
	f.backendFlag, f.dsnFileFlag = cmd.Flags().Lookup("ledger"), cmd.Flags().Lookup("ledger-postgres-dsn-file")
}

// open returns a reader of the ledger and what closes it.
func (f *ledgerFlags) open(ctx context.Context, c client.Client) (ledger.Reader, func(), error) {
	// from names where a value came from: the flag, or the variable that
	// gave its default.
	from := func(flag *pflag.Flag, env string) string {
		if flag != nil && !flag.Changed && os.Getenv(env) != "" {
			return env
		}
		if flag != nil {
			return "--" + flag.Name
		}
		return env
	}
	switch f.backend {
	case backendCRD:
		return ledger.NewCRDReader(c), func() {}, nil
	case backendPostgres:
		dsnFile := from(f.dsnFileFlag, envLedgerDSNFile)
		if f.dsnFile == "" {
			return nil, nil, usageError("%s=postgres needs --ledger-postgres-dsn-file (or %s)", from(f.backendFlag, envLedger), envLedgerDSNFile)
		}
		b, err := os.ReadFile(f.dsnFile)
		if err != nil {
			return nil, nil, &Error{Code: ExitLedgerUnavailable, Err: fmt.Errorf("cannot read %s: %w", dsnFile, err)}
		}
		pg, err := ledger.OpenPostgres(ctx, strings.TrimSpace(string(b)))
		if err != nil {
			return nil, nil, ledgerError(err)
		}
		return pg, pg.Close, nil
	}
	return nil, nil, usageError("%s %q is not crd or postgres", from(f.backendFlag, envLedger), f.backend)
}

// ledgerError carries the exit code of a ledger that cannot be read.
func ledgerError(err error) error {
	if _, ok := errors.AsType[*Error](err); ok {
		return err
	}
	if errors.Is(err, ledger.ErrUnavailable) {
		return &Error{Code: ExitLedgerUnavailable, Err: fmt.Errorf("the outcome ledger is unreachable: %w; check the database "+
			"and the DSN (--ledger=postgres), or the API server (--ledger=crd), and the network", err)}
	}
	return classify(err, "the outcome ledger")
}

func newLedgerCommand(r *Root) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "Read the outcome ledger: the payments the operator finished, kept after their jobs are gone",
		Args:  cobra.ArbitraryArgs,
		RunE:  helpOrUnknown,
	}
	cmd.AddCommand(newLedgerFindCommand(r), newLedgerExportCommand(r))
	return cmd
}

type ledgerFindOptions struct {
	root   *Root
	output string
	ledger ledgerFlags
}

func newLedgerFindCommand(r *Root) *cobra.Command {
	o := &ledgerFindOptions{root: r}
	cmd := &cobra.Command{
		Use:   "find KEY | pj/NAME | prefund/NAME",
		Short: "Find the ledger's entry of a payment, by its key or its object (also once the object is deleted)",
		Long: `Find the ledger's entry of a payment.

KEY is a job's idempotency key as its manifest gives it (spec.idempotencyKey, or the
job's name), taken in the namespace of -n; or the whole key the operator sent,
"<namespace>/<key>", as status.idempotencyKey shows it. Entries under a provider's key
scope ("<scope>:<namespace>/<key>") are found too.

pj/NAME and prefund/NAME read the object's status.idempotencyKey. When the object is
gone, the key its name gives is looked up, which is the key unless the manifest set
spec.idempotencyKey.`,
		Example: `  kubectl payments ledger find pj/invoice-2026-0042 -n billing
  kubectl payments ledger find billing/invoice-2026-0042 -o json`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(o.output, outputTable, outputJSON, outputYAML); err != nil {
				return err
			}
			return o.run(ctxOf(cmd), args[0])
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "Output format: table, json or yaml")
	o.ledger.addFlags(cmd)
	return cmd
}

func (o *ledgerFindOptions) run(ctx context.Context, arg string) error {
	c, ns, err := o.root.ClientIn()
	if err != nil {
		return err
	}
	key, err := o.keyOf(ctx, c, ns, arg)
	if err != nil {
		return err
	}
	reader, closeFn, err := o.ledger.open(ctx, c)
	if err != nil {
		return err
	}
	defer closeFn()
	entries, err := reader.Find(ctx, key)
	if err != nil {
		return ledgerError(err)
	}
	if len(entries) == 0 {
		if unsent := unsentFinding(ctx, c, ns, arg); unsent != "" {
			return &Error{Code: ExitNotFound, Err: fmt.Errorf("the %s ledger holds no entry under %s: %s", o.ledger.backend, key, unsent)}
		}
		return &Error{Code: ExitNotFound, Err: fmt.Errorf("the %s ledger holds no entry under %s: the payment did not finish, "+
			"its entry is older than the ledger's retention, or %s", o.ledger.backend, key, otherLedger(o.ledger.backend))}
	}
	if o.output != outputTable {
		return printData(o.root.Out(), o.output, entries)
	}
	now := time.Now()
	rows := make([][]string, 0, len(entries))
	for _, e := range entries {
		rows = append(rows, []string{e.Key, string(e.Outcome), orDash(e.Reason), entryCharge(e), money(e.Amount, e.Currency),
			e.At.UTC().Format(time.RFC3339), ago(e.At, now), describeProvider(orDash(e.Provider.Account), nil)})
	}
	table(o.root.Out(), fmt.Sprintf("Ledger (%s):", o.ledger.backend), "KEY\tOUTCOME\tREASON\tCHARGE\tAMOUNT\tRECORDED\tAGE\tACCOUNT", rows)
	return nil
}

// entryCharge is the charge (or refund) of e, for a table: a refund's
// entry names the charge it gave money back from, when the ledger kept it.
func entryCharge(e ledger.Entry) string {
	if e.RefundedCharge == "" {
		return orDash(e.Charge)
	}
	return fmt.Sprintf("%s (refunds %s)", orDash(e.Charge), e.RefundedCharge)
}

// keyOf is the ledger key arg names (see the command's help).
func (o *ledgerFindOptions) keyOf(ctx context.Context, c client.Client, ns, arg string) (string, error) {
	typ, name, hasSlash := strings.Cut(arg, "/")
	k, isObject := kindNames[strings.ToLower(typ)]
	switch {
	case !hasSlash:
		return ledger.SentKey(ns, arg), nil
	case !isObject:
		return arg, nil
	}
	obj := newPayment(k)
	t := target{Kind: k, Name: name}
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
	switch {
	case err == nil && obj.GetPaymentStatus().IdempotencyKey != "":
		return obj.GetPaymentStatus().IdempotencyKey, nil
	case err == nil:
		if unsent := unsentFailure(string(k), obj.GetPaymentStatus()); unsent != "" {
			return "", &Error{Code: ExitNotFound, Err: fmt.Errorf("the %s ledger holds no entry of %s in namespace %s: %s",
				o.ledger.backend, t, ns, unsent)}
		}
		return "", notApplicable("%s in namespace %s was never sent to a provider (phase %q): it has no ledger entry",
			t, ns, obj.GetPaymentStatus().Phase)
	case apierrors.IsNotFound(err) && !isMissingGroup(err):
		key := ledger.SentKey(ns, name)
		if k == kindRefund {
			key = ledger.RefundKey(ns, name)
		}
		fmt.Fprintf(o.root.ErrOut(), "%s is not in namespace %s; looking up the key its name gives, %s "+
			"(if its manifest set spec.idempotencyKey, look that key up instead)\n", t, ns, key)
		return key, nil
	}
	return "", classify(err, fmt.Sprintf("%s in namespace %s", t, ns))
}

type ledgerExportOptions struct {
	root          *Root
	output        string
	since         string
	allNamespaces bool
	ledger        ledgerFlags
}

func newLedgerExportCommand(r *Root) *cobra.Command {
	o := &ledgerExportOptions{root: r}
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the ledger's entries of a namespace (or of all, -A) as CSV or JSON",
		Example: `  kubectl payments ledger export -n billing --since 720h > billing.csv
  kubectl payments ledger export -A -o json --ledger=postgres --ledger-postgres-dsn-file=dsn`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(o.output, outputCSV, outputJSON); err != nil {
				return err
			}
			return o.run(ctxOf(cmd))
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "csv", "Output format: csv or json")
	cmd.Flags().StringVar(&o.since, "since", "", "Only entries recorded since then: a time (RFC 3339) or a duration before now (24h)")
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "Every namespace's entries")
	o.ledger.addFlags(cmd)
	return cmd
}

// parseSince reads --since: an RFC 3339 time or a duration before now.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, usageError("--since %q is neither a time (2026-11-30T00:00:00Z) nor a duration (24h)", s)
	}
	return now.Add(-d), nil
}

func (o *ledgerExportOptions) run(ctx context.Context) error {
	since, err := parseSince(o.since, time.Now())
	if err != nil {
		return err
	}
	c, err := o.root.Client()
	if err != nil {
		return err
	}
	filter := ledger.Filter{Since: since}
	if !o.allNamespaces {
		if filter.Namespace, err = o.root.Namespace(); err != nil {
			return err
		}
	}
	reader, closeFn, err := o.ledger.open(ctx, c)
	if err != nil {
		return err
	}
	defer closeFn()
	// Nothing reaches stdout before the ledger answered: a header alone,
	// in a redirected file, would read as an empty ledger.
	out := o.root.Out()
	if o.output == outputCSV {
		// The CSV writer buffers: an error before the first entry leaves
		// its header unwritten.
		w := ledger.NewCSVWriter(out)
		entries := 0
		err = reader.Each(ctx, filter, func(e ledger.Entry) error {
			entries++
			return w.Write(e)
		})
		if err != nil && entries == 0 {
			return ledgerError(err)
		}
		if ferr := w.Flush(); err == nil {
			err = ferr
		}
		return ledgerError(err)
	}
	return ledgerError(writeJSONArray(out, func(emit func(any) error) error {
		return reader.Each(ctx, filter, func(e ledger.Entry) error { return emit(e) })
	}))
}

// writeJSONArray writes the values each emits as one JSON array, one value
// a line, without holding them. Nothing is written when each fails
// before its first value: the "[" waits for it, or for each's end.
func writeJSONArray(w io.Writer, each func(emit func(any) error) error) error {
	sep := "[\n"
	err := each(func(v any) error {
		b, err := jsonLine(v)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s  %s", sep, b)
		sep = ",\n"
		return err
	})
	switch {
	case err != nil:
		return err
	case sep == "[\n":
		_, err = io.WriteString(w, "[]\n")
	default:
		_, err = io.WriteString(w, "\n]\n")
	}
	return err
}
