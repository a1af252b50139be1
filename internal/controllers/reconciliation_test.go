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

package controllers_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// reconcileWindow creates a PaymentReconciliation of the scenario's
// provider from from to a second from now, and waits for it to finish.
func (s *scenario) reconcileWindow(from time.Time, mutate ...func(*paymentsv1alpha1.PaymentReconciliationSpec)) *paymentsv1alpha1.PaymentReconciliation {
	s.t.Helper()
	pr := &paymentsv1alpha1.PaymentReconciliation{
		ObjectMeta: metav1.ObjectMeta{Name: "recon-" + rand.String(8)},
		Spec: paymentsv1alpha1.PaymentReconciliationSpec{
			ProviderRef: paymentsv1alpha1.ProviderObjectReference{Namespace: s.ns, Name: providerName},
			From:        &metav1.Time{Time: from},
			To:          &metav1.Time{Time: time.Now().Add(time.Second)},
		},
	}
	for _, m := range mutate {
		m(&pr.Spec)
	}
	s.Expect(k8sClient.Create(context.Background(), pr)).To(Succeed())
	s.t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), pr) })
	s.Eventually(func(g Gomega) paymentsv1alpha1.ReconciliationPhase {
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(pr), pr)).To(Succeed())
		return pr.Status.Phase
	}, timeout).Should(Equal(paymentsv1alpha1.ReconciliationCompleted))
	return pr
}

// reportOf joins the report pages of pr in page order, checks them against
// the status (sha256, rows, pages) and returns the CSV's rows, the header
// first.
func reportOf(g Gomega, pr *paymentsv1alpha1.PaymentReconciliation) [][]string {
	var pages paymentsv1alpha1.PaymentReconciliationReportList
	g.Expect(k8sClient.List(context.Background(), &pages,
		client.MatchingLabels(paymentsv1alpha1.ReportPageLabels(pr)))).To(Succeed())
	slices.SortFunc(pages.Items, func(a, b paymentsv1alpha1.PaymentReconciliationReport) int { return int(a.Page - b.Page) })
	var all bytes.Buffer
	rows := 0
	for i, p := range pages.Items {
		g.Expect(p.Page).To(Equal(int32(i)), "pages numbered from 0, none missing")
		g.Expect(p.Findings).To(HaveLen(int(p.Rows)), "the JSON rows are the CSV rows")
		all.WriteString(p.CSV)
		rows += int(p.Rows)
	}
	g.Expect(pr.Status.Report).NotTo(BeNil())
	sum := sha256.Sum256(all.Bytes())
	g.Expect(hex.EncodeToString(sum[:])).To(Equal(pr.Status.Report.SHA256), "the status holds the sha256 of the pages joined")
	g.Expect(pr.Status.Report.Pages).To(Equal(int32(len(pages.Items))))
	g.Expect(pr.Status.Report.Rows).To(Equal(int64(rows)))
	records, err := csv.NewReader(&all).ReadAll()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(records).To(HaveLen(rows + 1))
	return records
}

// seedHistory records n clean payments at both sides, as a history that
// the jobs' TTL took out of the cluster: charges at the sandbox, created
// over the last minute, and their entries in the manager's ledger, recorded
// 100 ms after them, of the account the operator charges (as probe's
// status records it).
func (s *scenario) seedHistory(n int, probe *paymentsv1alpha1.PaymentJob) {
	s.t.Helper()
	start := time.Now().Add(-50 * time.Second)
	errs := make(chan error, n)
	for i := range n {
		key := payment.SentKey(s.ns, fmt.Sprintf("history-%04d", i))
		in := s.engine.PutIntent(sandbox.Intent{Amount: 100 + int64(i), Currency: "usd", Created: start.Add(time.Duration(i) * 40 * time.Millisecond),
			Metadata: map[string]string{payment.MetadataKeyIdempotencyKey: key}})
		e := ledger.Entry{Key: key, Fingerprint: "sha256:history", Provider: *probe.Status.Provider, Charge: in.ID,
			Amount: in.Amount, Currency: "usd", Outcome: paymentsv1alpha1.LedgerCompleted, At: in.Created.Add(100 * time.Millisecond)}
		go func() { errs <- s.manager.ledger.Record(context.Background(), e) }()
	}
	for range n {
		s.Expect(<-errs).To(Succeed())
	}
}

