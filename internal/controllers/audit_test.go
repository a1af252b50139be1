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

// The Auditor's tests: the finished-label jobs it reports, the
// dependencies it refuses to start without, and the helpers every audit test
// uses (startAudit, waitForAudit, logLines; gaugeValue is in
// scenario_test.go). The tests of the admission-policy audit are in
// audit_policies_test.go.

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/audit"
	"github.com/idempotency-dev/paymentjob-operator/pkg/operator"
)

// The audit's gauges live on the shared registry, and every auditor of the
// process sets them: the tests that read them are not parallel, so no other
// auditor runs meanwhile (parallel tests only run alongside each other).

const (
	policiesMissingGauge = "paymentjob_admission_policies_missing"
	withoutOutcomeGauge  = "paymentjob_finished_label_without_outcome"
	auditErrorsCounter   = "paymentjob_audit_errors_total"
	missingPolicyMessage = "Admission policy missing or not enforced"
	policiesOKMessage    = "Admission policies present and enforced"
)

// logLines captures what a logger writes, one JSON object per line.
type logLines struct{ lockedBuffer }

// context returns ctx with a logger that writes to l.
func (l *logLines) context(ctx context.Context) context.Context {
	return log.IntoContext(ctx, zap.New(zap.WriteTo(l), zap.UseDevMode(true), zap.JSONEncoder()))
}

// withMessage returns the lines logged with that message.
func (l *logLines) withMessage(g Gomega, msg string) []map[string]any {
	var lines []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(l.String()), "\n") {
		if line == "" {
			continue
		}
		var entry map[string]any
		g.Expect(json.Unmarshal([]byte(line), &entry)).To(Succeed(), "log line %q", line)
		if entry["msg"] == msg {
			lines = append(lines, entry)
		}
	}
	return lines
}

// values returns the values of key in lines.
func values(lines []map[string]any, key string) []any {
	out := make([]any, 0, len(lines))
	for _, l := range lines {
		out = append(out, l[key])
	}
	return out
}

// startAudit runs the auditor in a manager of its own against the suite's
// API server, with the manager's API reader and event recorder, as
// cmd/main.go does, and returns its logs.
func startAudit(t *testing.T, a *audit.Auditor) *logLines {
	t.Helper()
	g := NewWithT(t)
	logs := &logLines{}
	mgr, err := ctrl.NewManager(rest.CopyConfig(env.Config), ctrl.Options{
		// Runnables get their context, and so their logger, from here.
		BaseContext:            func() context.Context { return logs.context(context.Background()) },
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  operator.CacheOptions(a.Namespaces...),
	})
	g.Expect(err).NotTo(HaveOccurred())
	a.Reader = mgr.GetAPIReader()
	a.Recorder = mgr.GetEventRecorder("paymentjob-audit")
	g.Expect(a.SetupWithManager(mgr)).To(Succeed())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("audit manager stopped with an error: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return logs
}

// waitForAudit waits for the auditor's first audit and returns its report.
func waitForAudit(t *testing.T, a *audit.Auditor) audit.Report {
	t.Helper()
	var r audit.Report
	NewWithT(t).Eventually(func() time.Time {
		r = a.LastReport()
		return r.At
	}, timeout, 20*time.Millisecond).ShouldNot(BeZero(), "the audit never ran")
	return r
}

// TestAuditFinishedLabelWithoutOutcome: a PaymentJob created with the
// finished label (from an export of a finished job, say) is out of the
// operator's cache and would never be charged. The audit tells its owner
// how to bring it back; a finished job with the label is left alone.
func TestAuditFinishedLabelWithoutOutcome(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, false)
	finished := map[string]string{paymentsv1alpha1.LabelFinished: "true"}

	exported := &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: "exported", Namespace: ns, Labels: finished},
		Spec:       jobSpec(),
	}
	g.Expect(k8sClient.Create(ctx, exported)).To(Succeed())
	paid := &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: "paid", Namespace: ns, Labels: finished},
		Spec:       jobSpec(),
	}
	g.Expect(k8sClient.Create(ctx, paid)).To(Succeed())
	paid.Status.Phase = paymentsv1alpha1.PhaseCompleted
	g.Expect(k8sClient.Status().Update(ctx, paid)).To(Succeed())
	createJob(t, ns, "unlabelled")

	a := &audit.Auditor{Namespaces: []string{ns}, Interval: time.Hour}
	logs := startAudit(t, a)

	r := waitForAudit(t, a)
	g.Expect(r.JobError).NotTo(HaveOccurred())
	g.Expect(r.FinishedWithoutOutcome).To(Equal([]audit.Unfinished{{Kind: "PaymentJob", NamespacedName: types.NamespacedName{Namespace: ns, Name: "exported"}}}))
	g.Expect(gaugeValue(t, withoutOutcomeGauge)).To(Equal(1.0))

	var event eventsv1.Event
	g.Eventually(func(g Gomega) {
		found := slices.DeleteFunc(eventsAbout(g, ns, ""), func(e eventsv1.Event) bool {
			return e.Reason != audit.ReasonFinishedLabelWithoutOutcome
		})
		g.Expect(found).To(HaveLen(1))
		event = found[0]
	}, timeout, 50*time.Millisecond).Should(Succeed())
	g.Expect(event.Regarding.Name).To(Equal("exported"))
	g.Expect(event.Regarding.UID).To(Equal(exported.UID))
	g.Expect(event.Type).To(Equal("Warning"))
	g.Expect(event.Note).To(And(
		ContainSubstring("will not be charged"),
		ContainSubstring("kubectl label pj exported -n "+ns+" "+paymentsv1alpha1.LabelFinished+"-"),
	))
	g.Expect(eventReasons(g, ns, "paid")).To(BeEmpty())

	lines := logs.withMessage(g, "Payment job has the finished label but no outcome; it is never charged")
	g.Expect(values(lines, "job")).To(ConsistOf(HaveKeyWithValue("name", "exported")))
}

