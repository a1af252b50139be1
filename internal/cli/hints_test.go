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
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/cli"
)

// A context that is not in the kubeconfig: --context is a usage error
// (exit 2), a kubeconfig whose current-context is gone an error (exit 1);
// both name the files read and how to list the contexts.
func TestUnknownContextNamesTheKubeconfigFiles(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.kubeconfig")
	both := kubeconfig + string(os.PathListSeparator) + missing

	r := kubectlAs(both, "payments", "status", "pj/x", "--context", "nosuch")
	g.Expect(r.Code).To(Equal(cli.ExitUsage), r.Stderr)
	g.Expect(r.Stderr).To(Equal(`error: context "nosuch" (--context) is not in the kubeconfig (` + kubeconfig + `): ` +
		"kubectl config get-contexts lists its contexts\n"))
	g.Expect(r.Stdout).To(BeEmpty())

	gone := filepath.Join(dir, "gone.kubeconfig")
	b, err := os.ReadFile(kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(gone, regexp.MustCompile(`(?m)^current-context: .*$`).ReplaceAll(b, []byte("current-context: gone")), 0o600)).To(Succeed())
	r = kubectlAs(gone, "payments", "ledger", "export")
	g.Expect(r.Code).To(Equal(cli.ExitError), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring(`the kubeconfig's current-context "gone" is not in it (` + gone + `): ` +
		"kubectl config get-contexts lists its contexts, kubectl config use-context picks one, or give --context"))
	g.Expect(r.Stdout).To(BeEmpty())
}

// ledger export writes nothing, not even the CSV header or a JSON "[",
// when the ledger cannot be read: a redirected file must not look like
// an empty ledger.
func TestLedgerExportWritesNothingWhenTheLedgerCannotBeRead(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "dsn")
	// Nothing listens on port 1 of loopback.
	if err := os.WriteFile(dsn, []byte("postgres://reader:s3cret-pw@127.0.0.1:1/ledger?connect_timeout=2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		config string
		args   []string
		code   int
		says   string
	}{
		{"forbidden csv", viewerKubeconfig, []string{"-n", "errors"}, cli.ExitForbidden, "paymentledgers"},
		{"forbidden json", viewerKubeconfig, []string{"-A", "-o", "json"}, cli.ExitForbidden, "paymentledgers"},
		{"unreachable csv", kubeconfig, []string{"-A", "--ledger=postgres", "--ledger-postgres-dsn-file", dsn}, cli.ExitLedgerUnavailable,
			"the outcome ledger is unreachable"},
		{"unreachable json", kubeconfig, []string{"-A", "-o", "json", "--ledger=postgres", "--ledger-postgres-dsn-file", dsn},
			cli.ExitLedgerUnavailable, "the outcome ledger is unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := kubectlAs(tc.config, append([]string{"payments", "ledger", "export"}, tc.args...)...)
			g.Expect(r.Code).To(Equal(tc.code), r.Stderr)
			g.Expect(r.Stderr).To(ContainSubstring(tc.says))
			g.Expect(r.Stdout).To(BeEmpty())
		})
	}
}

// kubectl payments alone prints its help and exits 0, as kubectl does.
func TestNoCommandPrintsTheHelp(t *testing.T) {
	g := NewWithT(t)
	r := kubectlPayments()
	succeeded(g, r)
	g.Expect(r.Stdout).To(ContainSubstring("Available Commands:"))
	g.Expect(strings.TrimSpace(r.Stderr)).To(BeEmpty())
}
