//go:build e2e

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

package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/sandboxproc"
)

const (
	// reconcileTimeout bounds a reconciliation run: a window of a few
	// hundred payments takes a second or two; a run that did not finish is
	// tried again after 30 s, and one such retry fits.
	reconcileTimeout = 45 * time.Second
	// refusedAtBoth is the detail of a Failed job the provider refused too:
	// a Matched finding.
	refusedAtBoth = "refused at both"
)

// reconcileBooks is the scenario's last proof, its books (issue 26): a
// PaymentReconciliation of the scenario's account over its whole window
// balances, every Completed and every Failed job matched; then one charge
// made at the sandbox behind the operator's back, under a Completed job's
// key, is the one discrepancy of a second run, a Duplicate that names the
// job's key, its charge and the new one.
func (s *scenario) reconcileBooks(r result) {
	s.t.Helper()
	g := NewWithT(s.t)
	start := time.Now()
	from := s.started.Add(-time.Minute)
	finished := int64(r.completed + r.failed)

	clean := s.reconcile("clean", from, paymentsv1alpha1.ReportAll)
	g.Expect(clean.Status.Summary.Discrepancies).To(BeZero(), "discrepancies after %s: %s", s.name, s.describeRun(clean))
	g.Expect(clean.Status.Summary.Matched).To(Equal(finished), "matched == Completed + Failed jobs: %s", s.describeRun(clean))
	g.Expect(clean.Status.Summary.Categories).To(HaveKeyWithValue("Matched", finished))
	g.Expect(readyReasonOf(clean)).To(Equal("Balanced"))
	g.Expect(clean.Status.Listed).To(BeTrue(), "the sandbox lists its PaymentIntents")
	refused := 0
	for _, f := range s.reportOf(g, clean) {
		g.Expect(f.Category).To(Equal("Matched"), "%+v", f)
		if f.Detail == refusedAtBoth {
			refused++
			continue
		}
		j := r.live[f.Key]
		g.Expect(j.Status.ProviderResponse).NotTo(BeNil(), "%s is Matched with a charge: %s", f.Key, describe(&j))
		g.Expect(f.ProviderIDs).To(Equal([]string{j.Status.ProviderResponse.ID}), "%+v", f)
	}
	g.Expect(refused).To(Equal(r.failed), "Failed jobs are Matched %q", refusedAtBoth)
	cleanTook := time.Since(start)

	job, recordedID := s.firstCompleted(r)
	injected := s.chargeBehindOperatorsBack(job)
	dup := s.reconcile("duplicate", from, paymentsv1alpha1.ReportDiscrepancies)
	sum := dup.Status.Summary
	g.Expect(sum.Discrepancies).To(BeEquivalentTo(1), "one charge behind the operator's back: %s", s.describeRun(dup))
	g.Expect(sum.Categories).To(HaveKeyWithValue("Duplicate", int64(1)))
	g.Expect(sum.Matched).To(Equal(finished - 1))
	g.Expect(readyReasonOf(dup)).To(Equal("DiscrepanciesFound"))
	findings := s.reportOf(g, dup)
	g.Expect(findings).To(HaveLen(1))
	f := findings[0]
	g.Expect(f.Category).To(Equal("Duplicate"))
	g.Expect(f.Key).To(Equal(job.key()))
	g.Expect(f.Object).To(Equal(job.key()), "the finding names the PaymentJob")
	g.Expect(f.ClusterID).To(Equal(recordedID))
	g.Expect(f.ProviderIDs).To(ConsistOf(recordedID, injected))

	s.t.Logf("scenario %s: reconciliation %s balanced, %d matched (%d refused at both), report sha256 %s, in %.1fs; "+
		"after a charge behind the operator's back, %s found 1 discrepancy: %s %s %v, in %.1fs",
		s.name, clean.Name, clean.Status.Summary.Matched, refused, clean.Status.Report.SHA256, cleanTook.Seconds(),
		dup.Name, f.Category, f.Key, f.ProviderIDs, time.Since(start).Seconds()-cleanTook.Seconds())
}

