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
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// Signed provider events: the sandbox sends Stripe's webhooks to the
// manager's events endpoint. An event only wakes: the job reads the
// sandbox before anything is written.

// eventsSecret is the endpoint secret of the scenario's provider.
const eventsSecret = "whsec_test_0123456789abcdef"

// withEvents gives the scenario's providers spec.events, their signing
// Secret, and a manager serving the events endpoint.
func withEvents(s *scenarioSetup) {
	s.provider = append(s.provider, func(pp *paymentsv1alpha1.PaymentProvider) {
		pp.Spec.Events = &paymentsv1alpha1.ProviderEvents{SecretRef: paymentsv1alpha1.SecretKeyReference{Name: "sandbox-events", Key: "endpointSecret"}}
	})
	s.manager.events = true
}

// createEventsSecret creates the labelled Secret of the endpoint secret.
func (s *scenario) createEventsSecret() {
	s.Expect(k8sClient.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sandbox-events", Namespace: s.ns,
			Labels: map[string]string{paymentsv1alpha1.LabelCredentials: "true"}},
		Data: map[string][]byte{"endpointSecret": []byte(eventsSecret)},
	})).To(Succeed())
}

// intentEvent is a Stripe payment_intent.succeeded event about the intent id made under
// key, at t, signed with secret.
func intentEvent(g Gomega, eventID, id, key string, live bool, t time.Time, secret string) (body []byte, signature string) {
	body, err := json.Marshal(map[string]any{
		"id": eventID, "object": "event", "type": "payment_intent.succeeded", "created": t.Unix(), "livemode": live, "api_version": sandbox.StripeAPIVersion,
		"data": map[string]any{"object": map[string]any{"id": id, "object": "payment_intent", "status": "succeeded",
			"livemode": live, "metadata": map[string]string{payment.MetadataKeyIdempotencyKey: key}}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	return body, sandbox.Sign(secret, t, body)
}

// post sends an event to url and returns the status code.
func post(g Gomega, url string, body []byte, signature string) int {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	if signature != "" {
		req.Header.Set(sandbox.StripeSignatureHeader, signature)
	}
	res, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	_ = res.Body.Close()
	return res.StatusCode
}

// A debit settles at the sandbox; the sandbox's signed webhook wakes the
// job, which reads the sandbox and completes within seconds, long before
// its next read (30 s at the earliest for a provider that sends events).
func TestAnEventWakesASettlingJob(t *testing.T) {
	var offset atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	s := newScenario(t, withEvents, withEngine(sandbox.WithClock(clock), sandbox.WithDebitSettleDelay(24*time.Hour)))
	defer s.engine.Close()
	s.createEventsSecret()
	url := s.manager.eventsURL(t, s.ns)
	s.Expect(s.engine.SetWebhooks(sandbox.WebhookConfig{URL: url, Secret: eventsSecret, Format: sandbox.WebhookFormatStripe})).To(Succeed())

	s.create("debit", debit(sandbox.PaymentMethodSEPADebit))
	s.waitForSettling("debit")
	readsBefore := s.sandbox.Settles()

	// A day passes at the sandbox: it settles the debit and sends
	// payment_intent.succeeded.
	offset.Store(int64(24*time.Hour + time.Minute))
	settledAt := time.Now()
	s.Expect(s.engine.SettleDebits()).To(Equal(1))

	var done *paymentsv1alpha1.PaymentJob
	s.Eventually(func(g Gomega) {
		done = s.get(g, "debit")
		g.Expect(done.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted))
	}).WithTimeout(5 * time.Second).WithPolling(20 * time.Millisecond).Should(Succeed())
	t.Logf("the event woke the job: Completed %s after the sandbox settled it", time.Since(settledAt).Round(time.Millisecond))
	s.Expect(s.sandbox.Settles()-readsBefore).To(BeNumerically("<=", 2), "woken once (coalesced), read before it was written")
	s.Expect(s.engine.WebhookStats().Delivered).To(BeNumerically(">", 0))
	s.Expect(s.engine.Stats().ChargesByKey[done.Status.IdempotencyKey]).To(BeEquivalentTo(1))
}

// Forged, replayed, stale and foreign events change nothing and cause no
// request to the sandbox; a validly signed event that lies (the debit has
// not settled) wakes the job, which reads the sandbox once and stays
// settling.
func TestForgedReplayedStaleAndForeignEventsChangeNothing(t *testing.T) {
	s := newScenario(t, withEvents, withEngine(sandbox.WithDebitSettleDelay(time.Hour)))
	s.createEventsSecret()
	url := s.manager.eventsURL(t, s.ns)
	s.create("debit", debit(sandbox.PaymentMethodSEPADebit))
	job := s.waitForSettling("debit")
	id, key := job.Status.ProviderResponse.ID, job.Status.IdempotencyKey
	reads := s.sandbox.Settles()
	now := time.Now()

	for _, tt := range []struct {
		name   string
		status int
		send   func(g Gomega) (body []byte, signature string)
	}{
		{"unsigned", http.StatusUnauthorized, func(g Gomega) ([]byte, string) {
			body, _ := intentEvent(g, "evt_unsigned", id, key, false, now, eventsSecret)
			return body, ""
		}},
		{"forged: signed with another secret", http.StatusUnauthorized, func(g Gomega) ([]byte, string) {
			return intentEvent(g, "evt_forged", id, key, false, now, "whsec_not_the_secret")
		}},
		{"stale: signed 10 minutes ago (a replay of a captured request)", http.StatusBadRequest, func(g Gomega) ([]byte, string) {
			return intentEvent(g, "evt_stale", id, key, false, now.Add(-10*time.Minute), eventsSecret)
		}},
		{"foreign: a live-mode event for a test key", http.StatusForbidden, func(g Gomega) ([]byte, string) {
			return intentEvent(g, "evt_live", id, key, true, now, eventsSecret)
		}},
	} {
		body, signature := tt.send(s)
		s.Expect(post(s, url, body, signature)).To(Equal(tt.status), tt.name)
	}
	s.Consistently(func(g Gomega) {
		g.Expect(s.sandbox.Settles()).To(Equal(reads), "no request to the sandbox")
		g.Expect(condition(s.get(g, "debit"), paymentsv1alpha1.ConditionReady).Reason).To(Equal(paymentsv1alpha1.ReasonAwaitingSettlement))
	}).WithTimeout(2 * time.Second).Should(Succeed())

	// Signed with the secret, but the debit has not settled: the job reads
	// the sandbox and stays where it is. The same event again is a
	// duplicate and wakes nothing.
	body, signature := intentEvent(s, "evt_lie", id, key, false, now, eventsSecret)
	s.Expect(post(s, url, body, signature)).To(Equal(http.StatusOK))
	s.Eventually(s.sandbox.Settles).WithTimeout(5 * time.Second).Should(Equal(reads + 1))
	s.Expect(post(s, url, body, signature)).To(Equal(http.StatusOK), "a duplicate is acknowledged")
	s.Consistently(func(g Gomega) {
		g.Expect(s.sandbox.Settles()).To(Equal(reads+1), "read once")
		got := s.get(g, "debit")
		g.Expect(got.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
		g.Expect(condition(got, paymentsv1alpha1.ConditionReady).Reason).To(Equal(paymentsv1alpha1.ReasonAwaitingSettlement))
	}).WithTimeout(2 * time.Second).Should(Succeed())
	s.Expect(s.engine.Stats().ChargesByKey[key]).To(BeEquivalentTo(1))
}

// A refund fails at the sandbox after it succeeded: the sandbox's signed
// refund.updated event has the refund read at once and set Failed
// (RefundFailedAfterSuccess), long before the refund watch's next round
// (an hour).
func TestAnEventReportsARefundThatFailedAfterSuccessAtOnce(t *testing.T) {
	s := newScenario(t, withManager(managerConfig{refundRecheck: time.Hour}), withEvents)
	defer s.engine.Close()
	s.createEventsSecret()
	s.run("invoice", paymentsv1alpha1.PhaseCompleted)
	s.createRefund("back", "invoice", 800)
	done := s.waitForRefund("back", paymentsv1alpha1.PhaseCompleted, "Succeeded")
	// Finished (its outcome in the ledger): a refund fails after success
	// days later, not in the moment between its outcome and its finish.
	s.Eventually(func(g Gomega) map[string]string { return s.getRefund(g, "back").Labels }, timeout).
		Should(HaveKeyWithValue(paymentsv1alpha1.LabelFinished, "true"))
	url := s.manager.eventsURL(t, s.ns)
	s.Expect(s.engine.SetWebhooks(sandbox.WebhookConfig{URL: url, Secret: eventsSecret, Format: sandbox.WebhookFormatStripe})).To(Succeed())

	_, err := s.engine.FailRefund(done.Status.ProviderResponse.ID, sandbox.RefundFailureLostOrStolenCard)
	s.Expect(err).NotTo(HaveOccurred())

	var failed *paymentsv1alpha1.PaymentRefund
	s.Eventually(func(g Gomega) {
		failed = s.getRefund(g, "back")
		g.Expect(failed.Status.Phase).To(Equal(paymentsv1alpha1.PhaseFailed))
	}).WithTimeout(10 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
	s.Expect(failed.Status.Failure.Reason).To(Equal(paymentsv1alpha1.ReasonRefundFailedAfterSuccess))
	s.Eventually(func(g Gomega) []string { return eventReasons(g, s.ns, "back") }, timeout).
		Should(ContainElement(paymentsv1alpha1.ReasonRefundFailedAfterSuccess))
	s.Expect(s.engine.WebhookStats().Delivered).To(BeNumerically(">", 0))
}

// A refund made in the sandbox's dashboard (no key of the operator's): its
// signed event has the job's charge read at once, and the Completed job
// gets the condition MovedOutsideOperator and a Warning event
// RefundedOutsideOperator, as the next reconciliation would report it. Its
// outcome stands. A refund made by the operator raises nothing.
func TestAnEventReportsARefundMadeOutsideTheOperator(t *testing.T) {
	s := newScenario(t, withManager(managerConfig{refundRecheck: time.Hour}), withEvents)
	defer s.engine.Close()
	s.createEventsSecret()
	s.run("invoice", paymentsv1alpha1.PhaseCompleted)
	s.run("ours", paymentsv1alpha1.PhaseCompleted)
	url := s.manager.eventsURL(t, s.ns)
	s.Expect(s.engine.SetWebhooks(sandbox.WebhookConfig{URL: url, Secret: eventsSecret, Format: sandbox.WebhookFormatStripe})).To(Succeed())

	s.createRefund("ours-back", "ours", 300)
	s.waitForRefund("ours-back", paymentsv1alpha1.PhaseCompleted, "Succeeded")
	charge := s.job("invoice").Status.ProviderResponse.ID
	_, _, err := s.engine.CreateRefund("dashboard/refund-1", sandbox.RefundParams{PaymentIntent: charge, Amount: 700})
	s.Expect(err).NotTo(HaveOccurred())

	s.Eventually(func(g Gomega) {
		c := condition(s.get(g, "invoice"), paymentsv1alpha1.ConditionMovedOutsideOperator)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(paymentsv1alpha1.ReasonRefundedOutsideOperator))
		g.Expect(c.Message).To(ContainSubstring("700"))
	}).WithTimeout(10 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
	s.Eventually(func(g Gomega) []string { return eventReasons(g, s.ns, "invoice") }, timeout).
		Should(ContainElement(paymentsv1alpha1.ReasonRefundedOutsideOperator))
	job := s.job("invoice")
	s.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted), "the outcome stands")
	s.Expect(condition(job, paymentsv1alpha1.ConditionReady).Status).To(BeEquivalentTo("True"))
	s.Expect(condition(s.job("ours"), paymentsv1alpha1.ConditionMovedOutsideOperator)).To(BeNil(), "the operator's own refund raises nothing")
}
