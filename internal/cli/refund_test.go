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
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
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

// refundName is the name refund draws for a refund of job.
func refundName(job string) *regexp.Regexp {
	return regexp.MustCompile(`^` + regexp.QuoteMeta(job) + `-refund-[bcdfghjklmnpqrstvwxz2456789]{5}$`)
}

// createdName is the name of the PaymentRefund that refund -o name
// printed.
func createdName(g Gomega, r result) string {
	succeeded(g, r)
	name, ok := strings.CutPrefix(strings.TrimSpace(r.Stdout), "paymentrefund.payments.idempotency.dev/")
	g.ExpectWithOffset(1, ok).To(BeTrue(), r.Stdout)
	return name
}

// printedRefund is the PaymentRefund a --dry-run=client -o yaml printed.
func printedRefund(g Gomega, r result) paymentsv1alpha1.PaymentRefund {
	succeeded(g, r)
	var rf paymentsv1alpha1.PaymentRefund
	g.ExpectWithOffset(1, yaml.UnmarshalStrict([]byte(r.Stdout), &rf)).To(Succeed())
	return rf
}

// kubectlApply applies manifest as the administrator.
func kubectlApply(g Gomega, manifest string) {
	apply := exec.Command(kubectl, "apply", "-f", "-")
	apply.Env = append(apply.Environ(), "KUBECONFIG="+kubeconfig)
	apply.Stdin = strings.NewReader(manifest)
	out, err := apply.CombinedOutput()
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred(), string(out))
}

// deleteAndWait deletes obj and waits until it is gone (its finalizer
// comes off once the ledger holds its outcome).
func deleteAndWait(g Gomega, obj client.Object) {
	ctx := context.Background()
	g.ExpectWithOffset(1, k8s.Delete(ctx, obj)).To(Succeed())
	g.EventuallyWithOffset(1, func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object)))
	}).WithTimeout(30 * time.Second).Should(BeTrue())
}

