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

package audit

// The admission policy check of the audit: which policies of config/policy
// it expects, and what it counts as missing or not enforced.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// expectedPolicy is an admission policy of config/policy and what a cluster
// loses without it.
type expectedPolicy struct {
	// name is the base name, the value of AdmissionPolicyLabel.
	name string
	// validating is true for a ValidatingAdmissionPolicy, false for a
	// MutatingAdmissionPolicy.
	validating bool
	// consequence says what goes wrong without the policy.
	consequence string
}

// expectedPolicies are the policies of config/policy, in the order they are
// reported.
var expectedPolicies = []expectedPolicy{
	{
		name: "finished-label", validating: true,
		consequence: "a PaymentJob created with the finished label is never charged and only the periodic audit reports it",
	},
	{
		name:        "outcome-guard-at-create",
		consequence: "the operator adds the finalizer itself, one more API write per job; no payment is at risk",
	},
	{
		name: "release-on-spec-change",
		consequence: "a spec change or a resolve annotation on a finished PaymentJob is never answered: " +
			"observedGeneration does not move and a resolution is not refused",
	},
	{
		name: resolveAttributionPolicy,
		consequence: "resolutions are recorded as unattributed: without the policy, whoever may annotate a job " +
			"may write any name in the resolved-by annotation, so the operator never trusts it",
	},
	{
		name: "reconciliation-reader", validating: true,
		consequence: "whoever may create a PaymentReconciliation reads, through its report, the payments of namespaces " +
			"and the books of providers they may not read themselves",
	},
}

// policyKind is what the audit found of one kind of admission policy and
// its bindings.
type policyKind struct {
	// policy and binding are the kinds, for the messages.
	policy, binding string
	// served is false when the API server does not serve the kind.
	served bool
	// policies holds the labelled policies by base name.
	policies map[string][]foundPolicy
	// bindings holds the bindings by the name of the policy they bind.
	bindings map[string][]foundBinding
}

// foundPolicy is a policy the audit found.
type foundPolicy struct {
	name string
	// warnings are the type-checking warnings in its status.
	warnings []string
}

// foundBinding is a binding the audit found.
type foundBinding struct {
	name string
	// enforces is false for a validating binding without Deny.
	enforces bool
	// actions are a validating binding's validationActions.
	actions []admissionregistrationv1.ValidationAction
}

// AttributionEnforced checks now, with an uncached read, whether the
// resolve-attribution policy is in place and enforced: only then does the
// resolved-by annotation name the user the API server authenticated.
func (a *Auditor) AttributionEnforced(ctx context.Context) (bool, error) {
	problems, err := a.auditPolicies(ctx)
	if err != nil {
		return false, err
	}
	_, missing := problems[resolveAttributionPolicy]
	return !missing, nil
}

// resolveAttributionPolicy is the base name of the policy that sets the
// resolved-by annotation.
const resolveAttributionPolicy = "resolve-attribution"

// auditPolicies returns the problems of each expected policy that is
// missing or not enforced, by base name.
func (a *Auditor) auditPolicies(ctx context.Context) (map[string][]string, error) {
	validating, err := a.validatingPolicies(ctx)
	if err != nil {
		return nil, err
	}
	mutating, err := a.mutatingPolicies(ctx)
	if err != nil {
		return nil, err
	}
	problems := map[string][]string{}
	for _, want := range expectedPolicies {
		kind := mutating
		if want.validating {
			kind = validating
		}
		if ps := kind.problems(want.name); len(ps) > 0 {
			problems[want.name] = ps
		}
	}
	return problems, nil
}

// problems says what is wrong with the policy of that base name: nothing
// when at least one labelled policy of that name is bound and enforced,
// otherwise the problems of the one closest to it.
func (k policyKind) problems(base string) []string {
	if !k.served {
		return []string{fmt.Sprintf("the API server does not serve admissionregistration.k8s.io/v1 %s", k.policy)}
	}
	candidates := k.policies[base]
	if len(candidates) == 0 {
		return []string{fmt.Sprintf("no %s labelled %s=%s (install config/policy, or apply it again if it was installed without the label)",
			k.policy, AdmissionPolicyLabel, base)}
	}
	var closest []string
	for i, p := range candidates {
		ps := k.policyProblems(p)
		if len(ps) == 0 {
			return nil
		}
		if i == 0 || len(ps) < len(closest) {
			closest = ps
		}
	}
	return closest
}

