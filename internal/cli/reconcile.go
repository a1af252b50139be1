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
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// pollInterval is how often reconcile reads the run's status.
const pollInterval = 500 * time.Millisecond

type reconcileOptions struct {
	root       *Root
	provider   string
	from, to   string
	lookback   time.Duration
	namespaces []string
	all        bool
	rps        int32
	name       string
	report     string
	reportFile string
	timeout    time.Duration
	output     string
}

func newReconcileCommand(r *Root) *cobra.Command {
	o := &reconcileOptions{root: r}
	cmd := &cobra.Command{
		Use:   "reconcile --provider NAME [--from T --to T | --lookback D] [--report csv|json]",
		Short: "Run a reconciliation of a provider account against the cluster's books, wait for it and print what it found",
		Long: `Create a PaymentReconciliation of the PaymentProvider --provider (in the namespace of -n,
or NAMESPACE/NAME), wait for it with a progress line, and print its summary.
With --report csv|json the report is written (to NAME.csv or NAME.json, or --report-file;
"-" is standard output) after its sha256 is checked against the run's status.

The operator starts a run once its window has ended and settled (the manager's
--reconciliation-settle-margin, 5m by default), so a window that ends now waits that long.

Exits 0 when the books balance, 7 when the run found discrepancies, 8 when the report
does not match its sha256; stopping the wait (Ctrl-C, --timeout) leaves the run going
in the cluster.`,
		Example: `  kubectl payments reconcile --provider billing/stripe --from 2026-11-30T00:00:00Z --to 2026-12-01T00:00:00Z --report csv
  kubectl payments reconcile --provider stripe -n billing --lookback 24h`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			pr, err := o.build(cmd)
			if err != nil {
				return err
			}
			return o.run(ctxOf(cmd), pr)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.provider, "provider", "", "The PaymentProvider whose account is reconciled: NAME (in -n's namespace) or NAMESPACE/NAME")
	f.StringVar(&o.from, "from", "", "The window's start (RFC 3339)")
	f.StringVar(&o.to, "to", "", "The window's end (RFC 3339; default: when the run starts)")
	f.DurationVar(&o.lookback, "lookback", 0, "The window: this long before the run starts (default 24h without --from)")
	f.StringSliceVar(&o.namespaces, "namespaces", nil, "Only these namespaces' payments (default: every namespace's)")
	f.BoolVar(&o.all, "all-rows", false, "Report every payment, matched or not (spec.report: All)")
	f.Int32Var(&o.rps, "requests-per-second", 0, "The run's budget of provider requests (default 25)")
	f.StringVar(&o.name, "name", "", "The PaymentReconciliation's name (default: generated from the provider's)")
	f.StringVar(&o.report, "report", "", "Write the report: csv or json")
	f.StringVar(&o.reportFile, "report-file", "", `Where --report writes (default NAME.csv or NAME.json; "-" is standard output)`)
	f.DurationVar(&o.timeout, "timeout", time.Hour, "How long to wait for the run")
	f.StringVarP(&o.output, "output", "o", "table", "How to print the summary: table, json or yaml")
	_ = cmd.RegisterFlagCompletionFunc("provider", completeProviders(r))
	return cmd
}

// build is the PaymentReconciliation the flags describe.
func (o *reconcileOptions) build(cmd *cobra.Command) (*paymentsv1alpha1.PaymentReconciliation, error) {
	if o.provider == "" {
		return nil, usageError("name the provider account to reconcile: --provider NAME or NAMESPACE/NAME")
	}
	if err := checkOutput(o.output, outputTable, outputJSON, outputYAML); err != nil {
		return nil, err
	}
	if o.report != "" && o.report != outputCSV && o.report != outputJSON {
		return nil, usageError("--report %q is not csv or json", o.report)
	}
	ns, name, ok := strings.Cut(o.provider, "/")
	if !ok {
		var err error
		if ns, err = o.root.Namespace(); err != nil {
			return nil, err
		}
		name = o.provider
	}
	pr := &paymentsv1alpha1.PaymentReconciliation{
		ObjectMeta: metav1.ObjectMeta{Name: o.name},
		Spec: paymentsv1alpha1.PaymentReconciliationSpec{
			ProviderRef: paymentsv1alpha1.ProviderObjectReference{Namespace: ns, Name: name},
			Namespaces:  o.namespaces,
		},
	}
	if o.name == "" {
		pr.GenerateName = name + "-"
	}
	if o.all {
		pr.Spec.Report = paymentsv1alpha1.ReportAll
	}
	if o.rps > 0 {
		pr.Spec.RequestsPerSecond = ptr.To(o.rps)
	}
	if err := o.window(cmd, &pr.Spec); err != nil {
		return nil, err
	}
	return pr, nil
}

func (o *reconcileOptions) window(cmd *cobra.Command, spec *paymentsv1alpha1.PaymentReconciliationSpec) error {
	parse := func(flag, v string) (*metav1.Time, error) {
		if v == "" {
			return nil, nil
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return nil, usageError("--%s %q is not a time in RFC 3339 (2026-11-30T00:00:00Z)", flag, v)
		}
		return &metav1.Time{Time: t}, nil
	}
	var err error
	if spec.From, err = parse("from", o.from); err != nil {
		return err
	}
	if spec.To, err = parse("to", o.to); err != nil {
		return err
	}
	lookback := cmd.Flags().Changed("lookback")
	switch {
	case spec.From != nil && lookback:
		return usageError("give the window as --from (and --to) or as --lookback, not both")
	case spec.To != nil && spec.From == nil:
		return usageError("--to needs --from")
	case spec.From != nil && spec.To != nil && !spec.To.After(spec.From.Time):
		return usageError("--to must be after --from")
	case spec.From == nil:
		d := o.lookback
		if !lookback {
			d = 24 * time.Hour
		}
		if d < time.Second {
			return usageError("--lookback must be at least 1s")
		}
		spec.LookbackSeconds = ptr.To(int64(d / time.Second))
	}
	return nil
}