// TestAuditFinishedLabelOnARefund: a PaymentRefund created with the finished
// label is out of the operator's cache like a job, and would never be
// refunded; the audit finds it beside a job and tells how to bring it back.
func TestAuditFinishedLabelOnARefund(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, false)
	finished := map[string]string{paymentsv1alpha1.LabelFinished: "true"}
	refundOf := func(name string) *paymentsv1alpha1.PaymentRefund {
		return &paymentsv1alpha1.PaymentRefund{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: finished},
			Spec: paymentsv1alpha1.PaymentRefundSpec{
				ProviderRef:   paymentsv1alpha1.ProviderReference{Name: providerName},
				PaymentJobRef: paymentsv1alpha1.PaymentJobReference{Name: "invoice"},
			},
		}
	}
	exported := refundOf("exported-refund")
	g.Expect(k8sClient.Create(ctx, exported)).To(Succeed())
	done := refundOf("refunded")
	g.Expect(k8sClient.Create(ctx, done)).To(Succeed())
	done.Status.Phase = paymentsv1alpha1.PhaseCompleted
	g.Expect(k8sClient.Status().Update(ctx, done)).To(Succeed())
	g.Expect(k8sClient.Create(ctx, &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: "exported-job", Namespace: ns, Labels: finished},
		Spec:       jobSpec(),
	})).To(Succeed())

	a := &audit.Auditor{Namespaces: []string{ns}, Interval: time.Hour}
	logs := startAudit(t, a)

	r := waitForAudit(t, a)
	g.Expect(r.JobError).NotTo(HaveOccurred())
	g.Expect(r.FinishedWithoutOutcome).To(Equal([]audit.Unfinished{
		{Kind: "PaymentJob", NamespacedName: types.NamespacedName{Namespace: ns, Name: "exported-job"}},
		{Kind: "PaymentRefund", NamespacedName: types.NamespacedName{Namespace: ns, Name: "exported-refund"}},
	}))
	g.Expect(gaugeValue(t, withoutOutcomeGauge)).To(Equal(2.0), "the gauge counts jobs and refunds")

	var event eventsv1.Event
	g.Eventually(func(g Gomega) {
		found := slices.DeleteFunc(eventsAbout(g, ns, "exported-refund"), func(e eventsv1.Event) bool {
			return e.Reason != audit.ReasonFinishedLabelWithoutOutcome
		})
		g.Expect(found).To(HaveLen(1))
		event = found[0]
	}, timeout, 50*time.Millisecond).Should(Succeed())
	g.Expect(event.Regarding.Kind).To(Equal("PaymentRefund"))
	g.Expect(event.Regarding.UID).To(Equal(exported.UID))
	g.Expect(event.Type).To(Equal("Warning"))
	g.Expect(event.Note).To(And(
		ContainSubstring("will not be refunded"),
		ContainSubstring("kubectl label prefund exported-refund -n "+ns+" "+paymentsv1alpha1.LabelFinished+"-"),
	))
	g.Expect(eventReasons(g, ns, "refunded")).To(BeEmpty())

	lines := logs.withMessage(g, "Payment refund has the finished label but no outcome; it is never refunded")
	g.Expect(values(lines, "refund")).To(ConsistOf(HaveKeyWithValue("name", "exported-refund")))
}

