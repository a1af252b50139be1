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

// The money-safety paths of an outside review: a not-charged resolution
// against a lagging search, a ledger hit made at another account or mode,
// a recycled namespace name, and a forged attribution.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/sandboxprovider"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// searchLag sets the provider's spec.lookup.searchLagSeconds.
func searchLag(seconds int32) func(*paymentsv1alpha1.PaymentProvider) {
	return func(pp *paymentsv1alpha1.PaymentProvider) {
		if pp.Spec.Lookup == nil {
			pp.Spec.Lookup = &paymentsv1alpha1.ProviderLookup{}
		}
		pp.Spec.Lookup.SearchLagSeconds = ptr.To(seconds)
	}
}

// expectWaiting waits until the job has a ResolutionWaiting event that
// names the provider's search lag.
func (s *scenario) expectWaiting(name string) {
	s.t.Helper()
	s.Eventually(func(g Gomega) []string { return notes(g, s.ns, name, paymentsv1alpha1.ReasonResolutionWaiting) }, timeout).
		Should(ContainElement(ContainSubstring("spec.lookup.searchLagSeconds")))
}

// (1) A Stalled job whose last attempt committed a charge and lost the
// answer is resolved as not-charged right away: the provider's search
// (Stripe's, over HTTP, lagging by 2 s here) does not show the charge yet.
// The resolution waits until the attempt is older than the provider's
// search lag (4 s), making no attempt meanwhile; then the search shows the
// charge and the resolution is refused. Without a charge, it resolves.
func TestNotChargedWaitsOutTheSearchLag(t *testing.T) {
	t.Parallel()
	const lag = 4 * time.Second

	t.Run("an attempt whose answer was lost: not resolved, then refused as charged", func(t *testing.T) {
		s := newScenario(t, overHTTP(), withEngine(sandbox.WithSearchLag(2*time.Second)), withProvider(searchLag(4)))
		s.engine.FailNextAny(sandbox.FaultAfterCommit, 1_000_000)
		s.stall("lost")
		s.Expect(s.engine.Stats().Charges).To(Equal(int64(1)), "the attempt charged; its answer was lost")

		s.resolve("lost", "not-charged")
		s.expectWaiting("lost")
		waiting := s.job("lost")
		s.Expect(waiting.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
		s.Expect(waiting.Status.Resolution).To(BeNil())

		s.expectRefused("lost", "the provider holds charge")
		job := s.job("lost")
		s.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing), "never Failed while the customer was charged")
		s.Expect(job.Status.Resolution).To(BeNil())
		for _, e := range eventsAbout(s, s.ns, "lost") {
			if e.Reason == paymentsv1alpha1.ReasonResolutionRefused && strings.Contains(e.Note, "the provider holds charge") {
				s.Expect(e.EventTime.Sub(waiting.Status.Claim.AcquiredAt.Time)).To(BeNumerically(">=", lag),
					"checked only once the attempt is older than the lag")
			}
		}
		s.Expect(eventReasons(s, s.ns, "lost")).NotTo(ContainElement(paymentsv1alpha1.ReasonResolved))

		// The answers come back: the retry replays the charge.
		s.engine.FailNextAny(sandbox.FaultAfterCommit, 0)
		job = s.waitForPhase("lost", paymentsv1alpha1.PhaseCompleted)
		s.Expect(job.Status.ProviderResponse.Replayed).To(BeTrue())
		s.expectCharges(1)
	})

	t.Run("no attempt ever charged: resolved once the lag has passed", func(t *testing.T) {
		s := newScenario(t, overHTTP(), withEngine(sandbox.WithSearchLag(2*time.Second)), withProvider(searchLag(4)))
		s.engine.FailNextAny(sandbox.FaultBeforeCommit, 1_000_000)
		s.stall("never")

		s.resolve("never", "not-charged")
		s.expectWaiting("never")
		before := s.job("never")
		s.Expect(before.Status.Resolution).To(BeNil(), "not resolved before the lag has passed")

		job := s.waitForFinished("never")
		s.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseFailed))
		s.Expect(job.Status.Resolution.Verified).To(BeTrue())
		// resolution.at is written in whole seconds.
		s.Expect(job.Status.Resolution.At.Sub(before.Status.Claim.AcquiredAt.Time)).To(BeNumerically(">=", lag-time.Second))
		s.Expect(job.Status.Attempts).To(Equal(before.Status.Attempts), "no attempt while the resolution waited")
		s.expectCharges(0)
	})

	t.Run("Stripe's default margin is 15 minutes", func(t *testing.T) {
		s := newScenario(t, overHTTP())
		s.engine.FailNextAny(sandbox.FaultBeforeCommit, 1_000_000)
		s.stall("default")
		s.resolve("default", "not-charged")
		s.Eventually(func(g Gomega) []string { return notes(g, s.ns, "default", paymentsv1alpha1.ReasonResolutionWaiting) }, timeout).
			Should(ContainElement(ContainSubstring("less than 15m0s ago")))
		s.Expect(s.job("default").Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
	})
}

