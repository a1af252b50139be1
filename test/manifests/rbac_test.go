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

package manifests_test

// Least-privilege RBAC: the manager's ClusterRole and bindings, leader
// election, metrics auth, the user-facing admin, editor and viewer roles,
// and the helpers that read what rules grant, RBAC wildcards included.

import (
	"slices"
	"strings"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
)

// userRoles are the user-facing ClusterRoles, by what they may do.
var userRoles = map[string][]string{
	"admin":  {namePrefix + "paymentjob-admin-role", namePrefix + "paymentprovider-admin-role"},
	"editor": {namePrefix + "paymentjob-editor-role", namePrefix + "paymentprovider-editor-role"},
	"viewer": {namePrefix + "paymentjob-viewer-role", namePrefix + "paymentprovider-viewer-role"},
}

var (
	writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}
	readVerbs  = []string{"get", "list", "watch"}
)

// rbacCases check the shipped roles and bindings; they are part of baseCases.
func rbacCases() []testCase {
	return slices.Concat(managerRBACCases(), userRoleCases(), rbacSafetyCases())
}

// managerRBACCases check what the manager is granted: its ClusterRole,
// leader election, and the metrics endpoint's authentication and readers.
func managerRBACCases() []testCase {
	return []testCase{
		{"manager ClusterRole has the verbs the operator needs", func(g Gomega, m *manifest) {
			rules := m.clusterRoleRules(g, managerRoleName)
			for _, need := range []struct {
				group, resource string
				verbs           []string
			}{
				{group, "paymentjobs", []string{"get", "list", "watch", "update", "patch"}},
				{group, "paymentjobs/status", []string{"update", "patch"}},
				{group, "paymentjobs/finalizers", []string{"update"}},
				{group, "paymentproviders", []string{"get", "list", "watch", "update", "patch"}},
				{group, "paymentproviders/status", []string{"update", "patch"}},
				{group, "paymentproviders/finalizers", []string{"update"}},
				{group, "paymentledgers", []string{"get", "list", "watch", "create", "update", "delete"}},
				{"", "secrets", []string{"list", "watch"}},
				{"", "events", []string{"create", "patch"}},
				{"events.k8s.io", "events", []string{"create", "patch"}},
				{"admissionregistration.k8s.io", "validatingadmissionpolicies", []string{"get", "list"}},
				{"admissionregistration.k8s.io", "validatingadmissionpolicybindings", []string{"get", "list"}},
				{"admissionregistration.k8s.io", "mutatingadmissionpolicies", []string{"get", "list"}},
				{"admissionregistration.k8s.io", "mutatingadmissionpolicybindings", []string{"get", "list"}},
			} {
				for _, verb := range need.verbs {
					g.Expect(grants(rules, need.group, need.resource, verb)).To(BeTrue(),
						"%s: ClusterRole %s is missing %s on %s (group %q); run `make manifests`",
						m.source, managerRoleName, verb, need.resource, need.group)
				}
			}
		}},
		{"manager ClusterRole is bound to the manager ServiceAccount", func(g Gomega, m *manifest) {
			m.expectBinding(g, "ClusterRoleBinding", managerRoleBindingName, "ClusterRole", managerRoleName)
		}},
		{"leader election Role", func(g Gomega, m *manifest) {
			var r rbacv1.Role
			m.typed(g, "Role", leaderRoleName, &r)
			for _, verb := range []string{"get", "create", "update"} {
				g.Expect(grants(r.Rules, "coordination.k8s.io", "leases", verb)).To(BeTrue(),
					"%s: Role %s is missing %s on coordination.k8s.io leases", m.source, leaderRoleName, verb)
			}
			for _, verb := range []string{"create", "patch"} {
				g.Expect(grants(r.Rules, "", "events", verb)).To(BeTrue(),
					"%s: Role %s is missing %s on events", m.source, leaderRoleName, verb)
			}
			g.Expect(m.find("ClusterRole", leaderRoleName)).To(BeNil(),
				"%s: leader election must be a namespaced Role, not a ClusterRole", m.source)
			m.expectBinding(g, "RoleBinding", leaderRoleBindingName, "Role", leaderRoleName)
		}},
		{"metrics auth ClusterRole and binding", func(g Gomega, m *manifest) {
			rules := m.clusterRoleRules(g, metricsAuthRoleName)
			g.Expect(grants(rules, "authentication.k8s.io", "tokenreviews", "create")).To(BeTrue(),
				"%s: ClusterRole %s is missing create on authentication.k8s.io tokenreviews", m.source, metricsAuthRoleName)
			g.Expect(grants(rules, "authorization.k8s.io", "subjectaccessreviews", "create")).To(BeTrue(),
				"%s: ClusterRole %s is missing create on authorization.k8s.io subjectaccessreviews", m.source, metricsAuthRoleName)
			for _, r := range rules {
				g.Expect(r.Verbs).To(ConsistOf("create"), "%s: ClusterRole %s grants more than create: %v", m.source, metricsAuthRoleName, r)
				g.Expect(r.Resources).To(SatisfyAll(Not(BeEmpty()), HaveEach(BeElementOf("tokenreviews", "subjectaccessreviews"))),
					"%s: ClusterRole %s grants more than tokenreviews and subjectaccessreviews: %v", m.source, metricsAuthRoleName, r)
			}
			m.expectBinding(g, "ClusterRoleBinding", metricsAuthRoleBinding, "ClusterRole", metricsAuthRoleName)
		}},
		{"metrics-reader ClusterRole", func(g Gomega, m *manifest) {
			rules := m.clusterRoleRules(g, metricsReaderRoleName)
			g.Expect(rules).To(HaveLen(1), "%s: ClusterRole %s must have exactly one rule", m.source, metricsReaderRoleName)
			g.Expect(rules[0].NonResourceURLs).To(ConsistOf("/metrics"),
				"%s: ClusterRole %s must grant the /metrics URL only", m.source, metricsReaderRoleName)
			g.Expect(rules[0].Verbs).To(ConsistOf("get"), "%s: ClusterRole %s must grant get only", m.source, metricsReaderRoleName)
			g.Expect(rules[0].Resources).To(BeEmpty(), "%s: ClusterRole %s must not grant resources", m.source, metricsReaderRoleName)
		}},
	}
}

