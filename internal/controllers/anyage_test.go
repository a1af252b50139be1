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
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/sandboxprovider"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// The tests of this file take "exactly once" beyond the provider's key
// memory: a manifest that comes back after the provider forgot its key, a
// charge that is not final, a key used for another request, a provider that
// now reaches another account, and a status that does not match the spec.

// historicIntent is a charge the provider holds under the key of job name
// in ns, made for jobSpec (or, when fingerprint is set, for the request of
// that fingerprint), whose key the provider no longer remembers.
func historicIntent(ns, name, status, fingerprint string) sandbox.Intent {
	sent := chargeOf(ns, name)
	if fingerprint == "" {
		fingerprint = sent.Fingerprint
	}
	metadata := maps.Clone(sent.Request.Metadata)
	metadata[payment.MetadataKeyIdempotencyKey] = sent.Key
	metadata[payment.MetadataKeyFingerprint] = fingerprint
	return sandbox.Intent{
		Amount: sent.Request.Amount, Currency: sent.Request.Currency, PaymentMethod: sent.Request.PaymentMethod,
		Description: sent.Request.Description, Status: status, Created: time.Now().Add(-40 * 24 * time.Hour),
		IdempotencyKey: sent.Key, Metadata: metadata,
	}
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
		wantCharges int64
		// opts add to the scenario of every case, whose manager runs
		// without the ledger.
		opts []scenarioOption
	}{
		{name: "lookups on (the default)", wantCharges: 1},
		{name: "lookup policy Never", wantCharges: 2, opts: []scenarioOption{withProvider(lookupNever)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScenario(t, append(tt.opts, withManager(managerConfig{noLedger: true}))...)

			r := s.recreateCompleted("invoice")
			s.expectCharges(tt.wantCharges)
			if tt.wantCharges == 1 {
				s.Expect(s.engine.Stats().Requests).To(Equal(int64(1)), "no create request for the re-created job")
				s.Expect(r.again.Status.ProviderResponse.ID).To(Equal(r.first.Status.ProviderResponse.ID))
				s.Expect(r.again.Status.ProviderResponse.Replayed).To(BeTrue())
				s.Expect(r.again.Status.Attempts).To(Equal(int32(1)))
				s.expectEvent("invoice", paymentsv1alpha1.ReasonFoundAtProvider)
			} else {
				s.Expect(r.again.Status.ProviderResponse.ID).NotTo(Equal(r.first.Status.ProviderResponse.ID))
				s.Expect(s.sandbox.Lookups()).To(BeZero(), "policy Never looks nothing up")
			}
		})
	}
}

// recreation is what scenario.recreate saw.
type recreation struct {
	// first is the job finished before its deletion, again the same
	// manifest created again, finished.
	first, again *paymentsv1alpha1.PaymentJob
	// forgotten is the number of keys the engine forgot.
	forgotten int
	// calls is the number of provider calls for the re-created job,
	// through the scenario's in-process provider.
	calls int64
}

// recreate creates the job name (with mutate), waits until it is finished,
// runs between on it when between is not nil, deletes it, makes the engine
// forget its keys (a day later, at Stripe), and creates the same manifest
// again (Git brings it back), which it waits to be finished too.
func (s *scenario) recreate(name string, between func(first *paymentsv1alpha1.PaymentJob), mutate ...func(*paymentsv1alpha1.PaymentJobSpec)) recreation {
	s.t.Helper()
	var r recreation
	s.create(name, mutate...)
	r.first = s.waitForFinished(name)
	if between != nil {
		between(r.first)
	}
	deleteJob(s.t, r.first)
	r.forgotten = s.engine.ForgetKeys()
	calls := s.sandbox.Calls()
	s.create(name, mutate...)
	r.again = s.waitForFinished(name)
	r.calls = s.sandbox.Calls() - calls
	return r
}

// recreateCompleted is recreate for a job that is charged: both jobs are
// Completed, and the engine forgot the first one's key.
func (s *scenario) recreateCompleted(name string) recreation {
	s.t.Helper()
	r := s.recreate(name, nil)
	s.Expect(r.first.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted))
	s.Expect(r.forgotten).To(Equal(1))
	s.Expect(r.again.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted))
	return r
}

