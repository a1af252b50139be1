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

package controller_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controller"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// TestProviderAndSecretDeletedWhileProcessing: the PaymentProvider and its
// Secret are deleted (as a namespace deletion does) while charges are in
// flight. The provider's finalizer keeps it until the jobs are done; the
// jobs finish through the adapter kept in memory, each charged once; then
// the provider is gone.
func TestProviderAndSecretDeletedWhileProcessing(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns, engine := newSandboxNamespace(t)
	startManager(t, managerConfig{namespaces: []string{ns}, build: loopbackAdapters()})

	gate := engine.Hold()
	t.Cleanup(gate.Release)
	names := jobNames("in-flight", 5)
	for _, name := range names {
		createJob(t, ns, name)
	}
	inFlight(t, gate.Entered(), len(names))
	g.Eventually(func(g Gomega) { g.Expect(guarded(g, ns)).To(BeTrue()) }, timeout, 50*time.Millisecond).Should(Succeed())

	deleteProviderAndSecret(g, ns)
	g.Consistently(func(g Gomega) { g.Expect(guarded(g, ns)).To(BeTrue()) }, time.Second, 100*time.Millisecond).
		Should(Succeed(), "the provider stays while its jobs are Processing")
	gate.Release()

	for _, name := range names {
		job := waitForPhase(t, ns, name, paymentsv1alpha1.PhaseCompleted)
		g.Expect(job.Status.ProviderResponse.ID).To(HavePrefix("pi_"))
	}
	stats := engine.Stats()
	g.Expect(stats.Charges).To(Equal(int64(len(names))))
	for _, name := range names {
		g.Expect(stats.ChargesByKey).To(HaveKeyWithValue(ns+"/"+name, 1))
	}
	expectGone(g, ns)
}

// TestProviderDeletedWhileProcessingStallsWithoutKeptAdapter: the process
// that was charging dies, and the provider and its Secret are deleted
// before another process takes the job over. With no adapter kept, nothing
// can tell whether the charge happened: the job stalls with
// ProviderDeleted, counted by the gauge, and the provider stays. A person
// resolves it; then the job is Completed, charged once, and the provider
// goes.
func TestProviderDeletedWhileProcessingStallsWithoutKeptAdapter(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns, engine := newSandboxNamespace(t)
	fast := managerConfig{namespaces: []string{ns}, build: loopbackAdapters(), lease: 2 * time.Second, timeout: time.Second}

	gate := engine.Hold()
	t.Cleanup(gate.Release)
	first := startManager(t, fast)
	createJob(t, ns, "orphan")
	inFlight(t, gate.Entered(), 1)
	first.crash()
	deleteProviderAndSecret(g, ns)
	gate.Release() // the charge the dead process asked for goes through

	startManager(t, fast)
	job := waitForStall(t, ns, "orphan", controller.ReasonProviderDeleted)
	g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
	g.Expect(readyCondition(g, ns, "orphan").Message).To(ContainSubstring(paymentsv1alpha1.AnnotationResolve))
	g.Expect(gaugeValue(t, "paymentjob_jobs_waiting_for_deleted_provider")).To(BeNumerically(">=", 1))
	g.Expect(guarded(g, ns)).To(BeTrue(), "the provider stays while its job may have charged")

	intent, ok := engine.LookupByKey(ns + "/orphan")
	g.Expect(ok).To(BeTrue(), "the dead process's charge happened")
	annotateResolve(t, ns, "orphan", "charged="+intent.ID)
	done := waitForPhase(t, ns, "orphan", paymentsv1alpha1.PhaseCompleted)
	g.Expect(done.Status.ProviderResponse.ID).To(Equal(intent.ID))
	g.Expect(engine.Stats().Charges).To(Equal(int64(1)))
	expectGone(g, ns)
}

// TestProviderDeletedBetweenTheLookAndTheClaimChargesNothing: a job reads
// its provider (there, guarded), and before its first claim lands the
// provider is deleted and, with no job Processing through it, let go. The
// claim lands on a provider that is gone: the job takes it back, says so
// (ProviderDeleted), stays Pending, and nothing is charged.
func TestProviderDeletedBetweenTheLookAndTheClaimChargesNothing(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t, true)
	engine := sandbox.NewEngine()
	claiming, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	startManager(t, managerConfig{namespaces: []string{ns}, provider: sandbox.NewProvider(engine),
		intercept: interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if job, ok := obj.(*paymentsv1alpha1.PaymentJob); ok && job.Status.Phase == paymentsv1alpha1.PhaseProcessing && job.Status.Attempts == 1 {
				once.Do(func() { close(claiming) })
				<-release
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		}}})
	createJob(t, ns, "late-claim")
	select {
	case <-claiming:
	case <-time.After(timeout):
		t.Fatal("the job never tried to claim")
	}
	g.Expect(k8sClient.Delete(context.Background(), &paymentsv1alpha1.PaymentProvider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: providerName}})).To(Succeed())
	expectGone(g, ns)
	close(release)

	g.Eventually(func(g Gomega) {
		job := getJob(g, ns, "late-claim")
		g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhasePending))
		g.Expect(job.Status.Claim).To(BeNil())
		// Then it waits for a provider of that name, like any job.
		g.Expect(readyCondition(g, ns, "late-claim").Reason).To(BeElementOf(
			controller.ReasonProviderDeleted, controller.ReasonProviderNotFound))
		g.Expect(eventReasons(g, ns, "late-claim")).To(ContainElement(controller.ReasonProviderDeleted))
	}, timeout, 50*time.Millisecond).Should(Succeed())
	g.Consistently(func() int64 { return engine.Stats().Requests }, time.Second, 100*time.Millisecond).Should(BeZero())
}
