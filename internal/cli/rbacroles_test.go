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

package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// userRoles are config/rbac's ClusterRoles for the users of the API (the
// manager's, leader election's and the metrics' are not), by name.
func userRoles(t *testing.T) map[string]rbacv1.ClusterRole {
	t.Helper()
	files, err := filepath.Glob("../../config/rbac/payment*_role.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no user roles in config/rbac: %v", err)
	}
	roles := map[string]rbacv1.ClusterRole{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var role rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict(b, &role); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if role.Kind != "ClusterRole" {
			t.Fatalf("%s is a %s, not a ClusterRole", f, role.Kind)
		}
		roles[role.Name] = role
	}
	return roles
}

func grants(role rbacv1.ClusterRole, group, resource, verb string) bool {
	for _, r := range role.Rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) &&
			(slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, rbacv1.VerbAll)) {
			return true
		}
	}
	return false
}

// The roles a denial names are config/rbac's, with the install's prefix:
// every request a user role grants names a role, and every role named
// grants the request.
func TestDeniedRequestsNameTheRolesOfConfigRBAC(t *testing.T) {
	g := NewWithT(t)
	roles := userRoles(t)
	verbs := []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	checked := 0
	for _, role := range roles {
		for _, rule := range role.Rules {
			for _, resource := range rule.Resources {
				for _, verb := range verbs {
					if !grants(role, paymentsGroup, resource, verb) {
						continue
					}
					named := rolesFor(paymentsGroup, resource, verb)
					g.Expect(named).NotTo(BeEmpty(), "%s grants %s %s, and a denial of it names no role", role.Name, verb, resource)
					for _, n := range named {
						if n == "view" {
							continue
						}
						short, ok := strings.CutPrefix(n, installPrefix)
						g.Expect(ok).To(BeTrue(), "%s is not an installed name", n)
						g.Expect(roles).To(HaveKey(short), "a denial of %s %s names %s, which config/rbac does not have", verb, resource, n)
						g.Expect(grants(roles[short], paymentsGroup, resource, verb)).To(BeTrue(),
							"a denial of %s %s names %s, which does not grant it", verb, resource, short)
					}
					checked++
				}
			}
		}
	}
	g.Expect(checked).To(BeNumerically(">", 20))
	// A role aggregated into view is named with it, and view only then.
	for _, role := range roles {
		for _, rule := range role.Rules {
			for _, resource := range rule.Resources {
				named := rolesFor(paymentsGroup, resource, "get")
				g.Expect(slices.Contains(named, "view")).To(Equal(rolesAggregatedToView(roles, resource)), "get %s", resource)
			}
		}
	}
	g.Expect(rolesFor(paymentsGroup, "paymentledgers", "list")).To(BeEmpty())
	g.Expect(rolesFor("", "events", "list")).To(Equal([]string{"view"}))
}

func rolesAggregatedToView(roles map[string]rbacv1.ClusterRole, resource string) bool {
	for _, role := range roles {
		if role.Labels["rbac.authorization.k8s.io/aggregate-to-view"] == "true" && grants(role, paymentsGroup, resource, "get") {
			return true
		}
	}
	return false
}

// A denial is read from the API server's message: the verb, the resource
// and where to bind the role.
func TestAskFor(t *testing.T) {
	const prefix = `paymentjobs.payments.idempotency.dev "a" is forbidden: User "ana" `
	for _, tc := range []struct {
		message, says string
	}{
		{prefix + `cannot patch resource "paymentjobs" in API group "payments.idempotency.dev" in the namespace "billing"`,
			"ask your admin to bind ClusterRole paymentjob-operator-paymentjob-editor-role (patch paymentjobs) in namespace billing"},
		{prefix + `cannot list resource "paymentrefunds" in API group "payments.idempotency.dev" in the namespace "billing"`,
			"ask your admin to bind ClusterRole paymentjob-operator-paymentrefund-viewer-role or view (list paymentrefunds) in namespace billing"},
		{prefix + `cannot create resource "paymentreconciliations" in API group "payments.idempotency.dev" at the cluster scope`,
			"ask your admin to bind ClusterRole paymentjob-operator-paymentreconciliation-editor-role (create paymentreconciliations) with a ClusterRoleBinding"},
		{prefix + `cannot list resource "events" in API group "" in the namespace "billing"`,
			"ask your admin to bind ClusterRole view (list events) in namespace billing"},
		{prefix + `cannot get resource "secrets" in API group "" in the namespace "billing"`,
			"no shipped role grants get secrets: ask your admin for a Role with get on that one Secret (resourceNames) in namespace billing"},
		{prefix + `cannot list resource "paymentledgers" in API group "payments.idempotency.dev" at the cluster scope`,
			"no shipped role grants list paymentledgers: ask your admin for a ClusterRole with list on paymentledgers, bound with a ClusterRoleBinding"},
		{prefix + `cannot patch resource "paymentjobs/status" in API group "payments.idempotency.dev" in the namespace "billing"`,
			"no shipped role grants patch paymentjobs/status: ask your admin (docs/security.md lists the roles)"},
		{"forbidden by a webhook", "ask your admin for the role docs/security.md names for this command"},
	} {
		t.Run(tc.says, func(t *testing.T) {
			NewWithT(t).Expect(askFor(tc.message)).To(HavePrefix(tc.says))
		})
	}
}
