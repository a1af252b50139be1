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
	"errors"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controller"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// The tests of this file take "exactly once" beyond the provider's key
// memory: a manifest that comes back after the provider forgot its key, a
// charge that is not final, a key used for another request, a provider that
// now reaches another account, and a status that does not match the spec.

// requestOf is the request a job with spec sends.
func requestOf(spec paymentsv1alpha1.PaymentJobSpec) payment.ChargeRequest {
	return payment.ChargeRequest{Amount: spec.Amount, Currency: spec.Currency, Customer: spec.Customer,
		PaymentMethod: spec.PaymentMethod, Description: spec.Description, Metadata: spec.Metadata}
}

// historicIntent is a charge the provider holds under the key of job name
// in ns, made for spec, whose key the provider no longer remembers.
func historicIntent(ns, name, status, fingerprint string) sandbox.Intent {
	key := ns + "/" + name
	spec := jobSpec()
	if fingerprint == "" {
		fingerprint = payment.RequestHash(key, requestOf(spec))
	}
	return sandbox.Intent{
		Amount: spec.Amount, Currency: spec.Currency, PaymentMethod: spec.PaymentMethod, Description: spec.Description,
		Status: status, Created: time.Now().Add(-40 * 24 * time.Hour), IdempotencyKey: key,
		Metadata: map[string]string{"invoice": "42",
			payment.MetadataKeyIdempotencyKey: key, payment.MetadataKeyFingerprint: fingerprint},
	}
}

func readyCondition(g Gomega, ns, name string) *metav1.Condition {
	c := condition(getJob(g, ns, name), paymentsv1alpha1.ConditionReady)
	g.Expect(c).NotTo(BeNil())
	return c
}

// waitForStall waits until the job is Stalled with reason and returns it.
func waitForStall(t *testing.T, ns, name, reason string) *paymentsv1alpha1.PaymentJob {
	t.Helper()
	var job *paymentsv1alpha1.PaymentJob
	NewWithT(t).Eventually(func(g Gomega) {
		job = getJob(g, ns, name)
		stalled := condition(job, paymentsv1alpha1.ConditionStalled)
		g.Expect(stalled).NotTo(BeNil())
		g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(stalled.Reason).To(Equal(reason))
	}, timeout, 20*time.Millisecond).Should(Succeed(), "job %s/%s never stalled with %s", ns, name, reason)
	return job
}

// (a) A Completed job deleted and created again after the provider forgot
// its key is found by the lookup before its first charge: no second charge.
// With lookups turned off, the same manifest is charged again: the limit
// docs/gitops.md states for lookup.policy Never. The manager runs without
// the outcome ledger, as when the ledger was lost: the provider is the only
// memory left (the ledger's own tests are in ledger_test.go).
func TestRecreatedJobAfterKeysAreForgottenIsNotChargedAgain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		policy      paymentsv1alpha1.LookupPolicy
		wantCharges int64
	}{
		{name: "lookups on (the default)", wantCharges: 1},
		{name: "lookup policy Never", policy: paymentsv1alpha1.LookupNever, wantCharges: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			ns := newNamespace(t, true)
			if tt.policy != "" {
				setLookupPolicy(t, ns, tt.policy)
			}
			engine := sandbox.NewEngine()
			provider := sandbox.NewProvider(engine)
			startManager(t, managerConfig{namespaces: []string{ns}, provider: provider, noLedger: true})

			first, again := recreateAfterKeysForgotten(t, ns, "invoice", engine)

			g.Expect(engine.Stats().Charges).To(Equal(tt.wantCharges))
			if tt.wantCharges == 1 {
				g.Expect(engine.Stats().Requests).To(Equal(int64(1)), "no create request for the re-created job")
				g.Expect(again.Status.ProviderResponse.ID).To(Equal(first.Status.ProviderResponse.ID))
				g.Expect(again.Status.ProviderResponse.Replayed).To(BeTrue())
				g.Expect(again.Status.Attempts).To(Equal(int32(1)))
				g.Eventually(func(g Gomega) []string { return eventReasons(g, ns, "invoice") }, timeout).
					Should(ContainElement(controller.ReasonFoundAtProvider))
			} else {
				g.Expect(again.Status.ProviderResponse.ID).NotTo(Equal(first.Status.ProviderResponse.ID))
				g.Expect(provider.Lookups()).To(BeZero(), "policy Never looks nothing up")
			}
		})
	}
}

