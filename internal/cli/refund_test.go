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
	"os/exec"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/cli"
)

func refundsIn(g Gomega, ns string) []paymentsv1alpha1.PaymentRefund {
	var list paymentsv1alpha1.PaymentRefundList
	g.ExpectWithOffset(1, k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

func TestRefundPrintsTheManifestForGitOrCreatesIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, "refund")
	createJob(t, ns, "invoice-3", 3000, paymentsv1alpha1.PhaseCompleted)

	// The manifest for Git: printed, nothing created.
	r := kubectlPayments("refund", "pj/invoice-3", "-n", ns, "--amount", "1200", "--reason", "requested_by_customer", "--dry-run=client", "-o", "yaml")
	succeeded(g, r)
	golden(t, "refund-dry-run.yaml.golden", r.Stdout)
	g.Expect(refundsIn(g, ns)).To(BeEmpty(), "--dry-run=client creates nothing")
	var printed paymentsv1alpha1.PaymentRefund
	g.Expect(yaml.UnmarshalStrict([]byte(r.Stdout), &printed)).To(Succeed())

	// --dry-run=server: the API server validates it, and keeps nothing.
	r = kubectlPayments("refund", "pj/invoice-3", "-n", ns, "--amount", "1200", "--dry-run=server")
	succeeded(g, r)
	g.Expect(r.Stdout).To(Equal("paymentrefund.payments.idempotency.dev/invoice-3-refund created (server dry run)\n"))
	g.Expect(refundsIn(g, ns)).To(BeEmpty(), "--dry-run=server creates nothing")

	// The Git flow: the printed manifest applied as it is.
	apply := exec.Command(kubectl, "apply", "-f", "-")
	apply.Env = append(apply.Environ(), "KUBECONFIG="+kubeconfig)
	apply.Stdin = strings.NewReader(r0(t, ns))
	out, err := apply.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	rf, err := env.WaitForRefundPhase(ctx, ns, "invoice-3-refund", paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rf.Status.ProviderResponse.Amount).To(Equal(int64(1200)))

	// A name taken, another provider than the job's: refused, nothing
	// created.
	r = kubectlPayments("refund", "pj/invoice-3", "-n", ns, "--name", "invoice-3-refund", "--amount", "1")
	g.Expect(r.Code).To(Equal(cli.ExitNotApplicable), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("PaymentRefund refund/invoice-3-refund exists already"))
	r = kubectlPayments("refund", "pj/invoice-3", "-n", ns, "--provider", "other", "--amount", "1")
	g.Expect(r.Code).To(Equal(cli.ExitUsage), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("--provider other is not the PaymentProvider of pj/invoice-3 (stripe)"))
	g.Expect(refundsIn(g, ns)).To(HaveLen(1))

	// More than what is left: refused before anything is created.
	r = kubectlPayments("refund", "pj/invoice-3", "-n", ns, "--amount", "1801")
	g.Expect(r.Code).To(Equal(cli.ExitNotApplicable), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("--amount 1801 is more than what is left of pj/invoice-3: 1800 usd (refunded: prefund/invoice-3-refund 1200)"))
	g.Expect(refundsIn(g, ns)).To(HaveLen(1))

	// The rest, created: the next name, the whole remainder.
	r = kubectlPayments("refund", "pj/invoice-3", "-n", ns, "--reason", "duplicate")
	succeeded(g, r)
	g.Expect(r.Stdout).To(Equal("paymentrefund.payments.idempotency.dev/invoice-3-refund-2 created\n"))
	rf, err = env.WaitForRefundPhase(ctx, ns, "invoice-3-refund-2", paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rf.Status.ProviderResponse.Amount).To(Equal(int64(1800)))

	r = kubectlPayments("refund", "pj/invoice-3", "-n", ns)
	g.Expect(r.Code).To(Equal(cli.ExitNotApplicable))
	g.Expect(r.Stderr).To(ContainSubstring("pj/invoice-3 is refunded in whole already"))

	// Only a Completed payment is refunded.
	createJob(t, ns, "invoice-4", 100, "", suspendedJob)
	r = kubectlPayments("refund", "pj/invoice-4", "-n", ns, "--dry-run=client", "-o", "yaml")
	g.Expect(r.Code).To(Equal(cli.ExitNotApplicable))
	g.Expect(r.Stderr).To(ContainSubstring("only a Completed payment can be refunded"))
	g.Expect(r.Stdout).To(BeEmpty())

	r = kubectlPayments("refund", "pj/invoice-3", "-n", ns, "--reason", "because")
	g.Expect(r.Code).To(Equal(cli.ExitUsage))
	g.Expect(r.Stderr).To(ContainSubstring(`--reason "because" is not duplicate, fraudulent or requested_by_customer`))
}

// A payment whose job is gone (its TTL) is refunded through its provider:
// the operator finds the charge in the ledger.
func TestRefundAfterTheJobIsGone(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, "refund-gone")
	pj := createJob(t, ns, "invoice-5", 500, paymentsv1alpha1.PhaseCompleted)
	g.Eventually(func(g Gomega) { succeeded(g, kubectlPayments("ledger", "find", "pj/invoice-5", "-n", ns)) }).
		WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Expect(k8s.Delete(ctx, pj)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(pj), &paymentsv1alpha1.PaymentJob{}))
	}).WithTimeout(30 * time.Second).Should(BeTrue())

	r := kubectlPayments("refund", "pj/invoice-5", "-n", ns, "--amount", "200")
	g.Expect(r.Code).To(Equal(cli.ExitNotFound), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("name its PaymentProvider with --provider"))

	r = kubectlPayments("refund", "pj/invoice-5", "-n", ns, "--amount", "200", "--provider", "stripe")
	succeeded(g, r)
	rf, err := env.WaitForRefundPhase(ctx, ns, "invoice-5-refund", paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rf.Status.ProviderResponse.Amount).To(Equal(int64(200)))
	g.Expect(rf.Status.Charge.ID).To(Equal(pj.Status.ProviderResponse.ID))
}

// r0 is the manifest of the first refund of invoice-3, as printed for Git.
func r0(t *testing.T, ns string) string {
	r := kubectlPayments("refund", "pj/invoice-3", "-n", ns, "--amount", "1200", "--reason", "requested_by_customer", "--dry-run=client", "-o", "yaml")
	if r.Code != 0 {
		t.Fatal(r.Stderr)
	}
	return r.Stdout
}
