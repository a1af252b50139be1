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

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger/ledgercopy"
)

// The ledger command's command line; no test here reaches a server: each
// stops at a flag, a file, or a DSN that does not parse.

// writeFile writes content to a file of the test's and returns its path.
func writeTestFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// testKubeconfig is a kubeconfig of a server nothing asks: loading it makes no
// request.
const testKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`

func TestLedgerCommandLine(t *testing.T) {
	secret := "s3cret-pw"
	dsnFile := writeTestFile(t, "dsn", "postgres://ledger:"+secret+"@127.0.0.1:notaport/db\n")
	emptyFile := writeTestFile(t, "empty", "\n")
	kubeconfigFile := writeTestFile(t, "kubeconfig", testKubeconfig)
	missing := filepath.Join(t.TempDir(), "missing")
	valid := []string{"--from=crd", "--to=postgres", "--ledger-postgres-dsn-file=" + dsnFile, "--kubeconfig=" + kubeconfigFile}
	valid = slices.Clip(valid) // each case appends to its own copy

	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "nothing", args: nil, wantCode: ledgerExitUsage, wantStderr: "copy or verify?"},
		{name: "help", args: []string{"help"}, wantCode: ledgerExitOK, wantStdout: "Exit codes:"},
		{name: "a command's help", args: []string{"verify", "-h"}, wantCode: ledgerExitOK, wantStderr: "--ledger-postgres-dsn-file"},
		{name: "unknown command", args: []string{"move"}, wantCode: ledgerExitUsage, wantStderr: `unknown command "move"`},
		{name: "unknown flag", args: []string{"copy", "--form=crd"}, wantCode: ledgerExitUsage, wantStderr: "-form"},
		{name: "no --from", args: []string{"copy", "--to=postgres", "--ledger-postgres-dsn-file=" + dsnFile},
			wantCode: ledgerExitUsage, wantStderr: "--from and --to must each be crd or postgres"},
		{name: "unknown backend", args: []string{"copy", "--from=etcd", "--to=postgres", "--ledger-postgres-dsn-file=" + dsnFile},
			wantCode: ledgerExitUsage, wantStderr: "--from and --to must each be crd or postgres"},
		{name: "the same ledger", args: []string{"verify", "--from=crd", "--to=crd", "--ledger-postgres-dsn-file=" + dsnFile},
			wantCode: ledgerExitUsage, wantStderr: "the same ledger"},
		{name: "no DSN file", args: []string{"copy", "--from=postgres", "--to=crd"},
			wantCode: ledgerExitUsage, wantStderr: "--ledger-postgres-dsn-file is required"},
		{name: "the manager's flag", args: append([]string{"copy", "--ledger-postgres-skip-migration-check"}, valid...),
			wantCode: ledgerExitUsage, wantStderr: "-ledger-postgres-skip-migration-check"},
		{name: "arguments left", args: append([]string{"copy"}, append(valid, "now")...),
			wantCode: ledgerExitUsage, wantStderr: "unexpected arguments: now"},
		{name: "DSN file missing", args: []string{"copy", "--from=crd", "--to=postgres", "--ledger-postgres-dsn-file=" + missing},
			wantCode: ledgerExitError, wantStderr: missing},
		{name: "DSN file empty", args: []string{"copy", "--from=crd", "--to=postgres", "--ledger-postgres-dsn-file=" + emptyFile},
			wantCode: ledgerExitError, wantStderr: "is empty"},
		{name: "kubeconfig missing", args: []string{"verify", "--from=postgres", "--to=crd", "--ledger-postgres-dsn-file=" + dsnFile,
			"--kubeconfig=" + missing}, wantCode: ledgerExitError, wantStderr: "cannot load the Kubernetes configuration"},
		{name: "a DSN that does not parse", args: append([]string{"copy"}, valid...),
			wantCode: ledgerExitError, wantStderr: "cannot parse the outcome ledger's DSN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var stdout, stderr bytes.Buffer
			g.Expect(ledgerCommand(tt.args, &stdout, &stderr)).To(Equal(tt.wantCode), "stderr: %s", stderr.String())
			g.Expect(stdout.String()).To(ContainSubstring(tt.wantStdout))
			g.Expect(stderr.String()).To(ContainSubstring(tt.wantStderr))
			g.Expect(stdout.String()+stderr.String()).NotTo(ContainSubstring(secret), "the DSN is never shown")
			if tt.wantCode == ledgerExitUsage {
				g.Expect(stderr.String()).To(ContainSubstring("Exit codes:"), "a wrong command line shows the usage")
			}
		})
	}
}

func TestLedgerReportAndExitCode(t *testing.T) {
	conflict := ledgercopy.Conflict{
		Source:      ledger.Entry{Key: "shop/invoice-3", Fingerprint: "sha256:aa", Outcome: paymentsv1alpha1.LedgerCompleted},
		Destination: ledger.Entry{Key: "shop/invoice-3", Fingerprint: "sha256:bb", Outcome: paymentsv1alpha1.LedgerCompleted},
	}
	tests := []struct {
		name     string
		sub      string
		from, to string
		res      ledgercopy.Result
		wantCode int
		want     []string
	}{
		{name: "copied", sub: "copy", from: "crd", to: "postgres", res: ledgercopy.Result{Read: 300, Copied: 200, Present: 100},
			wantCode: ledgerExitOK,
			want:     []string{"copied 200, already present 100, conflicts 0, missing 0 (300 entries read from the CRD ledger), in 3s\n"}},
		{name: "verified", sub: "verify", from: "postgres", to: "crd", res: ledgercopy.Result{Read: 300, Present: 300},
			wantCode: ledgerExitOK, want: []string{"present 300, conflicts 0, missing 0 (300 entries read from PostgreSQL), in 3s\n"}},
		{name: "missing", sub: "verify", from: "crd", to: "postgres",
			res:      ledgercopy.Result{Read: 300, Present: 298, Missing: 2, MissingKeys: []string{"shop/invoice-7", "shop/invoice-9"}},
			wantCode: ledgerExitIncomplete,
			want: []string{"missing 2", "missing: shop/invoice-7\nmissing: shop/invoice-9\n",
				"run `manager ledger copy --from=crd --to=postgres` (again)"}},
		{name: "conflicts", sub: "copy", from: "postgres", to: "crd",
			res:      ledgercopy.Result{Read: 3, Copied: 2, Conflicts: 1, ConflictExamples: []ledgercopy.Conflict{conflict}},
			wantCode: ledgerExitIncomplete,
			want:     []string{"conflicts 1", "conflict: shop/invoice-3: Completed (request sha256:aa", "the CRD ledger keeps its entries"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var out bytes.Buffer
			g.Expect(ledgerReport(&out, tt.sub, tt.from, tt.to, tt.res, 3*time.Second)).To(Equal(tt.wantCode))
			for _, want := range tt.want {
				g.Expect(out.String()).To(ContainSubstring(want))
			}
		})
	}
}
