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
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// Result is what reconcile prints once a run is finished.
type Result struct {
	Name             string                                  `json:"name"`
	Provider         string                                  `json:"provider"`
	Account          *paymentsv1alpha1.ProviderIdentity      `json:"account,omitempty"`
	Phase            string                                  `json:"phase"`
	Window           *paymentsv1alpha1.ReconciliationWindow  `json:"window,omitempty"`
	CompleteUpTo     *time.Time                              `json:"completeUpTo,omitempty"`
	Listed           bool                                    `json:"listed"`
	ProviderRequests int64                                   `json:"providerRequests"`
	Summary          *paymentsv1alpha1.ReconciliationSummary `json:"summary,omitempty"`
	Report           *paymentsv1alpha1.ReconciliationReport  `json:"report,omitempty"`
	// ReportFile is where --report wrote the report, once its sha256 was
	// checked against Report.SHA256.
	ReportFile    string `json:"reportFile,omitempty"`
	ReportChecked bool   `json:"reportChecked,omitempty"`
	// Discrepancies are the report's first rows that are not Matched,
	// each naming the PaymentJob or PaymentRefund it concerns and what is
	// left of the charge; DiscrepanciesError says why they could not be
	// read.
	Discrepancies      []paymentsv1alpha1.ReconciliationFinding `json:"discrepancies,omitempty"`
	DiscrepanciesError string                                   `json:"discrepanciesError,omitempty"`
}

func resultOf(pr *paymentsv1alpha1.PaymentReconciliation) *Result {
	r := &Result{
		Name: pr.Name, Provider: pr.Spec.ProviderRef.Namespace + "/" + pr.Spec.ProviderRef.Name,
		Account: pr.Status.Provider, Phase: string(pr.Status.Phase), Window: pr.Status.Window,
		Listed: pr.Status.Listed, ProviderRequests: pr.Status.ProviderRequests,
		Summary: pr.Status.Summary, Report: pr.Status.Report,
	}
	if t := pr.Status.CompleteUpTo; t != nil {
		r.CompleteUpTo = &t.Time
	}
	return r
}

func printResult(out io.Writer, r *Result) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	verdict := "the books balance"
	if r.Summary != nil && r.Summary.Discrepancies > 0 {
		verdict = "the books do not balance"
	}
	p("precon/%s %s: %s", r.Name, r.Phase, verdict)
	p("  Provider:\t%s", describeProvider(r.Provider, r.Account))
	if r.Window != nil {
		p("  Window:\t%s to %s", r.Window.From.UTC().Format(time.RFC3339), r.Window.To.UTC().Format(time.RFC3339))
	}
	if r.Listed {
		p("  Provider's books:\tlisted (%d requests)", r.ProviderRequests)
	} else {
		p("  Provider's books:\tnot listed: only the cluster's keys were looked up (%d requests)", r.ProviderRequests)
	}
	if s := r.Summary; s != nil {
		p("  Matched:\t%d", s.Matched)
		p("  Discrepancies:\t%d", s.Discrepancies)
	}
	if rep := r.Report; rep != nil {
		p("  Report:\t%s in %s, sha256 %s", plural(rep.Rows, "row", "rows"), plural(int64(rep.Pages), "page", "pages"), rep.SHA256)
	}
	if r.ReportFile != "" {
		p("  Written to:\t%s (sha256 checked)", r.ReportFile)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if s := r.Summary; s != nil && len(s.Categories) > 0 {
		cats := make([]string, 0, len(s.Categories))
		for c := range s.Categories {
			cats = append(cats, c)
		}
		slices.Sort(cats)
		rows := make([][]string, 0, len(cats))
		for _, c := range cats {
			rows = append(rows, []string{c, fmt.Sprint(s.Categories[c])})
		}
		table(out, "Categories:", "CATEGORY\tCOUNT", rows)
	}
	printDiscrepancies(out, r)
	return nil
}