// (2) A job finished at one account (engine A), deleted, and created again
// once its PaymentProvider reaches another account (engine B), or the same
// account in live mode: the ledger's record is not this account's payment.
// The job stalls with ProviderChanged naming both, B sees no request; with
// the documented opt-in (spec.keyScope, a new key space) it is charged at B
// exactly once, and a later re-creation is finished from the ledger.
func TestLedgerHitAtAnotherAccountIsNeverTaken(t *testing.T) {
	t.Parallel()
	const (
		baseA   = "http://127.0.0.1:12111"
		baseB   = "http://127.0.0.1:12112"
		liveKey = "sk_live_suite_51HxLiveKeyOfAccountA"
	)
	tests := []struct {
		name string
		// move points the namespace's provider elsewhere.
		move func(s *scenario, build *switchingBuild)
		// there is the engine the moved provider charges.
		there func(s *scenario, engineB *sandbox.Engine) *sandbox.Engine
		want  []string
	}{
		{
			name: "another account",
			move: func(s *scenario, _ *switchingBuild) {
				updateProvider(s, s.ns, func(pp *paymentsv1alpha1.PaymentProvider) { pp.Spec.Stripe.APIBase = baseB })
			},
			there: func(_ *scenario, engineB *sandbox.Engine) *sandbox.Engine { return engineB },
			want:  []string{"acct_A", "acct_B"},
		},
		{
			name: "a live-mode key of the same account",
			move: func(s *scenario, build *switchingBuild) {
				ctx := context.Background()
				var secret corev1.Secret
				s.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: "sandbox-credentials"}, &secret)).To(Succeed())
				secret.Data["apiKey"] = []byte(liveKey)
				s.Expect(k8sClient.Update(ctx, &secret)).To(Succeed())
				s.Eventually(func() bool { return build.builtWith(liveKey) }, timeout).Should(BeTrue(), "the adapter was rebuilt")
			},
			there: func(s *scenario, _ *sandbox.Engine) *sandbox.Engine { return s.engine },
			want:  []string{"acct_A (test mode)", "acct_A (live mode)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScenario(t, withEngine(sandbox.WithAccount("acct_A")), withoutManager(),
				withProvider(func(pp *paymentsv1alpha1.PaymentProvider) { pp.Spec.Stripe.APIBase = baseA }))
			engineB := sandbox.NewEngine(sandbox.WithAccount("acct_B"))
			build := &switchingBuild{byEndpoint: map[string]payment.Provider{
				baseA: s.sandbox, baseB: sandboxprovider.NewProvider(engineB),
			}}
			s.start(managerConfig{build: build.build})

			first := s.run("invoice", paymentsv1alpha1.PhaseCompleted)
			s.Expect(first.Status.Provider.Mode).To(Equal("test"))
			deleteJob(t, first)
			tt.move(s, build)
			there := tt.there(s, engineB)
			before := there.Stats()

			s.create("invoice")
			job := s.waitForStall("invoice", paymentsv1alpha1.ReasonProviderChanged)
			s.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhasePending), "never Completed with another account's charge")
			s.Expect(job.Status.ProviderResponse).To(BeNil())
			message := readyCondition(s, s.ns, "invoice").Message
			for _, w := range tt.want {
				s.Expect(message).To(ContainSubstring(w))
			}
			s.Expect(message).To(ContainSubstring("spec.keyScope"), "the way out is named")
			s.expectEvent("invoice", paymentsv1alpha1.ReasonProviderChanged)
			s.Expect(there.Stats().Requests).To(Equal(before.Requests), "nothing is sent to the new account")

			// The documented opt-in: a key scope for the new account.
			updateProvider(s, s.ns, func(pp *paymentsv1alpha1.PaymentProvider) { pp.Spec.KeyScope = "moved" })
			job = s.waitForPhase("invoice", paymentsv1alpha1.PhaseCompleted)
			s.Expect(job.Status.IdempotencyKey).To(Equal("moved:" + s.ns + "/invoice"))
			s.Expect(job.Status.Provider.KeyScope).To(Equal("moved"))
			s.Expect(job.Status.ProviderResponse.ID).NotTo(Equal(first.Status.ProviderResponse.ID))
			s.Expect(there.Stats().Charges).To(Equal(before.Charges+1), "charged at the new account exactly once")

			// And that payment is remembered under its own key.
			deleteJob(t, job)
			s.create("invoice")
			again := s.waitForFinished("invoice")
			s.Expect(condition(again, paymentsv1alpha1.ConditionReady).Reason).To(Equal(paymentsv1alpha1.ReasonFoundInLedger))
			s.Expect(again.Status.ProviderResponse.ID).To(Equal(job.Status.ProviderResponse.ID))
			s.Expect(there.Stats().Charges).To(Equal(before.Charges + 1))
		})
	}
}