// recreateAfterKeysForgotten charges the job name in ns, deletes it once
// finished, makes the engine forget its keys (a day later, at Stripe), and
// creates the same manifest again (Git brings it back). It returns the first
// job and the second, Completed.
func recreateAfterKeysForgotten(t *testing.T, ns, name string, engine *sandbox.Engine) (first, again *paymentsv1alpha1.PaymentJob) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	createJob(t, ns, name)
	first = waitForFinished(t, ns, name)
	g.Expect(first.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted))
	g.Expect(k8sClient.Delete(ctx, first)).To(Succeed())
	g.Eventually(func() bool {
		return k8sClient.Get(ctx, client.ObjectKeyFromObject(first), &paymentsv1alpha1.PaymentJob{}) != nil
	}, timeout).Should(BeTrue())
	g.Expect(engine.ForgetKeys()).To(Equal(1))
	createJob(t, ns, name)
	return first, waitForPhase(t, ns, name, paymentsv1alpha1.PhaseCompleted)
}

// setLookupPolicy sets spec.lookup.policy of the namespace's provider.
func setLookupPolicy(t *testing.T, ns string, policy paymentsv1alpha1.LookupPolicy) {
	t.Helper()
	g := NewWithT(t)
	var pp paymentsv1alpha1.PaymentProvider
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: providerName}, &pp)).To(Succeed())
	pp.Spec.Lookup = &paymentsv1alpha1.ProviderLookup{Policy: policy}
	g.Expect(k8sClient.Update(context.Background(), &pp)).To(Succeed())
}

// (b) A charge that is not final, found by the lookup, is settled by its id
// and never charged around; (c) one made for another request stalls the
// job, which is never charged.
func TestLookupFindsChargesOfEveryState(t *testing.T) {
	t.Parallel()

	t.Run("a processing charge is settled, not charged again", func(t *testing.T) {
		t.Parallel()
		g := NewWithT(t)
		ns := newNamespace(t, true)
		engine := sandbox.NewEngine()
		pending := engine.PutIntent(historicIntent(ns, "debit", "processing", ""))
		startManager(t, managerConfig{namespaces: []string{ns}, provider: sandbox.NewProvider(engine)})

		createJob(t, ns, "debit")
		g.Eventually(func(g Gomega) {
			job := getJob(g, ns, "debit")
			g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
			g.Expect(job.Status.ProviderResponse).NotTo(BeNil())
			g.Expect(job.Status.ProviderResponse.ID).To(Equal(pending.ID), "the charge being settled is recorded")
		}, timeout, 20*time.Millisecond).Should(Succeed())

		// The bank debit clears days later.
		g.Expect(engine.SetIntentStatus(pending.ID, "succeeded")).To(Succeed())
		job := waitForPhase(t, ns, "debit", paymentsv1alpha1.PhaseCompleted)
		g.Expect(job.Status.ProviderResponse.ID).To(Equal(pending.ID))
		g.Expect(job.Status.ProviderResponse.Status).To(Equal("succeeded"))
		g.Expect(engine.Stats().Requests).To(BeZero(), "no create request: the pending charge was settled")
		g.Expect(engine.Stats().Charges).To(BeZero())
	})

	t.Run("a charge for another request stalls the job", func(t *testing.T) {
		t.Parallel()
		g := NewWithT(t)
		ns := newNamespace(t, true)
		engine := sandbox.NewEngine()
		other := engine.PutIntent(historicIntent(ns, "reused", "succeeded", "sha256:another-request"))
		startManager(t, managerConfig{namespaces: []string{ns}, provider: sandbox.NewProvider(engine)})

		createJob(t, ns, "reused")
		job := waitForStall(t, ns, "reused", controller.ReasonChargeMismatch)
		g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhasePending))
		g.Expect(readyCondition(g, ns, "reused").Message).To(ContainSubstring(other.ID))
		g.Expect(engine.Stats().Requests).To(BeZero(), "never charged")
		g.Eventually(func(g Gomega) []string { return eventReasons(g, ns, "reused") }, timeout).
			Should(ContainElement(controller.ReasonChargeMismatch))
	})

	t.Run("canceled and declined charges let the first charge go", func(t *testing.T) {
		t.Parallel()
		g := NewWithT(t)
		ns := newNamespace(t, true)
		engine := sandbox.NewEngine()
		engine.PutIntent(historicIntent(ns, "retry", "canceled", ""))
		engine.PutIntent(historicIntent(ns, "retry", "requires_payment_method", ""))
		startManager(t, managerConfig{namespaces: []string{ns}, provider: sandbox.NewProvider(engine)})

		createJob(t, ns, "retry")
		waitForPhase(t, ns, "retry", paymentsv1alpha1.PhaseCompleted)
		g.Expect(engine.Stats().Charges).To(Equal(int64(1)))
	})
}

