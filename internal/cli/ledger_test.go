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
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/cli"
	"github.com/idempotency-dev/paymentjob-operator/pkg/ledger"
	"github.com/idempotency-dev/paymentjob-operator/pkg/paymentjobtest"
)

func TestLedgerFindsAPaymentAfterItsJobIsGone(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, "ledger")
	a := createJob(t, ns, "invoice-a", 1000, paymentsv1alpha1.PhaseCompleted)
	createJob(t, ns, "invoice-b", 2000, paymentsv1alpha1.PhaseCompleted)
	createJob(t, ns, "invoice-c", 3000, paymentsv1alpha1.PhaseFailed, func(pj *paymentsv1alpha1.PaymentJob) {
		pj.Spec.PaymentMethod = paymentjobtest.PaymentMethodDeclined
	})
	g.Eventually(func(g Gomega) {
		r := kubectlPayments("ledger", "export", "-n", ns, "-o", "json")
		succeeded(g, r)
		var entries []ledger.Entry
		g.Expect(json.Unmarshal([]byte(r.Stdout), &entries)).To(Succeed())
		g.Expect(entries).To(HaveLen(3))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	r := kubectlPayments("ledger", "find", "pj/invoice-a", "-n", ns)
	succeeded(g, r)
	golden(t, "ledger-find.golden", r.Stdout)
	g.Expect(r.Stdout).To(ContainSubstring(a.Status.ProviderResponse.ID))

	r = kubectlPayments("ledger", "find", "invoice-c", "-n", ns, "-o", "json")
	succeeded(g, r)
	golden(t, "ledger-find.json.golden", r.Stdout)
	var found []ledger.Entry
	g.Expect(json.Unmarshal([]byte(r.Stdout), &found)).To(Succeed())
	g.Expect(found).To(ConsistOf(And(HaveField("Outcome", paymentsv1alpha1.LedgerFailed), HaveField("Reason", paymentsv1alpha1.ReasonCardDeclined))))

	r = kubectlPayments("ledger", "find", ns+"/invoice-b", "-o", "yaml")
	succeeded(g, r)
	g.Expect(r.Stdout).To(ContainSubstring("amount: 2000"))

	// The job is deleted: its name still finds its payment.
	g.Expect(k8s.Delete(ctx, a)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(a), &paymentsv1alpha1.PaymentJob{}))
	}).WithTimeout(30 * time.Second).Should(BeTrue())
	r = kubectlPayments("ledger", "find", "pj/invoice-a", "-n", ns)
	succeeded(g, r)
	g.Expect(r.Stderr).To(ContainSubstring("pj/invoice-a is not in namespace ledger; looking up the key its name gives, ledger/invoice-a"))
	g.Expect(r.Stdout).To(ContainSubstring(a.Status.ProviderResponse.ID))

	r = kubectlPayments("ledger", "find", "invoice-zz", "-n", ns)
	g.Expect(r.Code).To(Equal(cli.ExitNotFound))
	g.Expect(r.Stderr).To(ContainSubstring("the crd ledger holds no entry under ledger/invoice-zz"))
}

func TestLedgerExport(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, "ledger-export")
	createJob(t, ns, "invoice-1", 1500, paymentsv1alpha1.PhaseCompleted)
	createJob(t, ns, "invoice-2", 2500, paymentsv1alpha1.PhaseCompleted)
	g.Eventually(func(g Gomega) {
		r := kubectlPayments("ledger", "export", "-n", ns)
		succeeded(g, r)
		g.Expect(strings.Count(r.Stdout, "\n")).To(Equal(3))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	r := kubectlPayments("ledger", "export", "-n", ns, "-o", "csv")
	succeeded(g, r)
	golden(t, "ledger-export.csv.golden", r.Stdout)
	rows, err := csv.NewReader(strings.NewReader(r.Stdout)).ReadAll()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rows[0]).To(Equal(ledger.CSVHeader))
	g.Expect(rows[1:]).To(HaveEach(ContainElement(ns)))

	r = kubectlPayments("ledger", "export", "-n", ns, "-o", "json")
	succeeded(g, r)
	golden(t, "ledger-export.json.golden", r.Stdout)
	var entries []ledger.Entry
	g.Expect(json.Unmarshal([]byte(r.Stdout), &entries)).To(Succeed())
	g.Expect(entries).To(ConsistOf(HaveField("Amount", int64(1500)), HaveField("Amount", int64(2500))))

	// -A: every namespace's; --since: only the later ones.
	r = kubectlPayments("ledger", "export", "-A", "-o", "json")
	succeeded(g, r)
	var all []ledger.Entry
	g.Expect(json.Unmarshal([]byte(r.Stdout), &all)).To(Succeed())
	g.Expect(len(all)).To(BeNumerically(">", len(entries)))
	g.Expect(all).To(ContainElements(entries))

	r = kubectlPayments("ledger", "export", "-n", ns, "--since", time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	succeeded(g, r)
	g.Expect(r.Stdout).To(Equal(strings.Join(ledger.CSVHeader, ",") + "\n"))
	r = kubectlPayments("ledger", "export", "-n", ns, "--since", "1h", "-o", "json")
	succeeded(g, r)
	g.Expect(json.Unmarshal([]byte(r.Stdout), &entries)).To(Succeed())
	g.Expect(entries).To(HaveLen(2))

	r = kubectlPayments("ledger", "export", "-n", ns, "--since", "yesterday")
	g.Expect(r.Code).To(Equal(cli.ExitUsage))
	g.Expect(r.Stderr).To(ContainSubstring(`--since "yesterday" is neither a time`))
}

func TestLedgerUnreachable(t *testing.T) {
	g := NewWithT(t)
	dsn := filepath.Join(t.TempDir(), "dsn")
	// Nothing listens on port 1 of loopback.
	g.Expect(os.WriteFile(dsn, []byte("postgres://reader:s3cret-pw@127.0.0.1:1/ledger?connect_timeout=2\n"), 0o600)).To(Succeed())
	for _, args := range [][]string{
		{"ledger", "export", "-A", "--ledger=postgres", "--ledger-postgres-dsn-file", dsn},
		{"ledger", "find", "default/invoice-1", "--ledger=postgres", "--ledger-postgres-dsn-file", dsn},
	} {
		r := kubectlPayments(args...)
		g.Expect(r.Code).To(Equal(cli.ExitLedgerUnavailable), r.Stderr)
		g.Expect(r.Stderr).To(ContainSubstring("the outcome ledger is unreachable"))
		g.Expect(r.Stdout+r.Stderr).NotTo(ContainSubstring("s3cret-pw"), "the DSN's password is never printed")
	}
	r := kubectlPayments("ledger", "export", "-A", "--ledger=postgres")
	g.Expect(r.Code).To(Equal(cli.ExitUsage))
	g.Expect(r.Stderr).To(ContainSubstring("--ledger=postgres needs --ledger-postgres-dsn-file"))
}