func TestRefundPrintsTheManifestForGitOrCreatesIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, "refund")
	createJob(t, ns, "invoice-3", 3000, paymentsv1alpha1.PhaseCompleted)

	// The manifest for Git: printed, nothing created. It names the
	// payment by its job's name and key.
	r := kubectlPayments("refund", "pj/invoice-3", "-n", ns, "--amount", "1200", "--reason", "requested_by_customer", "--dry-run=client", "-o", "yaml")
	succeeded(g, r)
	golden(t, "refund-dry-run.yaml.golden", r.Stdout)
	g.Expect(refundsIn(g, ns)).To(BeEmpty(), "--dry-run=client creates nothing")
	manifest, printed := r.Stdout, printedRefund(g, r)
	g.Expect(printed.Name).To(MatchRegexp(refundName("invoice-3").String()))
	g.Expect(printed.Spec.PaymentJobRef).To(Equal(paymentsv1alpha1.PaymentJobReference{Name: "invoice-3", IdempotencyKey: "invoice-3"}))

	// --dry-run=server: the API server validates it, and keeps nothing.
	r = kubectlPayments("refund", "pj/invoice-3", "-n", ns, "--amount", "1200", "--dry-run=server")
	succeeded(g, r)
	g.Expect(r.Stdout).To(MatchRegexp(`^paymentrefund\.payments\.idempotency\.dev/invoice-3-refund-[a-z0-9]{5} created \(server dry run\)\n$`))
	g.Expect(refundsIn(g, ns)).To(BeEmpty(), "--dry-run=server creates nothing")

	// The Git flow: the printed manifest applied as it is.
	kubectlApply(g, manifest)
	rf, err := env.WaitForRefundPhase(ctx, ns, printed.Name, paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rf.Status.ProviderResponse.Amount).To(Equal(int64(1200)))

	// A name taken, another provider than the job's: refused, nothing
	// created.
	r = kubectlPayments("refund", "pj/invoice-3", "-n", ns, "--name", rf.Name, "--amount", "1")
	g.Expect(r.Code).To(Equal(cli.ExitNotApplicable), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("--name %s was used already: PaymentRefund refund/%s exists", rf.Name, rf.Name))
	r = kubectlPayments("refund", "pj/invoice-3", "-n", ns, "--provider", "other", "--amount", "1")
	g.Expect(r.Code).To(Equal(cli.ExitUsage), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("--provider other is not the PaymentProvider of pj/invoice-3 (stripe)"))
	r = kubectlPayments("refund", "pj/invoice-3", "-n", ns, "--payment-key", "order-3", "--amount", "1")
	g.Expect(r.Code).To(Equal(cli.ExitUsage), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("--payment-key order-3 is not the idempotency key of pj/invoice-3 (invoice-3)"))
	g.Expect(refundsIn(g, ns)).To(HaveLen(1))

	// More than what is left: refused before anything is created.
	r = kubectlPayments("refund", "pj/invoice-3", "-n", ns, "--amount", "1801")
	g.Expect(r.Code).To(Equal(cli.ExitNotApplicable), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("--amount 1801 is more than what is left of pj/invoice-3: 1800 usd (refunded: prefund/%s 1200)", rf.Name))
	g.Expect(refundsIn(g, ns)).To(HaveLen(1))

	// The rest, created: another name, the whole remainder.
	r = kubectlPayments("refund", "pj/invoice-3", "-n", ns, "--reason", "duplicate")
	succeeded(g, r)
	g.Expect(r.Stdout).To(MatchRegexp(`^paymentrefund\.payments\.idempotency\.dev/invoice-3-refund-[a-z0-9]{5} created\n$`))
	second := strings.TrimSuffix(strings.TrimPrefix(r.Stdout, "paymentrefund.payments.idempotency.dev/"), " created\n")
	g.Expect(second).NotTo(Equal(rf.Name))
	rf, err = env.WaitForRefundPhase(ctx, ns, second, paymentsv1alpha1.PhaseCompleted, time.Minute)
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
// the operator finds the charge in the ledger. The command says so only
// when the ledger holds the payment.
func TestRefundAfterTheJobIsGone(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, "refund-gone")
	pj := createJob(t, ns, "invoice-5", 500, paymentsv1alpha1.PhaseCompleted)
	g.Eventually(func(g Gomega) { succeeded(g, kubectlPayments("ledger", "find", "pj/invoice-5", "-n", ns)) }).
		WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	deleteAndWait(g, pj)

	r := kubectlPayments("refund", "pj/invoice-5", "-n", ns, "--amount", "200")
	g.Expect(r.Code).To(Equal(cli.ExitNotFound), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("the outcome ledger holds its payment (Completed 500 usd, charge " + pj.Status.ProviderResponse.ID))
	g.Expect(r.Stderr).To(ContainSubstring("name its PaymentProvider with --provider"))

	// What is left is checked against the ledger's entry (500).
	r = kubectlPayments("refund", "pj/invoice-5", "-n", ns, "--amount", "501", "--provider", "stripe")
	g.Expect(r.Code).To(Equal(cli.ExitNotApplicable), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("--amount 501 is more than what is left of pj/invoice-5: 500 usd (nothing refunded)"))

	name := createdName(g, kubectlPayments("refund", "pj/invoice-5", "-n", ns, "--amount", "200", "--provider", "stripe", "-o", "name"))
	g.Expect(name).To(MatchRegexp(refundName("invoice-5").String()))
	rf, err := env.WaitForRefundPhase(ctx, ns, name, paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rf.Status.ProviderResponse.Amount).To(Equal(int64(200)))
	g.Expect(rf.Status.Charge.ID).To(Equal(pj.Status.ProviderResponse.ID))
	g.Expect(rf.Spec.PaymentJobRef.IdempotencyKey).To(Equal("invoice-5"))
}