// failingLooker is a sandbox provider whose lookups fail.
type failingLooker struct {
	*sandbox.Provider
	lookups atomic.Int64
}

func (f *failingLooker) Lookup(context.Context, []string) (map[string][]payment.Found, error) {
	f.lookups.Add(1)
	return nil, payment.Transient(errors.New("search is down"), 0)
}

// (h) A failed lookup never charges: the job waits, Pending, and asks again.
func TestFailedLookupNeverCharges(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t, true)
	engine := sandbox.NewEngine()
	provider := &failingLooker{Provider: sandbox.NewProvider(engine)}
	startManager(t, managerConfig{namespaces: []string{ns}, provider: provider})

	createJob(t, ns, "blind")
	g.Eventually(func(g Gomega) {
		c := readyCondition(g, ns, "blind")
		g.Expect(c.Reason).To(Equal(controller.ReasonLookupFailed))
		g.Expect(provider.lookups.Load()).To(BeNumerically(">=", 3), "the lookup is retried")
	}, timeout, 20*time.Millisecond).Should(Succeed())
	g.Expect(getJob(g, ns, "blind").Status.Phase).To(Equal(paymentsv1alpha1.PhasePending))
	g.Expect(provider.Calls()).To(BeZero(), "no charge while the lookup fails")
	g.Expect(engine.Stats().Requests).To(BeZero())
}

// switchingBuild builds one sandbox provider per endpoint (Stripe apiBase or
// HTTP url), and remembers the credentials it was built with.
type switchingBuild struct {
	mu          sync.Mutex
	byEndpoint  map[string]payment.Provider
	credentials []string
}

func (s *switchingBuild) build(spec paymentsv1alpha1.PaymentProviderSpec, credential string) (payment.Provider, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.credentials = append(s.credentials, credential)
	endpoint := ""
	if spec.Stripe != nil {
		endpoint = spec.Stripe.APIBase
	} else {
		endpoint = spec.HTTP.URL
	}
	p, ok := s.byEndpoint[endpoint]
	if !ok {
		return nil, errors.New("no sandbox at " + endpoint)
	}
	return p, nil
}

func (s *switchingBuild) builtWith(credential string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.credentials {
		if c == credential {
			return true
		}
	}
	return false
}

// uncertainFirstAttempt starts a manager whose first charge of the job
// "moving" in ns is held at the engine until it times out, and waits until
// the job is Processing after that uncertain attempt. It returns the gate;
// the test releases it.
func uncertainFirstAttempt(t *testing.T, ns string, engine *sandbox.Engine, build *switchingBuild) *sandbox.Gate {
	t.Helper()
	gate := engine.Hold()
	t.Cleanup(gate.Release)
	startManager(t, managerConfig{namespaces: []string{ns}, build: build.build, timeout: time.Second, lease: 3 * time.Second})
	createJob(t, ns, "moving")
	g := NewWithT(t)
	g.Eventually(gate.Entered(), timeout).Should(Receive(Equal(ns + "/moving")))
	g.Eventually(func(g Gomega) {
		job := getJob(g, ns, "moving")
		g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
		g.Expect(readyCondition(g, ns, "moving").Reason).To(BeElementOf(
			controller.ReasonTransientError, controller.ReasonRetriesExhausted))
	}, timeout, 20*time.Millisecond).Should(Succeed())
	return gate
}

