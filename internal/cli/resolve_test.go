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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/cli"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// stalledJob makes a job that is Processing and Stalled: the sandbox
// fails every charge before it commits, so nothing is charged and the
// job's one allowed uncertain attempt is used up. The provider's search
// lag is 1 s, so that not-charged can be accepted in the test.
func stalledJob(t *testing.T, ns, name string) *paymentsv1alpha1.PaymentJob {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	var pp paymentsv1alpha1.PaymentProvider
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "stripe"}, &pp)).To(Succeed())
	pp.Spec.Lookup = &paymentsv1alpha1.ProviderLookup{SearchLagSeconds: ptr.To(int32(1))}
	g.Expect(k8s.Update(ctx, &pp)).To(Succeed())
	_, err := env.WaitForProviderReady(ctx, ns, "stripe", time.Minute)
	g.Expect(err).NotTo(HaveOccurred())

	env.Sandbox().FailNext(sandbox.FaultBeforeCommit, 1_000_000)
	t.Cleanup(func() { env.Sandbox().FailNext(sandbox.FaultBeforeCommit, 0) })
	createJob(t, ns, name, 2500, "", func(pj *paymentsv1alpha1.PaymentJob) { pj.Spec.BackoffLimit = ptr.To(int32(1)) })
	var pj paymentsv1alpha1.PaymentJob
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pj)).To(Succeed())
		g.Expect(pj.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
		g.Expect(meta.IsStatusConditionTrue(pj.Status.Conditions, paymentsv1alpha1.ConditionStalled)).To(BeTrue())
	}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
	return &pj
}

func TestResolveShowsThePlanThenSetsTheAnnotation(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, "resolve")
	pj := stalledJob(t, ns, "invoice-7")

	// --dry-run says what the operator will check, and changes nothing.
	r := kubectlPayments("resolve", "pj/invoice-7", "-n", ns, "--not-charged", "--dry-run")
	succeeded(g, r)
	g.Expect(r.Stdout).To(ContainSubstring("is Processing and Stalled (RetriesExhausted"))
	g.Expect(r.Stdout).To(ContainSubstring("older than the provider's search lag (1s"))
	g.Expect(r.Stdout).To(ContainSubstring("look the key " + ns + "/invoice-7 up at PaymentProvider stripe"))
	g.Expect(r.Stdout).To(ContainSubstring("Dry run: the annotation was not set."))
	var after paymentsv1alpha1.PaymentJob
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pj), &after)).To(Succeed())
	g.Expect(after.Annotations).NotTo(HaveKey(paymentsv1alpha1.AnnotationResolve), "a dry run sets nothing")

	r = kubectlPayments("resolve", "pj/invoice-7", "-n", ns, "--charged=pi_typo", "--dry-run")
	succeeded(g, r)
	g.Expect(r.Stdout).To(ContainSubstring("read pi_typo at PaymentProvider stripe (by its id, so without search lag)"))
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pj), &after)).To(Succeed())
	g.Expect(after.Annotations).NotTo(HaveKey(paymentsv1alpha1.AnnotationResolve), "a dry run sets nothing")

	r = kubectlPayments("resolve", "pj/invoice-7", "-n", ns, "--charged=pi_typo", "--dry-run=server")
	succeeded(g, r)
	g.Expect(r.Stdout).To(ContainSubstring("Server dry run: the API server accepts the annotation; it was not set."))
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pj), &after)).To(Succeed())
	g.Expect(after.Annotations).NotTo(HaveKey(paymentsv1alpha1.AnnotationResolve), "a server dry run sets nothing")

	r = kubectlPayments("resolve", "pj/invoice-7", "-n", ns, "--charged=pi with space")
	g.Expect(r.Code).To(Equal(cli.ExitUsage))
	g.Expect(r.Stderr).To(ContainSubstring("must be 1 to 255 visible ASCII characters"))

	// A wrong answer: the provider does not know pi_typo, the operator
	// refuses it, and the same value is not set again.
	r = kubectlPayments("resolve", "pj/invoice-7", "-n", ns, "--charged=pi_typo")
	succeeded(g, r)
	_, err := env.WaitForEvent(ctx, pj, paymentsv1alpha1.ReasonResolutionRefused, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	// The event comes before the status the check wrote is put back to
	// Stalled; resolve refuses a job that is not Stalled before it looks
	// at the annotation.
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pj), &after)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(after.Status.Conditions, paymentsv1alpha1.ConditionStalled)).To(BeTrue())
	}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
	var job *paymentsv1alpha1.PaymentJob
	r = kubectlPayments("resolve", "pj/invoice-7", "-n", ns, "--charged=pi_typo")
	g.Expect(r.Code).To(Equal(cli.ExitNotApplicable), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("already has payments.idempotency.dev/resolve=charged=pi_typo"))

	// The answer: nothing was charged (every attempt failed before it
	// committed), so the operator accepts not-charged after the lag.
	r = kubectlPayments("resolve", "pj/invoice-7", "-n", ns, "--not-charged")
	succeeded(g, r)
	g.Expect(r.Stdout).To(ContainSubstring("It has payments.idempotency.dev/resolve=charged=pi_typo, which this replaces."))
	g.Expect(r.Stdout).To(ContainSubstring("Annotation set."))
	job, err = env.WaitForPhase(ctx, ns, "invoice-7", paymentsv1alpha1.PhaseFailed, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(job.Status.Failure.Reason).To(Equal(paymentsv1alpha1.ReasonResolved))
	g.Expect(job.Status.Resolution.Value).To(Equal("not-charged"))
	g.Expect(env.Charges(ns+"/invoice-7")).To(BeZero(), "a resolution never charges")

	// On a finished job the operator would refuse the annotation: the
	// command says so and changes nothing.
	r = kubectlPayments("resolve", "pj/invoice-7", "-n", ns, "--charged=pi_x")
	g.Expect(r.Code).To(Equal(cli.ExitNotApplicable), r.Stderr)
	g.Expect(r.Stderr).To(ContainSubstring("pj/invoice-7 in namespace " + ns + " is Failed and not Stalled"))
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pj), &after)).To(Succeed())
	g.Expect(after.Annotations[paymentsv1alpha1.AnnotationResolve]).To(Equal("not-charged"))

	r = kubectlPayments("resolve", "pj/invoice-7", "-n", ns)
	g.Expect(r.Code).To(Equal(cli.ExitUsage))
	g.Expect(r.Stderr).To(ContainSubstring("exactly one of --charged=ID or --not-charged"))
}

