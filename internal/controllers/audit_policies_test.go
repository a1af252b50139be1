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

// The audit of the admission policies of config/policy: which policies and
// bindings count as in place, checked with a fake API server; how missing
// ones are reported, in the gauge and the logs; and that the logs say a
// problem again only when it changes. The helpers they share with the other
// audit tests, and the note on the shared registry, are in audit_test.go.

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/audit"
)

// expectedPolicyNames are the base names of the policies of config/policy.
var (
	validatingPolicyNames = []string{"finished-label", "reconciliation-reader"}
	mutatingPolicyNames   = []string{"outcome-guard-at-create", "release-on-spec-change", "resolve-attribution"}
	expectedPolicyNames   = slices.Concat(validatingPolicyNames, mutatingPolicyNames)
)

// TestAuditReportsMissingAdmissionPolicies: the suite's API server has none
// of the policies of config/policy, as in a cluster where the operator was
// installed without them. Each is reported, in the gauge and the logs.
func TestAuditReportsMissingAdmissionPolicies(t *testing.T) {
	g := NewWithT(t)
	a := &audit.Auditor{Namespaces: []string{newNamespace(t, false)}, Interval: time.Hour}
	logs := startAudit(t, a)

	r := waitForAudit(t, a)
	g.Expect(r.PolicyError).NotTo(HaveOccurred())
	g.Expect(r.PoliciesMissing()).To(Equal(len(expectedPolicyNames)))
	g.Expect(slices.Collect(maps.Keys(r.PolicyProblems))).To(ConsistOf(expectedPolicyNames))
	g.Expect(gaugeValue(t, policiesMissingGauge)).To(Equal(float64(len(expectedPolicyNames))))

	lines := logs.withMessage(g, missingPolicyMessage)
	g.Expect(values(lines, "policy")).To(ConsistOf(toAny(expectedPolicyNames)...))
	for _, l := range lines {
		g.Expect(l["problem"]).To(ContainSubstring(audit.AdmissionPolicyLabel + "=" + l["policy"].(string)))
		g.Expect(l["consequence"]).NotTo(BeEmpty())
	}
	g.Expect(values(lines, "consequence")).To(ContainElement(ContainSubstring("never charged")))
	g.Expect(logs.withMessage(g, policiesOKMessage)).To(BeEmpty())
}

// policyObjects are the policies and bindings of config/policy as an
// installer with that name prefix leaves them.
func policyObjects(prefix string) []client.Object {
	labels := func(base string) map[string]string {
		return map[string]string{audit.AdmissionPolicyLabel: base}
	}
	objs := make([]client.Object, 0, 2*len(expectedPolicyNames))
	for _, base := range validatingPolicyNames {
		objs = append(objs,
			&admissionregistrationv1.ValidatingAdmissionPolicy{
				ObjectMeta: metav1.ObjectMeta{Name: prefix + base, Labels: labels(base)},
			},
			&admissionregistrationv1.ValidatingAdmissionPolicyBinding{
				ObjectMeta: metav1.ObjectMeta{Name: prefix + base, Labels: labels(base)},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
					PolicyName:        prefix + base,
					ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
				},
			},
		)
	}
	for _, base := range mutatingPolicyNames {
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
			problem: "no ValidatingAdmissionPolicy labelled " + audit.AdmissionPolicyLabel + "=finished-label",
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
			missing:   mutatingPolicyNames,
			problem:   "the API server does not serve admissionregistration.k8s.io/v1 MutatingAdmissionPolicy",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tt.objs...).WithInterceptorFuncs(tt.intercept).Build()
			a := &audit.Auditor{Reader: c, Recorder: events.NewFakeRecorder(10)}
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

// TestAttributionEnforced: the manager trusts the resolved-by annotation only
// while the resolve-attribution policy and its binding are in place; the
// other policies do not matter to it, and an unanswered check is an error.
func TestAttributionEnforced(t *testing.T) {
	tests := []struct {
		name      string
		objs      []client.Object
		intercept interceptor.Funcs
		want      bool
		wantErr   bool
	}{
		{name: "all policies enforced", objs: policyObjects(""), want: true},
		{name: "another policy missing", objs: without[*admissionregistrationv1.ValidatingAdmissionPolicyBinding](policyObjects(""), "finished-label"), want: true},
		{name: "its binding missing", objs: without[*admissionregistrationv1.MutatingAdmissionPolicyBinding](policyObjects(""), "resolve-attribution")},
		{name: "nothing installed"},
		{name: "mutating policies not served", objs: policyObjects(""), intercept: notServed},
		{name: "the policies cannot be listed", objs: policyObjects(""), intercept: interceptor.Funcs{
			List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
				return apierrors.NewForbidden(schema.GroupResource{Group: "admissionregistration.k8s.io"}, "", nil)
			},
		}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tt.objs...).WithInterceptorFuncs(tt.intercept).Build()
			a := &audit.Auditor{Reader: c, Recorder: events.NewFakeRecorder(10)}
			enforced, err := a.AttributionEnforced(context.Background())
			if tt.wantErr {
				g.Expect(err).To(HaveOccurred())
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
			g.Expect(enforced).To(Equal(tt.want))
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
	a := &audit.Auditor{Reader: c, Recorder: events.NewFakeRecorder(10)}
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
