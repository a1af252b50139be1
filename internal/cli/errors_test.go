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
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

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