// One discrepancy of each kind, made at the sandbox behind the operator's
// back, among payments and refunds the operator made and 1,000 clean
// payments of its history: the run lists each discrepancy exactly once, in
// its category, and moves no money.
func TestReconciliationFindsEachDiscrepancyOnce(t *testing.T) {
	s := newScenario(t, overHTTP())
	from := time.Now().Add(-time.Minute)
	const jobs = 12
	for i := range jobs {
		s.create(fmt.Sprintf("pay-%d", i))
	}
	paid := map[string]*paymentsv1alpha1.PaymentJob{}
	for i := range jobs {
		name := fmt.Sprintf("pay-%d", i)
		paid[name] = s.waitForPhase(name, paymentsv1alpha1.PhaseCompleted)
	}
	s.createRefund("back", "pay-0", 800)
	s.createRefund("gone", "pay-1", 500)
	s.waitForRefund("back", paymentsv1alpha1.PhaseCompleted, "Succeeded")
	gone := s.waitForRefund("gone", paymentsv1alpha1.PhaseCompleted, "Succeeded")
	const history = 1000
	s.seedHistory(history, paid["pay-0"])

	id := func(name string) string { return paid[name].Status.ProviderResponse.ID }
	key := func(name string) string { return paid[name].Status.IdempotencyKey }
	// A refund that failed days after it succeeded.
	_, err := s.engine.FailRefund(gone.Status.ProviderResponse.ID, sandbox.RefundFailureLostOrStolenCard)
	s.Expect(err).NotTo(HaveOccurred())
	// A charge removed from the provider's books.
	s.Expect(s.engine.DeleteIntent(id("pay-2"))).To(Succeed())
	// An amount changed at the provider.
	changed, ok := s.engine.GetPaymentIntent(id("pay-3"))
	s.Expect(ok).To(BeTrue())
	changed.Amount++
	s.engine.PutIntent(changed)
	// A second charge under a job's key: a double charge.
	double := s.engine.PutIntent(sandbox.Intent{Amount: 2000, Currency: "usd",
		Metadata: map[string]string{payment.MetadataKeyIdempotencyKey: key("pay-4")}})
	// A dispute, and a cancel.
	_, err = s.engine.OpenDispute(id("pay-5"), "fraudulent")
	s.Expect(err).NotTo(HaveOccurred())
	s.Expect(s.engine.SetIntentStatus(id("pay-6"), sandbox.StatusCanceled)).To(Succeed())
	// A refund made in the dashboard, without our metadata.
	_, _, err = s.engine.CreateRefund("dashboard-"+rand.String(6), sandbox.RefundParams{PaymentIntent: id("pay-7"), Amount: 300})
	s.Expect(err).NotTo(HaveOccurred())
	// A charge made behind the operator's back with one of our keys, and
	// one made by another system without any: only the first is ours.
	ghostKey := payment.SentKey(s.ns, "ghost")
	ghost := s.engine.PutIntent(sandbox.Intent{Amount: 4200, Currency: "usd",
		Metadata: map[string]string{payment.MetadataKeyIdempotencyKey: ghostKey}})
	other := s.engine.PutIntent(sandbox.Intent{Amount: 999, Currency: "usd"})
	before := s.engine.Stats()

	pr := s.reconcileWindow(from)

	after := s.engine.Stats()
	s.Expect(after.Charges).To(Equal(before.Charges), "a reconciliation never charges")
	s.Expect(after.Refunds).To(Equal(before.Refunds), "nor refunds")
	s.Expect(after.Requests).To(Equal(before.Requests))
	s.Expect(after.RefundRequests).To(Equal(before.RefundRequests))
	s.Expect(pr.Status.Listed).To(BeTrue(), "Stripe lists")
	s.Expect(pr.Status.Summary.Categories).To(Equal(map[string]int64{
		"Matched": 8 + history, "MissingAtProvider": 1, "UnknownToCluster": 1, "Duplicate": 1, "AmountMismatch": 1,
		"CurrencyMismatch": 0, "RefundedOutsideOperator": 1, "Disputed": 1, "CanceledOutsideOperator": 1,
		"RefundFailedAfterSuccess": 1, "RefundOfForeignCharge": 0,
	}))
	s.Expect(pr.Status.Summary.Discrepancies).To(Equal(int64(8)))
	ready := meta.FindStatusCondition(pr.Status.Conditions, paymentsv1alpha1.ConditionReady)
	s.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
	s.Expect(ready.Reason).To(Equal("DiscrepanciesFound"))
	s.Expect(meta.IsStatusConditionFalse(pr.Status.Conditions, paymentsv1alpha1.ConditionReconciling)).To(BeTrue())
	s.Expect(pr.Status.CompleteUpTo).NotTo(BeNil())

	rows := reportOf(s, pr)
	if os.Getenv("PRINT_REPORT") != "" {
		w := csv.NewWriter(os.Stdout)
		_ = w.WriteAll(rows)
		fmt.Printf("%+v\n", pr.Status)
	}
	s.Expect(rows[0][:3]).To(Equal([]string{"category", "kind", "key"}))
	byCategory := map[string][]string{}
	for _, row := range rows[1:] {
		byCategory[row[0]] = append(byCategory[row[0]], row[2]+" "+row[8])
	}
	s.Expect(byCategory).To(HaveLen(8), "Discrepancies only: no Matched rows")
	s.Expect(byCategory["MissingAtProvider"]).To(ConsistOf(key("pay-2") + " "))
	s.Expect(byCategory["AmountMismatch"]).To(ConsistOf(key("pay-3") + " " + id("pay-3")))
	s.Expect(byCategory["Duplicate"]).To(ConsistOf(HavePrefix(key("pay-4"))))
	s.Expect(byCategory["Duplicate"][0]).To(ContainSubstring(double.ID))
	s.Expect(byCategory["Disputed"]).To(ConsistOf(HavePrefix(key("pay-5"))))
	s.Expect(byCategory["CanceledOutsideOperator"]).To(ConsistOf(HavePrefix(key("pay-6"))))
	s.Expect(byCategory["RefundedOutsideOperator"]).To(ConsistOf(HavePrefix(key("pay-7"))))
	s.Expect(byCategory["UnknownToCluster"]).To(ConsistOf(ghostKey + " " + ghost.ID))
	s.Expect(byCategory["RefundFailedAfterSuccess"]).To(ConsistOf(HavePrefix(gone.Status.IdempotencyKey)))
	for _, row := range rows[1:] {
		s.Expect(row[8]).NotTo(ContainSubstring(other.ID), "a charge without our key is another system's")
		s.Expect(row[12]).NotTo(BeEmpty(), "every discrepancy says what to do")
	}
	// Every row leads back to its payment: the job of its charge, whether
	// the ledger holds it, and what is left of the charge.
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	rowOf := func(category string) map[string]string {
		for _, row := range rows[1:] {
			if row[0] == category {
				named := map[string]string{}
				for name, i := range col {
					named[name] = row[i]
				}
				return named
			}
		}
		s.Fail("no " + category + " row")
		return nil
	}
	left := func(name string, refunded int64) string { return fmt.Sprint(paid[name].Spec.Amount - refunded) }
	s.Expect(rowOf("RefundedOutsideOperator")).To(And(HaveKeyWithValue("object", s.ns+"/pay-7"), HaveKeyWithValue("in_ledger", "true"),
		HaveKeyWithValue("charge_object", s.ns+"/pay-7"), HaveKeyWithValue("charge_in_ledger", "true"),
		HaveKeyWithValue("charge_id", id("pay-7")), HaveKeyWithValue("charge_left", left("pay-7", 300)),
		HaveKeyWithValue("action", ContainSubstring("kubectl payments status pj/pay-7 -n "+s.ns+" --check-provider"))))
	s.Expect(rowOf("MissingAtProvider")).To(And(HaveKeyWithValue("object", s.ns+"/pay-2"), HaveKeyWithValue("in_ledger", "true"),
		HaveKeyWithValue("charge_object", s.ns+"/pay-2"), HaveKeyWithValue("charge_left", "")))
	s.Expect(rowOf("RefundFailedAfterSuccess")).To(And(HaveKeyWithValue("object", s.ns+"/gone"), HaveKeyWithValue("in_ledger", "true"),
		HaveKeyWithValue("charge_object", s.ns+"/pay-1"), HaveKeyWithValue("charge_in_ledger", "true"),
		HaveKeyWithValue("charge_left", left("pay-1", 0))), "a refund that failed gave nothing back")
	for _, category := range []string{"Duplicate", "AmountMismatch", "Disputed", "CanceledOutsideOperator"} {
		s.Expect(rowOf(category)).To(And(HaveKeyWithValue("object", HavePrefix(s.ns+"/pay-")), HaveKeyWithValue("in_ledger", "true"),
			HaveKeyWithValue("charge_in_ledger", "true"), HaveKeyWithValue("object_deleted", "false")), category)
	}

	s.Eventually(func(g Gomega) []string { return eventReasons(g, "default", pr.Name) }, timeout).
		Should(ContainElement("DiscrepanciesFound"))
	dup, _ := metricValue(t, "paymentjob_reconciliation_findings", map[string]string{"provider": s.ns + "/" + providerName, "category": "Duplicate"})
	s.Expect(dup).To(Equal(1.0))
}

