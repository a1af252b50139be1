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
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/paymentjobtest"
)

// A job charged through the sandbox, and one whose answer was lost after
// the charge: the retry is a replay, not a second charge. (env is the
// package's environment, started in TestMain with paymentjobtest.Start.)
func Example() {
	ctx := context.Background()
	c := env.Client()
	_ = c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "example"}})
	if err := env.CreateProvider(ctx, "example", "stripe"); err != nil {
		fmt.Println(err)
		return
	}
	if err := env.Faults().LoseResponses(1); err != nil {
		fmt.Println(err)
		return
	}
	_ = c.Create(ctx, &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: "invoice-42", Namespace: "example"},
		Spec: paymentsv1alpha1.PaymentJobSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: "stripe"},
			Amount: 2000, Currency: "usd", PaymentMethod: paymentjobtest.PaymentMethodSucceeds},
	})
	job, err := env.WaitForPhase(ctx, "example", "invoice-42", paymentsv1alpha1.PhaseCompleted, time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(job.Status.Phase, "replayed:", job.Status.ProviderResponse.Replayed, "charges:", env.Charges("example/invoice-42"))
	// Output: Completed replayed: true charges: 1
}

// A payment through the operator's HTTP adapter: the provider charges at
// the sandbox's routes of the HTTP contract instead of its Stripe API.
func ExampleEnv_CreateHTTPProvider() {
	ctx := context.Background()
	c := env.Client()
	_ = c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "example-http"}})
	if err := env.CreateHTTPProvider(ctx, "example-http", "payments"); err != nil {
		fmt.Println(err)
		return
	}
	_ = c.Create(ctx, &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: "invoice-43", Namespace: "example-http"},
		Spec: paymentsv1alpha1.PaymentJobSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: "payments"},
			Amount: 2000, Currency: "usd", PaymentMethod: paymentjobtest.PaymentMethodSucceeds},
	})
	job, err := env.WaitForPhase(ctx, "example-http", "invoice-43", paymentsv1alpha1.PhaseCompleted, time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(job.Status.Phase, "at", strings.TrimPrefix(job.Status.Provider.Endpoint, env.SandboxURLs().StripeAPIBase),
		"charges:", env.Charges("example-http/invoice-43"))
	// Output: Completed at /http/charges charges: 1
}

// A provider the test writes itself, here an http one without a lookup
// endpoint: jobs through it wait until it is Ready, so the test waits too.
func ExampleEnv_WaitForProviderReady() {
	ctx := context.Background()
	c := env.Client()
	_ = c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "example-ready"}})
	_ = c.Create(ctx, &paymentsv1alpha1.PaymentProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "no-lookup", Namespace: "example-ready"},
		Spec: paymentsv1alpha1.PaymentProviderSpec{HTTP: &paymentsv1alpha1.HTTPProvider{
			URL: env.SandboxURLs().HTTPCharges,
		}},
	})
	pp, err := env.WaitForProviderReady(ctx, "example-ready", "no-lookup", time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	ready := meta.FindStatusCondition(pp.Status.Conditions, paymentsv1alpha1.ConditionReady)
	fmt.Println(ready.Type, ready.Status, ready.Reason)
	// Output: Ready True Ready
}

// The event a job's outcome is announced with, waited for instead of read
// once: the operator records it just after the status it announces.
func ExampleEnv_WaitForEvent() {
	ctx := context.Background()
	c := env.Client()
	_ = c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "example-events"}})
	if err := env.CreateProvider(ctx, "example-events", "stripe"); err != nil {
		fmt.Println(err)
		return
	}
	job := &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: "invoice-44", Namespace: "example-events"},
		Spec: paymentsv1alpha1.PaymentJobSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: "stripe"},
			Amount: 2000, Currency: "usd", PaymentMethod: paymentjobtest.PaymentMethodDeclined},
	}
	_ = c.Create(ctx, job)
	ev, err := env.WaitForEvent(ctx, job, paymentsv1alpha1.ReasonCardDeclined, time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ev.Type, ev.Reason)
	// Output: Warning CardDeclined
}

// Every fault switch returns an error: nil when the sandbox took it.
func ExampleFaults() {
	f := env.Faults()
	fmt.Println(f.LoseResponses(1))
	fmt.Println(f.RateLimit(1, time.Second))
	fmt.Println(f.PendingRefunds(2 * time.Second))
	fmt.Println(f.LoseResponses(-1))
	fmt.Println(f.FailRefund("re_unknown"))
	fmt.Println(f.Reset())
	// Output:
	// <nil>
	// <nil>
	// <nil>
	// paymentjobtest: cannot lose -1 responses
	// paymentjobtest: cannot fail refund re_unknown: no such refund
	// <nil>
}

