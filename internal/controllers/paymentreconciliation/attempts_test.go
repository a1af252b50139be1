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
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/books"
)

// checkReport is the check of `kubectl payments report NAME`: the pages
// the status names, joined in page order, are as many as it says and have
// its sha256.
func checkReport(g Gomega, c client.Reader, pr *paymentsv1alpha1.PaymentReconciliation) {
	var pages paymentsv1alpha1.PaymentReconciliationReportList
	g.Expect(c.List(context.Background(), &pages, client.MatchingLabels(paymentsv1alpha1.ReportPageLabels(pr)))).To(Succeed())
	slices.SortFunc(pages.Items, func(a, b paymentsv1alpha1.PaymentReconciliationReport) int { return int(a.Page - b.Page) })
	sum := sha256.New()
	for _, p := range pages.Items {
		sum.Write([]byte(p.CSV))
	}
	g.Expect(pr.Status.Report).NotTo(BeNil())
	g.Expect(hex.EncodeToString(sum.Sum(nil))).To(Equal(pr.Status.Report.SHA256), "the report's pages are not the report its status names")
	g.Expect(pages.Items).To(HaveLen(int(pr.Status.Report.Pages)))
}

// Two managers without leader election run the same reconciliation, each
// from the object as it read it; the one that finishes second (its report
// differs: the provider's books moved between the two reads) loses the
// status write. The Completed report passes its own check, and the
// loser's pages are no part of it.
func TestTwoAttemptsOfARunLeaveAReportThatPassesItsCheck(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(paymentsv1alpha1.AddToScheme(scheme)).To(Succeed())
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	pr := &paymentsv1alpha1.PaymentReconciliation{ObjectMeta: metav1.ObjectMeta{Name: "books", UID: "uid-books"}}
	pr.Status.Phase = paymentsv1alpha1.ReconciliationRunning
	pr.Status.StartedAt = &metav1.Time{Time: now}
	pr.Status.Window = &paymentsv1alpha1.ReconciliationWindow{From: metav1.NewTime(now.Add(-time.Hour)), To: metav1.NewTime(now)}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(pr).WithStatusSubresource(pr).Build()
	reconciler := func() *Reconciler {
		return &Reconciler{Client: c, Reader: c, Recorder: events.NewFakeRecorder(10), Clock: clock.RealClock{}}
	}
	resultOf := func(rows int) result {
		res := result{counts: map[books.Category]int{books.Duplicate: rows}, charges: int64(rows)}
		for i := range rows {
			res.report.Findings = append(res.report.Findings, books.Finding{Category: books.Duplicate, Kind: books.Charge,
				Key: fmt.Sprintf("shop/order-%04d", i), Detail: "two charges", Action: "check"})
		}
		return res
	}
	read := func() *paymentsv1alpha1.PaymentReconciliation {
		got := &paymentsv1alpha1.PaymentReconciliation{}
		g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(pr), got)).To(Succeed())
		return got
	}
	first, second := read(), read()

	// The first attempt completes the run; the second, which read the run
	// before, finishes later with another report (more pages).
	g.Expect(reconciler().complete(context.Background(), first, resultOf(1))).To(Succeed())
	g.Expect(reconciler().complete(context.Background(), second, resultOf(maxPageRows+1))).NotTo(Succeed(), "the second attempt's status write is refused")

	done := read()
	g.Expect(done.Status.Phase).To(Equal(paymentsv1alpha1.ReconciliationCompleted))
	g.Expect(done.Status.Report.Rows).To(Equal(int64(1)), "the first attempt's report")
	checkReport(g, c, done)
	var all paymentsv1alpha1.PaymentReconciliationReportList
	g.Expect(c.List(context.Background(), &all, client.MatchingLabels{paymentsv1alpha1.LabelReconciliation: pr.Name})).To(Succeed())
	g.Expect(all.Items).To(HaveLen(1), "the losing attempt deleted its pages")

	// An attempt cut short after its pages (a manager killed before its
	// status write) leaves pages that the report does not count.
	_, err := writeReport(context.Background(), c, second, newAttempt(), resultOf(3).report)
	g.Expect(err).NotTo(HaveOccurred())
	checkReport(g, c, read())
}
