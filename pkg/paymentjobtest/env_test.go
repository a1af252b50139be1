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

package paymentjobtest_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/paymentjobtest"
)

// The kit's tests run as a user's would: one environment for the package,
// started in TestMain from KUBEBUILDER_ASSETS.
var env *paymentjobtest.Env

func TestMain(m *testing.M) {
	var err error
	env, err = paymentjobtest.Start(paymentjobtest.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// namespace creates a namespace with a provider named "stripe".
func namespace(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	ns := "kit-" + rand.String(6)
	NewWithT(t).Expect(env.Client().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	NewWithT(t).Expect(env.CreateProvider(ctx, ns, "stripe")).To(Succeed())
	return ns
}

// job creates a PaymentJob through provider "stripe".
func job(t *testing.T, ns, name, paymentMethod string) {
	t.Helper()
	NewWithT(t).Expect(env.Client().Create(context.Background(), &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: paymentsv1alpha1.PaymentJobSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: "stripe"},
			Amount: 2000, Currency: "usd", PaymentMethod: paymentMethod},
	})).To(Succeed())
}

func TestJobsInTwoNamespacesAreChargedOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	for _, ns := range []string{namespace(t), namespace(t)} {
		job(t, ns, "invoice-42", paymentjobtest.PaymentMethodSucceeds)
		done, err := env.WaitForPhase(ctx, ns, "invoice-42", paymentsv1alpha1.PhaseCompleted, time.Minute)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(done.Status.ProviderResponse.ID).To(HavePrefix("pi_"))
		g.Expect(env.Charges(ns + "/invoice-42")).To(Equal(1))
	}
}

func TestFaultSwitches(t *testing.T) {
	tests := []struct {
		name          string
		paymentMethod string
		fault         func(paymentjobtest.Faults) error
		phase         paymentsv1alpha1.PaymentJobPhase
		charges       int
		// faults is how many injected faults the sandbox answered.
		faults int64
		check  func(g Gomega, job *paymentsv1alpha1.PaymentJob, took time.Duration)
	}{
		{name: "declined card", paymentMethod: paymentjobtest.PaymentMethodDeclined,
			phase: paymentsv1alpha1.PhaseFailed, charges: 0,
			check: func(g Gomega, job *paymentsv1alpha1.PaymentJob, _ time.Duration) {
				g.Expect(job.Status.Failure.Reason).To(Equal("CardDeclined"))
			}},
		{name: "decline a payment method", paymentMethod: "pm_card_mastercard",
			fault: func(f paymentjobtest.Faults) error { return f.Decline("pm_card_mastercard") },
			phase: paymentsv1alpha1.PhaseFailed, charges: 0},
		{name: "response lost after the charge", paymentMethod: paymentjobtest.PaymentMethodSucceeds,
			fault: func(f paymentjobtest.Faults) error { return f.LoseResponses(1) },
			phase: paymentsv1alpha1.PhaseCompleted, charges: 1, faults: 1,
			check: func(g Gomega, job *paymentsv1alpha1.PaymentJob, _ time.Duration) {
				g.Expect(job.Status.ProviderResponse.Replayed).To(BeTrue())
				g.Expect(job.Status.Attempts).To(BeNumerically(">=", 2))
			}},
		{name: "rate limited", paymentMethod: paymentjobtest.PaymentMethodSucceeds,
			fault: func(f paymentjobtest.Faults) error { return f.RateLimit(2, time.Second) },
			phase: paymentsv1alpha1.PhaseCompleted, charges: 1, faults: 2},
		{name: "latency", paymentMethod: paymentjobtest.PaymentMethodSucceeds,
			fault: func(f paymentjobtest.Faults) error { return f.Latency(200*time.Millisecond, 300*time.Millisecond) },
			phase: paymentsv1alpha1.PhaseCompleted, charges: 1,
			check: func(g Gomega, _ *paymentsv1alpha1.PaymentJob, took time.Duration) {
				g.Expect(took).To(BeNumerically(">=", 200*time.Millisecond))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ns := namespace(t)
			if tt.fault != nil {
				g.Expect(tt.fault(env.Faults())).To(Succeed())
				t.Cleanup(func() { g.Expect(env.Faults().Reset()).To(Succeed()) })
			}
			before := env.Sandbox().Stats().Faults
			created := time.Now()
			job(t, ns, "switched", tt.paymentMethod)
			done, err := env.WaitForPhase(context.Background(), ns, "switched", tt.phase, time.Minute)
			g.Expect(err).NotTo(HaveOccurred())
			took := time.Since(created)
			g.Expect(env.Charges(ns + "/switched")).To(Equal(tt.charges))
			g.Expect(env.Sandbox().Stats().Faults-before).To(Equal(tt.faults), "faults the sandbox answered")
			if tt.check != nil {
				tt.check(g, done, took)
			}
		})
	}
}

