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
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// tenantRoleFiles are the roles of config/rbac that docs/security.md tells
// cluster admins to bind to tenants (and auditors of reconciliations):
// every payments role but the manager's.
const tenantRoleFiles = "../../config/rbac/payment*_role.yaml"

// The ledger holds every namespace's keys, amounts, charges and accounts.
// Each role a tenant is bound to, bound even cluster-wide (the most it can
// grant) to a user the test impersonates, is refused get and list of
// PaymentLedgers: Forbidden, not NotFound. A role that grants them (the
// control row) is not refused, so the test sees a grant when there is one.
func TestTenantRolesCannotReadTheLedger(t *testing.T) {
	g := NewWithT(t)
	files, err := filepath.Glob(tenantRoleFiles)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).NotTo(BeEmpty(), "the tenant roles in %s", tenantRoleFiles)
	type row struct {
		name  string
		rules []rbacv1.PolicyRule
		// reads: the role grants the ledger (the control).
		reads bool
	}
	rows := make([]row, 0, len(files)+1)
	for _, file := range files {
		raw, err := os.ReadFile(file)
		g.Expect(err).NotTo(HaveOccurred())
		var role rbacv1.ClusterRole
		g.Expect(yaml.UnmarshalStrict(raw, &role)).To(Succeed(), file)
		g.Expect(role.Kind).To(Equal("ClusterRole"), file)
		rows = append(rows, row{name: role.Name, rules: role.Rules})
	}
	rows = append(rows, row{name: "a ledger reader (control)", reads: true, rules: []rbacv1.PolicyRule{{
		APIGroups: []string{paymentsv1alpha1.GroupVersion.Group}, Resources: []string{"paymentledgers"}, Verbs: []string{"get", "list"},
	}}})

	for _, tt := range rows {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := t.Context()
			user := "tenant-" + rand.String(8)
			role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "ledger-access-" + rand.String(8)}, Rules: tt.rules}
			binding := &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: role.Name},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			}
			for _, obj := range []client.Object{role, binding} {
				g.Expect(k8sClient.Create(ctx, obj)).To(Succeed())
				t.Cleanup(func() { _ = k8sClient.Delete(ctx, obj) })
			}
			// The binding is in force once the role's own first grant is.
			g.Eventually(func() bool { return allowed(g, user, tt.rules[0]) }, timeout, 50*time.Millisecond).Should(BeTrue(),
				"the role's first rule is granted to %s", user)

			cfg := rest.CopyConfig(env.Config)
			cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
			tenant, err := client.New(cfg, client.Options{Scheme: scheme})
			g.Expect(err).NotTo(HaveOccurred())
			getErr := tenant.Get(ctx, client.ObjectKey{Name: "any-page"}, &paymentsv1alpha1.PaymentLedger{})
			listErr := tenant.List(ctx, &paymentsv1alpha1.PaymentLedgerList{})
			if tt.reads {
				g.Expect(getErr).To(Satisfy(apierrors.IsNotFound), "get: allowed, and the page does not exist")
				g.Expect(listErr).NotTo(HaveOccurred(), "list")
				return
			}
			g.Expect(getErr).To(Satisfy(apierrors.IsForbidden), "get of a PaymentLedger by %s: %v", tt.name, getErr)
			g.Expect(listErr).To(Satisfy(apierrors.IsForbidden), "list of PaymentLedgers by %s: %v", tt.name, listErr)
		})
	}
}

// allowed asks the API server whether user may do the first verb of rule
// (get where it may) on the rule's first resource, cluster-wide.
func allowed(g Gomega, user string, rule rbacv1.PolicyRule) bool {
	attrs := &authorizationv1.ResourceAttributes{Verb: rule.Verbs[0]}
	if slices.Contains(rule.Verbs, "get") || slices.Contains(rule.Verbs, rbacv1.VerbAll) {
		attrs.Verb = "get"
	}
	if len(rule.Resources) == 0 {
		return true // a non-resource rule: nothing to wait for
	}
	attrs.Group, attrs.Resource = rule.APIGroups[0], rule.Resources[0]
	if resource, sub, ok := strings.Cut(attrs.Resource, "/"); ok {
		attrs.Resource, attrs.Subresource = resource, sub
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: attrs}}
	g.Expect(k8sClient.Create(context.Background(), sar)).To(Succeed())
	return sar.Status.Allowed
}
