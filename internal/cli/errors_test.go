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

package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/cli"
)

// Each error names the object and what to do, and ends the command with
// its documented exit code.
func TestErrorsNameTheObjectAndExitWithTheirCode(t *testing.T) {
	ns := newNamespace(t, "errors")
	createJob(t, ns, "invoice-1", 100, "", suspendedJob)
	unreachable := filepath.Join(t.TempDir(), "unreachable.kubeconfig")
	if err := os.WriteFile(unreachable, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t0ken}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		config string
		args   []string
		code   int
		says   string
	}{
		{"missing job", kubeconfig, []string{"status", "pj/invoice-404", "-n", ns}, cli.ExitNotFound,
			"pj/invoice-404 in namespace errors not found: check the name and the namespace (-n)"},
		{"missing refund", kubeconfig, []string{"approve", "prefund/r-404", "-n", ns}, cli.ExitNotFound,
			"prefund/r-404 in namespace errors not found"},
		{"missing provider", kubeconfig, []string{"reconcile", "--provider", ns + "/nope", "--lookback", "1h"}, cli.ExitNotFound,
			"PaymentProvider errors/nope (--provider) not found"},
		{"RBAC", viewerKubeconfig, []string{"status", "pj/invoice-1", "-n", ns}, cli.ExitForbidden,
			`forbidden to read or change pj/invoice-1 in namespace errors (paymentjobs.payments.idempotency.dev "invoice-1" is forbidden: User "viewer" cannot get resource "paymentjobs"`},
		{"RBAC on a change", viewerKubeconfig, []string{"approve", "pj/invoice-1", "-n", ns}, cli.ExitForbidden,
			"kubectl auth can-i"},
		{"API server unreachable", unreachable, []string{"status", "pj/invoice-1", "-n", ns}, cli.ExitError,
			"cannot reach the API server"},
		{"two objects", kubeconfig, []string{"status", "pj/a", "pj/b", "x"}, cli.ExitUsage, "name one object"},
		{"another kind", kubeconfig, []string{"status", "deployment/x"}, cli.ExitUsage, `"deployment/x" is not an object this command takes`},
		{"refund of a refund", kubeconfig, []string{"refund", "prefund/x"}, cli.ExitUsage, "this command does not take a PaymentRefund"},
		{"unknown flag", kubeconfig, []string{"status", "pj/x", "--colour"}, cli.ExitUsage, "unknown flag: --colour"},
		{"bad output", kubeconfig, []string{"status", "pj/x", "-o", "wide"}, cli.ExitUsage, `--output "wide" is not one of table, json, yaml`},
		{"bad window", kubeconfig, []string{"reconcile", "--provider", "p", "--from", "2026-11-02T00:00:00Z", "--lookback", "1h"}, cli.ExitUsage,
			"give the window as --from (and --to) or as --lookback, not both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := kubectlAs(tc.config, append([]string{"payments"}, tc.args...)...)
			g.Expect(r.Code).To(Equal(tc.code), "stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
			g.Expect(r.Stderr).To(ContainSubstring(tc.says))
			g.Expect(r.Stderr).To(HavePrefix("error: "))
		})
	}
}

// A user who may read payments but not the ledger, nor change payments:
// status tells the story with the ledger line saying why it is missing,
// and a change is refused with exit 4.
func TestPartialRBAC(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, "rbac")
	createJob(t, ns, "invoice-1", 100, "", suspendedJob)
	createJob(t, ns, "invoice-2", 200, paymentsv1alpha1.PhaseCompleted)
	g.Expect(k8s.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "payments-reader", Namespace: ns},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{paymentsv1alpha1.GroupVersion.Group}, Resources: []string{"paymentjobs", "paymentrefunds"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"get", "list"}},
		}})).To(Succeed())
	g.Expect(k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "payments-reader", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "payments-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "reader"}}})).To(Succeed())
	reader, err := userKubeconfig(t.TempDir(), "reader", nil)
	g.Expect(err).NotTo(HaveOccurred())

	r := kubectlAs(reader, "payments", "status", "pj/invoice-2", "-n", ns)
	succeeded(g, r)
	g.Expect(r.Stdout).To(MatchRegexp(`Phase:\s+Completed`))
	g.Expect(r.Stdout).To(MatchRegexp(`Ledger \(crd\): cannot be read: .*forbidden`))

	r = kubectlAs(reader, "payments", "approve", "pj/invoice-1", "-n", ns)
	g.Expect(r.Code).To(Equal(cli.ExitForbidden), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring(`User "reader" cannot patch resource "paymentjobs"`))
	var pj paymentsv1alpha1.PaymentJob
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "invoice-1"}, &pj)).To(Succeed())
	g.Expect(*pj.Spec.Suspend).To(BeTrue())
}

// A cluster without the operator's CRDs: the command says the operator
// is not installed, not that the object is missing.
func TestOperatorNotInstalled(t *testing.T) {
	g := NewWithT(t)
	bare := &envtest.Environment{BinaryAssetsDirectory: os.Getenv("KUBEBUILDER_ASSETS"), ControlPlaneStartTimeout: 90 * time.Second}
	_, err := bare.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = bare.Stop() })
	u, err := bare.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	b, err := u.KubeConfig()
	g.Expect(err).NotTo(HaveOccurred())
	config := filepath.Join(t.TempDir(), "bare.kubeconfig")
	g.Expect(os.WriteFile(config, b, 0o600)).To(Succeed())

	for _, args := range [][]string{
		{"status", "pj/invoice-1", "-n", "default"},
		{"ledger", "export", "-A"},
		{"reconcile", "--provider", "default/stripe", "--lookback", "1h"},
	} {
		r := kubectlAs(config, append([]string{"payments"}, args...)...)
		g.Expect(r.Code).To(Equal(cli.ExitNotInstalled), "%v: %s", args, r.Stderr)
		g.Expect(r.Stderr).To(ContainSubstring("the paymentjob-operator is not installed in this cluster"))
	}
}
