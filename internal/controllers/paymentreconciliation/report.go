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

package paymentreconciliation

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/books"
)

const (
	// maxPageRows and maxPageBytes bound a report page: its CSV and the
	// same rows as JSON stay well under etcd's 1.5 MiB request limit.
	maxPageRows  = 500
	maxPageBytes = 256 << 10
)

// page is one page of a report: its findings and their part of the CSV.
type page struct {
	findings []books.Finding
	csv      []byte
}

// paginate splits the report's CSV (header first) into pages at row ends.
func paginate(r books.Report) []page {
	lines := books.Report{}.CSV() // the header alone
	pages := []page{{csv: lines}}
	for _, f := range r.Findings {
		row := books.Report{Findings: []books.Finding{f}}.CSV()[len(lines):]
		last := &pages[len(pages)-1]
		if len(last.findings) == maxPageRows || len(last.csv)+len(row) > maxPageBytes {
			pages = append(pages, page{})
			last = &pages[len(pages)-1]
		}
		last.findings = append(last.findings, f)
		last.csv = append(last.csv, row...)
	}
	return pages
}

// pageName is the name of page n of an attempt's report: names sort in
// page order, and two attempts never write the same page. A long
// reconciliation name is cut so that the name stays a valid one.
func pageName(reconciliation, attempt string, n int) string {
	suffix := fmt.Sprintf("-%s-%05d", attempt, n)
	if room := validation.DNS1123SubdomainMaxLength - len(suffix); len(reconciliation) > room {
		reconciliation = strings.TrimRight(reconciliation[:room], "-.")
	}
	return reconciliation + suffix
}

// newAttempt names an attempt of a run: what its pages are labelled with,
// and what the status names once the attempt completes the run.
func newAttempt() string { return rand.String(10) }

// writeReport writes the report's pages as attempt's, owned by pr, and
// returns what the status says of it. The pages are new objects: another
// attempt of the run (a retry, or another manager running the same run)
// never changes them, and they are the report only once the status names
// the attempt.
func writeReport(ctx context.Context, c client.Client, pr *paymentsv1alpha1.PaymentReconciliation, attempt string, r books.Report) (*paymentsv1alpha1.ReconciliationReport, error) {
	pages := paginate(r)
	var all bytes.Buffer
	for n, p := range pages {
		all.Write(p.csv)
		obj := &paymentsv1alpha1.PaymentReconciliationReport{
			ObjectMeta: metav1.ObjectMeta{Name: pageName(pr.Name, attempt, n), Labels: map[string]string{
				paymentsv1alpha1.LabelReconciliation: pr.Name, paymentsv1alpha1.LabelReconciliationAttempt: attempt}},
			Reconciliation: pr.Name, Page: int32(n), Rows: int32(len(p.findings)), CSV: string(p.csv),
			Findings: findingsOf(p.findings),
		}
		if err := controllerutil.SetOwnerReference(pr, obj, c.Scheme()); err != nil {
			return nil, fmt.Errorf("cannot own page %d of the report: %w", n, err)
		}
		if err := c.Create(ctx, obj); err != nil {
			return nil, fmt.Errorf("cannot write page %d of the report: %w", n, err)
		}
	}
	if !bytes.Equal(all.Bytes(), r.CSV()) {
		// The pages are the report cut at row ends; anything else is a bug
		// that would make the sha256 lie.
		return nil, fmt.Errorf("the report's pages do not join into the report")
	}
	return &paymentsv1alpha1.ReconciliationReport{SHA256: r.SHA256(), Rows: int64(len(r.Findings)),
		Pages: int32(len(pages)), Bytes: int64(all.Len()), Attempt: attempt}, nil
}

// deletePages deletes the pages of the reconciliation name's report whose
// attempt drop says: those of attempts that lost, failed or were cut short.
// It reads them from the API server, not the cache, which holds no pages.
func deletePages(ctx context.Context, c client.Client, reader client.Reader, name string, drop func(attempt string) bool) error {
	var list paymentsv1alpha1.PaymentReconciliationReportList
	if err := reader.List(ctx, &list, client.MatchingLabels{paymentsv1alpha1.LabelReconciliation: name}); err != nil {
		return fmt.Errorf("cannot list the report pages: %w", err)
	}
	for i := range list.Items {
		p := &list.Items[i]
		if !drop(p.Labels[paymentsv1alpha1.LabelReconciliationAttempt]) {
			continue
		}
		if err := c.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("cannot delete report page %s: %w", p.Name, err)
		}
	}
	return nil
}

// findingsOf is the JSON form of findings.
func findingsOf(fs []books.Finding) []paymentsv1alpha1.ReconciliationFinding {
	out := make([]paymentsv1alpha1.ReconciliationFinding, 0, len(fs))
	for _, f := range fs {
		out = append(out, paymentsv1alpha1.ReconciliationFinding{
			Category: string(f.Category), Kind: string(f.Kind), Key: f.Key, Object: f.Object, InLedger: f.InLedger,
			ClusterID: f.ClusterID, ClusterAmount: f.ClusterAmount, ClusterCurrency: f.ClusterCurrency,
			ProviderIDs: f.ProviderIDs, ProviderAmount: f.ProviderAmount, ProviderCurrency: f.ProviderCurrency,
			Detail: f.Detail, Action: f.Action,
			ChargeObject: f.ChargeObject, ChargeInLedger: f.ChargeInLedger, ChargeID: f.ChargeID, ChargeLeft: f.ChargeLeft,
			ObjectDeleted: f.ObjectDeleted, ChargeObjectDeleted: f.ChargeObjectDeleted,
		})
	}
	return out
}