// Issue 36, path 3: a refund deleted (by hand, or its TTL) left its key in
// the ledger and at the provider. The command never proposes that key
// again (a PaymentRefund under it would be finished from the first
// refund, Completed, with no money back), and what is left counts the
// deleted refund: from the ledger, and from the provider's list of the
// charge's refunds when it can ask.
func TestRefundAfterADeletedRefundSendsMoneyBackUnderANewKey(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, "refund-again")
	pj := createJob(t, ns, "invoice-6", 500, paymentsv1alpha1.PhaseCompleted)

	first := createdName(g, kubectlPayments("refund", "pj/invoice-6", "-n", ns, "--amount", "200", "-o", "name"))
	rf1, err := env.WaitForRefundPhase(ctx, ns, first, paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	deleteAndWait(g, rf1)

	// The ledger counts the deleted refund (the provider is not asked:
	// the sandbox is on plain http, and the command says so).
	r := kubectlPayments("refund", "pj/invoice-6", "-n", ns, "--amount", "400")
	g.Expect(r.Code).To(Equal(cli.ExitNotApplicable), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("--amount 400 is more than what is left of pj/invoice-6: 300 usd (refunded: %s (no PaymentRefund; in the ledger, %s) 200)",
		first, rf1.Status.ProviderResponse.ID))
	g.Expect(r.Stderr).To(ContainSubstring("warning: the provider's list of the charge's refunds was not read"))
	// The provider's list counts it too.
	r = kubectlPayments("refund", "pj/invoice-6", "-n", ns, "--amount", "400", "--insecure-provider-hosts=127.0.0.1")
	g.Expect(r.Code).To(Equal(cli.ExitNotApplicable), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("--amount 400 is more than what is left of pj/invoice-6: 300 usd (refunded: %s (no PaymentRefund; at the provider, %s) 200)",
		first, rf1.Status.ProviderResponse.ID))
	g.Expect(r.Stderr).NotTo(ContainSubstring("warning:"))

	// The deleted refund's key is never used again: named, it is refused.
	r = kubectlPayments("refund", "pj/invoice-6", "-n", ns, "--name", first, "--amount", "100")
	g.Expect(r.Code).To(Equal(cli.ExitNotApplicable), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("--name %s was used already: the outcome ledger holds a refund under its key %s.refund/%s", first, ns, first))
	g.Expect(refundsIn(g, ns)).To(BeEmpty())

	// The rest goes back to the customer, under a new key.
	second := createdName(g, kubectlPayments("refund", "pj/invoice-6", "-n", ns, "--insecure-provider-hosts=127.0.0.1", "-o", "name"))
	g.Expect(second).NotTo(Equal(first))
	rf2, err := env.WaitForRefundPhase(ctx, ns, second, paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rf2.Status.ProviderResponse.Amount).To(Equal(int64(300)))
	g.Expect(rf2.Status.ProviderResponse.ID).NotTo(Equal(rf1.Status.ProviderResponse.ID), "a new refund, not the first one's outcome")

	r = kubectlPayments("status", "pj/invoice-6", "-n", ns, "--check-provider", "--insecure-provider-hosts=127.0.0.1", "-o", "json")
	succeeded(g, r)
	var s cli.Story
	g.Expect(json.Unmarshal([]byte(r.Stdout), &s)).To(Succeed())
	g.Expect(s.ProviderCheck.Charges).To(ConsistOf(And(HaveField("ID", pj.Status.ProviderResponse.ID), HaveField("Refunded", int64(500)))),
		"the provider gave the whole charge back")
}

// Issue 36, path 15: a refund of a mistyped job is refused; the command
// does not advise --provider when the ledger does not hold the payment
// either, and creates nothing.
func TestRefundOfAPaymentNobodyKnowsIsRefused(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, "refund-typo")
	createJob(t, ns, "order-1001", 500, paymentsv1alpha1.PhaseCompleted)

	for _, args := range [][]string{
		{"--provider", "stripe", "--amount", "100"},
		{"--amount", "100"},
		{"--provider", "stripe", "--amount", "100", "--dry-run=client", "-o", "yaml"},
	} {
		r := kubectlPayments(append([]string{"refund", "pj/order-100l", "-n", ns}, args...)...)
		g.Expect(r.Code).To(Equal(cli.ExitNotFound), "%v: %s", args, r.Stderr)
		g.Expect(r.Stderr).To(ContainSubstring("pj/order-100l not found in namespace refund-typo, and the crd outcome ledger holds no payment under its key refund-typo/order-100l"))
		g.Expect(r.Stderr).NotTo(ContainSubstring("--provider"), "no advice to name a provider for a payment nobody knows")
		g.Expect(r.Stdout).To(BeEmpty())
	}
	g.Expect(refundsIn(g, ns)).To(BeEmpty())
}

