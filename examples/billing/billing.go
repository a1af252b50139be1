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

// Package billing is a tiny billing service, the kind that builds on the
// paymentjob-operator: it turns an invoice into a PaymentJob, once, reads
// back whether it was paid, and gives part of it back with a credit note
// (a PaymentRefund). Its tests use pkg/paymentjobtest only.
package billing

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// Invoice is what the billing service charges.
type Invoice struct {
	// Number is unique per customer account, such as "2026-0042".
	Number string
	// AmountCents is the total in minor units.
	AmountCents int64
	// Currency is the ISO 4217 code, lower case.
	Currency string
	// PaymentMethod is the customer's stored payment method.
	PaymentMethod string
	// NeedsApproval holds the payment until someone approves it.
	NeedsApproval bool
}

// Service submits invoices as PaymentJobs in one namespace, through one
// PaymentProvider.
type Service struct {
	Client    client.Client
	Namespace string
	Provider  string
}

// JobName is the PaymentJob of an invoice: one invoice, one job, so a
// retried Submit never makes a second payment.
func JobName(inv Invoice) string {
	return "invoice-" + strings.ToLower(inv.Number)
}

// PaymentKey is the idempotency key of an invoice's payment.
func PaymentKey(inv Invoice) string {
	return "invoice/" + inv.Number
}

// Submit creates the invoice's PaymentJob. Submitting the same invoice
// again is harmless: the job exists already, and its idempotency key is
// the invoice's.
func (s *Service) Submit(ctx context.Context, inv Invoice) error {
	job := &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: JobName(inv), Namespace: s.Namespace},
		Spec: paymentsv1alpha1.PaymentJobSpec{
			ProviderRef:    paymentsv1alpha1.ProviderReference{Name: s.Provider},
			Amount:         inv.AmountCents,
			Currency:       inv.Currency,
			PaymentMethod:  inv.PaymentMethod,
			IdempotencyKey: PaymentKey(inv),
			Description:    "Invoice " + inv.Number,
			Suspend:        &inv.NeedsApproval,
		},
	}
	if err := s.Client.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("cannot submit invoice %s: %w", inv.Number, err)
	}
	return nil
}

// Approve lets a held invoice be charged.
func (s *Service) Approve(ctx context.Context, inv Invoice) error {
	job := &paymentsv1alpha1.PaymentJob{ObjectMeta: metav1.ObjectMeta{Name: JobName(inv), Namespace: s.Namespace}}
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"suspend":false}}`))
	if err := s.Client.Patch(ctx, job, patch); err != nil {
		return fmt.Errorf("cannot approve invoice %s: %w", inv.Number, err)
	}
	return nil
}

// CreditNote gives part of a paid invoice back.
type CreditNote struct {
	// Number is unique per customer account, such as "CN-7".
	Number string
	// AmountCents is what goes back, in the invoice's minor units; never
	// more than what is left of the invoice's payment.
	AmountCents int64
}

// RefundName is the PaymentRefund of a credit note: one note, one refund,
// so a retried Credit never gives money back twice.
func RefundName(inv Invoice, note CreditNote) string {
	return JobName(inv) + "-" + strings.ToLower(note.Number)
}

// Credit creates the credit note's PaymentRefund of the invoice's payment.
// Crediting the same note again is harmless: the refund exists already,
// and its idempotency key is the note's. The refund names the invoice's
// job and its key, so that it finds the payment in the operator's ledger
// also once the job was deleted (by its TTL).
func (s *Service) Credit(ctx context.Context, inv Invoice, note CreditNote) error {
	refund := &paymentsv1alpha1.PaymentRefund{
		ObjectMeta: metav1.ObjectMeta{Name: RefundName(inv, note), Namespace: s.Namespace},
		Spec: paymentsv1alpha1.PaymentRefundSpec{
			ProviderRef: paymentsv1alpha1.ProviderReference{Name: s.Provider},
			PaymentJobRef: paymentsv1alpha1.PaymentJobReference{
				Name: JobName(inv), IdempotencyKey: PaymentKey(inv)},
			Amount:         &note.AmountCents,
			Reason:         paymentsv1alpha1.RefundRequestedByCustomer,
			IdempotencyKey: "credit-note/" + note.Number,
			Metadata:       map[string]string{"invoice": inv.Number, "creditNote": note.Number},
		},
	}
	if err := s.Client.Create(ctx, refund); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("cannot credit %s on invoice %s: %w", note.Number, inv.Number, err)
	}
	return nil
}
