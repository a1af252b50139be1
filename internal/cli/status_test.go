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
	"regexp"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/cli"
	"github.com/idempotency-dev/paymentjob-operator/pkg/paymentjobtest"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// completedWithRefund makes a job of 1999 that is Completed, refunded by
// 500, both in the ledger and with their events recorded.
func completedWithRefund(t *testing.T, ns string) (*paymentsv1alpha1.PaymentJob, *paymentsv1alpha1.PaymentRefund) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	pj := createJob(t, ns, "invoice-1", 1999, paymentsv1alpha1.PhaseCompleted)
	rf := &paymentsv1alpha1.PaymentRefund{
		ObjectMeta: metav1.ObjectMeta{Name: "invoice-1-return", Namespace: ns},
		Spec: paymentsv1alpha1.PaymentRefundSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: "stripe"},
			PaymentJobRef: paymentsv1alpha1.PaymentJobReference{Name: "invoice-1"}, Amount: ptr.To(int64(500)),
			Reason: paymentsv1alpha1.RefundRequestedByCustomer},
	}
	g.Expect(k8s.Create(ctx, rf)).To(Succeed())
	rf, err := env.WaitForRefundPhase(ctx, ns, rf.Name, paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	for _, obj := range []string{"pj/invoice-1", "prefund/invoice-1-return"} {
		// The ledger entry and the events come a moment after the phase.
		g.Eventually(func(g Gomega) {
			var s cli.Story
			r := kubectlPayments("status", obj, "-n", ns, "-o", "json")
			succeeded(g, r)
			g.Expect(json.Unmarshal([]byte(r.Stdout), &s)).To(Succeed())
			g.Expect(s.Ledger.Found).To(BeTrue())
			g.Expect(s.Events).To(ContainElement(HaveField("Reason", paymentsv1alpha1.ReasonSucceeded)))
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	}
	return pj, rf
}

func TestStatusTellsTheWholeStory(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, "status")
	pj, rf := completedWithRefund(t, ns)

	r := kubectlPayments("status", "pj/invoice-1", "-n", ns)
	succeeded(g, r)
	golden(t, "status-job.golden", r.Stdout)
	g.Expect(r.Stdout).To(ContainSubstring(pj.Status.ProviderResponse.ID), "the charge's id")
	g.Expect(r.Stdout).To(ContainSubstring(rf.Status.ProviderResponse.ID), "the refund's id")

	r = kubectlPayments("status", "pj/invoice-1", "-n", ns, "-o", "json")
	succeeded(g, r)
	golden(t, "status-job.json.golden", r.Stdout)
	var s cli.Story
	g.Expect(json.Unmarshal([]byte(r.Stdout), &s)).To(Succeed())
	g.Expect(s.Phase).To(Equal("Completed"))
	g.Expect(s.IdempotencyKey).To(Equal(ns + "/invoice-1"))
	g.Expect(s.Ledger.Entries).To(ConsistOf(And(HaveField("Charge", pj.Status.ProviderResponse.ID),
		HaveField("Amount", int64(1999)), HaveField("Outcome", paymentsv1alpha1.LedgerCompleted))))

	r = kubectlPayments("status", "prefund/invoice-1-return", "-n", ns)
	succeeded(g, r)
	golden(t, "status-refund.golden", r.Stdout)

	r = kubectlPayments("status", "paymentjobs", "invoice-1", "-n", ns, "-o", "yaml")
	succeeded(g, r)
	g.Expect(r.Stdout).To(ContainSubstring("phase: Completed"))
}

func TestStatusChecksTheProviderReadOnly(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, "status-check")
	pj, rf := completedWithRefund(t, ns)
	before := env.Sandbox().Stats()

	r := kubectlPayments("status", "pj/invoice-1", "-n", ns, "--check-provider", "--insecure-provider-hosts=127.0.0.1", "-o", "json")
	succeeded(g, r)
	var s cli.Story
	g.Expect(json.Unmarshal([]byte(r.Stdout), &s)).To(Succeed())
	g.Expect(s.ProviderCheck).NotTo(BeNil())
	g.Expect(s.ProviderCheck.Charges).To(ConsistOf(And(
		HaveField("ID", pj.Status.ProviderResponse.ID), HaveField("Amount", int64(1999)), HaveField("State", "Succeeded"),
		HaveField("Refunds", ConsistOf(And(HaveField("ID", rf.Status.ProviderResponse.ID), HaveField("Amount", int64(500)))))),
	))
	r = kubectlPayments("status", "pj/invoice-1", "-n", ns, "--check-provider", "--insecure-provider-hosts=127.0.0.1")
	succeeded(g, r)
	golden(t, "status-check-provider.golden", r.Stdout)
	after := env.Sandbox().Stats()
	g.Expect(after.Charges).To(Equal(before.Charges), "a status never charges")
	g.Expect(after.Refunds).To(Equal(before.Refunds), "a status never refunds")
	g.Expect(r.Stdout+r.Stderr).NotTo(ContainSubstring("sk_test_paymentjobtest"), "the credential is never printed")

	// A refund's check reads the charge it refunds, with its refunds.
	r = kubectlPayments("status", "prefund/invoice-1-return", "-n", ns, "--check-provider", "--insecure-provider-hosts=127.0.0.1", "-o", "json")
	succeeded(g, r)
	s = cli.Story{}
	g.Expect(json.Unmarshal([]byte(r.Stdout), &s)).To(Succeed())
	g.Expect(s.ProviderCheck.Key).To(Equal(ns + "/invoice-1"))
	g.Expect(s.ProviderCheck.Charges).To(ConsistOf(And(HaveField("ID", pj.Status.ProviderResponse.ID),
		HaveField("Refunds", ContainElement(HaveField("ID", rf.Status.ProviderResponse.ID))))))

	// Without the insecure host, the sandbox's http endpoint is refused,
	// as the manager refuses it, and the command says which field.
	// The rest of the story is still told, with why the provider was not
	// asked.
	r = kubectlPayments("status", "pj/invoice-1", "-n", ns, "--check-provider")
	succeeded(g, r)
	g.Expect(r.Stdout).To(ContainSubstring("At the provider (read-only): cannot call PaymentProvider " + ns + "/stripe"))
	g.Expect(r.Stdout).To(ContainSubstring("spec.stripe.apiBase"))
	g.Expect(r.Stdout).To(ContainSubstring("--insecure-provider-hosts"))
	g.Expect(r.Stdout).To(ContainSubstring("Ledger (crd):"))
}

