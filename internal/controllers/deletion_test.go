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

package controllers_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// providerOf is the namespace's PaymentProvider, by name.
func providerOf(ns string) *paymentsv1alpha1.PaymentProvider {
	return &paymentsv1alpha1.PaymentProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: providerName}}
}

// deleteProviderAndSecret deletes what a namespace deletion takes first.
func deleteProviderAndSecret(g Gomega, ns string) {
	ctx := context.Background()
	g.Expect(k8sClient.Delete(ctx, providerOf(ns))).To(Succeed())
	g.Expect(k8sClient.Delete(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sandbox-credentials"}})).To(Succeed())
}

// guarded reports whether the namespace's provider carries the finalizer.
func guarded(g Gomega, ns string) bool {
	return slices.Contains(getProvider(g, ns).Finalizers, paymentsv1alpha1.ProviderFinalizer)
}

// inFlight waits until the sandbox holds n charges in flight.
func inFlight(t *testing.T, entered <-chan string, n int) {
	t.Helper()
	for i := range n {
		select {
		case <-entered:
		case <-time.After(timeout):
			t.Fatalf("only %d of %d charges reached the sandbox", i, n)
		}
	}
}

// TestProviderAndSecretDeletedWhileProcessing: the PaymentProvider and its
// Secret are deleted (as a namespace deletion does) while charges are in
// flight. The provider's finalizer keeps it until the jobs are done; the
// jobs finish through the adapter kept in memory, each charged once; then
// the provider is gone.
func TestProviderAndSecretDeletedWhileProcessing(t *testing.T) {
	s := newScenario(t, overHTTP())

	gate := s.engine.Hold()
	t.Cleanup(gate.Release)
	names := jobNames("in-flight", 5)
	for _, name := range names {
		s.create(name)
	}
	inFlight(t, gate.Entered(), len(names))
	s.Eventually(func(g Gomega) { g.Expect(guarded(g, s.ns)).To(BeTrue()) }, timeout, 50*time.Millisecond).Should(Succeed())

	deleteProviderAndSecret(s, s.ns)
	s.Consistently(func(g Gomega) { g.Expect(guarded(g, s.ns)).To(BeTrue()) }, time.Second, 100*time.Millisecond).
		Should(Succeed(), "the provider stays while its jobs are Processing")
	gate.Release()

	for _, name := range names {
		job := s.waitForPhase(name, paymentsv1alpha1.PhaseCompleted)
		s.Expect(job.Status.ProviderResponse.ID).To(HavePrefix("pi_"))
	}
	stats := s.engine.Stats()
	s.Expect(stats.Charges).To(Equal(int64(len(names))))
	for _, name := range names {
		s.Expect(stats.ChargesByKey).To(HaveKeyWithValue(s.ns+"/"+name, 1))
	}
	waitForGone(s, providerOf(s.ns))
}

// TestProviderDeletedWhileProcessingStallsWithoutKeptAdapter: the process
// that was charging dies, and the provider and its Secret are deleted
// before another process takes the job over. With no adapter kept, nothing
// can tell whether the charge happened: the job stalls with
// ProviderDeleted, counted by the gauge, and the provider stays. A person
// resolves it; then the job is Completed, charged once, and the provider
// goes.
func TestProviderDeletedWhileProcessingStallsWithoutKeptAdapter(t *testing.T) {
	s := newScenario(t, overHTTP(), withoutManager())
	fast := managerConfig{lease: 2 * time.Second, timeout: time.Second}

	gate := s.engine.Hold()
	t.Cleanup(gate.Release)
	first := s.start(fast)
	s.create("orphan")
	inFlight(t, gate.Entered(), 1)
	first.crash()
	deleteProviderAndSecret(s, s.ns)
	gate.Release() // the charge the dead process asked for goes through

	s.start(fast)
	job := s.waitForStall("orphan", paymentsv1alpha1.ReasonProviderDeleted)
	s.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
	s.Expect(readyCondition(s, s.ns, "orphan").Message).To(ContainSubstring(paymentsv1alpha1.AnnotationResolve))
	s.Expect(jobsGauge(t, "paymentjob_jobs_waiting_for_deleted_provider")).To(BeNumerically(">=", 1))
	s.Expect(guarded(s, s.ns)).To(BeTrue(), "the provider stays while its job may have charged")

	intent, ok := s.engine.LookupByKey(s.ns + "/orphan")
	s.Expect(ok).To(BeTrue(), "the dead process's charge happened")
	s.resolve("orphan", "charged="+intent.ID)
	done := s.waitForPhase("orphan", paymentsv1alpha1.PhaseCompleted)
	s.Expect(done.Status.ProviderResponse.ID).To(Equal(intent.ID))
	s.expectCharges(1)
	waitForGone(s, providerOf(s.ns))
}

// TestProviderDeletedBetweenTheLookAndTheClaimChargesNothing: a job reads
// its provider (there, guarded), and before its first claim lands the
// provider is deleted and, with no job Processing through it, let go. The
// claim lands on a provider that is gone: the job takes it back, says so
// (ProviderDeleted), stays Pending, and nothing is charged.
func TestProviderDeletedBetweenTheLookAndTheClaimChargesNothing(t *testing.T) {
	claiming, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s := newScenario(t, withManager(managerConfig{
		intercept: interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if job, ok := obj.(*paymentsv1alpha1.PaymentJob); ok && job.Status.Phase == paymentsv1alpha1.PhaseProcessing && job.Status.Attempts == 1 {
				once.Do(func() { close(claiming) })
				<-release
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		}}}))
	s.create("late-claim")
	select {
	case <-claiming:
	case <-time.After(timeout):
		t.Fatal("the job never tried to claim")
	}
	s.Expect(k8sClient.Delete(context.Background(), providerOf(s.ns))).To(Succeed())
	waitForGone(s, providerOf(s.ns))
	close(release)

	s.Eventually(func(g Gomega) {
		job := s.get(g, "late-claim")
		g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhasePending))
		g.Expect(job.Status.Claim).To(BeNil())
		// Then it waits for a provider of that name, like any job.
		g.Expect(readyCondition(g, s.ns, "late-claim").Reason).To(BeElementOf(
			paymentsv1alpha1.ReasonProviderDeleted, paymentsv1alpha1.ReasonProviderNotFound))
		g.Expect(eventReasons(g, s.ns, "late-claim")).To(ContainElement(paymentsv1alpha1.ReasonProviderDeleted))
	}, timeout, 50*time.Millisecond).Should(Succeed())
	s.Consistently(func() int64 { return s.engine.Stats().Requests }, time.Second, 100*time.Millisecond).Should(BeZero())
}
