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
	"strings"
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
	createJob(t, ns, "paid-1", 1500, paymentsv1alpha1.PhaseCompleted)
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
		{"RBAC names the role", viewerKubeconfig, []string{"status", "pj/invoice-1", "-n", ns}, cli.ExitForbidden,
			"ask your admin to bind ClusterRole paymentjob-operator-paymentjob-viewer-role or view (get paymentjobs) in namespace errors"},
		{"RBAC on a change", viewerKubeconfig, []string{"approve", "pj/invoice-1", "-n", ns}, cli.ExitForbidden,
			"kubectl auth can-i"},
		{"RBAC on a cluster-scoped kind", viewerKubeconfig, []string{"report", "books-1"}, cli.ExitForbidden,
			"ask your admin to bind ClusterRole paymentjob-operator-paymentreconciliation-viewer-role (get paymentreconciliations) with a ClusterRoleBinding"},
		{"RBAC on the ledger", viewerKubeconfig, []string{"ledger", "find", "invoice-1", "-n", ns}, cli.ExitForbidden,
			"no shipped role grants list paymentledgers: ask your admin for a ClusterRole with list on paymentledgers, bound with a ClusterRoleBinding"},
		{"API server unreachable", unreachable, []string{"status", "pj/invoice-1", "-n", ns}, cli.ExitError,
			"cannot reach the API server"},
		{"two objects", kubeconfig, []string{"status", "pj/a", "pj/b", "x"}, cli.ExitUsage, "name one object"},
		{"another kind", kubeconfig, []string{"status", "deployment/x"}, cli.ExitUsage, `"deployment/x" is not an object this command takes`},
		{"refund of a refund", kubeconfig, []string{"refund", "prefund/x"}, cli.ExitUsage, "this command does not take a PaymentRefund"},
		{"unknown flag", kubeconfig, []string{"status", "pj/x", "--colour"}, cli.ExitUsage, "unknown flag: --colour"},
		{"bad output", kubeconfig, []string{"status", "pj/x", "-o", "wide"}, cli.ExitUsage, `--output "wide" is not one of table, json, yaml`},
		{"amount with cents", kubeconfig, []string{"refund", "pj/paid-1", "-n", ns, "--amount", "10.50"}, cli.ExitUsage,
			`--amount "10.50" is not a whole number of minor units: 10.50 in a currency of cents (usd, eur) is --amount 1050`},
		{"amount in words", kubeconfig, []string{"refund", "pj/x", "--amount=ten"}, cli.ExitUsage,
			`--amount "ten" is not a whole number of minor units (cents for usd, yen for jpy)`},
		{"refund name", kubeconfig, []string{"refund", "pj/paid-1", "-n", ns, "--name", "Bad_Name", "--dry-run=client", "-o", "yaml"}, cli.ExitUsage,
			`--name "Bad_Name" is not an object name: it has "B", "_", "N"; use lowercase letters, digits, '-' and '.'`},
		{"refund name ends badly", kubeconfig, []string{"refund", "pj/x", "--name", "refund-", "--dry-run=client"}, cli.ExitUsage,
			`--name "refund-" is not an object name: it must start and end with a lowercase letter or a digit`},
		{"refund name too long", kubeconfig, []string{"refund", "pj/x", "--name", strings.Repeat("r", 254), "--dry-run=client"}, cli.ExitUsage,
			`is not an object name: it has 254 characters, more than 253`},
		{"payment key", kubeconfig, []string{"refund", "pj/x", "--payment-key", "order 7", "--dry-run=client"}, cli.ExitUsage,
			`--payment-key "order 7" is not an idempotency key: it has " "; a key is letters, digits and . _ : / -`},
		{"payment key too long", kubeconfig, []string{"refund", "pj/x", "--payment-key", strings.Repeat("k", 201), "--dry-run=client"}, cli.ExitUsage,
			`is not an idempotency key: it has 201 characters, more than 200`},
		{"provider name", kubeconfig, []string{"refund", "pj/x", "--provider", "Stripe", "--dry-run=client"}, cli.ExitUsage,
			`--provider "Stripe" is not an object name: it has "S"`},
		{"unknown context", kubeconfig, []string{"status", "pj/x", "--context", "nosuch"}, cli.ExitUsage,
			`context "nosuch" (--context) is not in the kubeconfig (` + kubeconfig + `): kubectl config get-contexts lists its contexts`},
		{"cluster-scoped kind not found", kubeconfig, []string{"report", "nosuch"}, cli.ExitNotFound,
			"precon/nosuch not found: kubectl get paymentreconciliations lists them"},
		{"unknown command", kubeconfig, []string{"stauts"}, cli.ExitUsage, `unknown command "stauts" for "kubectl payments"; did you mean status?`},
		{"unknown ledger command", kubeconfig, []string{"ledger", "list"}, cli.ExitUsage, `unknown command "list" for "kubectl payments ledger"`},
		{"bad output of refund", kubeconfig, []string{"refund", "pj/x", "-o", "table"}, cli.ExitUsage, `--output "table" is not one of yaml, json, name`},
		{"bad window", kubeconfig, []string{"reconcile", "--provider", "p", "--from", "2026-11-02T00:00:00Z", "--lookback", "1h"}, cli.ExitUsage,
			"give the window as --from (and --to) or as --lookback, not both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := kubectlAs(tc.config, append([]string{"payments"}, tc.args...)...)
			g.Expect(r.Code).To(Equal(tc.code), "stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
			g.Expect(r.Stderr).To(ContainSubstring(tc.says))
			g.Expect(r.Stderr).To(HavePrefix("error: "))
			g.Expect(r.Stdout).To(BeEmpty())
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
	g.Expect(r.Stderr).To(ContainSubstring("ask your admin to bind ClusterRole paymentjob-operator-paymentjob-editor-role (patch paymentjobs) in namespace rbac"))

	r = kubectlAs(reader, "payments", "refund", "pj/invoice-2", "-n", ns, "--amount", "50")
	g.Expect(r.Code).To(Equal(cli.ExitForbidden), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("ask your admin to bind ClusterRole paymentjob-operator-paymentrefund-editor-role (create paymentrefunds) in namespace rbac"))
	g.Expect(r.Stdout).To(BeEmpty())
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