// userRoleCases check the user-facing admin, editor and viewer roles.
func userRoleCases() []testCase {
	return []testCase{
		{"user-facing admin, editor and viewer ClusterRoles exist", func(g Gomega, m *manifest) {
			for kind, names := range userRoles {
				for _, name := range names {
					g.Expect(m.find("ClusterRole", name)).NotTo(BeNil(), "%s: the %s ClusterRole %s is missing", m.source, kind, name)
				}
			}
		}},
		{"user-facing roles do not include paymentjobs/status or paymentproviders/status", func(g Gomega, m *manifest) {
			for _, names := range userRoles {
				for _, name := range names {
					rules := m.clusterRoleRules(g, name)
					for _, res := range []string{"paymentjobs/status", "paymentproviders/status"} {
						for _, verb := range append([]string{"get", "list", "watch"}, writeVerbs...) {
							g.Expect(grants(rules, group, res, verb)).To(BeFalse(),
								"%s: ClusterRole %s grants %s on %s; status is the operator's record (users read it through the resource itself)",
								m.source, name, verb, res)
						}
					}
				}
			}
		}},
		{"editor roles manage their resource but not its status", func(g Gomega, m *manifest) {
			for i, res := range []string{"paymentjobs", "paymentproviders"} {
				name := userRoles["editor"][i]
				rules := m.clusterRoleRules(g, name)
				for _, verb := range append([]string{"create", "update", "patch", "delete"}, readVerbs...) {
					g.Expect(grants(rules, group, res, verb)).To(BeTrue(), "%s: ClusterRole %s is missing %s on %s", m.source, name, verb, res)
				}
				for _, verb := range writeVerbs {
					g.Expect(grants(rules, group, res+"/status", verb)).To(BeFalse(),
						"%s: ClusterRole %s grants %s on %s/status", m.source, name, verb, res)
				}
			}
		}},
		{"viewer roles are read-only", func(g Gomega, m *manifest) {
			for i, res := range []string{"paymentjobs", "paymentproviders"} {
				name := userRoles["viewer"][i]
				rules := m.clusterRoleRules(g, name)
				for _, verb := range readVerbs {
					g.Expect(grants(rules, group, res, verb)).To(BeTrue(), "%s: ClusterRole %s is missing %s on %s", m.source, name, verb, res)
				}
				for _, r := range rules {
					g.Expect(r.Verbs).To(HaveEach(BeElementOf(readVerbs)), "%s: ClusterRole %s grants more than reads: %v", m.source, name, r)
				}
			}
		}},
		{"roles that create payments are not aggregated into the built-in edit or admin roles", func(g Gomega, m *manifest) {
			for _, u := range m.byKind("ClusterRole") {
				labels := u.GetLabels()
				if labels[aggregateToEditLabel] != "true" && labels[aggregateToAdminLabel] != "true" {
					continue
				}
				var cr rbacv1.ClusterRole
				m.convert(g, u, &cr)
				for _, res := range []string{"paymentjobs", "paymentproviders"} {
					for _, verb := range writeVerbs {
						g.Expect(grants(cr.Rules, group, res, verb)).To(BeFalse(),
							"%s: ClusterRole %s grants %s on %s and is aggregated into a built-in role; bind it explicitly instead",
							m.source, cr.Name, verb, res)
					}
				}
			}
		}},
	}
}

