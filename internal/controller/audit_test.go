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

package controller_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controller"
)

// The audit's gauges live on the shared registry, and every auditor of the
// process sets them: the tests that read them are not parallel, so no other
// auditor runs meanwhile (parallel tests only run alongside each other).

// expectedPolicyNames are the base names of the policies of config/policy.
var expectedPolicyNames = []string{"finished-label", "outcome-guard-at-create", "release-on-spec-change", "resolve-attribution"}

const (
	policiesMissingGauge = "paymentjob_admission_policies_missing"
	withoutOutcomeGauge  = "paymentjob_finished_label_without_outcome"
	auditErrorsCounter   = "paymentjob_audit_errors_total"
	missingPolicyMessage = "Admission policy missing or not enforced"
	policiesOKMessage    = "Admission policies present and enforced"
)

// gaugeValue reads a gauge of the manager's shared registry.
func gaugeValue(t *testing.T, name string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() == name {
			NewWithT(t).Expect(f.GetMetric()).To(HaveLen(1), "%s has labels", name)
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("%s is not registered", name)
	return 0
}

// logLines captures what a logger writes, one JSON object per line.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// context returns ctx with a logger that writes to l.
func (l *logLines) context(ctx context.Context) context.Context {
	return log.IntoContext(ctx, zap.New(zap.WriteTo(l), zap.UseDevMode(true), zap.JSONEncoder()))
}

// withMessage returns the lines logged with that message.
func (l *logLines) withMessage(g Gomega, msg string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lines []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(l.buf.String()), "\n") {
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
	var out []any
	for _, l := range lines {
		out = append(out, l[key])
	}
	return out
}

// startAudit runs the auditor in a manager of its own against the suite's
// API server, with the manager's API reader and event recorder, as
// cmd/main.go does, and returns its logs.
func startAudit(t *testing.T, a *controller.Auditor) *logLines {
	t.Helper()
	g := NewWithT(t)
	logs := &logLines{}
	mgr, err := ctrl.NewManager(rest.CopyConfig(env.Config), ctrl.Options{
		// Runnables get their context, and so their logger, from here.
		BaseContext:            func() context.Context { return logs.context(context.Background()) },
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  controller.CacheOptions(a.Namespaces...),
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
func waitForAudit(t *testing.T, a *controller.Auditor) controller.AuditReport {
	t.Helper()
	var r controller.AuditReport
	NewWithT(t).Eventually(func() time.Time {
		r = a.LastReport()
		return r.At
	}, timeout, 20*time.Millisecond).ShouldNot(BeZero(), "the audit never ran")
	return r
}

// TestAuditReportsMissingAdmissionPolicies: the suite's API server has none
// of the policies of config/policy, as in a cluster where the operator was
// installed without them. Each is reported, in the gauge and the logs.
func TestAuditReportsMissingAdmissionPolicies(t *testing.T) {
	g := NewWithT(t)
	a := &controller.Auditor{Namespaces: []string{newNamespace(t, false)}, Interval: time.Hour}
	logs := startAudit(t, a)

	r := waitForAudit(t, a)
	g.Expect(r.PolicyError).NotTo(HaveOccurred())
	g.Expect(r.PoliciesMissing()).To(Equal(len(expectedPolicyNames)))
	g.Expect(slices.Collect(maps.Keys(r.PolicyProblems))).To(ConsistOf(expectedPolicyNames))
	g.Expect(gaugeValue(t, policiesMissingGauge)).To(Equal(float64(len(expectedPolicyNames))))

	lines := logs.withMessage(g, missingPolicyMessage)
	g.Expect(values(lines, "policy")).To(ConsistOf(expectedPolicyNames[0], expectedPolicyNames[1], expectedPolicyNames[2], expectedPolicyNames[3]))
	for _, l := range lines {
		g.Expect(l["problem"]).To(ContainSubstring(controller.AdmissionPolicyLabel + "=" + l["policy"].(string)))
		g.Expect(l["consequence"]).NotTo(BeEmpty())
	}
	g.Expect(values(lines, "consequence")).To(ContainElement(ContainSubstring("never charged")))
	g.Expect(logs.withMessage(g, policiesOKMessage)).To(BeEmpty())
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

	a := &controller.Auditor{Namespaces: []string{ns}, Interval: time.Hour}
	logs := startAudit(t, a)

	r := waitForAudit(t, a)
	g.Expect(r.JobError).NotTo(HaveOccurred())
	g.Expect(r.FinishedWithoutOutcome).To(Equal([]types.NamespacedName{{Namespace: ns, Name: "exported"}}))
	g.Expect(gaugeValue(t, withoutOutcomeGauge)).To(Equal(1.0))

	var event eventsv1.Event
	g.Eventually(func(g Gomega) {
		var list eventsv1.EventList
		g.Expect(k8sClient.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var found []eventsv1.Event
		for _, e := range list.Items {
			if e.Reason == controller.ReasonFinishedLabelWithoutOutcome {
				found = append(found, e)
			}
		}
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

// policyObjects are the policies and bindings of config/policy as an
// installer with that name prefix leaves them.
func policyObjects(prefix string) []client.Object {
	labels := func(base string) map[string]string {
		return map[string]string{controller.AdmissionPolicyLabel: base}
	}
	objs := []client.Object{
		&admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: prefix + "finished-label", Labels: labels("finished-label")},
		},
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: prefix + "finished-label", Labels: labels("finished-label")},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        prefix + "finished-label",
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			},
		},
	}
	for _, base := range expectedPolicyNames[1:] {
		objs = append(objs,
			&admissionregistrationv1.MutatingAdmissionPolicy{
				ObjectMeta: metav1.ObjectMeta{Name: prefix + base, Labels: labels(base)},
			},
			&admissionregistrationv1.MutatingAdmissionPolicyBinding{
				ObjectMeta: metav1.ObjectMeta{Name: prefix + base, Labels: labels(base)},
				Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: prefix + base},
			},
		)
	}
	return objs
}

// change finds the object of that kind and name in objs and changes it.
func change[T client.Object](objs []client.Object, name string, f func(T)) []client.Object {
	for _, o := range objs {
		if t, ok := o.(T); ok && o.GetName() == name {
			f(t)
			return objs
		}
	}
	panic("no object " + name)
}

// without leaves out the object of that kind and name.
func without[T client.Object](objs []client.Object, name string) []client.Object {
	return slices.DeleteFunc(objs, func(o client.Object) bool {
		_, ok := o.(T)
		return ok && o.GetName() == name
	})
}

// notServed answers lists of the mutating policies as an API server that
// does not serve them does.
var notServed = interceptor.Funcs{
	List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		switch list.(type) {
		case *admissionregistrationv1.MutatingAdmissionPolicyList, *admissionregistrationv1.MutatingAdmissionPolicyBindingList:
			return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}}
		}
		return c.List(ctx, list, opts...)
	},
}