// (b) A charge that is not final, found by the lookup, is settled by its id
// and never charged around; (c) one made for another request stalls the
// job, which is never charged.
func TestLookupFindsChargesOfEveryState(t *testing.T) {
	t.Parallel()

	t.Run("a processing charge is settled, not charged again", func(t *testing.T) {
		s := newScenario(t)
		pending := s.engine.PutIntent(historicIntent(s.ns, "debit", "processing", ""))

		s.create("debit")
		waitForJob(t, s.ns, "debit", "recorded the charge being settled", func(g Gomega, job *paymentsv1alpha1.PaymentJob) {
			g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
			g.Expect(job.Status.ProviderResponse).NotTo(BeNil())
			g.Expect(job.Status.ProviderResponse.ID).To(Equal(pending.ID), "the charge being settled is recorded")
		})

		// The bank debit clears days later.
		s.Expect(s.engine.SetIntentStatus(pending.ID, "succeeded")).To(Succeed())
		job := s.waitForPhase("debit", paymentsv1alpha1.PhaseCompleted)
		s.Expect(job.Status.ProviderResponse.ID).To(Equal(pending.ID))
		s.Expect(job.Status.ProviderResponse.Status).To(Equal("succeeded"))
		s.Expect(s.engine.Stats().Requests).To(BeZero(), "no create request: the pending charge was settled")
		s.expectCharges(0)
	})

	t.Run("a charge for another request stalls the job", func(t *testing.T) {
		s := newScenario(t)
		other := s.engine.PutIntent(historicIntent(s.ns, "reused", "succeeded", "sha256:another-request"))

		s.create("reused")
		job := s.waitForStall("reused", paymentsv1alpha1.ReasonChargeMismatch)
		s.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhasePending))
		message := readyCondition(s, s.ns, "reused").Message
		s.Expect(message).To(ContainSubstring("another request"))
		s.Expect(message).NotTo(ContainSubstring(other.ID), "another request's charge may be another tenant's")
		s.Expect(s.engine.Stats().Requests).To(BeZero(), "never charged")
		s.expectEvent("reused", paymentsv1alpha1.ReasonChargeMismatch)
	})

	t.Run("canceled and declined charges let the first charge go", func(t *testing.T) {
		s := newScenario(t)
		s.engine.PutIntent(historicIntent(s.ns, "retry", "canceled", ""))
		s.engine.PutIntent(historicIntent(s.ns, "retry", "requires_payment_method", ""))

		s.run("retry", paymentsv1alpha1.PhaseCompleted)
		s.expectCharges(1)
	})
}

// failingLooker is a sandbox provider whose lookups fail.
type failingLooker struct {
	*sandboxprovider.Provider
	lookups atomic.Int64
}

func (f *failingLooker) Lookup(context.Context, []string) (map[string][]payment.Found, error) {
	f.lookups.Add(1)
	return nil, payment.Transient(errors.New("search is down"), 0)
}

// (h) A failed lookup never charges: the job waits, Pending, and asks again.
func TestFailedLookupNeverCharges(t *testing.T) {
	s := newScenario(t, withoutManager())
	provider := &failingLooker{Provider: s.sandbox}
	s.start(managerConfig{provider: provider})

	s.create("blind")
	s.Eventually(func(g Gomega) {
		c := readyCondition(g, s.ns, "blind")
		g.Expect(c.Reason).To(Equal(paymentsv1alpha1.ReasonLookupFailed))
		g.Expect(provider.lookups.Load()).To(BeNumerically(">=", 3), "the lookup is retried")
	}, timeout, 20*time.Millisecond).Should(Succeed())
	s.Expect(s.job("blind").Status.Phase).To(Equal(paymentsv1alpha1.PhasePending))
	s.Expect(s.sandbox.Calls()).To(BeZero(), "no charge while the lookup fails")
	s.Expect(s.engine.Stats().Requests).To(BeZero())
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
	return slices.Contains(s.credentials, credential)
}