// (5) A namespace deleted and created again with the same name for a new
// tenant, who guesses a key the old tenant used: nothing the new tenant can read (conditions, events)
// shows the old payment's charge, amount or account, whether the ledger or
// the provider holds it. With spec.keyScope, the new tenant's key is
// another one: its payment is made, and the old entry is not touched.
func TestRecycledNamespaceNeverShowsTheOldTenantsPayment(t *testing.T) {
	t.Parallel()
	oldTenant := func(s *paymentsv1alpha1.PaymentJobSpec) { s.Amount = 4242 }
	newTenant := func(s *paymentsv1alpha1.PaymentJobSpec) { s.Amount = 1717 }
	leaves := func(s *scenario) paymentsv1alpha1.PaymentJob {
		first := s.run("invoice-9", paymentsv1alpha1.PhaseCompleted, oldTenant)
		// The tenant leaves: its namespace is deleted and its name given
		// to the next tenant, who brings its own provider and Secret.
		deleteJob(s.t, first)
		pp := getProvider(s, s.ns)
		recycleNamespace(s)
		createSecret(s.t, s.ns)
		s.Expect(k8sClient.Create(context.Background(), &paymentsv1alpha1.PaymentProvider{
			ObjectMeta: metav1.ObjectMeta{Name: providerName, Namespace: s.ns}, Spec: pp.Spec,
		})).To(Succeed())
		return *first
	}
	expectNothingOfTheOldPayment := func(s *scenario, old paymentsv1alpha1.PaymentJob) {
		s.t.Helper()
		job := s.job("invoice-9")
		var seen []string
		for _, c := range job.Status.Conditions {
			seen = append(seen, c.Message)
		}
		if job.Status.Failure != nil {
			seen = append(seen, job.Status.Failure.Message)
		}
		for _, e := range eventsAbout(s, s.ns, "invoice-9") {
			if e.Regarding.UID == job.UID {
				seen = append(seen, e.Note)
			}
		}
		s.Expect(seen).NotTo(BeEmpty())
		for _, m := range seen {
			s.Expect(m).NotTo(ContainSubstring(old.Status.ProviderResponse.ID))
			s.Expect(m).NotTo(ContainSubstring("4242"))
			s.Expect(m).NotTo(ContainSubstring("acct_"))
		}
	}

	t.Run("the ledger holds the old payment", func(t *testing.T) {
		s := newScenario(t, withEngine(sandbox.WithAccount("acct_OLD")))
		old := leaves(s)
		s.create("invoice-9", newTenant)
		s.waitForStall("invoice-9", paymentsv1alpha1.ReasonChargeMismatch)
		expectNothingOfTheOldPayment(s, old)
		s.expectCharges(1)
	})

	t.Run("only the provider holds the old payment", func(t *testing.T) {
		s := newScenario(t, withEngine(sandbox.WithAccount("acct_OLD")), withoutManager())
		s.start(managerConfig{noLedger: true})
		old := leaves(s)
		s.create("invoice-9", newTenant)
		s.waitForStall("invoice-9", paymentsv1alpha1.ReasonChargeMismatch)
		expectNothingOfTheOldPayment(s, old)
		s.expectCharges(1)
	})

	t.Run("with spec.keyScope the new tenant's key is its own", func(t *testing.T) {
		s := newScenario(t, withEngine(sandbox.WithAccount("acct_OLD")))
		old := leaves(s)
		oldEntry := s.manager.recorded(s, s.ns, "invoice-9")
		updateProvider(s, s.ns, func(pp *paymentsv1alpha1.PaymentProvider) { pp.Spec.KeyScope = "tenant-2" })

		// Even the very same manifest is the new tenant's own payment.
		job := s.run("invoice-9", paymentsv1alpha1.PhaseCompleted, oldTenant)
		s.Expect(job.Status.IdempotencyKey).To(Equal("tenant-2:" + s.ns + "/invoice-9"))
		s.Expect(job.Status.ProviderResponse.ID).NotTo(Equal(old.Status.ProviderResponse.ID))
		s.Expect(condition(job, paymentsv1alpha1.ConditionReady).Reason).To(Equal(paymentsv1alpha1.ReasonSucceeded))
		_, sent := s.engine.LookupByKey("tenant-2:" + s.ns + "/invoice-9")
		s.Expect(sent).To(BeTrue(), "the scoped key is the one sent")
		s.expectCharges(2)
		s.Expect(s.manager.recorded(s, s.ns, "invoice-9")).To(Equal(oldEntry), "the old entry is not touched")
		s.Eventually(func(g Gomega) map[string]int { return ledgerEntries(g, "tenant-2:"+s.ns) }, timeout).
			Should(HaveKeyWithValue("tenant-2:"+s.ns+"/invoice-9", 1))
	})
}