// TestAuditAdmissionPolicies checks what counts as a policy in place, with
// a fake API server.
func TestAuditAdmissionPolicies(t *testing.T) {
	const prefix = "paymentjob-operator-"
	tests := []struct {
		name      string
		objs      []client.Object
		intercept interceptor.Funcs
		// missing are the policies reported, by base name.
		missing []string
		// problem is part of the problem reported for missing[0].
		problem string
	}{
		{name: "all present and enforced", objs: policyObjects("")},
		{name: "prefixed names with their bindings", objs: policyObjects(prefix)},
		{
			name:    "nothing installed",
			missing: expectedPolicyNames,
			problem: "no ValidatingAdmissionPolicy labelled " + controller.AdmissionPolicyLabel + "=finished-label",
		},
		{
			name:    "binding missing",
			objs:    without[*admissionregistrationv1.MutatingAdmissionPolicyBinding](policyObjects(""), "resolve-attribution"),
			missing: []string{"resolve-attribution"},
			problem: "has no MutatingAdmissionPolicyBinding",
		},
		{
			name: "validating binding only warns",
			objs: change(policyObjects(""), "finished-label", func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
				b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn, admissionregistrationv1.Audit}
			}),
			missing: []string{"finished-label"},
			problem: "no ValidatingAdmissionPolicyBinding of finished-label has validationActions Deny",
		},
		{
			name: "the prefix did not reach the binding",
			objs: change(policyObjects(prefix), prefix+"finished-label", func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
				b.Spec.PolicyName = "finished-label"
			}),
			missing: []string{"finished-label"},
			problem: "none has spec.policyName " + prefix + "finished-label",
		},
		{
			name: "a binding without the label counts",
			objs: change(policyObjects(""), "finished-label", func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
				b.Labels = nil
			}),
		},
		{
			name: "a policy without the label is not found",
			objs: change(policyObjects(""), "release-on-spec-change", func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
				p.Labels = nil
			}),
			missing: []string{"release-on-spec-change"},
			problem: "no MutatingAdmissionPolicy labelled",
		},
		{
			name: "type-checking warnings",
			objs: change(policyObjects(""), "finished-label", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
				p.Status.TypeChecking = &admissionregistrationv1.TypeChecking{ExpressionWarnings: []admissionregistrationv1.ExpressionWarning{{
					FieldRef: "spec.validations[0].expression", Warning: "no such key: phase",
				}}}
			}),
			missing: []string{"finished-label"},
			problem: "spec.validations[0].expression: no such key: phase",
		},
		{
			name: "a type checking without warnings",
			objs: change(policyObjects(""), "finished-label", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
				p.Status.TypeChecking = &admissionregistrationv1.TypeChecking{}
			}),
		},
		{
			name:      "mutating policies not served",
			objs:      policyObjects(""),
			intercept: notServed,
			missing:   expectedPolicyNames[1:],
			problem:   "the API server does not serve admissionregistration.k8s.io/v1 MutatingAdmissionPolicy",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tt.objs...).WithInterceptorFuncs(tt.intercept).Build()
			a := &controller.Auditor{Reader: c, Recorder: events.NewFakeRecorder(10)}
			logs := &logLines{}

			r := a.Audit(logs.context(context.Background()))
			g.Expect(r.PolicyError).NotTo(HaveOccurred())
			g.Expect(slices.Collect(maps.Keys(r.PolicyProblems))).To(ConsistOf(tt.missing))
			g.Expect(gaugeValue(t, policiesMissingGauge)).To(Equal(float64(len(tt.missing))))
			g.Expect(a.LastReport().PoliciesMissing()).To(Equal(len(tt.missing)))

			lines := logs.withMessage(g, missingPolicyMessage)
			g.Expect(values(lines, "policy")).To(ConsistOf(toAny(tt.missing)...))
			if len(tt.missing) == 0 {
				g.Expect(logs.withMessage(g, policiesOKMessage)).To(HaveLen(1))
				return
			}
			g.Expect(logs.withMessage(g, policiesOKMessage)).To(BeEmpty())
			g.Expect(r.PolicyProblems[tt.missing[0]]).To(ContainElement(ContainSubstring(tt.problem)))
		})
	}
}