// reportPages reads the run's report pages in order, those of the attempt
// its status names (another attempt's pages, of a manager that lost a race
// or was cut short, are no part of it), and checks them against the
// status: as many pages, and the sha256 of the joined CSV.
func reportPages(ctx context.Context, c client.Client, pr *paymentsv1alpha1.PaymentReconciliation) ([]paymentsv1alpha1.PaymentReconciliationReport, error) {
	want := pr.Status.Report
	if want == nil {
		return nil, &Error{Code: ExitReportMismatch, Err: fmt.Errorf("precon/%s has no report in its status", pr.Name)}
	}
	var list paymentsv1alpha1.PaymentReconciliationReportList
	if err := c.List(ctx, &list, client.MatchingLabels(paymentsv1alpha1.ReportPageLabels(pr))); err != nil {
		return nil, classify(err, "the report pages of precon/"+pr.Name)
	}
	pages := list.Items
	slices.SortFunc(pages, func(a, b paymentsv1alpha1.PaymentReconciliationReport) int { return int(a.Page - b.Page) })
	sum := sha256.New()
	for _, p := range pages {
		_, _ = io.WriteString(sum, p.CSV)
	}
	got := hex.EncodeToString(sum.Sum(nil))
	if int32(len(pages)) != want.Pages || got != want.SHA256 {
		return nil, &Error{Code: ExitReportMismatch, Err: fmt.Errorf("the report of precon/%s read from the cluster (%d pages, sha256 %s) "+
			"is not the one its status records (%d pages, sha256 %s): nothing was written; a page is missing or was changed",
			pr.Name, len(pages), got, want.Pages, want.SHA256)}
	}
	return pages, nil
}