// (d) A Processing job whose provider now reaches another account, another
// url, or is another object, is never charged there: it stalls with
// ProviderChanged. (e) A Secret rotated to another key of the same account
// lets the job complete.
func TestProviderIdentityIsPartOfThePayment(t *testing.T) {
	t.Parallel()
	const (
		baseA = "http://127.0.0.1:12111"
		baseB = "http://127.0.0.1:12112"
	)
	tests := []struct {
		name string
		// http makes the provider an HTTP one at baseA.
		http bool
		// change moves the provider while the job is Processing.
		change func(g Gomega, ns string)
	}{
		{name: "another account", change: func(g Gomega, ns string) {
			updateProvider(g, ns, func(pp *paymentsv1alpha1.PaymentProvider) { pp.Spec.Stripe.APIBase = baseB })
		}},
		{name: "another url of the same account", http: true, change: func(g Gomega, ns string) {
			updateProvider(g, ns, func(pp *paymentsv1alpha1.PaymentProvider) { pp.Spec.HTTP.URL = baseA + "/v2/charges" })
		}},
		{name: "the provider object re-created", change: func(g Gomega, ns string) {
			ctx := context.Background()
			var pp paymentsv1alpha1.PaymentProvider
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: providerName}, &pp)).To(Succeed())
			g.Expect(k8sClient.Delete(ctx, &pp)).To(Succeed())
			// The provider's finalizer keeps it while the job is
			// Processing; an admin forces it out.
			g.Eventually(func(g Gomega) {
				var deleting paymentsv1alpha1.PaymentProvider
				g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&pp), &deleting)).To(Succeed())
				g.Expect(deleting.Finalizers).To(ContainElement(paymentsv1alpha1.ProviderFinalizer))
				deleting.Finalizers = nil
				g.Expect(k8sClient.Update(ctx, &deleting)).To(Succeed())
			}, timeout).Should(Succeed())
			g.Eventually(func() bool {
				return k8sClient.Get(ctx, client.ObjectKeyFromObject(&pp), &paymentsv1alpha1.PaymentProvider{}) != nil
			}, timeout).Should(BeTrue())
			g.Expect(k8sClient.Create(ctx, &paymentsv1alpha1.PaymentProvider{
				ObjectMeta: metav1.ObjectMeta{Name: providerName, Namespace: ns}, Spec: pp.Spec,
			})).To(Succeed())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			ns := newNamespace(t, true)
			if tt.http {
				updateProvider(g, ns, func(pp *paymentsv1alpha1.PaymentProvider) {
					pp.Spec.Stripe = nil
					pp.Spec.HTTP = &paymentsv1alpha1.HTTPProvider{URL: baseA + "/v1/charges"}
				})
			}
			engineA := sandbox.NewEngine(sandbox.WithAccount("acct_A"))
			engineB := sandbox.NewEngine(sandbox.WithAccount("acct_B"))
			providerA := sandbox.NewProvider(engineA)
			build := &switchingBuild{byEndpoint: map[string]payment.Provider{
				baseA: providerA, baseA + "/v1/charges": providerA, baseA + "/v2/charges": providerA,
				baseB: sandbox.NewProvider(engineB),
			}}
			gate := uncertainFirstAttempt(t, ns, engineA, build)

			tt.change(g, ns)
			job := waitForStall(t, ns, "moving", controller.ReasonProviderChanged)
			g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing), "money may have moved at the first account")
			g.Expect(readyCondition(g, ns, "moving").Message).To(ContainSubstring(job.Status.Provider.Endpoint))
			g.Eventually(func(g Gomega) []string { return eventReasons(g, ns, "moving") }, timeout).
				Should(ContainElement(controller.ReasonProviderChanged))
			g.Expect(engineB.Stats().Requests).To(BeZero(), "nothing is sent to the new account")
			gate.Release()
			g.Expect(engineA.Stats().Charges).To(BeNumerically("<=", 1))
		})
	}

	t.Run("a secret rotated to another key of the same account", func(t *testing.T) {
		t.Parallel()
		g := NewWithT(t)
		ctx := context.Background()
		ns := newNamespace(t, true)
		engine := sandbox.NewEngine(sandbox.WithAccount("acct_A"))
		build := &switchingBuild{byEndpoint: map[string]payment.Provider{baseA: sandbox.NewProvider(engine)}}
		gate := uncertainFirstAttempt(t, ns, engine, build)

		const rotated = "sk_test_rotated_9Yc2LqR7"
		var secret corev1.Secret
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "sandbox-credentials"}, &secret)).To(Succeed())
		secret.Data["apiKey"] = []byte(rotated)
		g.Expect(k8sClient.Update(ctx, &secret)).To(Succeed())
		g.Eventually(func() bool { return build.builtWith(rotated) }, timeout).Should(BeTrue(), "the adapter was rebuilt")
		gate.Release()

		job := waitForPhase(t, ns, "moving", paymentsv1alpha1.PhaseCompleted)
		g.Expect(job.Status.Provider.Account).To(Equal("acct_A"))
		g.Expect(engine.Stats().Charges).To(Equal(int64(1)))
	})
}