// recycleNamespace deletes the scenario's namespace, as kube-controller-
// manager's namespace controller would (the suite runs none): its objects
// first, events included, then the namespace, finalized; and creates a
// namespace of the same name again, empty.
func recycleNamespace(s *scenario) {
	s.t.Helper()
	ctx := context.Background()
	deleteProviderAndSecret(s, s.ns)
	s.Eventually(func(g Gomega) {
		var providers paymentsv1alpha1.PaymentProviderList
		g.Expect(k8sClient.List(ctx, &providers, client.InNamespace(s.ns))).To(Succeed())
		g.Expect(providers.Items).To(BeEmpty(), "the provider's finalizer comes off once no job uses it")
	}, timeout).Should(Succeed())
	s.Expect(k8sClient.DeleteAllOf(ctx, &eventsv1.Event{}, client.InNamespace(s.ns))).To(Succeed())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}}
	s.Expect(k8sClient.Delete(ctx, ns)).To(Succeed())
	s.Eventually(func(g Gomega) {
		var current corev1.Namespace
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(ns), &current)
		if apierrors.IsNotFound(err) {
			return
		}
		g.Expect(err).NotTo(HaveOccurred())
		current.Spec.Finalizers = nil
		g.Expect(k8sClient.SubResource("finalize").Update(ctx, &current)).To(Succeed())
		g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(ns), &current))).To(BeTrue())
	}, timeout).Should(Succeed())
	s.Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}})).To(Succeed())
}

// (6) Without the resolve-attribution policy (this suite installs none),
// anyone who may annotate a job may write any name in the resolved-by
// annotation: it never reaches status.resolution.by or the ledger, and the
// event says who resolved it is not known.
func TestForgedAttributionIsNeverRecorded(t *testing.T) {
	s := newScenario(t)
	s.engine.FailNextAny(sandbox.FaultAfterCommit, 1_000_000)
	s.stall("lost")
	intent, ok := s.engine.LookupByKey(payment.SentKey(s.ns, "lost"))
	s.Expect(ok).To(BeTrue())

	s.update("lost", func(job *paymentsv1alpha1.PaymentJob) {
		metav1.SetMetaDataAnnotation(&job.ObjectMeta, paymentsv1alpha1.AnnotationResolvedBy, "mallory")
		metav1.SetMetaDataAnnotation(&job.ObjectMeta, paymentsv1alpha1.AnnotationResolve, "charged="+intent.ID)
	})
	job := s.waitForPhase("lost", paymentsv1alpha1.PhaseCompleted)
	s.Expect(job.Status.Resolution.By).To(Equal("unattributed (resolve-attribution policy missing)"))
	// Recorded in the ledger right after the status write.
	s.Eventually(func(g Gomega) string { return s.manager.recorded(g, s.ns, "lost").ResolvedBy }, timeout).
		Should(Equal(job.Status.Resolution.By))
	resolved := notes(s, s.ns, "lost", paymentsv1alpha1.ReasonResolved)
	s.Expect(resolved).To(ContainElement(ContainSubstring("resolve-attribution admission policy is not enforced")))
	for _, m := range append(resolved, condition(job, paymentsv1alpha1.ConditionReady).Message) {
		s.Expect(strings.Contains(m, "mallory")).To(BeFalse(), fmt.Sprintf("the forged name is shown: %q", m))
	}
}