// reconcile creates the PaymentReconciliation e2e-<scenario>-<suffix> of
// the scenario's provider from from to a second from now, and returns it
// once it is Completed. The run and its report are kept in the scenario's
// folder; both are deleted when the test ends (nothing collects garbage on
// the suite's control plane).
func (s *scenario) reconcile(suffix string, from time.Time, scope paymentsv1alpha1.ReportScope) *paymentsv1alpha1.PaymentReconciliation {
	s.t.Helper()
	ctx := context.Background()
	pr := &paymentsv1alpha1.PaymentReconciliation{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + s.name + "-" + suffix},
		Spec: paymentsv1alpha1.PaymentReconciliationSpec{
			ProviderRef: paymentsv1alpha1.ProviderObjectReference{Namespace: s.namespaces[0], Name: providerName},
			From:        &metav1.Time{Time: from},
			To:          &metav1.Time{Time: time.Now().Add(time.Second)},
			Report:      scope,
		},
	}
	g := NewWithT(s.t)
	g.Expect(s.cluster.k8s.Create(ctx, pr)).To(Succeed())
	s.t.Cleanup(func() {
		_ = s.cluster.k8s.DeleteAllOf(ctx, &paymentsv1alpha1.PaymentReconciliationReport{},
			client.MatchingLabels(paymentsv1alpha1.ReportPageLabels(pr)))
		_ = s.cluster.k8s.Delete(ctx, pr)
	})
	g.Eventually(func(g Gomega) paymentsv1alpha1.ReconciliationPhase {
		g.Expect(s.cluster.k8s.Get(ctx, client.ObjectKeyFromObject(pr), pr)).To(Succeed())
		return pr.Status.Phase
	}, reconcileTimeout, 200*time.Millisecond).Should(Equal(paymentsv1alpha1.ReconciliationCompleted),
		func() string { return s.describeRun(pr) })
	g.Expect(pr.Status.Summary).NotTo(BeNil())
	g.Expect(pr.Status.Report).NotTo(BeNil())
	if data, err := json.MarshalIndent(pr, "", "  "); err == nil {
		_ = os.WriteFile(filepath.Join(s.dir, pr.Name+".json"), data, 0o644)
	}
	return pr
}

// reportOf joins the report's pages, labelled with the run's name, in page
// order, as `kubectl get paymentreconciliationreports -l ... -o
// jsonpath='{range .items[*]}{.csv}{end}'` does; checks the CSV against
// the status (sha256, rows, pages, bytes) and the pages' JSON rows; keeps
// it in the scenario's folder and returns the findings.
func (s *scenario) reportOf(g Gomega, pr *paymentsv1alpha1.PaymentReconciliation) []paymentsv1alpha1.ReconciliationFinding {
	var pages paymentsv1alpha1.PaymentReconciliationReportList
	g.Expect(s.cluster.k8s.List(context.Background(), &pages,
		client.MatchingLabels(paymentsv1alpha1.ReportPageLabels(pr)))).To(Succeed())
	// The API server lists cluster-scoped objects by name: page order.
	var all bytes.Buffer
	var findings []paymentsv1alpha1.ReconciliationFinding
	for i, p := range pages.Items {
		g.Expect(p.Name).To(Equal(fmt.Sprintf("%s-%s-%05d", pr.Name, pr.Status.Report.Attempt, i)), "pages of the attempt the status names, in page order, none missing")
		g.Expect(p.Page).To(BeEquivalentTo(i))
		g.Expect(p.Findings).To(HaveLen(int(p.Rows)), "the JSON rows are the CSV rows")
		all.WriteString(p.CSV)
		findings = append(findings, p.Findings...)
	}
	_ = os.WriteFile(filepath.Join(s.dir, pr.Name+".csv"), all.Bytes(), 0o644)
	rep := pr.Status.Report
	sum := sha256.Sum256(all.Bytes())
	g.Expect(hex.EncodeToString(sum[:])).To(Equal(rep.SHA256), "the pages join into the report whose sha256 the status holds")
	g.Expect(pages.Items).To(HaveLen(int(rep.Pages)))
	g.Expect(int64(all.Len())).To(Equal(rep.Bytes))
	g.Expect(findings).To(HaveLen(int(rep.Rows)))
	rows, err := csv.NewReader(&all).ReadAll()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rows).To(HaveLen(len(findings)+1), "a header and a row per finding")
	for i, f := range findings {
		g.Expect(rows[i+1][:3]).To(Equal([]string{f.Category, f.Kind, f.Key}), "CSV row %d", i+1)
	}
	return findings
}