func (o *reconcileOptions) run(ctx context.Context, pr *paymentsv1alpha1.PaymentReconciliation) error {
	c, err := o.root.Client()
	if err != nil {
		return err
	}
	ref := pr.Spec.ProviderRef
	var pp paymentsv1alpha1.PaymentProvider
	if err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &pp); err != nil {
		return classify(err, fmt.Sprintf("PaymentProvider %s/%s (--provider)", ref.Namespace, ref.Name))
	}
	if err := c.Create(ctx, pr); err != nil {
		return classify(err, "a PaymentReconciliation")
	}
	progress := newProgress(o.root.ErrOut(), "precon/"+pr.Name)
	waitCtx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	err = wait.PollUntilContextCancel(waitCtx, pollInterval, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pr), pr); err != nil {
			return false, classify(err, "PaymentReconciliation "+pr.Name)
		}
		progress.show(pr)
		return pr.Status.Phase == paymentsv1alpha1.ReconciliationCompleted || pr.Status.Phase == paymentsv1alpha1.ReconciliationFailed, nil
	})
	progress.done()
	if err != nil {
		if _, ok := errors.AsType[*Error](err); ok && waitCtx.Err() == nil {
			return err
		}
		return &Error{Code: ExitError, Err: fmt.Errorf("stopped waiting for precon/%s (%w); the run goes on in the cluster: "+
			"kubectl get precon %s", pr.Name, err, pr.Name)}
	}
	if pr.Status.Phase == paymentsv1alpha1.ReconciliationFailed {
		return &Error{Code: ExitError, Err: fmt.Errorf("precon/%s failed: %s", pr.Name, conditionText(pr.Status.Conditions, paymentsv1alpha1.ConditionStalled))}
	}
	return o.finish(ctx, c, pr)
}

// finish writes the report, prints the summary and says whether the books
// balance.
func (o *reconcileOptions) finish(ctx context.Context, c client.Client, pr *paymentsv1alpha1.PaymentReconciliation) error {
	res := resultOf(pr)
	summaryOut := o.root.Out()
	if o.report != "" {
		file := o.reportFile
		if file == "" {
			file = pr.Name + "." + o.report
		}
		if file == "-" {
			summaryOut = o.root.ErrOut()
		}
		if err := writeReport(ctx, c, pr, o.report, file, o.root.Out()); err != nil {
			return err
		}
		res.ReportFile, res.ReportChecked = file, true
	}
	rows, err := discrepancies(ctx, c, pr)
	if err != nil {
		res.DiscrepanciesError = err.Error()
	}
	res.Discrepancies = rows
	if o.output == outputTable {
		err = printResult(summaryOut, res)
	} else {
		err = printData(summaryOut, o.output, res)
	}
	if err != nil {
		return err
	}
	if s := pr.Status.Summary; s != nil && s.Discrepancies > 0 {
		return &Error{Code: ExitDiscrepancies, Err: fmt.Errorf("precon/%s: the books do not balance: %s (docs/reconciliation.md says what to do about each category)",
			pr.Name, plural(s.Discrepancies, "discrepancy", "discrepancies"))}
	}
	return nil
}

func conditionText(cs []metav1.Condition, t string) string {
	c := meta.FindStatusCondition(cs, t)
	if c == nil {
		return "no " + t + " condition"
	}
	return c.Reason + ": " + c.Message
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// progress is reconcile's progress line: one line rewritten in place on a
// terminal, a line per change of state elsewhere (a log, a pipe).
type progress struct {
	w       io.Writer
	tty     bool
	name    string
	start   time.Time
	frame   int
	last    string
	printed bool
}

func newProgress(w io.Writer, name string) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, tty: ok && term.IsTerminal(int(f.Fd())), name: name, start: time.Now()}
}

var spinner = []string{"|", "/", "-", `\`}

func (p *progress) show(pr *paymentsv1alpha1.PaymentReconciliation) {
	phase := string(pr.Status.Phase)
	state := phase
	if phase == "" {
		state = "created, waiting for the operator to take it"
	}
	if c := meta.FindStatusCondition(pr.Status.Conditions, paymentsv1alpha1.ConditionReconciling); c != nil && c.Status == metav1.ConditionTrue {
		state = fmt.Sprintf("%s (%s): %s", phase, c.Reason, c.Message)
	}
	if !p.tty {
		if state != p.last {
			fmt.Fprintf(p.w, "%s %s\n", p.name, state)
			p.last = state
		}
		return
	}
	elapsed := time.Since(p.start).Round(time.Second)
	line := fmt.Sprintf("%s %s %s, %d provider requests: %s", spinner[p.frame%len(spinner)], p.name, elapsed, pr.Status.ProviderRequests, state)
	p.frame++
	if width := p.width(); width > 0 && len(line) > width-1 {
		line = line[:width-1]
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s", line)
	p.printed = true
}

func (p *progress) width() int {
	if f, ok := p.w.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil {
			return w
		}
	}
	return 0
}

// done ends the line so that what follows starts on its own.
func (p *progress) done() {
	if p.printed {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}