func updateProvider(g Gomega, ns string, mutate func(*paymentsv1alpha1.PaymentProvider)) {
	ctx := context.Background()
	g.Eventually(func() error {
		var pp paymentsv1alpha1.PaymentProvider
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: providerName}, &pp); err != nil {
			return err
		}
		mutate(&pp)
		return k8sClient.Update(ctx, &pp)
	}, timeout).Should(Succeed())
}

// scriptedProvider answers the i-th call with answers[i], the last one for
// every later call; it charges nothing itself.
type scriptedProvider struct {
	calls   atomic.Int64
	answers []error
}

func (s *scriptedProvider) Charge(context.Context, string, payment.ChargeRequest) (payment.Outcome, error) {
	n := int(s.calls.Add(1)) - 1
	return payment.Outcome{}, s.answers[min(n, len(s.answers)-1)]
}

// (f) After an uncertain attempt, an Invalid or KeyReused refusal may
// speak for the retry only: the job stalls, Processing, never Failed. A
// decline still fails: the provider saw the card and said no.
func TestRefusalAfterAnUncertainAttempt(t *testing.T) {
	t.Parallel()
	uncertain := payment.Transient(errors.New("timeout after the request was sent"), 0)
	tests := []struct {
		name      string
		refusal   error
		wantPhase paymentsv1alpha1.PaymentJobPhase
		wantStall bool
	}{
		{name: "invalid request", refusal: payment.Invalid("No such customer"), wantPhase: paymentsv1alpha1.PhaseProcessing, wantStall: true},
		{name: "key reused", refusal: payment.KeyReused("Keys for idempotent requests can only be used with the same parameters"),
			wantPhase: paymentsv1alpha1.PhaseProcessing, wantStall: true},
		{name: "declined", refusal: payment.Declined("", "Your card was declined."), wantPhase: paymentsv1alpha1.PhaseFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			ns := newNamespace(t, true)
			provider := &scriptedProvider{answers: []error{uncertain, tt.refusal}}
			startManager(t, managerConfig{namespaces: []string{ns}, provider: provider})
			createJob(t, ns, "second")

			if tt.wantStall {
				job := waitForStall(t, ns, "second", controller.ReasonUncertainRefusal)
				g.Expect(job.Status.Phase).To(Equal(tt.wantPhase))
				g.Expect(job.Status.Attempts).To(BeNumerically(">=", 2))
				g.Expect(job.Status.Failure).To(BeNil())
				return
			}
			job := waitForPhase(t, ns, "second", tt.wantPhase)
			g.Expect(job.Status.Failure.Reason).To(Equal(controller.ReasonCardDeclined))
		})
	}
}

