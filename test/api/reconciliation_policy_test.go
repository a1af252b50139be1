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

package v1alpha1_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// A PaymentReconciliation reads, with the operator's rights, a provider's
// credentials and the payments of the namespaces it names. The
// reconciliation-reader policy of config/policy admits one only when its
// creator could read them: a user who may create reconciliations but not
// read the provider or the payments is refused with the missing right
// named; the same user is admitted once granted it.
func TestReconciliationNeedsItsCreatorsRightToReadWhatItReads(t *testing.T) {
	g := NewWithT(t)
	installPolicies(t, g)
	ctx := context.Background()

	shop, other := uniqueName("shop"), uniqueName("other")
	for _, ns := range []string{shop, other} {
		g.Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	user := uniqueName("auditor")
	grant := func(role string, rules []rbacv1.PolicyRule, ns string) {
		subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
		ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Name: role}
		var objs []client.Object
		if ns == "" {
			ref.Kind = "ClusterRole"
			objs = []client.Object{&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: rules},
				&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role}, Subjects: subject, RoleRef: ref}}
		} else {
			ref.Kind = "Role"
			objs = []client.Object{&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: ns}, Rules: rules},
				&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: ns}, Subjects: subject, RoleRef: ref}}
		}
		for _, o := range objs {
			g.Expect(k8sClient.Create(ctx, o)).To(Succeed())
			t.Cleanup(func() { _ = k8sClient.Delete(ctx, o) })
		}
	}
	rule := func(verb string, resources ...string) []rbacv1.PolicyRule {
		return []rbacv1.PolicyRule{{APIGroups: []string{paymentsv1alpha1.GroupVersion.Group}, Resources: resources, Verbs: []string{verb}}}
	}
	// What paymentreconciliation-editor-role grants: create runs, nothing else.
	grant(user+"-create", rule("create", "paymentreconciliations"), "")

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	auditor, err := client.New(cfg, client.Options{Scheme: k8sClient.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	run := func(namespaces ...string) *paymentsv1alpha1.PaymentReconciliation {
		return &paymentsv1alpha1.PaymentReconciliation{
			ObjectMeta: metav1.ObjectMeta{Name: uniqueName("books")},
			Spec: paymentsv1alpha1.PaymentReconciliationSpec{
				ProviderRef:     paymentsv1alpha1.ProviderObjectReference{Namespace: shop, Name: "stripe"},
				LookbackSeconds: ptrTo(int64(3600)), Namespaces: namespaces,
			},
		}
	}
	refused := func(pr *paymentsv1alpha1.PaymentReconciliation, missing ...string) {
		t.Helper()
		g.Eventually(func(g Gomega) {
			err := auditor.Create(ctx, pr, client.DryRunAll)
			g.Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "the run is admitted: got %v", err)
			for _, m := range missing {
				g.Expect(err.Error()).To(ContainSubstring(m))
			}
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	}
	admitted := func(pr *paymentsv1alpha1.PaymentReconciliation) {
		t.Helper()
		g.Eventually(func() error { return auditor.Create(ctx, pr, client.DryRunAll) }, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	}

	refused(run(shop), "may not get paymentproviders/stripe in namespace "+shop)
	grant(user+"-provider", rule("get", "paymentproviders"), shop)
	refused(run(shop), "may not list paymentjobs and paymentrefunds in namespace "+shop)
	grant(user+"-jobs", rule("list", "paymentjobs"), shop)
	refused(run(shop), "may not list paymentjobs and paymentrefunds in namespace "+shop)
	grant(user+"-refunds", rule("list", "paymentrefunds"), shop)
	admitted(run(shop))

	// Another namespace's payments, several namespaces, or the whole account.
	refused(run(other), "in namespace "+other)
	refused(run(shop, other), "in all namespaces", "several namespaces")
	refused(run(), "in all namespaces", "the whole account")
	grant(user+"-everywhere", rule("list", "paymentjobs", "paymentrefunds"), "")
	admitted(run(other))
	admitted(run(shop, other))
	admitted(run())

	// The provider's credentials stay out of reach of another namespace's reader.
	foreign := run(other)
	foreign.Spec.ProviderRef.Namespace = other
	refused(foreign, "may not get paymentproviders/stripe in namespace "+other)
}

func ptrTo[T any](v T) *T { return &v }