// rbacSafetyCases hold for every role and binding of the output.
func rbacSafetyCases() []testCase {
	return []testCase{
		{"no role grants * on *", func(g Gomega, m *manifest) {
			for name, rules := range m.allRoleRules(g) {
				for _, r := range rules {
					wildVerb := slices.Contains(r.Verbs, rbacv1.VerbAll)
					g.Expect(wildVerb && (slices.Contains(r.Resources, rbacv1.ResourceAll) ||
						slices.Contains(r.NonResourceURLs, rbacv1.NonResourceAll))).To(BeFalse(),
						"%s: %s grants * on *: %v", m.source, name, r)
				}
			}
		}},
		{"every binding refers to a role in the output", func(g Gomega, m *manifest) {
			for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
				for _, u := range m.byKind(kind) {
					var b rbacv1.RoleBinding
					m.convert(g, u, &b)
					g.Expect(m.find(b.RoleRef.Kind, b.RoleRef.Name)).NotTo(BeNil(),
						"%s: %s %s refers to %s %s, which is not in the output", m.source, kind, b.Name, b.RoleRef.Kind, b.RoleRef.Name)
				}
			}
		}},
	}
}

func (m *manifest) clusterRoleRules(g Gomega, name string) []rbacv1.PolicyRule {
	var cr rbacv1.ClusterRole
	m.typed(g, "ClusterRole", name, &cr)
	return cr.Rules
}

// allRoleRules maps "Kind name" to the rules of every Role and ClusterRole.
func (m *manifest) allRoleRules(g Gomega) map[string][]rbacv1.PolicyRule {
	out := map[string][]rbacv1.PolicyRule{}
	for _, kind := range []string{"Role", "ClusterRole"} {
		for _, u := range m.byKind(kind) {
			var r rbacv1.ClusterRole // Role has the same rules
			m.convert(g, u, &r)
			out[kind+" "+r.Name] = r.Rules
		}
	}
	return out
}

// expectBinding checks that the named binding grants roleKind/roleName to
// the manager ServiceAccount in the operator namespace.
func (m *manifest) expectBinding(g Gomega, kind, name, roleKind, roleName string) {
	var b rbacv1.RoleBinding
	m.typed(g, kind, name, &b)
	g.Expect(b.RoleRef.Kind).To(Equal(roleKind), "%s: %s %s must refer to a %s", m.source, kind, name, roleKind)
	g.Expect(b.RoleRef.Name).To(Equal(roleName), "%s: %s %s must refer to %s", m.source, kind, name, roleName)
	g.Expect(b.Subjects).To(ContainElement(rbacv1.Subject{
		Kind: rbacv1.ServiceAccountKind, Name: serviceAccountName, Namespace: namespace,
	}), "%s: %s %s is missing the subject ServiceAccount %s/%s", m.source, kind, name, namespace, serviceAccountName)
}

// allVerbs are the verbs that grantedVerbs tries.
var allVerbs = slices.Concat(readVerbs, writeVerbs, []string{"escalate", "bind", "impersonate"})

// grantedVerbs returns the verbs of allVerbs that rules allow on resource
// in the API group, wildcards included.
func grantedVerbs(rules []rbacv1.PolicyRule, apiGroup, resource string) []string {
	var out []string
	for _, verb := range allVerbs {
		if grants(rules, apiGroup, resource, verb) {
			out = append(out, verb)
		}
	}
	return out
}

// grants reports whether rules allow verb on resource (which may be a
// subresource such as paymentjobs/status) in the API group, following the
// RBAC wildcards: "*" for groups, resources and verbs, "name/*" and "*/sub".
func grants(rules []rbacv1.PolicyRule, apiGroup, resource, verb string) bool {
	for _, r := range rules {
		if (slices.Contains(r.APIGroups, apiGroup) || slices.Contains(r.APIGroups, rbacv1.APIGroupAll)) &&
			slices.ContainsFunc(r.Resources, func(p string) bool { return resourceMatches(p, resource) }) &&
			(slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, rbacv1.VerbAll)) {
			return true
		}
	}
	return false
}

func resourceMatches(pattern, resource string) bool {
	if pattern == rbacv1.ResourceAll || pattern == resource {
		return true
	}
	base, sub, hasSub := strings.Cut(resource, "/")
	if !hasSub {
		return false
	}
	return pattern == base+"/*" || pattern == "*/"+sub
}