// A partial refund of a paid job, and what the sandbox gave back of the
// charge: the refund is made once, whatever the operator's retries.
func ExampleEnv_CreateRefund() {
	ctx := context.Background()
	c := env.Client()
	_ = c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "example-refund"}})
	if err := env.CreateProvider(ctx, "example-refund", "stripe"); err != nil {
		fmt.Println(err)
		return
	}
	_ = c.Create(ctx, &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: "invoice-45", Namespace: "example-refund"},
		Spec: paymentsv1alpha1.PaymentJobSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: "stripe"},
			Amount: 2000, Currency: "usd", PaymentMethod: paymentjobtest.PaymentMethodSucceeds},
	})
	// The refund waits until the job is Completed.
	if _, err := env.CreateRefund(ctx, "example-refund", "invoice-45-partial", "invoice-45",
		paymentjobtest.RefundOptions{Amount: 500, Reason: paymentsv1alpha1.RefundRequestedByCustomer}); err != nil {
		fmt.Println(err)
		return
	}
	rf, err := env.WaitForRefundPhase(ctx, "example-refund", "invoice-45-partial", paymentsv1alpha1.PhaseCompleted, time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rf.Status.Phase, rf.Status.ProviderResponse.Amount, rf.Status.Charge.Currency,
		"refunds:", len(env.Refunds("example-refund/invoice-45")), "refunded:", env.Refunded("example-refund/invoice-45"))
	// Output: Completed 500 usd refunds: 1 refunded: 500
}

// A refund the provider fails after it succeeded (a closed card): the
// operator reads it again and sets the PaymentRefund Failed.
func ExampleFaults_FailRefund() {
	ctx := context.Background()
	c := env.Client()
	_ = c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "example-failed-refund"}})
	if err := env.CreateProvider(ctx, "example-failed-refund", "stripe"); err != nil {
		fmt.Println(err)
		return
	}
	_ = c.Create(ctx, &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: "invoice-46", Namespace: "example-failed-refund"},
		Spec: paymentsv1alpha1.PaymentJobSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: "stripe"},
			Amount: 2000, Currency: "usd", PaymentMethod: paymentjobtest.PaymentMethodSucceeds},
	})
	if _, err := env.CreateRefund(ctx, "example-failed-refund", "invoice-46-refund", "invoice-46",
		paymentjobtest.RefundOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	rf, err := env.WaitForRefundPhase(ctx, "example-failed-refund", "invoice-46-refund", paymentsv1alpha1.PhaseCompleted, time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := env.Faults().FailRefund(rf.Status.ProviderResponse.ID); err != nil {
		fmt.Println(err)
		return
	}
	rf, err = env.WaitForRefundPhase(ctx, "example-failed-refund", "invoice-46-refund", paymentsv1alpha1.PhaseFailed, time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rf.Status.Phase, rf.Status.Failure.Reason, "refunded:", env.Refunded("example-failed-refund/invoice-46"))
	// Output: Failed RefundFailedAfterSuccess refunded: 0
}

// A SEPA debit waits AwaitingSettlement, charged once, until the sandbox
// settles it; here the test settles it at once instead of waiting.
func ExampleEnv_SettleDebits() {
	ctx := context.Background()
	c := env.Client()
	_ = c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "example-debit"}})
	if err := env.CreateProvider(ctx, "example-debit", "stripe"); err != nil {
		fmt.Println(err)
		return
	}
	// Pending until settled below; Reset brings back the 5 seconds.
	_ = env.Faults().PendingDebits(time.Hour)
	defer func() { _ = env.Faults().Reset() }()
	_ = c.Create(ctx, &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: "invoice-47", Namespace: "example-debit"},
		Spec: paymentsv1alpha1.PaymentJobSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: "stripe"},
			Amount: 2000, Currency: "eur", PaymentMethod: paymentjobtest.PaymentMethodDebitSettles},
	})
	job, err := env.WaitForReason(ctx, "example-debit", "invoice-47", paymentsv1alpha1.ReasonAwaitingSettlement, time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(job.Status.Phase, job.Status.Settlement.Method, "charges:", env.Charges("example-debit/invoice-47"))
	fmt.Println("settled:", env.SettleDebits())
	job, err = env.WaitForPhase(ctx, "example-debit", "invoice-47", paymentsv1alpha1.PhaseCompleted, time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(job.Status.Phase, "charges:", env.Charges("example-debit/invoice-47"))
	// Output:
	// Processing sepa_debit charges: 1
	// settled: 1
	// Completed charges: 1
}

// A debit the bank returns: the job fails with the bank's reason, after
// the sandbox's 5 seconds.
func ExampleEnv_WaitForReason() {
	ctx := context.Background()
	c := env.Client()
	_ = c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "example-returned"}})
	if err := env.CreateProvider(ctx, "example-returned", "stripe"); err != nil {
		fmt.Println(err)
		return
	}
	_ = c.Create(ctx, &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: "invoice-48", Namespace: "example-returned"},
		Spec: paymentsv1alpha1.PaymentJobSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: "stripe"},
			Amount: 2000, Currency: "eur", PaymentMethod: paymentjobtest.PaymentMethodDebitFails},
	})
	if _, err := env.WaitForReason(ctx, "example-returned", "invoice-48", paymentsv1alpha1.ReasonAwaitingSettlement, time.Minute); err != nil {
		fmt.Println(err)
		return
	}
	job, err := env.WaitForPhase(ctx, "example-returned", "invoice-48", paymentsv1alpha1.PhaseFailed, time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(job.Status.Phase, job.Status.Failure.Reason)
	// Output: Failed insufficient_funds
}

