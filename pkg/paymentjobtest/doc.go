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

// Package paymentjobtest runs the paymentjob-operator inside a test, for
// the integration tests of services that create PaymentJobs: one call
// installs the CRDs (embedded here, no path to the operator's config/ is
// needed) on a control plane started from KUBEBUILDER_ASSETS or on the
// API server of an envtest.Environment the test already has, starts a
// payment sandbox on 127.0.0.1, and runs the operator's reconcilers in the
// test process. Jobs then complete, fail or retry as they would in a
// cluster, against the real Stripe adapter and the sandbox.
//
// From nothing to a Completed PaymentJob:
//
//	env := paymentjobtest.StartT(t, paymentjobtest.Options{})
//	ctx := context.Background()
//	c := env.Client()
//	c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "billing"}})
//	env.CreateProvider(ctx, "billing", "stripe")
//	c.Create(ctx, &paymentsv1alpha1.PaymentJob{
//		ObjectMeta: metav1.ObjectMeta{Name: "invoice-42", Namespace: "billing"},
//		Spec: paymentsv1alpha1.PaymentJobSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: "stripe"},
//			Amount: 2000, Currency: "usd", PaymentMethod: paymentjobtest.PaymentMethodSucceeds},
//	})
//	job, err := env.WaitForPhase(ctx, "billing", "invoice-42", paymentsv1alpha1.PhaseCompleted, time.Minute)
//
// CreateProvider makes a provider of the Stripe adapter, CreateHTTPProvider
// one of the HTTP adapter against the sandbox's routes of the HTTP contract
// (Env.SandboxURLs); a provider the test writes itself is waited for with
// WaitForProviderReady. WaitForPhase and WaitFor wait for a job's status,
// WaitForEvent for an event on any object (the operator records an event
// just after the status it announces, so reading events once races it);
// the reasons are the Reason constants of the API package.
//
// Env.Charges counts the sandbox's charges per idempotency key, and
// Env.Faults switches its faults: declines, responses lost after the
// charge, rate limits, latency, forgotten keys, refunds that stay pending
// or fail after they succeeded; every switch returns an error.
//
// Refunds: CreateRefund creates a PaymentRefund of a job (the whole charge,
// or RefundOptions.Amount), WaitForRefundPhase and WaitForRefund wait for
// its status, and Env.Refunds and Env.Refunded read what the sandbox gave
// back of the job's charge.
//
// Bank debits: a job paid with PaymentMethodDebitSettles (or
// PaymentMethodDebitFails) waits Processing with Ready=False reason
// AwaitingSettlement (WaitForReason), charged once, until the sandbox
// decides it: after 5 seconds, after Faults.PendingDebits, or at once with
// SettleDebits. The operator serves its signed events endpoint on
// 127.0.0.1 (EventsURL); EnableEvents gives a provider its endpoint secret
// and SendEvent sends a signed Stripe event that wakes a settling job.
// docs/testing.md shows a complete test and how to get the control
// plane's binaries.
package paymentjobtest