// Issue 36, path 15: two manifests printed for one job carry two names,
// so that both apply (two refunds), instead of the second failing as an
// immutable amount; both name the payment by its key.
func TestRefundManifestsPrintedTwiceDoNotCollide(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, "refund-git")
	createJob(t, ns, "invoice-8", 1000, paymentsv1alpha1.PhaseCompleted, func(pj *paymentsv1alpha1.PaymentJob) {
		pj.Spec.IdempotencyKey = "order-8"
	})

	r1 := kubectlPayments("refund", "pj/invoice-8", "-n", ns, "--amount", "100", "--dry-run=client", "-o", "yaml")
	r2 := kubectlPayments("refund", "pj/invoice-8", "-n", ns, "--amount", "200", "--dry-run=client", "-o", "yaml")
	a, b := printedRefund(g, r1), printedRefund(g, r2)
	g.Expect(a.Name).NotTo(Equal(b.Name))
	for _, rf := range []paymentsv1alpha1.PaymentRefund{a, b} {
		g.Expect(rf.Name).To(MatchRegexp(refundName("invoice-8").String()))
		g.Expect(rf.Spec.PaymentJobRef).To(Equal(paymentsv1alpha1.PaymentJobReference{Name: "invoice-8", IdempotencyKey: "order-8"}))
	}

	kubectlApply(g, r1.Stdout)
	kubectlApply(g, r2.Stdout)
	for name, amount := range map[string]int64{a.Name: 100, b.Name: 200} {
		rf, err := env.WaitForRefundPhase(ctx, ns, name, paymentsv1alpha1.PhaseCompleted, time.Minute)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rf.Status.ProviderResponse.Amount).To(Equal(amount))
	}
}

// Issue 36, path 4: a manifest in Git, applied after its job is gone (its
// TTL), finds the payment in the ledger under the job's own key
// (spec.idempotencyKey), which the command wrote into it.
func TestRefundManifestFindsItsPaymentAfterItsJobIsGone(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, "refund-gitops")
	pj := createJob(t, ns, "invoice-9", 900, paymentsv1alpha1.PhaseCompleted, func(pj *paymentsv1alpha1.PaymentJob) {
		pj.Spec.IdempotencyKey = "order-9"
	})
	r := kubectlPayments("refund", "pj/invoice-9", "-n", ns, "--amount", "300", "--dry-run=client", "-o", "yaml")
	printed := printedRefund(g, r)
	g.Expect(printed.Spec.PaymentJobRef.IdempotencyKey).To(Equal("order-9"))

	g.Eventually(func(g Gomega) { succeeded(g, kubectlPayments("ledger", "find", "order-9", "-n", ns)) }).
		WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	deleteAndWait(g, pj)

	kubectlApply(g, r.Stdout)
	rf, err := env.WaitForRefundPhase(ctx, ns, printed.Name, paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rf.Status.Charge.ID).To(Equal(pj.Status.ProviderResponse.ID))
	g.Expect(rf.Status.ProviderResponse.Amount).To(Equal(int64(300)))

	// With the job gone, its own key finds the payment: --payment-key.
	r = kubectlPayments("refund", "pj/invoice-9", "-n", ns, "--provider", "stripe", "--amount", "100")
	g.Expect(r.Code).To(Equal(cli.ExitNotFound), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("if its job set spec.idempotencyKey, give that key with --payment-key"))
	r = kubectlPayments("refund", "pj/invoice-9", "-n", ns, "--provider", "stripe", "--payment-key", "order-9", "--amount", "601")
	g.Expect(r.Code).To(Equal(cli.ExitNotApplicable), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("--amount 601 is more than what is left of pj/invoice-9: 600 usd (refunded: prefund/%s 300)", printed.Name))
	name := createdName(g, kubectlPayments("refund", "pj/invoice-9", "-n", ns, "--provider", "stripe", "--payment-key", "order-9", "-o", "name"))
	rf, err = env.WaitForRefundPhase(ctx, ns, name, paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rf.Spec.PaymentJobRef.IdempotencyKey).To(Equal("order-9"))
	g.Expect(rf.Status.ProviderResponse.Amount).To(Equal(int64(600)))
}