func toAny(s []string) []any {
	out := make([]any, 0, len(s))
	for _, v := range s {
		out = append(out, v)
	}
	return out
}

// TestAuditLogsPolicyProblemsWhenTheyChange: the logs say what is wrong at
// start and when it changes, not at every audit; an audit that cannot list
// the policies says so and leaves the gauge at what was last known.
func TestAuditLogsPolicyProblemsWhenTheyChange(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	objs := without[*admissionregistrationv1.MutatingAdmissionPolicyBinding](policyObjects(""), "outcome-guard-at-create")
	var forbidden bool
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*admissionregistrationv1.ValidatingAdmissionPolicyList); ok && forbidden {
				return apierrors.NewForbidden(schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"}, "", nil)
			}
			return c.List(ctx, list, opts...)
		},
	}).Build()
	a := &controller.Auditor{Reader: c, Recorder: events.NewFakeRecorder(10)}
	logs := &logLines{}
	ctx = logs.context(ctx)

	a.Audit(ctx)
	a.Audit(ctx)
	g.Expect(values(logs.withMessage(g, missingPolicyMessage), "policy")).To(Equal([]any{"outcome-guard-at-create"}),
		"the same problem is logged once")
	g.Expect(gaugeValue(t, policiesMissingGauge)).To(Equal(1.0))

	forbidden = true
	errorsBefore := counterValue(t, auditErrorsCounter)
	r := a.Audit(ctx)
	g.Expect(apierrors.IsForbidden(r.PolicyError)).To(BeTrue(), "got %v", r.PolicyError)
	g.Expect(r.PolicyProblems).To(BeNil())
	g.Expect(gaugeValue(t, policiesMissingGauge)).To(Equal(1.0), "an audit that cannot list keeps the last value")
	g.Expect(counterValue(t, auditErrorsCounter)).To(Equal(errorsBefore + 1))
	g.Expect(logs.withMessage(g, "Cannot audit the admission policies; paymentjob_admission_policies_missing keeps its last value")).To(HaveLen(1))

	forbidden = false
	g.Expect(c.Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "by-hand"},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "outcome-guard-at-create"},
	})).To(Succeed())
	a.Audit(ctx)
	a.Audit(ctx)
	g.Expect(gaugeValue(t, policiesMissingGauge)).To(BeZero())
	g.Expect(logs.withMessage(g, policiesOKMessage)).To(HaveLen(1))
	g.Expect(logs.withMessage(g, missingPolicyMessage)).To(HaveLen(1))
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
			Status: paymentsv1alpha1.PaymentJobStatus{Phase: phase},
		}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(job("first", "")).Build()
	recorder := events.NewFakeRecorder(10)
	a := &controller.Auditor{Reader: c, Recorder: recorder, Namespaces: []string{"billing"}}
	logs := &logLines{}
	ctx = logs.context(ctx)

	a.Audit(ctx)
	a.Audit(ctx)
	g.Expect(recorder.Events).To(HaveLen(1))
	g.Expect(<-recorder.Events).To(And(
		HavePrefix("Warning "+controller.ReasonFinishedLabelWithoutOutcome),
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
	for _, a := range []*controller.Auditor{
		{Recorder: events.NewFakeRecorder(1)},
		{Reader: reader},
		{Reader: reader, Recorder: events.NewFakeRecorder(1), Interval: -time.Second},
	} {
		g.Expect(a.Start(context.Background())).To(MatchError(ContainSubstring("audit")))
	}
	g.Expect((&controller.Auditor{}).NeedLeaderElection()).To(BeFalse(), "a read-only audit runs on every replica")
}