// The books of payments and refunds the operator made balance: zero
// discrepancies, through the list (Stripe over HTTP) and through the
// lookup of the cluster's keys (a provider without a list), which the
// status says.
func TestReconciliationOfCleanBooksIsBalanced(t *testing.T) {
	contract := func(list bool) func(string) paymentsv1alpha1.PaymentProviderSpec {
		return func(base string) paymentsv1alpha1.PaymentProviderSpec {
			spec := &paymentsv1alpha1.HTTPProvider{URL: base + "/http/charges", LookupURL: base + "/http/charges/lookup",
				RefundURL: base + "/http/refunds"}
			if list {
				spec.ListURL = base + "/http/list"
			}
			return paymentsv1alpha1.PaymentProviderSpec{HTTP: spec}
		}
	}
	for _, tc := range []struct {
		name   string
		opts   []scenarioOption
		spec   func(base string) paymentsv1alpha1.PaymentProviderSpec
		listed bool
	}{
		{"stripe, listed", []scenarioOption{overHTTP()}, nil, true},
		{"a provider without a list, looked up", nil, nil, false},
		{"the HTTP contract with listURL", []scenarioOption{overHTTP(), withoutManager()}, contract(true), true},
		{"the HTTP contract without listURL, looked up", []scenarioOption{overHTTP(), withoutManager()}, contract(false), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScenario(t, tc.opts...)
			if tc.spec != nil {
				updateProvider(s, s.ns, func(pp *paymentsv1alpha1.PaymentProvider) { pp.Spec = tc.spec(s.url) })
				s.manager = s.start(managerConfig{})
			}
			from := time.Now().Add(-time.Minute)
			for i := range 6 {
				s.create(fmt.Sprintf("pay-%d", i))
			}
			for i := range 6 {
				s.waitForPhase(fmt.Sprintf("pay-%d", i), paymentsv1alpha1.PhaseCompleted)
			}
			s.createRefund("back", "pay-0", 800)
			s.waitForRefund("back", paymentsv1alpha1.PhaseCompleted, "Succeeded")

			pr := s.reconcileWindow(from, func(spec *paymentsv1alpha1.PaymentReconciliationSpec) {
				spec.Report = paymentsv1alpha1.ReportAll
			})
			s.Expect(pr.Status.Listed).To(Equal(tc.listed))
			s.Expect(pr.Status.Summary.Discrepancies).To(BeZero(), "%v\n%v", pr.Status.Summary.Categories, reportOf(s, pr))
			s.Expect(pr.Status.Summary.Matched).To(Equal(int64(7)), "6 charges and a refund")
			s.Expect(meta.FindStatusCondition(pr.Status.Conditions, paymentsv1alpha1.ConditionReady).Reason).To(Equal("Balanced"))
			rows := reportOf(s, pr)
			s.Expect(rows).To(HaveLen(8), "report: All lists the matched rows")
			s.Eventually(func(g Gomega) []string { return eventReasons(g, "default", pr.Name) }, timeout).
				Should(ContainElement("Balanced"))
			if tc.listed && tc.spec == nil {
				// The one command of docs/reconciliation.md, through kubectl.
				selector := paymentsv1alpha1.LabelReconciliation + "=" + pr.Name + "," +
					paymentsv1alpha1.LabelReconciliationAttempt + "=" + pr.Status.Report.Attempt
				out, err := kubectlCommand(t, "get", "paymentreconciliationreports",
					"-l", selector, "-o", "jsonpath={range .items[*]}{.csv}{end}").Output()
				s.Expect(err).NotTo(HaveOccurred())
				sum := sha256.Sum256(out)
				s.Expect(hex.EncodeToString(sum[:])).To(Equal(pr.Status.Report.SHA256), "sha256sum of what kubectl prints")
			}
			if !tc.listed {
				s.Expect(meta.FindStatusCondition(pr.Status.Conditions, paymentsv1alpha1.ConditionReady).Message).
					To(ContainSubstring("only the cluster's keys were looked up"))
			}
		})
	}
}

