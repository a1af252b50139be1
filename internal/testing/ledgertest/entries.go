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

package ledgertest

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentjob"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentrefund"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// The entries the cases record, built as the engine builds them, and the
// helpers that record them and wait for what a handle sees.

// Provider accounts the entries were charged at.
var (
	stripeLive = paymentsv1alpha1.ProviderIdentity{
		UID: "5b0f3c9e-1a7d-4e62-9c41-0d8a2f6b7e13", Endpoint: "https://api.stripe.com", Account: "acct_1NvZ2kLkdIwHu7ix", Mode: "live",
	}
	stripeTestEU = paymentsv1alpha1.ProviderIdentity{
		UID: "c2e8a4d1-6f3b-4a90-8e27-91b5d0c3f6a8", Endpoint: "https://api.stripe.com", Account: "acct_1OaQ7mEUbTestAcct",
		Mode: "test", KeyScope: "eu",
	}
	httpService = paymentsv1alpha1.ProviderIdentity{
		UID: "7d91e0b2-3c4f-4b58-a6e9-2f0c8d1a5b74", Endpoint: "http://payments.shop.svc.cluster.local:8080",
	}
)

// completed is a payment that provider made under key, as charge.
func completed(key, charge string, provider paymentsv1alpha1.ProviderIdentity, at time.Time) ledger.Entry {
	return ledger.Entry{
		Key:         key,
		Fingerprint: payment.RequestHash(key, payment.ChargeRequest{Amount: chargeAmount, Currency: chargeCurrency}),
		Provider:    provider,
		Charge:      charge,
		Amount:      chargeAmount,
		Currency:    chargeCurrency,
		Outcome:     paymentsv1alpha1.LedgerCompleted,
		At:          at,
	}
}

// declined is a payment that provider refused under key: another request
// than completed's.
func declined(key string, provider paymentsv1alpha1.ProviderIdentity, at time.Time) ledger.Entry {
	return ledger.Entry{
		Key:         key,
		Fingerprint: payment.RequestHash(key, payment.ChargeRequest{Amount: 2500, Currency: "usd", PaymentMethod: "pm_card_chargeDeclined"}),
		Provider:    provider,
		Amount:      2500,
		Currency:    "usd",
		Outcome:     paymentsv1alpha1.LedgerFailed,
		Reason:      paymentsv1alpha1.ReasonCardDeclined,
		At:          at,
	}
}

// jobEntry is the entry the engine records for PaymentJob name in
// namespace ns, charged as charge at stripeLive.
func jobEntry(ns, name, charge string, at time.Time) ledger.Entry {
	job := &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       paymentsv1alpha1.PaymentJobSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: "stripe"}, Amount: chargeAmount, Currency: chargeCurrency},
	}
	job.Status.PaymentStatus = finished(charge, at)
	return recorded(paymentjob.Kind(), job)
}

// refundEntry is the entry the engine records for PaymentRefund name in
// namespace ns, of PaymentJob jobName's charge: refunded as refund at
// stripeLive, or refused when refund is empty. amount is its
// spec.amount, nil for the whole charge.
func refundEntry(ns, name, jobName, charge, refund string, amount *int64, at time.Time) ledger.Entry {
	rf := &paymentsv1alpha1.PaymentRefund{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: paymentsv1alpha1.PaymentRefundSpec{
			ProviderRef:   paymentsv1alpha1.ProviderReference{Name: "stripe"},
			PaymentJobRef: paymentsv1alpha1.PaymentJobReference{Name: jobName},
			Amount:        amount,
		},
	}
	rf.Status.PaymentStatus = finished(refund, at)
	rf.Status.Charge = &paymentsv1alpha1.RefundedCharge{ID: charge, Amount: chargeAmount, Currency: chargeCurrency}
	e := recorded(paymentrefund.Kind(paymentrefund.Deps{}), rf)
	// What a refund's entry names of its charge, whoever fills it in.
	e.RefundedCharge = charge
	return e
}

// finished is the status of an object finished at stripeLive at at: as
// id, or refused when id is empty.
func finished(id string, at time.Time) paymentsv1alpha1.PaymentStatus {
	done := metav1.NewTime(at)
	provider := stripeLive
	st := paymentsv1alpha1.PaymentStatus{Phase: paymentsv1alpha1.PhaseCompleted, Provider: &provider, CompletedAt: &done,
		ProviderResponse: &paymentsv1alpha1.ProviderResponse{ID: id, Status: "succeeded"}}
	if id == "" {
		st.Phase, st.ProviderResponse = paymentsv1alpha1.PhaseFailed, nil
		st.Failure = &paymentsv1alpha1.Failure{Reason: paymentsv1alpha1.ReasonChargeNotRefundable}
	}
	return st
}

// recorded is the entry the engine records for obj of kind k: keyed and
// fingerprinted by the kind, as the reconciler records it.
func recorded(k engine.AnyKind, obj engine.Object) ledger.Entry {
	key := engine.KeyOf(k, obj)
	return engine.LedgerEntry(obj, k.Request(obj, key), time.Now())
}

// recordAll records entries through l at once.
func recordAll(ctx context.Context, l Ledger, entries []ledger.Entry) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(entries))
	for _, e := range entries {
		wg.Go(func() { errs <- recordErr(l.Record(ctx, e), "the recording process", e.Key) })
	}
	wg.Wait()
	close(errs)
	return firstErr(errs)
}

// recordErr is err, the result of who's Record of key, said so.
func recordErr(err error, who, key string) error {
	if err != nil {
		return fmt.Errorf("%s: cannot record %q: %w", who, key, err)
	}
	return nil
}

// firstErr returns the first error errs holds, with how many more there were.
func firstErr(errs <-chan error) error {
	var first error
	more := 0
	for err := range errs {
		switch {
		case err == nil:
		case first == nil:
			first = err
		default:
			more++
		}
	}
	if more > 0 {
		return fmt.Errorf("%w (and %d more errors)", first, more)
	}
	return first
}

// eventually calls check until it returns nil, for at most within.
func eventually(ctx context.Context, within time.Duration, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still after %s: %w", within, err)
		case <-tick.C:
		}
	}
}

// expectPruned returns an error unless l finds none of gone and every
// entry of stay.
func expectPruned(ctx context.Context, l Ledger, gone, stay []ledger.Entry, who string) error {
	for _, e := range gone {
		if err := expectAbsent(ctx, l, e.Key, who+", for an entry of "+stamp(e.At)); err != nil {
			return err
		}
	}
	for _, e := range stay {
		if err := expectEntry(ctx, l, e, who); err != nil {
			return err
		}
	}
	return nil
}