// (g) A status.idempotencyKey or requestHash that does not match the spec,
// written while no manager ran, stops the job before any provider call.
func TestTamperedStatusStallsWithoutCharging(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		tamper     func(*paymentsv1alpha1.PaymentJobStatus)
		wantReason string
	}{
		{name: "idempotency key", wantReason: controller.ReasonKeyMismatch,
			tamper: func(s *paymentsv1alpha1.PaymentJobStatus) { s.IdempotencyKey = "other-team/invoice-1" }},
		{name: "request hash", wantReason: controller.ReasonRequestChanged,
			tamper: func(s *paymentsv1alpha1.PaymentJobStatus) { s.RequestHash = "sha256:0000" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			ctx := context.Background()
			ns := newNamespace(t, true)
			first := &scriptedProvider{answers: []error{payment.Transient(errors.New("no answer"), 0)}}
			m := startManager(t, managerConfig{namespaces: []string{ns}, provider: first})
			createJob(t, ns, "tampered")
			g.Eventually(func(g Gomega) {
				g.Expect(readyCondition(g, ns, "tampered").Reason).To(Equal(controller.ReasonTransientError))
			}, timeout, 20*time.Millisecond).Should(Succeed())
			m.stop()

			job := getJob(g, ns, "tampered")
			tt.tamper(&job.Status)
			job.Status.Claim = nil
			g.Expect(k8sClient.Status().Update(ctx, job)).To(Succeed())

			engine := sandbox.NewEngine()
			provider := sandbox.NewProvider(engine)
			startManager(t, managerConfig{namespaces: []string{ns}, provider: provider})
			job = waitForStall(t, ns, "tampered", tt.wantReason)
			g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
			g.Expect(provider.Calls()).To(BeZero(), "no provider call after the status was tampered with")
			g.Expect(engine.Stats().Requests).To(BeZero())
		})
	}

	t.Run("idempotency key of a pending job", func(t *testing.T) {
		t.Parallel()
		g := NewWithT(t)
		ctx := context.Background()
		ns := newNamespace(t, true)
		engine := sandbox.NewEngine()
		provider := sandbox.NewProvider(engine)
		startManager(t, managerConfig{namespaces: []string{ns}, provider: provider})
		createJob(t, ns, "pending", func(s *paymentsv1alpha1.PaymentJobSpec) { s.Suspend = ptr.To(true) })
		g.Eventually(func(g Gomega) {
			g.Expect(readyCondition(g, ns, "pending").Reason).To(Equal(controller.ReasonSuspended))
		}, timeout, 20*time.Millisecond).Should(Succeed())

		g.Eventually(func() error {
			job := &paymentsv1alpha1.PaymentJob{}
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pending"}, job); err != nil {
				return err
			}
			job.Status.IdempotencyKey = "billing/someone-elses-invoice"
			return k8sClient.Status().Update(ctx, job)
		}, timeout).Should(Succeed())
		g.Eventually(func() error {
			job := &paymentsv1alpha1.PaymentJob{}
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pending"}, job); err != nil {
				return err
			}
			job.Spec.Suspend = ptr.To(false)
			return k8sClient.Update(ctx, job)
		}, timeout).Should(Succeed())

		waitForStall(t, ns, "pending", controller.ReasonKeyMismatch)
		g.Expect(provider.Calls()).To(BeZero())
		g.Expect(provider.Lookups()).To(BeZero())
	})
}