// The debit settle delay is a switch like the others.
func ExampleFaults_PendingDebits() {
	fmt.Println(env.Faults().PendingDebits(time.Minute))
	fmt.Println(env.Faults().PendingDebits(-time.Second))
	fmt.Println(env.Faults().Reset())
	// Output:
	// <nil>
	// paymentjobtest: cannot keep debits pending for -1s
	// <nil>
}

// A signed event wakes a settling job at once, where without it the job
// waits for its next read of the provider (every 30 s at first for a
// provider with events).
func ExampleSendEvent() {
	ctx := context.Background()
	c := env.Client()
	_ = c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "example-event"}})
	if err := env.CreateProvider(ctx, "example-event", "stripe"); err != nil {
		fmt.Println(err)
		return
	}
	if err := env.EnableEvents(ctx, "example-event", "stripe", "whsec_example"); err != nil {
		fmt.Println(err)
		return
	}
	_ = env.Faults().PendingDebits(time.Hour)
	defer func() { _ = env.Faults().Reset() }()
	_ = c.Create(ctx, &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: "invoice-49", Namespace: "example-event"},
		Spec: paymentsv1alpha1.PaymentJobSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: "stripe"},
			Amount: 2000, Currency: "eur", PaymentMethod: paymentjobtest.PaymentMethodDebitSettles},
	})
	job, err := env.WaitForReason(ctx, "example-event", "invoice-49", paymentsv1alpha1.ReasonAwaitingSettlement, time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	env.SettleDebits()
	url := env.EventsURL("example-event", "stripe")
	fmt.Println(paymentjobtest.SendEvent(ctx, url, "whsec_forged", "payment_intent.succeeded", job) != nil)
	fmt.Println(paymentjobtest.SendEvent(ctx, url, "whsec_example", "payment_intent.succeeded", job))
	job, err = env.WaitForPhase(ctx, "example-event", "invoice-49", paymentsv1alpha1.PhaseCompleted, 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(job.Status.Phase, "charges:", env.Charges("example-event/invoice-49"))
	// Output:
	// true
	// <nil>
	// Completed charges: 1
}

// Where a provider sends its events: the operator in the Env serves them
// on 127.0.0.1.
func ExampleEnv_EventsURL() {
	url := env.EventsURL("billing", "stripe")
	fmt.Println(strings.HasPrefix(url, "http://127.0.0.1:"), strings.TrimLeft(url[strings.LastIndex(url, ":"):], ":0123456789"))
	// Output: true /events/billing/stripe
}

// A provider that accepts signed events: its endpoint secret is kept in a
// labelled Secret that spec.events names.
func ExampleEnv_EnableEvents() {
	ctx := context.Background()
	_ = env.Client().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "example-enable"}})
	if err := env.CreateProvider(ctx, "example-enable", "stripe"); err != nil {
		fmt.Println(err)
		return
	}
	if err := env.EnableEvents(ctx, "example-enable", "stripe", "whsec_example"); err != nil {
		fmt.Println(err)
		return
	}
	pp, err := env.WaitForProviderReady(ctx, "example-enable", "stripe", time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(pp.Spec.Events.SecretRef.Name, pp.Spec.Events.SecretRef.Key)
	// Output: stripe-events secret
}
