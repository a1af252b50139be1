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

package paymentjobtest

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// Refunds: a PaymentRefund gives (part of) a PaymentJob's charge back, run
// by the operator's engine as jobs are. CreateRefund writes one, the waits
// read its status, and Refunds and Refunded read what the sandbox actually
// gave back, which is what a test of exactly-once checks.

// RefundOptions are the optional fields of the PaymentRefund CreateRefund
// creates. The zero value refunds the whole charge through the job's
// provider, under the refund's name as its key.
type RefundOptions struct {
	// Amount to refund, in the charge's minor unit; zero refunds the whole
	// charge (spec.amount left out).
	Amount int64
	// Reason is spec.reason; empty leaves it out.
	Reason paymentsv1alpha1.RefundReason
	// IdempotencyKey is spec.idempotencyKey; empty is the refund's name.
	// Two PaymentRefunds with one key in a namespace are one refund.
	IdempotencyKey string
	// Metadata is spec.metadata, attached to the refund at the sandbox.
	Metadata map[string]string
	// Provider names the PaymentProvider that refunds; empty is the job's
	// spec.providerRef.
	Provider string
}

// CreateRefund creates, in namespace, the PaymentRefund named name of the
// PaymentJob job, and returns it as created. It reads the job for its
// provider and its spec.idempotencyKey, which the refund's paymentJobRef
// carries so that the refund still finds the charge in the operator's
// ledger once the job is deleted. A job that does not exist is an error
// unless opts.Provider is set: the refund then waits for the job, or
// finds its charge in the ledger under the job's name. The refund waits
// (Pending, PaymentNotCompleted) until the job is Completed: wait for it
// with WaitForRefundPhase.
func (e *Env) CreateRefund(ctx context.Context, namespace, name, job string,
	opts RefundOptions) (*paymentsv1alpha1.PaymentRefund, error) {
	ref := paymentsv1alpha1.PaymentJobReference{Name: job}
	provider := opts.Provider
	var pj paymentsv1alpha1.PaymentJob
	switch err := e.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: job}, &pj); {
	case err == nil:
		ref.IdempotencyKey = pj.Spec.IdempotencyKey
		if provider == "" {
			provider = pj.Spec.ProviderRef.Name
		}
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("paymentjobtest: cannot read PaymentJob %s/%s to refund it: %w", namespace, job, err)
	case provider == "":
		return nil, fmt.Errorf("paymentjobtest: cannot refund PaymentJob %s/%s: it does not exist; "+
			"set RefundOptions.Provider to refund a job that is gone (or not created yet)", namespace, job)
	}
	rf := &paymentsv1alpha1.PaymentRefund{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: paymentsv1alpha1.PaymentRefundSpec{
			ProviderRef:    paymentsv1alpha1.ProviderReference{Name: provider},
			PaymentJobRef:  ref,
			Reason:         opts.Reason,
			IdempotencyKey: opts.IdempotencyKey,
			Metadata:       opts.Metadata,
		},
	}
	if opts.Amount != 0 {
		rf.Spec.Amount = ptr.To(opts.Amount)
	}
	if err := e.client.Create(ctx, rf); err != nil {
		return nil, fmt.Errorf("paymentjobtest: cannot create the PaymentRefund: %w", err)
	}
	return rf, nil
}

// WaitForRefundPhase waits up to timeout until the PaymentRefund is in
// phase, and returns it. Otherwise the error says where the refund is: its
// phase, the charge it refunds, its conditions and its events. A refund
// that Failed ends a wait for another phase at once, and a Completed one
// a wait for Pending or Processing; a Completed refund does not end a wait
// for Failed, since the operator sets Failed (RefundFailedAfterSuccess) a
// refund the provider fails after it succeeded (Faults.FailRefund).
func (e *Env) WaitForRefundPhase(ctx context.Context, namespace, name string, phase paymentsv1alpha1.PaymentJobPhase,
	timeout time.Duration) (*paymentsv1alpha1.PaymentRefund, error) {
	return e.WaitForRefund(ctx, namespace, name, string(phase), timeout, func(rf *paymentsv1alpha1.PaymentRefund) (bool, error) {
		switch p := rf.Status.Phase; {
		case p == phase:
			return true, nil
		case p == paymentsv1alpha1.PhaseFailed, p == paymentsv1alpha1.PhaseCompleted && phase != paymentsv1alpha1.PhaseFailed:
			return false, fmt.Errorf("it is %s, which is final", p)
		}
		return false, nil
	})
}

// WaitForRefund is WaitFor for a PaymentRefund: it waits up to timeout
// until done says the refund is where the test wants it (what names that,
// for the error), and returns it. done may end the wait with an error.
// Otherwise the error says where the refund is.
func (e *Env) WaitForRefund(ctx context.Context, namespace, name, what string, timeout time.Duration,
	done func(*paymentsv1alpha1.PaymentRefund) (bool, error)) (*paymentsv1alpha1.PaymentRefund, error) {
	return waitFor(ctx, e, &paymentsv1alpha1.PaymentRefund{}, "PaymentRefund", client.ObjectKey{Namespace: namespace, Name: name},
		what, timeout, done, func(rf *paymentsv1alpha1.PaymentRefund) string {
			charge := ""
			if c := rf.Status.Charge; c != nil {
				charge = fmt.Sprintf(", charge %s of %d %s", c.ID, c.Amount, c.Currency)
			}
			return e.describe(rf, &rf.Status.PaymentStatus, charge)
		})
}

// Refunds returns the sandbox's refunds of the charge made under the
// idempotency key the operator sent for a PaymentJob (as for Charges:
// "<namespace>/<spec.idempotencyKey or name>"), newest first, those that
// failed included; none when nothing was charged under key. A refund made
// exactly once is one element, however often it was sent.
func (e *Env) Refunds(key string) []sandbox.Refund {
	charge, ok := e.engine.LookupByKey(key)
	if !ok {
		return nil
	}
	return e.engine.ListRefunds(charge.ID)
}

// Refunded returns how much of the charge made under key (as for Refunds)
// the sandbox gave back or is giving back: the sum of its succeeded and
// pending refunds, in minor units. It is never more than the charge.
func (e *Env) Refunded(key string) int64 {
	charge, ok := e.engine.LookupByKey(key)
	if !ok {
		return 0
	}
	return e.engine.Refunded(charge.ID)
}
