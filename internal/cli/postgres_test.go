//go:build postgres

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
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/cli"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/pgserver"
	"github.com/idempotency-dev/paymentjob-operator/pkg/ledger"
	"github.com/idempotency-dev/paymentjob-operator/pkg/operator"
	"github.com/idempotency-dev/paymentjob-operator/pkg/paymentjobtest"
)

// The ledger commands and status read an operator's ledger on PostgreSQL
// as they read the CRD pages: an operator of its own, on a database on
// 127.0.0.1, finishes two payments of namespace pg-ledger.
func TestLedgerOnPostgres(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	dsn := pgserver.Start(t).CreateDatabase(t, "ledger")
	const ns = "pg-ledger"
	pgEnv := paymentjobtest.StartT(t, paymentjobtest.Options{Config: restConfig, Namespaces: []string{ns},
		Operator: operator.Options{LedgerBackend: operator.LedgerPostgres,
			// The CRD pages hold the other tests' payments, none of this
			// namespace's.
			Postgres: operator.PostgresLedger{DSN: dsn, SkipMigrationCheck: true, Durability: operator.DurabilityLocal}}})
	g.Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(pgEnv.CreateProvider(ctx, ns, "stripe")).To(Succeed())
	charges := map[string]string{}
	for _, job := range []struct {
		name   string
		amount int64
	}{{"invoice-1", 1100}, {"invoice-2", 2200}} {
		name, amount := job.name, job.amount
		g.Expect(k8s.Create(ctx, &paymentsv1alpha1.PaymentJob{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: paymentsv1alpha1.PaymentJobSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: "stripe"},
				Amount: amount, Currency: "usd", PaymentMethod: paymentjobtest.PaymentMethodSucceeds},
		})).To(Succeed())
		pj, err := pgEnv.WaitForPhase(ctx, ns, name, paymentsv1alpha1.PhaseCompleted, time.Minute)
		g.Expect(err).NotTo(HaveOccurred())
		charges[name] = pj.Status.ProviderResponse.ID
	}
	dsnFile := filepath.Join(t.TempDir(), "dsn")
	g.Expect(os.WriteFile(dsnFile, []byte(dsn+"\n"), 0o600)).To(Succeed())
	onPostgres := []string{"--ledger=postgres", "--ledger-postgres-dsn-file", dsnFile}

	var entries []ledger.Entry
	g.Eventually(func(g Gomega) {
		r := kubectlPayments(append([]string{"ledger", "export", "-n", ns, "-o", "json"}, onPostgres...)...)
		succeeded(g, r)
		g.Expect(json.Unmarshal([]byte(r.Stdout), &entries)).To(Succeed())
		g.Expect(entries).To(HaveLen(2))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Expect(entries).To(ConsistOf(
		And(HaveField("Key", ns+"/invoice-1"), HaveField("Charge", charges["invoice-1"]), HaveField("Amount", int64(1100))),
		And(HaveField("Key", ns+"/invoice-2"), HaveField("Charge", charges["invoice-2"]), HaveField("Amount", int64(2200)))))

	r := kubectlPayments(append([]string{"ledger", "export", "-n", ns}, onPostgres...)...)
	succeeded(g, r)
	golden(t, "ledger-export-postgres.csv.golden", r.Stdout)

	r = kubectlPayments(append([]string{"ledger", "find", "pj/invoice-2", "-n", ns}, onPostgres...)...)
	succeeded(g, r)
	g.Expect(r.Stdout).To(ContainSubstring("Ledger (postgres):"))
	g.Expect(r.Stdout).To(ContainSubstring(charges["invoice-2"]))

	r = kubectlPayments(append([]string{"status", "pj/invoice-1", "-n", ns, "-o", "json"}, onPostgres...)...)
	succeeded(g, r)
	var s cli.Story
	g.Expect(json.Unmarshal([]byte(r.Stdout), &s)).To(Succeed())
	g.Expect(s.Ledger).To(And(HaveField("Backend", "postgres"), HaveField("Found", true)))
	g.Expect(s.Ledger.Entries).To(ConsistOf(HaveField("Charge", charges["invoice-1"])))

	// The CRD pages do not hold them: the backend is the one asked for.
	r = kubectlPayments("ledger", "find", "pj/invoice-1", "-n", ns)
	g.Expect(r.Code).To(Equal(cli.ExitNotFound), r.Stderr)
	g.Expect(r.Stdout+r.Stderr).NotTo(ContainSubstring(dsn), "the DSN is never printed")

	// refund reads the same ledger: a refund whose PaymentRefund is
	// deleted is counted in what is left, and its key is not proposed
	// again.
	r = kubectlPayments(append([]string{"refund", "pj/invoice-1", "-n", ns, "--amount", "300", "-o", "name"}, onPostgres...)...)
	first := createdName(g, r)
	rf, err := pgEnv.WaitForRefundPhase(ctx, ns, first, paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	deleteAndWait(g, rf)
	r = kubectlPayments(append([]string{"refund", "pj/invoice-1", "-n", ns, "--amount", "900"}, onPostgres...)...)
	g.Expect(r.Code).To(Equal(cli.ExitNotApplicable), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("--amount 900 is more than what is left of pj/invoice-1: 800 usd (refunded: %s (no PaymentRefund; in the ledger, %s) 300)",
		first, rf.Status.ProviderResponse.ID))
	r = kubectlPayments(append([]string{"refund", "pj/invoice-1", "-n", ns, "--name", first, "--dry-run=client", "-o", "yaml"}, onPostgres...)...)
	g.Expect(r.Code).To(Equal(cli.ExitNotApplicable), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("the outcome ledger holds a refund under its key %s.refund/%s", ns, first))
	g.Expect(r.Stdout+r.Stderr).NotTo(ContainSubstring(dsn), "the DSN is never printed")
}