// kubectlCommand is the self-built kubectl with a kubeconfig of the envtest
// API server, as a user runs it.
func kubectlCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	home := t.TempDir()
	cmd := exec.CommandContext(t.Context(), kubectl, append(args,
		"--kubeconfig", writeKubeconfig(t), "--cache-dir", filepath.Join(home, "cache"))...)
	cmd.Env = append(os.Environ(), "HOME="+home, "KUBECONFIG=")
	return cmd
}

// A run waits for its window to end, and for its provider; one whose
// provider does not exist is Stalled, as kstatus reads it, until it does.
func TestReconciliationWaitsForItsWindowAndItsProvider(t *testing.T) {
	s := newScenario(t)
	create := func(spec paymentsv1alpha1.PaymentReconciliationSpec) *paymentsv1alpha1.PaymentReconciliation {
		pr := &paymentsv1alpha1.PaymentReconciliation{ObjectMeta: metav1.ObjectMeta{Name: "recon-" + rand.String(8)}, Spec: spec}
		s.Expect(k8sClient.Create(context.Background(), pr)).To(Succeed())
		s.t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), pr) })
		return pr
	}
	conditionOf := func(pr *paymentsv1alpha1.PaymentReconciliation, kind string) func(Gomega) *metav1.Condition {
		return func(g Gomega) *metav1.Condition {
			g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(pr), pr)).To(Succeed())
			return meta.FindStatusCondition(pr.Status.Conditions, kind)
		}
	}
	now := time.Now()
	later := create(paymentsv1alpha1.PaymentReconciliationSpec{
		ProviderRef: paymentsv1alpha1.ProviderObjectReference{Namespace: s.ns, Name: providerName},
		From:        &metav1.Time{Time: now.Add(-time.Hour)}, To: &metav1.Time{Time: now.Add(time.Hour)},
	})
	s.Eventually(conditionOf(later, paymentsv1alpha1.ConditionReconciling), timeout).Should(And(
		HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "WaitingForWindow")))
	s.Expect(later.Status.Phase).To(Equal(paymentsv1alpha1.ReconciliationPending))
	s.Expect(meta.IsStatusConditionFalse(later.Status.Conditions, paymentsv1alpha1.ConditionReady)).To(BeTrue())

	orphan := create(paymentsv1alpha1.PaymentReconciliationSpec{
		ProviderRef: paymentsv1alpha1.ProviderObjectReference{Namespace: s.ns, Name: "no-such-provider"},
		From:        &metav1.Time{Time: now.Add(-time.Hour)}, To: &metav1.Time{Time: now.Add(-time.Minute)},
	})
	s.Eventually(conditionOf(orphan, paymentsv1alpha1.ConditionStalled), timeout).Should(And(
		HaveField("Status", metav1.ConditionTrue), HaveField("Reason", paymentsv1alpha1.ReasonProviderNotFound),
		HaveField("Message", ContainSubstring("no-such-provider"))))
	s.Expect(meta.IsStatusConditionFalse(orphan.Status.Conditions, paymentsv1alpha1.ConditionReconciling)).To(BeTrue())
}

// A provider that can neither list nor look keys up shows nothing: every
// payment the cluster recorded is reported missing there, never matched
// by default.
func TestReconciliationOfAProviderThatCannotBeRead(t *testing.T) {
	s := newScenario(t, withoutLookups())
	from := time.Now().Add(-time.Minute)
	s.run("pay-0", paymentsv1alpha1.PhaseCompleted)
	// Such providers are told apart by their endpoint only, which every
	// test's sandbox shares: the run is limited to this test's namespace.
	pr := s.reconcileWindow(from, func(spec *paymentsv1alpha1.PaymentReconciliationSpec) { spec.Namespaces = []string{s.ns} })
	s.Expect(pr.Status.Listed).To(BeFalse())
	s.Expect(pr.Status.Summary.Categories).To(HaveKeyWithValue("MissingAtProvider", int64(1)))
	s.Expect(pr.Status.Summary.Matched).To(BeZero())
}