// policyProblems says what keeps one policy from being enforced.
func (k policyKind) policyProblems(p foundPolicy) []string {
	var problems []string
	bindings := k.bindings[p.name]
	switch {
	case len(bindings) == 0:
		problems = append(problems, fmt.Sprintf("%s %s has no %s (none has spec.policyName %s)", k.policy, p.name, k.binding, p.name))
	case !slices.ContainsFunc(bindings, func(b foundBinding) bool { return b.enforces }):
		found := make([]string, 0, len(bindings))
		for _, b := range bindings {
			found = append(found, fmt.Sprintf("%s %v", b.name, b.actions))
		}
		problems = append(problems, fmt.Sprintf("no %s of %s has validationActions Deny (%s)", k.binding, p.name, strings.Join(found, ", ")))
	}
	if len(p.warnings) > 0 {
		problems = append(problems, payment.CleanMessage(fmt.Sprintf("%s %s has type-checking warnings: %s", k.policy, p.name, strings.Join(p.warnings, "; ")), engine.MaxMessageLength))
	}
	return problems
}

// newPolicyKind is an empty policyKind of the policy kind and its binding
// kind (the kind and "Binding"), served until a List says otherwise.
func newPolicyKind(policy string) policyKind {
	return policyKind{policy: policy, binding: policy + "Binding", served: true,
		policies: map[string][]foundPolicy{}, bindings: map[string][]foundBinding{}}
}

// validatingPolicies lists the labelled ValidatingAdmissionPolicies and
// every ValidatingAdmissionPolicyBinding: a binding counts by the policy it
// names, whether or not it carries the label.
func (a *Auditor) validatingPolicies(ctx context.Context) (policyKind, error) {
	k := newPolicyKind("ValidatingAdmissionPolicy")
	err := listPages(ctx, a.Reader, func(list *admissionregistrationv1.ValidatingAdmissionPolicyList) {
		for _, p := range list.Items {
			f := foundPolicy{name: p.Name}
			if tc := p.Status.TypeChecking; tc != nil {
				for _, w := range tc.ExpressionWarnings {
					f.warnings = append(f.warnings, w.FieldRef+": "+w.Warning)
				}
			}
			base := p.Labels[AdmissionPolicyLabel]
			k.policies[base] = append(k.policies[base], f)
		}
	}, client.HasLabels{AdmissionPolicyLabel})
	if err == nil {
		err = listPages(ctx, a.Reader, func(list *admissionregistrationv1.ValidatingAdmissionPolicyBindingList) {
			for _, b := range list.Items {
				k.bindings[b.Spec.PolicyName] = append(k.bindings[b.Spec.PolicyName], foundBinding{
					name: b.Name, actions: b.Spec.ValidationActions,
					enforces: slices.Contains(b.Spec.ValidationActions, admissionregistrationv1.Deny),
				})
			}
		})
	}
	return k, kindError(&k, err)
}

// mutatingPolicies lists the labelled MutatingAdmissionPolicies and every
// MutatingAdmissionPolicyBinding.
func (a *Auditor) mutatingPolicies(ctx context.Context) (policyKind, error) {
	k := newPolicyKind("MutatingAdmissionPolicy")
	err := listPages(ctx, a.Reader, func(list *admissionregistrationv1.MutatingAdmissionPolicyList) {
		for _, p := range list.Items {
			base := p.Labels[AdmissionPolicyLabel]
			k.policies[base] = append(k.policies[base], foundPolicy{name: p.Name})
		}
	}, client.HasLabels{AdmissionPolicyLabel})
	if err == nil {
		err = listPages(ctx, a.Reader, func(list *admissionregistrationv1.MutatingAdmissionPolicyBindingList) {
			for _, b := range list.Items {
				k.bindings[b.Spec.PolicyName] = append(k.bindings[b.Spec.PolicyName], foundBinding{name: b.Name, enforces: true})
			}
		})
	}
	return k, kindError(&k, err)
}

// kindError marks k not served when the API server does not serve its
// resources, which is a finding rather than an error; other errors are
// returned wrapped.
func kindError(k *policyKind, err error) error {
	switch {
	case err == nil:
		return nil
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		k.served = false
		k.policies, k.bindings = nil, nil
		return nil
	default:
		return fmt.Errorf("cannot list %ss and their bindings: %w", k.policy, err)
	}
}