// statusNamespace is newNamespace for the status tests that share one of
// testNamespaces: it creates the namespace and its provider when the
// first of them runs.
func statusNamespace(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	var ns corev1.Namespace
	switch err := k8s.Get(ctx, client.ObjectKey{Name: name}, &ns); {
	case apierrors.IsNotFound(err):
		return newNamespace(t, name)
	case err != nil:
		t.Fatal(err)
	}
	return name
}

// refundAtTheDashboard refunds amount of the charge of pj at the sandbox
// directly, as a person does in the provider's dashboard: under no key
// the operator knows.
func refundAtTheDashboard(t *testing.T, pj *paymentsv1alpha1.PaymentJob, amount int64) {
	t.Helper()
	_, _, err := env.Sandbox().CreateRefund("dashboard-"+pj.Namespace+"-"+pj.Name,
		sandbox.RefundParams{PaymentIntent: pj.Status.ProviderResponse.ID, Amount: amount})
	if err != nil {
		t.Fatal(err)
	}
}

// A job refunded in part through the operator, once over what is left
// (Failed before anything was sent) and once at the dashboard: status
// says what was refunded and what is left, why the refund failed, that
// the dashboard's refund is counted only with --check-provider, and what
// to run next.
func TestStatusShowsWhatWasRefundedAndWhatIsLeft(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := statusNamespace(t, "status")
	pj := createJob(t, ns, "invoice-2", 2000, paymentsv1alpha1.PhaseCompleted)
	_, err := env.CreateRefund(ctx, ns, "invoice-2-part", "invoice-2", paymentjobtest.RefundOptions{Amount: 500})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = env.WaitForRefundPhase(ctx, ns, "invoice-2-part", paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = env.CreateRefund(ctx, ns, "invoice-2-over", "invoice-2", paymentjobtest.RefundOptions{Amount: 5000})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = env.WaitForRefundPhase(ctx, ns, "invoice-2-over", paymentsv1alpha1.PhaseFailed, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	refundAtTheDashboard(t, pj, 300)
	// 1500 is left as the cluster counts, 1200 at the provider: the
	// operator reads the provider's list and refuses it unsent.
	_, err = env.CreateRefund(ctx, ns, "invoice-2-late", "invoice-2", paymentjobtest.RefundOptions{Amount: 1500})
	g.Expect(err).NotTo(HaveOccurred())
	late, err := env.WaitForRefundPhase(ctx, ns, "invoice-2-late", paymentsv1alpha1.PhaseFailed, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(late.Status.Failure.Reason).To(Equal(paymentsv1alpha1.ReasonRefundExceedsCharge))
	g.Eventually(func(g Gomega) {
		r := kubectlPayments("status", "pj/invoice-2", "-n", ns)
		succeeded(g, r)
		g.Expect(r.Stdout).To(ContainSubstring("Normal  Succeeded"))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	// Without the provider: the operator's refunds, and how to see the
	// others.
	r := kubectlPayments("status", "pj/invoice-2", "-n", ns)
	succeeded(g, r)
	golden(t, "status-refunds.golden", r.Stdout)
	g.Expect(r.Stdout).To(MatchRegexp(`Refunded:\s+500 of 2000 usd, 1500 left \(refunds made outside the operator, in the dashboard, ` +
		`are not counted: add --check-provider to see them\)`))
	g.Expect(r.Stdout).To(MatchRegexp(`invoice-2-over\s+Failed\s+5000 usd\s+-\s+RefundExceedsCharge: `))
	g.Expect(r.Stdout).To(ContainSubstring("kubectl payments refund pj/invoice-2 -n status --amount 1500"))

	// With the provider (its http host from the environment): the
	// dashboard's refund counts, marked as made outside the operator.
	t.Setenv("KUBECTL_PAYMENTS_INSECURE_PROVIDER_HOSTS", "127.0.0.1")
	r = kubectlPayments("status", "pj/invoice-2", "-n", ns, "--check-provider")
	succeeded(g, r)
	golden(t, "status-refunds-provider.golden", r.Stdout)
	g.Expect(r.Stdout).To(MatchRegexp(`Refunded:\s+800 of 2000 usd, 1200 left \(the provider's list; 300 of it refunded outside the operator\)`))
	g.Expect(r.Stdout).To(ContainSubstring("kubectl payments refund pj/invoice-2 -n status --amount 1200"))

	r = kubectlPayments("status", "pj/invoice-2", "-n", ns, "--check-provider", "-o", "json")
	succeeded(g, r)
	var s cli.Story
	g.Expect(json.Unmarshal([]byte(r.Stdout), &s)).To(Succeed())
	g.Expect(s.Refunded).NotTo(BeNil())
	g.Expect(*s.Refunded).To(And(HaveField("Amount", int64(2000)), HaveField("Refunded", int64(800)), HaveField("Left", int64(1200)),
		HaveField("CountedAtProvider", true)))
	g.Expect(s.Refunded.Refunds).To(ConsistOf(
		And(HaveField("Name", "prefund/invoice-2-part"), HaveField("Amount", int64(500)), HaveField("Outside", false)),
		And(HaveField("Amount", int64(300)), HaveField("Outside", true))))
	g.Expect(s.Refunds).To(ContainElement(And(HaveField("Name", "invoice-2-over"), HaveField("Why", HavePrefix("RefundExceedsCharge: ")))))
	g.Expect(s.Next).To(ContainElement(HaveField("Command", "kubectl payments refund pj/invoice-2 -n status --amount 1200")))

	// The refund that failed before it was sent: the charge it refunds,
	// what the ledger records of it (nothing), and the runbook.
	r = kubectlPayments("status", "prefund/invoice-2-over", "-n", ns, "--check-provider")
	succeeded(g, r)
	golden(t, "status-refund-failed.golden", r.Stdout)
	g.Expect(r.Stdout).To(MatchRegexp(`Charge refunded:\s+800 of 2000 usd, 1200 left`))
	g.Expect(r.Stdout).To(ContainSubstring("not recorded: the refund failed before anything was sent to the provider, so no money moved"))
	g.Expect(r.Stdout).NotTo(ContainSubstring("written when the payment finishes"))
	g.Expect(r.Stdout).To(ContainSubstring("docs/operations.md#a-refund-is-failed-with-refundexceedscharge"))

	g.Expect(r.Stdout).To(ContainSubstring("kubectl payments refund pj/invoice-2 -n status --amount 1200"))

	// ledger find says the same: nothing is recorded, and not that the
	// refund did not finish.
	for _, name := range []string{"invoice-2-over", "invoice-2-late"} {
		r = kubectlPayments("ledger", "find", "prefund/"+name, "-n", ns)
		g.Expect(r.Code).To(Equal(cli.ExitNotFound), r.Stderr)
		g.Expect(r.Stderr).To(ContainSubstring("not recorded: the refund failed before anything was sent to the provider, so no money moved"))
		g.Expect(r.Stderr).NotTo(ContainSubstring("did not finish"))
	}
	r = kubectlPayments("ledger", "find", "prefund/invoice-2-late", "-n", ns)
	g.Expect(r.Code).To(Equal(cli.ExitNotFound), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("not recorded: the refund failed before anything was sent to the provider, so no money moved"))
	g.Expect(r.Stderr).NotTo(ContainSubstring("did not finish"))
}

// A charge refunded in whole at the dashboard: refund reads the
// provider's list (its http host from the environment) and refuses, as
// it refuses an amount over what is left, naming the outside refund.
// Without the host, the refusal to call the provider names the plugin's
// flag and variable, not the manager's.
func TestRefundRefusesAChargeRefundedOutsideTheOperator(t *testing.T) {
	g := NewWithT(t)
	ns := statusNamespace(t, "status-check")
	pj := createJob(t, ns, "invoice-3", 1000, paymentsv1alpha1.PhaseCompleted)
	refundAtTheDashboard(t, pj, 0)

	t.Setenv("KUBECTL_PAYMENTS_INSECURE_PROVIDER_HOSTS", "")
	r := kubectlPayments("refund", "pj/invoice-3", "-n", ns, "--dry-run=client", "-o", "yaml")
	succeeded(g, r)
	g.Expect(r.Stderr).To(ContainSubstring(`spec.stripe.apiBase is plain http to "127.0.0.1"`))
	g.Expect(r.Stderr).To(ContainSubstring("--insecure-provider-hosts or in the environment variable KUBECTL_PAYMENTS_INSECURE_PROVIDER_HOSTS"))
	g.Expect(r.Stderr).NotTo(ContainSubstring("manager's"))

	t.Setenv("KUBECTL_PAYMENTS_INSECURE_PROVIDER_HOSTS", "localhost, 127.0.0.1")
	r = kubectlPayments("refund", "pj/invoice-3", "-n", ns)
	g.Expect(r.Code).To(Equal(cli.ExitNotApplicable), "stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("pj/invoice-3 is refunded in whole already (refunds made outside the operator " +
		"(at the provider, without a key; the dashboard) 1000)"))
	g.Expect(r.Stdout).To(BeEmpty())
	g.Expect(refundsIn(g, ns)).NotTo(ContainElement(HaveField("Spec.PaymentJobRef.Name", "invoice-3")))
}

// A stuck job: status says to ask the provider, then, once it was asked
// and holds nothing under the key, the resolution to run.
func TestStatusSaysWhatToRunNextForAStuckJob(t *testing.T) {
	g := NewWithT(t)
	ns := statusNamespace(t, "status-check")
	stalledJob(t, ns, "invoice-4")

	r := kubectlPayments("status", "pj/invoice-4", "-n", ns)
	succeeded(g, r)
	golden(t, "status-stalled.golden", stalledScrubber.Replace(r.Stdout))
	g.Expect(r.Stdout).To(ContainSubstring("Next:\n  Ask the provider (read-only) what it holds under the payment's key:\n" +
		"    kubectl payments status pj/invoice-4 -n status-check --check-provider\n"))
	g.Expect(r.Stdout).To(ContainSubstring("read docs/operations.md#a-job-is-stalled-with-retriesexhausted"))

	// Every attempt failed before the sandbox committed: once the
	// search lag (1 s) is over, the provider holds nothing under the key.
	g.Eventually(func(g Gomega) {
		r = kubectlPayments("status", "pj/invoice-4", "-n", ns, "--check-provider", "--insecure-provider-hosts=127.0.0.1")
		succeeded(g, r)
		g.Expect(r.Stdout).To(ContainSubstring("    kubectl payments resolve pj/invoice-4 -n status-check --not-charged\n"))
	}).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	g.Expect(r.Stdout).NotTo(ContainSubstring("--charged"))
}

// stalledScrubber replaces, beyond scrub's, what a stalled job's
// screen draws anew each run: the provider's request ids, the claim's
// holder in an event, the first retry's jittered delay.
var stalledScrubber = regexpReplacer{
	{regexp.MustCompile(`\breq_[A-Za-z0-9]+`), "req_<id>"},
	{regexp.MustCompile(`claimed by \S+ until`), "claimed by <holder> until"},
	{regexp.MustCompile(`\bin \d+ms\b`), "in <age>"},
}

type regexpReplacer []struct {
	re   *regexp.Regexp
	with string
}

// Replace applies every replacement of r to s.
func (r regexpReplacer) Replace(s string) string {
	for _, x := range r {
		s = x.re.ReplaceAllString(s, x.with)
	}
	return s
}

// A user with the payment roles of config/rbac but not view (no events):
// status tells the rest of the story and says why the events are
// missing.
func TestStatusWithoutEventsTellsTheRest(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := statusNamespace(t, "status")
	createJob(t, ns, "invoice-5", 400, paymentsv1alpha1.PhaseCompleted)
	for _, role := range []string{"paymentjob_viewer_role", "paymentrefund_editor_role", "paymentprovider_viewer_role"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", role+".yaml"))
		g.Expect(err).NotTo(HaveOccurred())
		var cr rbacv1.ClusterRole
		g.Expect(yaml.Unmarshal(b, &cr)).To(Succeed())
		if err := k8s.Create(ctx, &cr); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		g.Expect(k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "refunds-only-" + cr.Name, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "refunds-only"}}})).To(Succeed())
	}
	user, err := userKubeconfig(t.TempDir(), "refunds-only", nil)
	g.Expect(err).NotTo(HaveOccurred())

	r := kubectlAs(user, "payments", "status", "pj/invoice-5", "-n", ns)
	succeeded(g, r)
	g.Expect(r.Stdout).To(MatchRegexp(`Phase:\s+Completed`))
	g.Expect(r.Stdout).To(MatchRegexp(`Refunded:\s+0 of 400 usd, 400 left`))
	g.Expect(r.Stdout).To(ContainSubstring(`Events: cannot be read: forbidden (events is forbidden: User "refunds-only" cannot list resource "events"`))
	g.Expect(r.Stdout).To(ContainSubstring("the view role (or get and list on events) shows them"))
}

// A stuck job whose charge went through (the sandbox commits every
// request and loses its answer): once the provider was asked, status
// names the charge it holds under the payment's own key and the
// resolution that says so.
func TestStatusNamesTheChargeTheProviderHoldsForAStuckJob(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := statusNamespace(t, "status-check")
	env.Sandbox().FailNextAny(sandbox.FaultAfterCommit, 1_000_000)
	t.Cleanup(func() { env.Sandbox().FailNextAny(sandbox.FaultAfterCommit, 0) })
	createJob(t, ns, "invoice-6", 2600, "", func(pj *paymentsv1alpha1.PaymentJob) { pj.Spec.BackoffLimit = ptr.To(int32(1)) })
	var pj paymentsv1alpha1.PaymentJob
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "invoice-6"}, &pj)).To(Succeed())
		g.Expect(pj.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
		g.Expect(meta.IsStatusConditionTrue(pj.Status.Conditions, paymentsv1alpha1.ConditionStalled)).To(BeTrue())
	}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
	charge, ok := env.Sandbox().LookupByKey(ns + "/invoice-6")
	g.Expect(ok).To(BeTrue(), "the sandbox committed the charge")

	var r result
	g.Eventually(func(g Gomega) {
		r = kubectlPayments("status", "pj/invoice-6", "-n", ns, "--check-provider", "--insecure-provider-hosts=127.0.0.1")
		succeeded(g, r)
		g.Expect(r.Stdout).To(ContainSubstring("    kubectl payments resolve pj/invoice-6 -n status-check --charged=" + charge.ID + "\n"))
	}).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	g.Expect(r.Stdout).NotTo(ContainSubstring("--not-charged"))
}