// TestForgottenKeysAreNotChargedAgain: the sandbox forgets its keys, as
// Stripe does after a day, and the same manifest comes back: the
// operator's ledger (or the sandbox's search) finishes it without a second
// charge.
func TestForgottenKeysAreNotChargedAgain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	job(t, ns, "monthly", paymentjobtest.PaymentMethodSucceeds)
	first, err := env.WaitForPhase(ctx, ns, "monthly", paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Faults().ForgetKeys()).To(BeNumerically(">=", 1))
	g.Expect(env.Client().Delete(ctx, first)).To(Succeed())
	g.Eventually(func() error {
		return env.Client().Get(ctx, client.ObjectKeyFromObject(first), &paymentsv1alpha1.PaymentJob{})
	}, time.Minute).ShouldNot(Succeed())
	job(t, ns, "monthly", paymentjobtest.PaymentMethodSucceeds)
	again, err := env.WaitForPhase(ctx, ns, "monthly", paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Status.ProviderResponse.ID).To(Equal(first.Status.ProviderResponse.ID))
	g.Expect(env.Charges(ns + "/monthly")).To(Equal(1))
}

// TestReadableFailure: a job that never completes makes WaitForPhase fail
// with its phase, its last condition and its events.
func TestReadableFailure(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	g.Expect(env.Client().Create(context.Background(), &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: "lost", Namespace: ns},
		Spec: paymentsv1alpha1.PaymentJobSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: "nowhere"},
			Amount: 100, Currency: "usd", PaymentMethod: paymentjobtest.PaymentMethodSucceeds},
	})).To(Succeed())
	_, err := env.WaitForPhase(context.Background(), ns, "lost", paymentsv1alpha1.PhaseCompleted, 3*time.Second)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(And(
		ContainSubstring(ns+"/lost did not reach Completed within 3s"),
		ContainSubstring("phase Pending"),
		ContainSubstring("Ready=False ProviderNotFound"),
		ContainSubstring(`PaymentProvider "nowhere" not found`),
		ContainSubstring("Warning ProviderNotFound"),
	))
}

// TestResetTurnsEveryFaultOff: after Reset, a payment method Decline
// added is charged again, no lost response or rate limit is pending, and
// refunds are no longer kept pending.
func TestResetTurnsEveryFaultOff(t *testing.T) {
	g := NewWithT(t)
	f := env.Faults()
	g.Expect(f.Decline("pm_card_mastercard")).To(Succeed())
	g.Expect(f.LoseResponses(3)).To(Succeed())
	g.Expect(f.RateLimit(3, time.Second)).To(Succeed())
	g.Expect(f.PendingRefunds(time.Hour)).To(Succeed())
	g.Expect(f.Reset()).To(Succeed())
	g.Expect(env.Sandbox().RefundSettleDelay()).To(BeZero(), "refunds succeed at once again")
	ns := namespace(t)
	before := env.Sandbox().Stats().Faults
	job(t, ns, "after-reset", "pm_card_mastercard")
	done, err := env.WaitForPhase(context.Background(), ns, "after-reset", paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(done.Status.Attempts).To(Equal(int32(1)))
	g.Expect(env.Sandbox().Stats().Faults).To(Equal(before))
}

// TestWaitEndsAtTheOtherFinalPhase: waiting for Completed on a job that
// Failed fails at once, saying so.
func TestWaitEndsAtTheOtherFinalPhase(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	job(t, ns, "declined", paymentjobtest.PaymentMethodDeclined)
	started := time.Now()
	_, err := env.WaitForPhase(context.Background(), ns, "declined", paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).To(MatchError(And(ContainSubstring("it is Failed, which is final"), ContainSubstring("CardDeclined"))))
	g.Expect(time.Since(started)).To(BeNumerically("<", 30*time.Second), "not the whole minute")
}

// TestOnTheUsersEnvtest: the kit runs on an envtest.Environment the test
// started itself, and stopping it leaves no goroutine behind.
func TestOnTheUsersEnvtest(t *testing.T) {
	g := NewWithT(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(),
		// Started once per process by client-go and klog, not by the kit.
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		goleak.IgnoreAnyFunction("k8s.io/client-go/util/workqueue.(*delayingType[...]).waitingLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("internal/poll.runtime_pollWait"),
		// The events broadcaster of controller-runtime's manager leaves its
		// filtered watch blocked on a send after the manager stopped.
		goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop"))
	users := &envtest.Environment{BinaryAssetsDirectory: os.Getenv("KUBEBUILDER_ASSETS")}
	cfg, err := users.Start()
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(users.Stop()).To(Succeed()) }()

	ns := "users-own"
	mine, err := paymentjobtest.Start(paymentjobtest.Options{Config: cfg, Namespaces: []string{ns}})
	g.Expect(err).NotTo(HaveOccurred())
	ctx := context.Background()
	g.Expect(mine.Client().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(mine.CreateProvider(ctx, ns, "stripe")).To(Succeed())
	g.Expect(mine.Client().Create(ctx, &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: "on-my-envtest", Namespace: ns},
		Spec: paymentsv1alpha1.PaymentJobSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: "stripe"},
			Amount: 500, Currency: "eur", PaymentMethod: paymentjobtest.PaymentMethodSucceeds},
	})).To(Succeed())
	_, err = mine.WaitForPhase(ctx, ns, "on-my-envtest", paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mine.Charges(ns + "/on-my-envtest")).To(Equal(1))
	g.Expect(mine.Stop()).To(Succeed())
	g.Expect(mine.Stop()).To(Succeed(), "Stop may be called again")
}
