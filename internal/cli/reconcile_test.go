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

package cli_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/cli"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/pkg/ledger"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// books makes, in ns, three Completed payments and a refund, all in the
// ledger, and returns the window around them.
func books(t *testing.T, ns string) (from, to time.Time) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	from = time.Now().Add(-time.Minute).Truncate(time.Second)
	createJob(t, ns, "invoice-1", 1000, paymentsv1alpha1.PhaseCompleted)
	createJob(t, ns, "invoice-2", 2000, paymentsv1alpha1.PhaseCompleted)
	createJob(t, ns, "invoice-3", 3000, paymentsv1alpha1.PhaseCompleted)
	g.Expect(k8s.Create(ctx, &paymentsv1alpha1.PaymentRefund{
		ObjectMeta: metav1.ObjectMeta{Name: "invoice-1-return", Namespace: ns},
		Spec: paymentsv1alpha1.PaymentRefundSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: "stripe"},
			PaymentJobRef: paymentsv1alpha1.PaymentJobReference{Name: "invoice-1"}, Amount: ptr.To(int64(400))},
	})).To(Succeed())
	_, err := env.WaitForRefundPhase(ctx, ns, "invoice-1-return", paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		r := kubectlPayments("ledger", "export", "-n", ns, "-o", "json")
		succeeded(g, r)
		var entries []ledger.Entry
		g.Expect(json.Unmarshal([]byte(r.Stdout), &entries)).To(Succeed())
		g.Expect(entries).To(HaveLen(4))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	return from, time.Now().Add(time.Second).Truncate(time.Second)
}

func TestReconcileRunsWaitsAndChecksTheReport(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, "books")
	from, to := books(t, ns)
	window := []string{"--provider", ns + "/stripe", "--namespaces", ns,
		"--from", from.UTC().Format(time.RFC3339), "--to", to.UTC().Format(time.RFC3339)}
	dir := t.TempDir()
	before := env.Sandbox().Stats()

	// Balanced books, the report written after its sha256 is checked.
	file := filepath.Join(dir, "books.csv")
	r := kubectlPayments(append([]string{"reconcile", "--name", "books-clean", "--all-rows", "--report", "csv", "--report-file", file}, window...)...)
	succeeded(g, r)
	golden(t, "reconcile-balanced.golden", r.Stdout)
	var pr paymentsv1alpha1.PaymentReconciliation
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "books-clean"}, &pr)).To(Succeed())
	g.Expect(pr.Status.Summary.Matched).To(Equal(int64(4)))
	g.Expect(pr.Status.Summary.Discrepancies).To(BeZero())
	csvBytes, err := os.ReadFile(file)
	g.Expect(err).NotTo(HaveOccurred())
	sum := sha256.Sum256(csvBytes)
	g.Expect(hex.EncodeToString(sum[:])).To(Equal(pr.Status.Report.SHA256), "the file is the report the status names")
	g.Expect(r.Stderr).To(ContainSubstring("precon/books-clean"), "a progress line per state without a terminal")
	g.Expect(r.Stderr).NotTo(ContainSubstring("\r"), "no line rewritten without a terminal")

	// A second charge under a job's key, behind the operator's back.
	var pj paymentsv1alpha1.PaymentJob
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "invoice-2"}, &pj)).To(Succeed())
	double := env.Sandbox().PutIntent(sandbox.Intent{Amount: 2000, Currency: "usd", Created: to.Add(-500 * time.Millisecond),
		Metadata: map[string]string{payment.MetadataKeyIdempotencyKey: pj.Status.IdempotencyKey}})
	r = kubectlPayments(append([]string{"reconcile", "--name", "books-double", "--report", "json", "--report-file", "-", "-o", "json"}, window...)...)
	g.Expect(r.Code).To(Equal(cli.ExitDiscrepancies), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("precon/books-double: the books do not balance: 1 discrepancy"))
	var findings []paymentsv1alpha1.ReconciliationFinding
	g.Expect(json.Unmarshal([]byte(r.Stdout), &findings)).To(Succeed(), "with --report-file -, standard output holds only the report")
	g.Expect(findings).To(ConsistOf(And(HaveField("Category", "Duplicate"), HaveField("Key", pj.Status.IdempotencyKey),
		HaveField("ProviderIDs", ContainElement(double.ID)))))
	var res cli.Result
	g.Expect(json.Unmarshal([]byte(stderrJSON(r.Stderr)), &res)).To(Succeed(), "the summary goes to standard error")
	g.Expect(res.Summary.Categories).To(HaveKeyWithValue("Duplicate", int64(1)))
	g.Expect(res.ReportChecked).To(BeTrue())

	after := env.Sandbox().Stats()
	g.Expect(after.Charges).To(Equal(before.Charges), "a reconciliation never charges")
	g.Expect(after.Refunds).To(Equal(before.Refunds), "a reconciliation never refunds")

	// report: a finished run read again; a page changed since is caught.
	r = kubectlPayments("report", "books-clean")
	succeeded(g, r)
	golden(t, "report-balanced.golden", r.Stdout)
	var pages paymentsv1alpha1.PaymentReconciliationReportList
	g.Expect(k8s.List(ctx, &pages, client.MatchingLabels{paymentsv1alpha1.LabelReconciliation: "books-clean"})).To(Succeed())
	g.Expect(pages.Items).NotTo(BeEmpty())
	page := pages.Items[0]
	page.CSV += "forged,row\n"
	g.Expect(k8s.Update(ctx, &page)).To(Succeed())
	tampered := filepath.Join(dir, "tampered.csv")
	r = kubectlPayments("report", "books-clean", "--report", "csv", "--report-file", tampered)
	g.Expect(r.Code).To(Equal(cli.ExitReportMismatch), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("is not the one its status records"))
	g.Expect(tampered).NotTo(BeAnExistingFile(), "a report that does not match is not written")

	r = kubectlPayments("report", "books-404")
	g.Expect(r.Code).To(Equal(cli.ExitNotFound))

	dashboardRefundsLeadBackToTheJob(t, ns, from)
}

