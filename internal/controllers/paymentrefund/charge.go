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

package paymentrefund

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// The charge a refund gives money back from: its PaymentJob's, or, once
// the job is gone, the ledger's record of it; and whether the job is the
// payment the refund was written for.

// findCharge finds the refunded charge and where it was made (books, nil
// when unknown), or says why the refund waits or fails.
func (k kind) findCharge(ctx context.Context, rf *paymentsv1alpha1.PaymentRefund) (
	ch *paymentsv1alpha1.RefundedCharge, books *paymentsv1alpha1.ProviderIdentity, decided engine.Result, err error) {
	ref := rf.Spec.PaymentJobRef
	reader := k.APIReader
	if reader == nil {
		reader = k.Client
	}
	job, err := readJob(ctx, reader, types.NamespacedName{Namespace: rf.Namespace, Name: ref.Name})
	switch {
	case apierrors.IsNotFound(err):
		return k.chargeFromLedger(ctx, rf)
	case err != nil:
		return nil, nil, engine.Result{}, fmt.Errorf("cannot get PaymentJob %q: %w", ref.Name, err)
	}
	if ref.IdempotencyKey != "" && ref.IdempotencyKey != payment.EffectiveKey(job.Name, job.Spec.IdempotencyKey) {
		return nil, nil, engine.Wait(engine.Progress{Reason: paymentsv1alpha1.ReasonPaymentMismatch, Stalled: true, Message: fmt.Sprintf(
			"spec.paymentJobRef.idempotencyKey %q is not the key of PaymentJob %q; not refunding another payment",
			ref.IdempotencyKey, ref.Name)}, 0), nil
	}
	switch job.Status.Phase {
	case paymentsv1alpha1.PhaseFailed:
		return nil, nil, engine.Refuse(&payment.Refusal{Class: payment.ErrInvalid, Reason: paymentsv1alpha1.ReasonPaymentFailed,
			Message: fmt.Sprintf("PaymentJob %q failed: it moved no money, so nothing is refunded", ref.Name)}), nil
	case paymentsv1alpha1.PhaseCompleted:
	default:
		if s := job.Status.Settlement; s != nil && s.SettledAt == nil && job.Status.ProviderResponse != nil {
			// The provider refuses to refund a payment it has not
			// settled (Stripe: a processing PaymentIntent); the refund
			// waits, and the PaymentJob's watch brings it back.
			return nil, nil, engine.Wait(engine.Progress{Reason: paymentsv1alpha1.ReasonAwaitingSettlement, Message: fmt.Sprintf(
				"Waiting for PaymentJob %q to settle: the provider accepted payment %s on %s and has not settled it; "+
					"a payment is refunded only once it has settled", ref.Name, job.Status.ProviderResponse.ID,
				s.Since.UTC().Format("2006-01-02"))}, 0), nil
		}
		return nil, nil, engine.Wait(engine.Progress{Reason: paymentsv1alpha1.ReasonPaymentNotCompleted, Message: fmt.Sprintf(
			"Waiting for PaymentJob %q to be Completed (it is %s)", ref.Name, phaseOrNew(job.Status.Phase))}, 0), nil
	}
	resp := job.Status.ProviderResponse
	if resp == nil || resp.ID == "" {
		return nil, nil, engine.Wait(engine.Progress{Reason: paymentsv1alpha1.ReasonPaymentNotCompleted, Stalled: true, Message: fmt.Sprintf(
			"PaymentJob %q is Completed without a charge id; the refund cannot name the charge", ref.Name)}, 0), nil
	}
	if ref.IdempotencyKey == "" && job.CreationTimestamp.After(rf.CreationTimestamp.Add(RefundBindWindow)) {
		seen, err := k.paidBefore(ctx, rf, job)
		switch {
		case err != nil:
			p := engine.LedgerUnanswered(ctx, kindName, err, fmt.Sprintf("asked whether PaymentJob %q was paid before this refund was written", ref.Name))
			return nil, nil, engine.Wait(p, 0), nil
		case !seen:
			return nil, nil, engine.Wait(engine.Progress{Reason: paymentsv1alpha1.ReasonPaymentCreatedAfterRefund, Stalled: true, Message: fmt.Sprintf(
				"Not refunding: PaymentJob %q was created at %s, more than %s after this refund (%s), and spec.paymentJobRef "+
					"names no idempotencyKey, so this refund was not written for it. Create a new PaymentRefund that names the "+
					"payment's key in spec.paymentJobRef.idempotencyKey (kubectl payments refund writes it)", ref.Name,
				job.CreationTimestamp.UTC().Format(time.RFC3339), RefundBindWindow, rf.CreationTimestamp.UTC().Format(time.RFC3339))}, 0), nil
		}
	}
	ch = &paymentsv1alpha1.RefundedCharge{ID: resp.ID, IdempotencyKey: job.Status.IdempotencyKey, Amount: resp.Amount, Currency: resp.Currency}
	if ch.Amount == 0 {
		ch.Amount, ch.Currency = job.Spec.Amount, job.Spec.Currency
	}
	return ch, job.Status.Provider, engine.Proceed(), nil
}

// paidBefore reports whether job, created after rf, is a re-creation of a
// payment made before rf was written: the ledger recorded its charge, under
// its key, before rf's creation. That payment is the one rf's author could
// see, although its object is newer.
func (k kind) paidBefore(ctx context.Context, rf *paymentsv1alpha1.PaymentRefund, job *paymentsv1alpha1.PaymentJob) (bool, error) {
	if k.Ledger == nil || job.Status.IdempotencyKey == "" {
		return false, nil
	}
	e, found, err := k.Ledger.Find(ctx, job.Status.IdempotencyKey)
	if err != nil || !found {
		return false, err
	}
	return e.Outcome == paymentsv1alpha1.LedgerCompleted && e.Charge == job.Status.ProviderResponse.ID &&
		e.At.Before(rf.CreationTimestamp.Time), nil
}