// TestAuditAnnouncesEachJobOnce: a job with the finished label and no
// outcome gets one event per process, however many audits find it; a job
// created again under the same name is another job.
func TestAuditAnnouncesEachJobOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	job := func(uid types.UID, phase paymentsv1alpha1.PaymentJobPhase) *paymentsv1alpha1.PaymentJob {
		return &paymentsv1alpha1.PaymentJob{
			ObjectMeta: metav1.ObjectMeta{
				Name: "exported", Namespace: "billing", UID: uid,
				Labels: map[string]string{paymentsv1alpha1.LabelFinished: "true"},
			},
			Spec:   jobSpec(),
			Status: paymentsv1alpha1.PaymentJobStatus{PaymentStatus: paymentsv1alpha1.PaymentStatus{Phase: phase}},
		}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(job("first", "")).Build()
	recorder := events.NewFakeRecorder(10)
	a := &audit.Auditor{Reader: c, Recorder: recorder, Namespaces: []string{"billing"}}
	logs := &logLines{}
	ctx = logs.context(ctx)

	a.Audit(ctx)
	a.Audit(ctx)
	g.Expect(recorder.Events).To(HaveLen(1))
	g.Expect(<-recorder.Events).To(And(
		HavePrefix("Warning "+audit.ReasonFinishedLabelWithoutOutcome),
		ContainSubstring("kubectl label pj exported -n billing "+paymentsv1alpha1.LabelFinished+"-"),
	))
	g.Expect(gaugeValue(t, withoutOutcomeGauge)).To(Equal(1.0))

	g.Expect(c.Delete(ctx, job("first", ""))).To(Succeed())
	r := a.Audit(ctx)
	g.Expect(r.FinishedWithoutOutcome).To(BeEmpty())
	g.Expect(gaugeValue(t, withoutOutcomeGauge)).To(BeZero())

	g.Expect(c.Create(ctx, job("second", paymentsv1alpha1.PhaseProcessing))).To(Succeed())
	a.Audit(ctx)
	g.Expect(recorder.Events).To(HaveLen(1), "the job created again is announced")
	g.Expect(<-recorder.Events).To(ContainSubstring("it is Processing"))
	g.Expect(logs.withMessage(g, "Payment job has the finished label but no outcome; it is never charged")).To(HaveLen(2))
}

// TestAuditNeedsAReaderAndARecorder: like the reconcilers, the audit
// refuses to start without its dependencies.
func TestAuditNeedsAReaderAndARecorder(t *testing.T) {
	g := NewWithT(t)
	reader := fake.NewClientBuilder().WithScheme(scheme).Build()
	for _, a := range []*audit.Auditor{
		{Recorder: events.NewFakeRecorder(1)},
		{Reader: reader},
		{Reader: reader, Recorder: events.NewFakeRecorder(1), Interval: -time.Second},
	} {
		g.Expect(a.Start(context.Background())).To(MatchError(ContainSubstring("audit")))
	}
	g.Expect((&audit.Auditor{}).NeedLeaderElection()).To(BeFalse(), "a read-only audit runs on every replica")
}