func TestApproveSendsASuspendedPayment(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, "approve")
	createJob(t, ns, "invoice-9", 700, "", suspendedJob)
	g.Eventually(func(g Gomega) {
		var pj paymentsv1alpha1.PaymentJob
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "invoice-9"}, &pj)).To(Succeed())
		g.Expect(meta.FindStatusCondition(pj.Status.Conditions, paymentsv1alpha1.ConditionReconciling)).
			To(HaveField("Reason", paymentsv1alpha1.ReasonSuspended))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	_, err := env.WaitForEvent(ctx, &paymentsv1alpha1.PaymentJob{ObjectMeta: metav1.ObjectMeta{Name: "invoice-9", Namespace: ns}},
		paymentsv1alpha1.ReasonSuspended, 30*time.Second)
	g.Expect(err).NotTo(HaveOccurred())

	r := kubectlPayments("status", "invoice-9", "-n", ns)
	succeeded(g, r)
	golden(t, "status-suspended.golden", r.Stdout)

	r = kubectlPayments("approve", "pj/invoice-9", "-n", ns, "--dry-run")
	succeeded(g, r)
	g.Expect(r.Stdout).To(ContainSubstring("would be approved"))
	var pj paymentsv1alpha1.PaymentJob
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "invoice-9"}, &pj)).To(Succeed())
	g.Expect(*pj.Spec.Suspend).To(BeTrue(), "a dry run changes nothing")
	g.Expect(env.Charges(ns + "/invoice-9")).To(BeZero())

	r = kubectlPayments("approve", "pj/invoice-9", "-n", ns)
	succeeded(g, r)
	g.Expect(r.Stdout).To(ContainSubstring("approved"))
	_, err = env.WaitForPhase(ctx, ns, "invoice-9", paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Charges(ns + "/invoice-9")).To(Equal(1))

	r = kubectlPayments("approve", "pj/invoice-9", "-n", ns)
	succeeded(g, r)
	g.Expect(r.Stdout).To(ContainSubstring("is not suspended (phase Completed): nothing to approve"))

	// A job Git manages: the command warns that Git must change too.
	createJob(t, ns, "invoice-10", 700, "", suspendedJob, func(pj *paymentsv1alpha1.PaymentJob) {
		pj.Labels = map[string]string{"kustomize.toolkit.fluxcd.io/name": "billing"}
	})
	r = kubectlPayments("approve", "pj/invoice-10", "-n", ns, "--dry-run")
	succeeded(g, r)
	g.Expect(r.Stderr).To(ContainSubstring("is managed by Flux: set spec.suspend to false in Git too"))
}