// dashboardRefundsLeadBackToTheJob refunds two of books' payments in the
// provider's dashboard (at the sandbox directly, not through the
// operator): invoice-3 in part, and invoice-1, which a PaymentRefund
// already refunded in part. The report's rows name each charge's
// PaymentJob, say that the ledger holds it and what is left of it, and
// the dashboard's refund row says how to look at the job.
func dashboardRefundsLeadBackToTheJob(t *testing.T, ns string, from time.Time) {
	g := NewWithT(t)
	ctx := context.Background()
	jobs := map[string]paymentsv1alpha1.PaymentJob{}
	for _, name := range []string{"invoice-1", "invoice-3"} {
		var pj paymentsv1alpha1.PaymentJob
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pj)).To(Succeed())
		jobs[name] = pj
	}
	chargeOf := func(name string) string { return jobs[name].Status.ProviderResponse.ID }
	for name, amount := range map[string]int64{"invoice-3": 1200, "invoice-1": 100} {
		_, _, err := env.Sandbox().CreateRefund("dashboard-"+name, sandbox.RefundParams{PaymentIntent: chargeOf(name), Amount: amount})
		g.Expect(err).NotTo(HaveOccurred())
	}
	to := time.Now().Add(time.Second).Truncate(time.Second)
	r := kubectlPayments("reconcile", "--name", "books-dashboard", "--all-rows", "--report", "json", "--report-file", "-", "-o", "json",
		"--provider", ns+"/stripe", "--namespaces", ns, "--from", from.UTC().Format(time.RFC3339), "--to", to.UTC().Format(time.RFC3339))
	g.Expect(r.Code).To(Equal(cli.ExitDiscrepancies), r.Stderr)
	var findings []paymentsv1alpha1.ReconciliationFinding
	g.Expect(json.Unmarshal([]byte(r.Stdout), &findings)).To(Succeed())
	row := func(category, kind, key string) paymentsv1alpha1.ReconciliationFinding {
		for _, f := range findings {
			if f.Category == category && f.Kind == kind && f.Key == key {
				return f
			}
		}
		t.Fatalf("no %s %s row of %s in %+v", category, kind, key, findings)
		return paymentsv1alpha1.ReconciliationFinding{}
	}
	key := func(name string) string { return jobs[name].Status.IdempotencyKey }

	outside := row("RefundedOutsideOperator", "refund", key("invoice-3"))
	g.Expect(outside.Object).To(Equal(ns+"/invoice-3"), "the row leads to the job whose charge was refunded")
	g.Expect(outside.InLedger).To(BeTrue(), "the row's key is the charge's, which the ledger holds")
	g.Expect(outside.ChargeObject).To(Equal(ns+"/invoice-3"), "the row names the job whose charge was refunded")
	g.Expect(outside.ChargeInLedger).To(BeTrue(), "the ledger holds the charge's outcome")
	g.Expect(outside.ChargeObjectDeleted).To(BeFalse())
	g.Expect(outside.ChargeID).To(Equal(chargeOf("invoice-3")))
	g.Expect(outside.ChargeLeft).To(HaveValue(Equal(int64(3000-1200))), "what is left of the charge")
	g.Expect(outside.ProviderAmount).To(Equal(int64(1200)))
	g.Expect(outside.Action).To(ContainSubstring("kubectl payments status pj/invoice-3 -n " + ns + " --check-provider"))

	charge := row("Matched", "charge", key("invoice-3"))
	g.Expect([]any{charge.Object, charge.InLedger, charge.ChargeObject, charge.ChargeInLedger}).To(Equal([]any{ns + "/invoice-3", true, ns + "/invoice-3", true}))
	g.Expect(charge.ChargeLeft).To(HaveValue(Equal(int64(1800))))

	// invoice-1: 400 back through a PaymentRefund, 100 in the dashboard.
	g.Expect(row("RefundedOutsideOperator", "refund", key("invoice-1")).ChargeLeft).To(HaveValue(Equal(int64(1000 - 400 - 100))))
	g.Expect(row("Matched", "charge", key("invoice-1")).ChargeLeft).To(HaveValue(Equal(int64(500))))
	var back paymentsv1alpha1.PaymentRefund
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "invoice-1-return"}, &back)).To(Succeed())
	refund := row("Matched", "refund", back.Status.IdempotencyKey)
	g.Expect([]any{refund.Object, refund.InLedger, refund.ChargeObject, refund.ChargeInLedger}).To(Equal([]any{
		ns + "/invoice-1-return", true, ns + "/invoice-1", true}), "a refund row names its own PaymentRefund and its charge's job")
	g.Expect(refund.ChargeLeft).To(HaveValue(Equal(int64(500))), "the dashboard's refund counts on the PaymentRefund's row too")

	// The summary a person reads lists the discrepancies, each leading
	// back to its job with what is left of the charge.
	r = kubectlPayments("report", "books-dashboard")
	g.Expect(r.Code).To(Equal(cli.ExitDiscrepancies), r.Stderr)
	golden(t, "report-discrepancies.golden", r.Stdout)
	g.Expect(r.Stdout).To(MatchRegexp(`RefundedOutsideOperator\s+refund\s+%s/invoice-3\s+%s/invoice-3\s+%s\s+1800 usd`,
		ns, ns, chargeOf("invoice-3")))
}

// stderrJSON is the JSON object in s, which may follow progress lines.
func stderrJSON(s string) string {
	for i := range len(s) {
		if s[i] == '{' && (i == 0 || s[i-1] == '\n') {
			end := len(s)
			for j := len(s) - 1; j > i; j-- {
				if s[j] == '}' {
					end = j + 1
					break
				}
			}
			return s[i:end]
		}
	}
	return s
}