// describeRun is a run's phase, conditions, summary and first findings,
// for failure messages.
func (s *scenario) describeRun(pr *paymentsv1alpha1.PaymentReconciliation) string {
	st := pr.Status
	var b strings.Builder
	fmt.Fprintf(&b, "%s: phase %q", pr.Name, st.Phase)
	for _, c := range st.Conditions {
		fmt.Fprintf(&b, ", %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
	}
	if st.Summary != nil {
		fmt.Fprintf(&b, "; summary %+v", *st.Summary)
	}
	var pages paymentsv1alpha1.PaymentReconciliationReportList
	if err := s.cluster.k8s.List(context.Background(), &pages,
		client.MatchingLabels(paymentsv1alpha1.ReportPageLabels(pr))); err == nil {
		n := 0
		for _, p := range pages.Items {
			for _, f := range p.Findings {
				if f.Category != "Matched" && n < 10 {
					n++
					fmt.Fprintf(&b, "\n  %s %s %s (%s) cluster %s %d, provider %v %d: %s", f.Category, f.Kind, f.Key,
						f.Object, f.ClusterID, f.ClusterAmount, f.ProviderIDs, f.ProviderAmount, f.Detail)
				}
			}
		}
	}
	fmt.Fprintf(&b, "\n(the runs and reports are kept in %s)", s.dir)
	return b.String()
}

// readyReasonOf is the reason of the run's Ready condition.
func readyReasonOf(pr *paymentsv1alpha1.PaymentReconciliation) string {
	if c := meta.FindStatusCondition(pr.Status.Conditions, paymentsv1alpha1.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

// firstCompleted is the first planned job that is Completed, with the
// charge it recorded.
func (s *scenario) firstCompleted(r result) (plannedJob, string) {
	s.t.Helper()
	for _, p := range s.jobs {
		j, ok := r.live[p.key()]
		if ok && j.Status.Phase == paymentsv1alpha1.PhaseCompleted && j.Status.ProviderResponse != nil {
			return p, j.Status.ProviderResponse.ID
		}
	}
	s.t.Fatalf("scenario %s has no Completed job", s.name)
	return plannedJob{}, ""
}

// chargeBehindOperatorsBack charges the job's amount again at the sandbox,
// as a person would with Stripe's API, with the job's key in the metadata
// (copied from its status.idempotencyKey), and returns the new
// PaymentIntent's id. The request carries an Idempotency-Key of its own, as
// the dashboard's do: not the job's, so that it is a second charge, and the
// same on every try, so that a try whose answer a faulty sandbox lost
// (sandbox-faults) is replayed, not charged a third time.
func (s *scenario) chargeBehindOperatorsBack(job plannedJob) string {
	s.t.Helper()
	g := NewWithT(s.t)
	ctx := context.Background()
	before, err := s.sandbox.Stats(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	form := url.Values{
		"amount":         {strconv.FormatInt(job.amount, 10)},
		"currency":       {"usd"},
		"payment_method": {goodCard},
		"confirm":        {"true"},
		"description":    {"charged by hand, behind the operator's back"},
		"metadata[" + payment.MetadataKeyIdempotencyKey + "]": {job.key()},
	}
	byHand := "e2e-by-hand-" + s.name
	var intent struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	g.Eventually(func(g Gomega) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.sandbox.URL+"/v1/payment_intents",
			strings.NewReader(form.Encode()))
		g.Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Authorization", "Bearer "+sandboxproc.APIKey)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Idempotency-Key", byHand)
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "%s", body)
		g.Expect(json.Unmarshal(body, &intent)).To(Succeed())
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed(), "cannot charge the sandbox by hand")
	g.Expect(intent.Status).To(Equal("succeeded"))
	after, err := s.sandbox.Stats(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	// The sandbox counts charges by the request's Idempotency-Key.
	g.Expect(after.Charges).To(Equal(before.Charges+1), "one charge more")
	g.Expect(after.ChargesByKey[byHand]).To(Equal(1), "one charge under %s", byHand)
	s.t.Logf("scenario %s: charged %d at the sandbox behind the operator's back under %s's key: %s",
		s.name, job.amount, job.key(), intent.ID)
	return intent.ID
}