// readJob reads the PaymentJob key from the API server. It asks the API
// server's watch cache first (resourceVersion "0": no read from etcd), and
// takes a Completed job from there: Completed is final, so the cache can be
// behind but not wrong about it. Anything else (not found, not Completed
// yet, Failed) is read again from etcd, so that a refund never waits or
// fails on a stale copy.
func readJob(ctx context.Context, reader client.Reader, key types.NamespacedName) (*paymentsv1alpha1.PaymentJob, error) {
	var job paymentsv1alpha1.PaymentJob
	err := reader.Get(ctx, key, &job, &client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: "0"}})
	if err == nil && job.Status.Phase == paymentsv1alpha1.PhaseCompleted {
		return &job, nil
	}
	job = paymentsv1alpha1.PaymentJob{}
	if err := reader.Get(ctx, key, &job); err != nil {
		return nil, err
	}
	return &job, nil
}

// chargeFromLedger finds the charge of a PaymentJob that is gone in the
// ledger, under the key the job sent: spec.paymentJobRef.idempotencyKey or
// its name, scoped like the job's by the provider's key scope.
func (k kind) chargeFromLedger(ctx context.Context, rf *paymentsv1alpha1.PaymentRefund) (
	*paymentsv1alpha1.RefundedCharge, *paymentsv1alpha1.ProviderIdentity, engine.Result, error) {
	ref := rf.Spec.PaymentJobRef
	missing := engine.Wait(engine.Progress{Reason: paymentsv1alpha1.ReasonPaymentNotFound, Message: fmt.Sprintf(
		"PaymentJob %q does not exist and the operator's ledger holds no payment under its key; "+
			"waiting for it (if it is gone, set spec.paymentJobRef.idempotencyKey to its key)", ref.Name)}, 0)
	if k.Ledger == nil {
		return nil, nil, missing, nil
	}
	var pp paymentsv1alpha1.PaymentProvider
	if err := k.Client.Get(ctx, types.NamespacedName{Namespace: rf.Namespace, Name: rf.Spec.ProviderRef.Name}, &pp); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, engine.Wait(engine.Progress{Reason: paymentsv1alpha1.ReasonProviderNotFound, Message: fmt.Sprintf(
				"PaymentProvider %q not found in namespace %q", rf.Spec.ProviderRef.Name, rf.Namespace)}, 0), nil
		}
		return nil, nil, engine.Result{}, err
	}
	key := payment.ScopedKey(pp.Spec.KeyScope, rf.Namespace, payment.EffectiveKey(ref.Name, ref.IdempotencyKey))
	e, found, err := k.Ledger.Find(ctx, key)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, nil, engine.Result{}, err
	case err != nil:
		// Not a charge the ledger lacks: one it could not say.
		p := engine.LedgerUnanswered(ctx, kindName, err, fmt.Sprintf("asked for the charge of PaymentJob %q, which is gone", ref.Name))
		return nil, nil, engine.Wait(p, 0), nil
	case !found:
		return nil, nil, missing, nil
	case e.Outcome != paymentsv1alpha1.LedgerCompleted:
		return nil, nil, engine.Refuse(&payment.Refusal{Class: payment.ErrInvalid, Reason: paymentsv1alpha1.ReasonPaymentFailed,
			Message: fmt.Sprintf("the operator's ledger records that PaymentJob %q failed: nothing to refund", ref.Name)}), nil
	}
	books := e.Provider
	return &paymentsv1alpha1.RefundedCharge{ID: e.Charge, IdempotencyKey: e.Key}, &books, engine.Proceed(), nil
}

// chargeNotHeld is the stall of a refund whose charge the provider, asked
// for it, says it does not hold (a paymentsv1alpha1.ReasonChargeNotFound refusal of the
// lookup: an id it never made at the account PaymentProvider provider
// reaches), or nil for any other answer. It is no uncertainty to retry for
// ever: the job's record names a charge this account does not have (a
// resolution the provider could not check, its ledger entry, or a
// provider pointed at another account since). Nothing is sent; the refund
// looks again by itself, and goes on once the provider holds the charge.
func chargeNotHeld(rf *paymentsv1alpha1.PaymentRefund, provider, charge string, err error) *engine.Progress {
	refusal, ok := payment.IsRefusal(err)
	if !ok || refusal.Reason != payment.ReasonChargeNotFound {
		return nil
	}
	return &engine.Progress{Reason: paymentsv1alpha1.ReasonChargeNotFound, Stalled: true, Message: payment.CleanMessage(fmt.Sprintf(
		"Not refunding: PaymentProvider %q holds no charge %s, which PaymentJob %q names as its payment (%s); nothing was "+
			"refunded. The job's charge id may come from a resolution the provider could not verify (status.resolution.verified: "+
			"false) or its ledger entry, or the charge is at another account: check the id at the provider, point the "+
			"PaymentProvider at the account that holds it, or delete this PaymentRefund. Checked again by itself",
		provider, charge, rf.Spec.PaymentJobRef.Name, refusal.Message), engine.MaxMessageLength)}
}

// phaseOrNew names a phase for a message.
func phaseOrNew(p paymentsv1alpha1.PaymentJobPhase) string {
	if p == "" {
		return "new"
	}
	return string(p)
}
