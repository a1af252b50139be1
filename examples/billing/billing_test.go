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

package billing_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/paymentjobtest"

	"example.com/billing"
)

// The billing service's integration tests, against the operator's envtest
// kit only: a control plane from KUBEBUILDER_ASSETS, the operator in this
// process and its payment sandbox.

// docs:start main
var env *paymentjobtest.Env

func TestMain(m *testing.M) {
	var err error
	if env, err = paymentjobtest.Start(paymentjobtest.Options{}); err != nil {
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

// docs:end main

// newService is the billing service in a namespace of its own, with a
// PaymentProvider named "stripe" that charges at the sandbox.
func newService(t *testing.T, ns string) *billing.Service {
	t.Helper()
	ctx := context.Background()
	if err := env.Client().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := env.CreateProvider(ctx, ns, "stripe"); err != nil {
		t.Fatal(err)
	}
	return &billing.Service{Client: env.Client(), Namespace: ns, Provider: "stripe"}
}

// docs:start happy
func TestInvoiceIsPaidOnce(t *testing.T) {
	ctx := context.Background()
	svc := newService(t, "billing-happy")
	inv := billing.Invoice{Number: "2026-0042", AmountCents: 2000, Currency: "usd",
		PaymentMethod: paymentjobtest.PaymentMethodSucceeds}
	if err := svc.Submit(ctx, inv); err != nil {
		t.Fatal(err)
	}
	if err := svc.Submit(ctx, inv); err != nil { // a retry of the billing run
		t.Fatal(err)
	}
	job, err := env.WaitForPhase(ctx, "billing-happy", billing.JobName(inv), paymentsv1alpha1.PhaseCompleted, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if n := env.Charges("billing-happy/invoice/2026-0042"); n != 1 {
		t.Fatalf("charged %d times, want once (charge %s)", n, job.Status.ProviderResponse.ID)
	}
}

// docs:end happy

func TestDeclinedInvoiceFails(t *testing.T) {
	ctx := context.Background()
	svc := newService(t, "billing-declined")
	inv := billing.Invoice{Number: "2026-0043", AmountCents: 1500, Currency: "usd",
		PaymentMethod: paymentjobtest.PaymentMethodDeclined}
	if err := svc.Submit(ctx, inv); err != nil {
		t.Fatal(err)
	}
	job, err := env.WaitForPhase(ctx, "billing-declined", billing.JobName(inv), paymentsv1alpha1.PhaseFailed, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if job.Status.Failure == nil || job.Status.Failure.Reason != "CardDeclined" {
		t.Fatalf("failure %+v, want CardDeclined", job.Status.Failure)
	}
	if n := env.Charges("billing-declined/invoice/2026-0043"); n != 0 {
		t.Fatalf("a declined invoice was charged %d times", n)
	}
}

// docs:start lost
func TestLostResponseIsReplayedNotChargedAgain(t *testing.T) {
	ctx := context.Background()
	svc := newService(t, "billing-lost")
	if err := env.Faults().LoseResponses(1); err != nil { // the provider charges, and the answer never arrives
		t.Fatal(err)
	}
	inv := billing.Invoice{Number: "2026-0044", AmountCents: 990, Currency: "eur",
		PaymentMethod: paymentjobtest.PaymentMethodSucceeds}
	if err := svc.Submit(ctx, inv); err != nil {
		t.Fatal(err)
	}
	job, err := env.WaitForPhase(ctx, "billing-lost", billing.JobName(inv), paymentsv1alpha1.PhaseCompleted, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !job.Status.ProviderResponse.Replayed || env.Charges("billing-lost/invoice/2026-0044") != 1 {
		t.Fatalf("want one charge, replayed: %+v", job.Status.ProviderResponse)
	}
}

// docs:end lost

func TestHeldInvoiceIsChargedOnlyAfterApproval(t *testing.T) {
	ctx := context.Background()
	svc := newService(t, "billing-held")
	inv := billing.Invoice{Number: "2026-0045", AmountCents: 99900, Currency: "usd",
		PaymentMethod: paymentjobtest.PaymentMethodSucceeds, NeedsApproval: true}
	if err := svc.Submit(ctx, inv); err != nil {
		t.Fatal(err)
	}
	held := func(job *paymentsv1alpha1.PaymentJob) (bool, error) {
		ready := meta.FindStatusCondition(job.Status.Conditions, paymentsv1alpha1.ConditionReady)
		return job.Status.Phase == paymentsv1alpha1.PhasePending && ready != nil && ready.Reason == "Suspended", nil
	}
	if _, err := env.WaitFor(ctx, "billing-held", billing.JobName(inv), "Pending, Suspended", time.Minute, held); err != nil {
		t.Fatal(err)
	}
	if n := env.Charges("billing-held/invoice/2026-0045"); n != 0 {
		t.Fatalf("a held invoice was charged %d times before its approval", n)
	}
	if err := svc.Approve(ctx, inv); err != nil {
		t.Fatal(err)
	}
	if _, err := env.WaitForPhase(ctx, "billing-held", billing.JobName(inv), paymentsv1alpha1.PhaseCompleted, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := env.Charges("billing-held/invoice/2026-0045"); n != 1 {
		t.Fatalf("charged %d times after the approval, want once", n)
	}
}
