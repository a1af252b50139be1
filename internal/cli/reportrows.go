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
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// maxDiscrepancyRows is how many of a run's discrepancies reconcile and
// report print under the summary; --report writes them all.
const maxDiscrepancyRows = 20

// discrepancies reads the rows of pr's report that are not Matched, the
// first maxDiscrepancyRows of them, from its pages checked against the
// status (as --report does); nil when the books balance. err says why the
// rows could not be read.
func discrepancies(ctx context.Context, c client.Client, pr *paymentsv1alpha1.PaymentReconciliation) ([]paymentsv1alpha1.ReconciliationFinding, error) {
	if s := pr.Status.Summary; s == nil || s.Discrepancies == 0 {
		return nil, nil
	}
	pages, err := reportPages(ctx, c, pr)
	if err != nil {
		return nil, classify(err, "the report pages of precon/"+pr.Name)
	}
	var buf bytes.Buffer
	if err := encodeReport(&buf, outputJSON, pages); err != nil {
		return nil, err
	}
	var all []paymentsv1alpha1.ReconciliationFinding
	if err := json.Unmarshal(buf.Bytes(), &all); err != nil {
		return nil, fmt.Errorf("the report's rows cannot be read: %w", err)
	}
	rows := make([]paymentsv1alpha1.ReconciliationFinding, 0, min(len(all), maxDiscrepancyRows))
	for _, f := range all {
		if f.Category == "Matched" {
			continue
		}
		if len(rows) == maxDiscrepancyRows {
			break
		}
		rows = append(rows, f)
	}
	return rows, nil
}

// printDiscrepancies prints the rows that lead back to the payments: the
// object each concerns, the charge's job and what is left of the charge.
func printDiscrepancies(out io.Writer, r *Result) {
	if r.DiscrepanciesError != "" {
		fmt.Fprintf(out, "Discrepancies: cannot be read (%s); --report csv writes them\n", r.DiscrepanciesError)
		return
	}
	if len(r.Discrepancies) == 0 {
		return
	}
	rows := make([][]string, 0, len(r.Discrepancies))
	for _, f := range r.Discrepancies {
		left := "-"
		if f.ChargeLeft != nil {
			left = money(*f.ChargeLeft, strings.ToLower(cmp.Or(f.ProviderCurrency, f.ClusterCurrency)))
		}
		rows = append(rows, []string{f.Category, f.Kind, objectOf(f.Object, f.ObjectDeleted),
			objectOf(f.ChargeObject, f.ChargeObjectDeleted), orDash(f.ChargeID), left})
	}
	title := "Discrepancies (what to do about each: the report's action column, --report csv; docs/reconciliation.md):"
	if total := r.Summary.Discrepancies; total > int64(len(rows)) {
		title = fmt.Sprintf("Discrepancies (the first %d of %d; --report csv writes them all, with what to do about each):", len(rows), total)
	}
	table(out, title, "CATEGORY\tKIND\tOBJECT\tCHARGE'S JOB\tCHARGE\tLEFT OF CHARGE", rows)
}

// objectOf is "<namespace>/<name>" of a report row, said deleted when it
// is named from its ledger entry.
func objectOf(name string, deleted bool) string {
	switch {
	case name == "":
		return "-"
	case deleted:
		return name + " (deleted)"
	}
	return name
}