// The same re-creation after the provider forgot its keys, through the real
// adapters over HTTP against the sandbox server: the Stripe adapter (search),
// the HTTP contract with its lookup endpoint, and without one, which is the
// limit docs/providers.md states. Without the outcome ledger, as when it was
// lost.
func TestRecreatedJobThroughEveryAdapter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		spec        func(base string) paymentsv1alpha1.PaymentProviderSpec
		wantCharges int64
	}{
		{name: "stripe", wantCharges: 1, spec: func(base string) paymentsv1alpha1.PaymentProviderSpec {
			return paymentsv1alpha1.PaymentProviderSpec{Stripe: &paymentsv1alpha1.StripeProvider{APIBase: base,
				SecretKeyRef: paymentsv1alpha1.SecretKeyReference{Name: "sandbox-credentials", Key: "apiKey"}}}
		}},
		{name: "http with a lookup endpoint", wantCharges: 1, spec: func(base string) paymentsv1alpha1.PaymentProviderSpec {
			return paymentsv1alpha1.PaymentProviderSpec{HTTP: &paymentsv1alpha1.HTTPProvider{
				URL: base + "/http/charges", LookupURL: base + "/http/charges/lookup"}}
		}},
		{name: "http without a lookup endpoint", wantCharges: 2, spec: func(base string) paymentsv1alpha1.PaymentProviderSpec {
			return paymentsv1alpha1.PaymentProviderSpec{HTTP: &paymentsv1alpha1.HTTPProvider{URL: base + "/http/charges"}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			engine := sandbox.NewEngine()
			srv := httptest.NewServer(sandbox.NewServer(engine, sandbox.ServerOptions{}))
			t.Cleanup(srv.Close)
			ns := newNamespace(t, true)
			updateProvider(g, ns, func(pp *paymentsv1alpha1.PaymentProvider) { pp.Spec = tt.spec(srv.URL) })
			startManager(t, managerConfig{namespaces: []string{ns}, build: loopbackAdapters(), noLedger: true})

			first, again := recreateAfterKeysForgotten(t, ns, "invoice", engine)
			g.Expect(engine.Stats().Charges).To(Equal(tt.wantCharges))
			if tt.wantCharges == 1 {
				g.Expect(again.Status.ProviderResponse.ID).To(Equal(first.Status.ProviderResponse.ID))
				g.Expect(again.Status.Provider.Account).To(Equal(engine.Account()))
			}
		})
	}
}

// A job Processing for two days whose charge is still processing at the
// provider (a bank debit), and whose key the provider forgot: the lookup
// before the retry finds the pending charge and settles it; nothing is
// charged again.
func TestOldProcessingJobSettlesItsPendingCharge(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, true)
	engine := sandbox.NewEngine()
	pending := engine.PutIntent(historicIntent(ns, "debit", "processing", ""))

	key := ns + "/debit"
	createJob(t, ns, "debit")
	job := getJob(g, ns, "debit")
	controllerutil.AddFinalizer(job, paymentsv1alpha1.Finalizer)
	g.Expect(k8sClient.Update(ctx, job)).To(Succeed())
	twoDaysAgo := time.Now().Add(-48 * time.Hour)
	job.Status = paymentsv1alpha1.PaymentJobStatus{
		Phase:          paymentsv1alpha1.PhaseProcessing,
		IdempotencyKey: key,
		RequestHash:    payment.RequestHash(key, requestOf(jobSpec())),
		Attempts:       1,
		Claim: &paymentsv1alpha1.Claim{Holder: "dead/00000000",
			AcquiredAt: metav1.NewMicroTime(twoDaysAgo), ExpiresAt: metav1.NewMicroTime(twoDaysAgo.Add(time.Minute))},
		StartedAt: &metav1.Time{Time: twoDaysAgo},
	}
	g.Expect(k8sClient.Status().Update(ctx, job)).To(Succeed())

	provider := sandbox.NewProvider(engine)
	startManager(t, managerConfig{namespaces: []string{ns}, provider: provider, keyRetention: 23 * time.Hour})
	g.Eventually(provider.Settles, timeout).Should(BeNumerically(">=", 1), "the pending charge is being settled")
	g.Expect(engine.SetIntentStatus(pending.ID, "succeeded")).To(Succeed())
	job = waitForPhase(t, ns, "debit", paymentsv1alpha1.PhaseCompleted)

	g.Expect(job.Status.ProviderResponse.ID).To(Equal(pending.ID))
	g.Expect(engine.Stats().Requests).To(BeZero(), "never charged around the pending charge")
	g.Expect(provider.Calls()).To(BeZero())
}
