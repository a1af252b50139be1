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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/reconcile"
)

const (
	// maxPageRows and maxPageBytes bound a report page: its CSV and the
	// same rows as JSON stay well under etcd's 1.5 MiB request limit.
	maxPageRows  = 500
	maxPageBytes = 256 << 10
)

// page is one page of a report: its findings and their part of the CSV.
type page struct {
	findings []reconcile.Finding
	csv      []byte
}

// paginate splits the report's CSV (header first) into pages at row ends.
func paginate(r reconcile.Report) []page {
	lines := reconcile.Report{}.CSV() // the header alone
	pages := []page{{csv: lines}}
	for _, f := range r.Findings {
		row := reconcile.Report{Findings: []reconcile.Finding{f}}.CSV()[len(lines):]
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

// pageName is the name of page n of a reconciliation's report: names sort
// in page order.
func pageName(reconciliation string, n int) string {
	return fmt.Sprintf("%s-%05d", reconciliation, n)
}

// writeReport writes the report's pages, owned by pr, replacing any
// written by an earlier attempt of the same run, and returns what the
// status says of it.
func writeReport(ctx context.Context, c client.Client, pr *paymentsv1alpha1.PaymentReconciliation, r reconcile.Report) (*paymentsv1alpha1.ReconciliationReport, error) {
	pages := paginate(r)
	var all bytes.Buffer
	for n, p := range pages {
		all.Write(p.csv)
		obj := &paymentsv1alpha1.PaymentReconciliationReport{ObjectMeta: metav1.ObjectMeta{Name: pageName(pr.Name, n)}}
		_, err := controllerutil.CreateOrUpdate(ctx, c, obj, func() error {
			if obj.Labels == nil {
				obj.Labels = map[string]string{}
			}
			obj.Labels[paymentsv1alpha1.LabelReconciliation] = pr.Name
			obj.Reconciliation, obj.Page, obj.Rows, obj.CSV = pr.Name, int32(n), int32(len(p.findings)), string(p.csv)
			obj.Findings = findingsOf(p.findings)
			return controllerutil.SetOwnerReference(pr, obj, c.Scheme())
		})
		if err != nil {
			return nil, fmt.Errorf("cannot write page %d of the report: %w", n, err)
		}
	}
	// Pages of an earlier attempt beyond this one's last.
	for n := len(pages); ; n++ {
		err := c.Delete(ctx, &paymentsv1alpha1.PaymentReconciliationReport{ObjectMeta: metav1.ObjectMeta{Name: pageName(pr.Name, n)}})
		if apierrors.IsNotFound(err) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("cannot delete page %d of an earlier report: %w", n, err)
		}
	}
	if !bytes.Equal(all.Bytes(), r.CSV()) {
		// The pages are the report cut at row ends; anything else is a bug
		// that would make the sha256 lie.
		return nil, fmt.Errorf("the report's pages do not join into the report")
	}
	return &paymentsv1alpha1.ReconciliationReport{SHA256: r.SHA256(), Rows: int64(len(r.Findings)),
		Pages: int32(len(pages)), Bytes: int64(all.Len())}, nil
}

// findingsOf is the JSON form of findings.
func findingsOf(fs []reconcile.Finding) []paymentsv1alpha1.ReconciliationFinding {
	out := make([]paymentsv1alpha1.ReconciliationFinding, 0, len(fs))
	for _, f := range fs {
		out = append(out, paymentsv1alpha1.ReconciliationFinding{
			Category: string(f.Category), Kind: string(f.Kind), Key: f.Key, Object: f.Object, InLedger: f.InLedger,
			ClusterID: f.ClusterID, ClusterAmount: f.ClusterAmount, ClusterCurrency: f.ClusterCurrency,
			ProviderIDs: f.ProviderIDs, ProviderAmount: f.ProviderAmount, ProviderCurrency: f.ProviderCurrency,
			Detail: f.Detail, Action: f.Action,
		})
	}
	return out
}