// writeReport writes the run's report as CSV or JSON to file ("-" is out),
// once its pages are checked.
func writeReport(ctx context.Context, c client.Client, pr *paymentsv1alpha1.PaymentReconciliation, format, file string, out io.Writer) error {
	pages, err := reportPages(ctx, c, pr)
	if err != nil {
		return err
	}
	if file == "-" {
		return encodeReport(out, format, pages)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
	if err != nil {
		return &Error{Code: ExitError, Err: fmt.Errorf("cannot write the report: %w", err)}
	}
	defer os.Remove(tmp.Name())
	if err := encodeReport(tmp, format, pages); err != nil {
		_ = tmp.Close()
		return &Error{Code: ExitError, Err: fmt.Errorf("cannot write the report to %s: %w", file, err)}
	}
	if err := tmp.Close(); err != nil {
		return &Error{Code: ExitError, Err: fmt.Errorf("cannot write the report to %s: %w", file, err)}
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return &Error{Code: ExitError, Err: fmt.Errorf("cannot write the report to %s: %w", file, err)}
	}
	return nil
}

// encodeReport writes the pages' CSV joined (the bytes status.report.sha256
// is of), or the same rows as one JSON array of findings, read from that
// checked CSV: the pages' own findings field is not covered by the sha256.
func encodeReport(w io.Writer, format string, pages []paymentsv1alpha1.PaymentReconciliationReport) error {
	var joined strings.Builder
	for _, p := range pages {
		joined.WriteString(p.CSV)
	}
	if format == outputCSV {
		_, err := io.WriteString(w, joined.String())
		return err
	}
	rows, err := csv.NewReader(strings.NewReader(joined.String())).ReadAll()
	if err != nil {
		return &Error{Code: ExitReportMismatch, Err: fmt.Errorf("the report's CSV cannot be read: %w", err)}
	}
	return writeJSONArray(w, func(emit func(any) error) error {
		if len(rows) == 0 {
			return nil
		}
		col := map[string]int{}
		for i, name := range rows[0] {
			col[name] = i
		}
		for _, row := range rows[1:] {
			f, err := findingOf(row, col)
			if err != nil {
				return err
			}
			if err := emit(f); err != nil {
				return err
			}
		}
		return nil
	})
}

// findingOf reads one row of the report's CSV (docs/reconciliation.md, "The
// report") by its header's column names.
func findingOf(row []string, col map[string]int) (paymentsv1alpha1.ReconciliationFinding, error) {
	get := func(name string) string {
		if i, ok := col[name]; ok && i < len(row) {
			return row[i]
		}
		return ""
	}
	num := func(name string) (int64, error) {
		if v := get(name); v != "" {
			return strconv.ParseInt(v, 10, 64)
		}
		return 0, nil
	}
	f := paymentsv1alpha1.ReconciliationFinding{
		Category: get("category"), Kind: get("kind"), Key: get("key"), Object: get("object"), InLedger: get("in_ledger") == "true",
		ClusterID: get("cluster_id"), ClusterCurrency: get("cluster_currency"), ProviderCurrency: get("provider_currency"),
		Detail: get("detail"), Action: get("action"),
		ChargeObject: get("charge_object"), ChargeInLedger: get("charge_in_ledger") == "true", ChargeID: get("charge_id"),
		ObjectDeleted: get("object_deleted") == "true", ChargeObjectDeleted: get("charge_object_deleted") == "true",
	}
	if ids := get("provider_ids"); ids != "" {
		f.ProviderIDs = strings.Fields(ids)
	}
	var err error
	if f.ClusterAmount, err = num("cluster_amount"); err == nil {
		f.ProviderAmount, err = num("provider_amount")
	}
	if left := get("charge_left"); left != "" && err == nil {
		var n int64
		n, err = strconv.ParseInt(left, 10, 64)
		f.ChargeLeft = &n
	}
	if err != nil {
		return f, &Error{Code: ExitReportMismatch, Err: fmt.Errorf("the report's CSV has an amount that is not a number: %w", err)}
	}
	return f, nil
}

func jsonLine(v any) ([]byte, error) { return json.Marshal(v) }

type reportOptions struct {
	reconcile reconcileOptions
}

func newReportCommand(r *Root) *cobra.Command {
	o := &reportOptions{reconcile: reconcileOptions{root: r}}
	cmd := &cobra.Command{
		Use:   "report NAME [--report csv|json] [--report-file FILE]",
		Short: "Print a finished reconciliation's summary and write its report, checked against its sha256",
		Long: `Print the summary of a finished PaymentReconciliation (one reconcile ran, or one a
CronJob created) and, with --report csv|json, write its report after its pages are
checked against status.report.sha256. Exits as reconcile does.`,
		Example:           `  kubectl payments report stripe-2026-11-30 --report csv --report-file books.csv`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: completeReconciliations(r),
		RunE: func(cmd *cobra.Command, args []string) error {
			rc := &o.reconcile
			if err := checkOutput(rc.output, outputTable, outputJSON, outputYAML); err != nil {
				return err
			}
			if rc.report != "" && rc.report != outputCSV && rc.report != outputJSON {
				return usageError("--report %q is not csv or json", rc.report)
			}
			ctx := ctxOf(cmd)
			c, err := r.Client()
			if err != nil {
				return err
			}
			var pr paymentsv1alpha1.PaymentReconciliation
			if err := c.Get(ctx, client.ObjectKey{Name: args[0]}, &pr); err != nil {
				return classifyClusterScoped(err, "precon/"+args[0], "paymentreconciliations")
			}
			switch pr.Status.Phase {
			case paymentsv1alpha1.ReconciliationCompleted:
				return rc.finish(ctx, c, &pr)
			case paymentsv1alpha1.ReconciliationFailed:
				return &Error{Code: ExitError, Err: fmt.Errorf("precon/%s failed: %s", pr.Name, conditionText(pr.Status.Conditions, paymentsv1alpha1.ConditionStalled))}
			}
			return notApplicable("precon/%s is not finished (%s): it has no report yet", pr.Name,
				conditionText(pr.Status.Conditions, paymentsv1alpha1.ConditionReconciling))
		},
	}
	cmd.Flags().StringVar(&o.reconcile.report, "report", "", "Write the report: csv or json")
	cmd.Flags().StringVar(&o.reconcile.reportFile, "report-file", "", `Where --report writes (default NAME.csv or NAME.json; "-" is standard output)`)
	cmd.Flags().StringVarP(&o.reconcile.output, "output", "o", "table", "How to print the summary: table, json or yaml")
	return cmd
}