// A user who may read payments and refunds, but not the ledger nor the
// provider's Secret: the manifest is still printed, with warnings that say
// what was not checked; a name of their own cannot be checked against the
// ledger and is refused; a payment whose job is gone cannot be told from
// a typo, and no --provider is advised.
func TestRefundByAUserWhoCannotReadTheLedger(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, "refund-rbac")
	createJob(t, ns, "invoice-10", 700, paymentsv1alpha1.PhaseCompleted)
	g.Expect(k8s.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "refunder", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{paymentsv1alpha1.GroupVersion.Group},
			Resources: []string{"paymentjobs", "paymentrefunds", "paymentproviders"}, Verbs: []string{"get", "list"}}}})).To(Succeed())
	g.Expect(k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "refunder", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "refunder"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "refunder"}}})).To(Succeed())
	refunder, err := userKubeconfig(t.TempDir(), "refunder", nil)
	g.Expect(err).NotTo(HaveOccurred())

	r := kubectlAs(refunder, "payments", "refund", "pj/invoice-10", "-n", ns, "--amount", "100", "--dry-run=client", "-o", "yaml",
		"--insecure-provider-hosts=127.0.0.1")
	rf := printedRefund(g, r)
	g.Expect(rf.Name).To(MatchRegexp(refundName("invoice-10").String()))
	g.Expect(r.Stderr).To(ContainSubstring(`warning: the provider's list of the charge's refunds was not read (forbidden to read the credential Secret`))
	g.Expect(r.Stderr).To(MatchRegexp(`warning: the outcome ledger could not be read \(.*forbidden`))

	r = kubectlAs(refunder, "payments", "refund", "pj/invoice-10", "-n", ns, "--amount", "100", "--name", "mine", "--dry-run=client", "-o", "yaml")
	g.Expect(r.Code).To(Equal(cli.ExitForbidden), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("cannot check --name mine against the outcome ledger"))
	g.Expect(r.Stdout).To(BeEmpty())

	r = kubectlAs(refunder, "payments", "refund", "pj/invoice-1O", "-n", ns, "--amount", "100")
	g.Expect(r.Code).To(Equal(cli.ExitNotFound), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("pj/invoice-1O not found in namespace refund-rbac, and whether the outcome ledger holds its payment cannot be told"))
	g.Expect(r.Stderr).NotTo(ContainSubstring("--provider"))
	g.Expect(refundsIn(g, ns)).To(BeEmpty())
}

// A refund named by hand (not NAME-refund-...) and then deleted: the
// ledger records which charge it gave money back from, so what is left
// counts it when the provider is not asked (--check-provider=false), and
// counts it once while its PaymentRefund still exists.
func TestRefundCountsADeletedRefundNamedByHandFromTheLedger(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, "refund-byhand")
	pj := createJob(t, ns, "invoice-11", 1000, paymentsv1alpha1.PhaseCompleted)
	charge := pj.Status.ProviderResponse.ID

	byHand := &paymentsv1alpha1.PaymentRefund{
		ObjectMeta: metav1.ObjectMeta{Name: "goodwill-credit", Namespace: ns},
		Spec: paymentsv1alpha1.PaymentRefundSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: "stripe"},
			PaymentJobRef: paymentsv1alpha1.PaymentJobReference{Name: "invoice-11"}, Amount: ptr.To(int64(300))},
	}
	g.Expect(k8s.Create(ctx, byHand)).To(Succeed())
	rf, err := env.WaitForRefundPhase(ctx, ns, byHand.Name, paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) { succeeded(g, kubectlPayments("ledger", "find", "prefund/goodwill-credit", "-n", ns)) }).
		WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	// Live and in the ledger: counted once.
	r := kubectlPayments("refund", "pj/invoice-11", "-n", ns, "--amount", "800", "--check-provider=false")
	g.Expect(r.Code).To(Equal(cli.ExitNotApplicable), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("--amount 800 is more than what is left of pj/invoice-11: 700 usd (refunded: prefund/goodwill-credit 300)\n"))

	// Deleted: the ledger's entry names the charge, whatever the name.
	deleteAndWait(g, rf)
	r = kubectlPayments("refund", "pj/invoice-11", "-n", ns, "--amount", "800", "--check-provider=false", "--dry-run=client", "-o", "yaml")
	g.Expect(r.Code).To(Equal(cli.ExitNotApplicable), "stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("--amount 800 is more than what is left of pj/invoice-11: 700 usd (refunded: goodwill-credit (no PaymentRefund; in the ledger, %s) 300)",
		rf.Status.ProviderResponse.ID))
	g.Expect(r.Stdout).To(BeEmpty())
	g.Expect(refundsIn(g, ns)).To(BeEmpty())

	// The ledger's entry shows the charge the refund gave money back from.
	r = kubectlPayments("ledger", "find", "prefund/goodwill-credit", "-n", ns)
	succeeded(g, r)
	g.Expect(r.Stdout).To(ContainSubstring("%s (refunds %s)", rf.Status.ProviderResponse.ID, charge))
}