// uncertainFirstAttempt starts a manager, with build, whose first charge of
// the job "moving" is held at the scenario's engine until it times out, and
// waits until the job is Processing after that uncertain attempt. It
// returns the gate; the test releases it.
func uncertainFirstAttempt(s *scenario, build *switchingBuild) *sandbox.Gate {
	s.t.Helper()
	gate := s.engine.Hold()
	s.t.Cleanup(gate.Release)
	s.start(managerConfig{build: build.build, timeout: time.Second, lease: 3 * time.Second})
	s.create("moving")
	s.Eventually(gate.Entered(), timeout).Should(Receive(Equal(s.ns + "/moving")))
	s.Eventually(func(g Gomega) {
		job := s.get(g, "moving")
		g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
		g.Expect(readyCondition(g, s.ns, "moving").Reason).To(BeElementOf(
			paymentsv1alpha1.ReasonTransientError, paymentsv1alpha1.ReasonRetriesExhausted))
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
			pp := getProvider(g, ns)
			g.Expect(k8sClient.Delete(ctx, pp)).To(Succeed())
			// The provider's finalizer keeps it while the job is
			// Processing; an admin forces it out.
			g.Eventually(func(g Gomega) {
				deleting := getProvider(g, ns)
				g.Expect(deleting.Finalizers).To(ContainElement(paymentsv1alpha1.ProviderFinalizer))
				deleting.Finalizers = nil
				g.Expect(k8sClient.Update(ctx, deleting)).To(Succeed())
			}, timeout).Should(Succeed())
			waitForGone(g, pp)
			g.Expect(k8sClient.Create(ctx, &paymentsv1alpha1.PaymentProvider{
				ObjectMeta: metav1.ObjectMeta{Name: providerName, Namespace: ns}, Spec: pp.Spec,
			})).To(Succeed())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := []scenarioOption{withEngine(sandbox.WithAccount("acct_A")), withoutManager()}
			if tt.http {
				opts = append(opts, withProvider(func(pp *paymentsv1alpha1.PaymentProvider) {
					pp.Spec.Stripe = nil
					pp.Spec.HTTP = &paymentsv1alpha1.HTTPProvider{URL: baseA + "/v1/charges"}
				}))
			}
			s := newScenario(t, opts...)
			engineB := sandbox.NewEngine(sandbox.WithAccount("acct_B"))
			build := &switchingBuild{byEndpoint: map[string]payment.Provider{
				baseA: s.sandbox, baseA + "/v1/charges": s.sandbox, baseA + "/v2/charges": s.sandbox,
				baseB: sandboxprovider.NewProvider(engineB),
			}}
			gate := uncertainFirstAttempt(s, build)

			tt.change(s, s.ns)
			job := s.waitForStall("moving", paymentsv1alpha1.ReasonProviderChanged)
			s.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing), "money may have moved at the first account")
			s.Expect(readyCondition(s, s.ns, "moving").Message).To(ContainSubstring(job.Status.Provider.Endpoint))
			s.expectEvent("moving", paymentsv1alpha1.ReasonProviderChanged)
			s.Expect(engineB.Stats().Requests).To(BeZero(), "nothing is sent to the new account")
			gate.Release()
			s.Expect(s.engine.Stats().Charges).To(BeNumerically("<=", 1))
		})
	}

	t.Run("a secret rotated to another key of the same account", func(t *testing.T) {
		ctx := context.Background()
		s := newScenario(t, withEngine(sandbox.WithAccount("acct_A")), withoutManager())
		build := &switchingBuild{byEndpoint: map[string]payment.Provider{baseA: s.sandbox}}
		gate := uncertainFirstAttempt(s, build)

		const rotated = "sk_test_rotated_9Yc2LqR7"
		var secret corev1.Secret
		s.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: "sandbox-credentials"}, &secret)).To(Succeed())
		secret.Data["apiKey"] = []byte(rotated)
		s.Expect(k8sClient.Update(ctx, &secret)).To(Succeed())
		s.Eventually(func() bool { return build.builtWith(rotated) }, timeout).Should(BeTrue(), "the adapter was rebuilt")
		gate.Release()

		job := s.waitForPhase("moving", paymentsv1alpha1.PhaseCompleted)
		s.Expect(job.Status.Provider.Account).To(Equal("acct_A"))
		s.expectCharges(1)
	})
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
			provider := &scriptedProvider{answers: []error{uncertain, tt.refusal}}
			s := newScenario(t, withManager(managerConfig{provider: provider}))
			s.create("second")

			if tt.wantStall {
				job := s.waitForStall("second", paymentsv1alpha1.ReasonUncertainRefusal)
				s.Expect(job.Status.Phase).To(Equal(tt.wantPhase))
				s.Expect(job.Status.Attempts).To(BeNumerically(">=", 2))
				s.Expect(job.Status.Failure).To(BeNil())
				return
			}
			job := s.waitForPhase("second", tt.wantPhase)
			s.Expect(job.Status.Failure.Reason).To(Equal(paymentsv1alpha1.ReasonCardDeclined))
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
		{name: "idempotency key", wantReason: paymentsv1alpha1.ReasonKeyMismatch,
			tamper: func(s *paymentsv1alpha1.PaymentJobStatus) { s.IdempotencyKey = "other-team/invoice-1" }},
		{name: "request hash", wantReason: paymentsv1alpha1.ReasonRequestChanged,
			tamper: func(s *paymentsv1alpha1.PaymentJobStatus) { s.RequestHash = "sha256:0000" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScenario(t, withoutManager())
			first := &scriptedProvider{answers: []error{payment.Transient(errors.New("no answer"), 0)}}
			m := s.start(managerConfig{provider: first})
			s.create("tampered")
			s.Eventually(func(g Gomega) {
				g.Expect(readyCondition(g, s.ns, "tampered").Reason).To(Equal(paymentsv1alpha1.ReasonTransientError))
			}, timeout, 20*time.Millisecond).Should(Succeed())
			m.stop()

			s.updateStatus("tampered", func(job *paymentsv1alpha1.PaymentJob) {
				tt.tamper(&job.Status)
				job.Status.Claim = nil
			})

			s.start(managerConfig{})
			job := s.waitForStall("tampered", tt.wantReason)
			s.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
			s.Expect(s.sandbox.Calls()).To(BeZero(), "no provider call after the status was tampered with")
			s.Expect(s.engine.Stats().Requests).To(BeZero())
		})
	}

	t.Run("idempotency key of a pending job", func(t *testing.T) {
		s := newScenario(t)
		s.create("pending", suspended)
		s.Eventually(func(g Gomega) {
			g.Expect(readyCondition(g, s.ns, "pending").Reason).To(Equal(paymentsv1alpha1.ReasonSuspended))
		}, timeout, 20*time.Millisecond).Should(Succeed())

		s.updateStatus("pending", func(job *paymentsv1alpha1.PaymentJob) {
			job.Status.IdempotencyKey = "billing/someone-elses-invoice"
		})
		s.update("pending", func(job *paymentsv1alpha1.PaymentJob) { job.Spec.Suspend = ptr.To(false) })

		s.waitForStall("pending", paymentsv1alpha1.ReasonKeyMismatch)
		s.Expect(s.sandbox.Calls()).To(BeZero())
		s.Expect(s.sandbox.Lookups()).To(BeZero())
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
			s := newScenario(t, overHTTP(), withoutManager())
			updateProvider(s, s.ns, func(pp *paymentsv1alpha1.PaymentProvider) { pp.Spec = tt.spec(s.url) })
			s.start(managerConfig{noLedger: true})

			r := s.recreateCompleted("invoice")
			s.expectCharges(tt.wantCharges)
			if tt.wantCharges == 1 {
				s.Expect(r.again.Status.ProviderResponse.ID).To(Equal(r.first.Status.ProviderResponse.ID))
				s.Expect(r.again.Status.Provider.Account).To(Equal(s.engine.Account()))
			}
		})
	}
}

// A job Processing for two days whose charge is still processing at the
// provider (a bank debit), and whose key the provider forgot: the lookup
// before the retry finds the pending charge and settles it; nothing is
// charged again.
func TestOldProcessingJobSettlesItsPendingCharge(t *testing.T) {
	s := newScenario(t, withoutManager())
	pending := s.engine.PutIntent(historicIntent(s.ns, "debit", "processing", ""))
	s.leftBehind("debit", time.Now().Add(-48*time.Hour), true, nil)

	s.start(managerConfig{keyRetention: 23 * time.Hour})
	s.Eventually(s.sandbox.Settles, timeout).Should(BeNumerically(">=", 1), "the pending charge is being settled")
	s.Expect(s.engine.SetIntentStatus(pending.ID, "succeeded")).To(Succeed())
	job := s.waitForPhase("debit", paymentsv1alpha1.PhaseCompleted)

	s.Expect(job.Status.ProviderResponse.ID).To(Equal(pending.ID))
	s.Expect(s.engine.Stats().Requests).To(BeZero(), "never charged around the pending charge")
	s.Expect(s.sandbox.Calls()).To(BeZero())
}
