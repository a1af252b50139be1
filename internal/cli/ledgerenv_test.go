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
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/cli"
)

// KUBECTL_PAYMENTS_LEDGER and KUBECTL_PAYMENTS_LEDGER_DSN_FILE are the
// defaults of --ledger and --ledger-postgres-dsn-file: --help names them, a
// flag wins over them, and an error about a value names the variable it came
// from. Reading a PostgreSQL ledger through them alone is hack/localenv's
// TestRunLocalOnPostgres (make test-postgres). Not parallel: t.Setenv.
func TestLedgerFlagsDefaultToTheEnvironment(t *testing.T) {
	g := NewWithT(t)
	missing := filepath.Join(t.TempDir(), "no-such-dsn")

	for _, cmd := range [][]string{{"status"}, {"refund"}, {"ledger", "find"}, {"ledger", "export"}} {
		r := kubectlPayments(append(cmd, "--help")...)
		succeeded(g, r)
		g.Expect(r.Stdout).To(ContainSubstring("default $KUBECTL_PAYMENTS_LEDGER, else crd"), "%v --help", cmd)
		g.Expect(r.Stdout).To(ContainSubstring("default $KUBECTL_PAYMENTS_LEDGER_DSN_FILE"), "%v --help", cmd)
	}

	t.Setenv("KUBECTL_PAYMENTS_LEDGER", "postgress")
	r := kubectlPayments("ledger", "export", "-n", "ledger-env")
	g.Expect(r.Code).To(Equal(cli.ExitUsage), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring(`KUBECTL_PAYMENTS_LEDGER "postgress" is not crd or postgres`))
	// The flag wins: the CRD ledger is read.
	r = kubectlPayments("ledger", "export", "-n", "ledger-env", "--ledger=crd")
	succeeded(g, r)
	g.Expect(r.Stdout).To(HavePrefix("at,key,"))
	r = kubectlPayments("ledger", "export", "-n", "ledger-env", "--ledger=nosuch")
	g.Expect(r.Code).To(Equal(cli.ExitUsage), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring(`--ledger "nosuch" is not crd or postgres`))

	t.Setenv("KUBECTL_PAYMENTS_LEDGER", "postgres")
	r = kubectlPayments("ledger", "export", "-n", "ledger-env")
	g.Expect(r.Code).To(Equal(cli.ExitUsage), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("KUBECTL_PAYMENTS_LEDGER=postgres needs --ledger-postgres-dsn-file (or KUBECTL_PAYMENTS_LEDGER_DSN_FILE)"))

	t.Setenv("KUBECTL_PAYMENTS_LEDGER_DSN_FILE", missing)
	r = kubectlPayments("ledger", "export", "-n", "ledger-env")
	g.Expect(r.Code).To(Equal(cli.ExitLedgerUnavailable), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("cannot read KUBECTL_PAYMENTS_LEDGER_DSN_FILE: open " + missing))
	// The flag wins over the variable.
	r = kubectlPayments("ledger", "export", "-n", "ledger-env", "--ledger-postgres-dsn-file", missing+"-flag")
	g.Expect(r.Code).To(Equal(cli.ExitLedgerUnavailable), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("cannot read --ledger-postgres-dsn-file: open " + missing + "-flag"))
	r = kubectlPayments("ledger", "export", "-n", "ledger-env", "--ledger", "crd")
	succeeded(g, r)
}
