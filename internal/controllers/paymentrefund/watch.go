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
	"errors"
	"fmt"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
)

// Defaults of RefundWatch.
const (
	// DefaultRefundRecheckInterval is the time between two reads of the
	// Completed refunds at their providers.
	DefaultRefundRecheckInterval = time.Hour
	// DefaultRefundWatchPeriod is how long after it completed a refund is
	// read again: a refund that succeeded can still fail at the provider
	// (Stripe: a card closed since, a bank that returns the money) for
	// days after.
	DefaultRefundWatchPeriod = 30 * 24 * time.Hour
)

// RefundWatch reads the Completed PaymentRefunds again at their providers,
// every Interval for Period after they completed, and sets Failed
// (RefundFailedAfterSuccess, a Warning event, a metric) a refund that the
// provider now reports failed or canceled: a refund that succeeded can
// still fail later, and the cluster's record must not hide it. It reads and
// writes through the refund Reconciler's client, providers and recorder;
// finished refunds are out of the cache, so it lists them with Reader. It
// never calls the provider but to read.
type RefundWatch struct {
	// Refunds is the PaymentRefund reconciler.
	Refunds *engine.Reconciler
	// Reader lists the finished refunds (the API server).
	Reader client.Reader
	// Interval is the time between two rounds; DefaultRefundRecheckInterval
	// when zero.
	Interval time.Duration
	// Period is how long after completion a refund is read again;
	// DefaultRefundWatchPeriod when zero.
	Period time.Duration
	// Namespaces restrict the watch, as the cache; nil is every namespace.
	Namespaces []string
	// Jobs is the PaymentJob reconciler: with it, a refund event about a
	// Completed job's charge reads the charge's refunds and reports a
	// refund made outside the operator. Optional.
	Jobs *engine.Reconciler

	// wakeSlots bound the checks events start (Wake).
	wakeOnce  sync.Once
	wakeSlots chan struct{}
}

// NeedLeaderElection is true: only the leader writes what it finds.
func (w *RefundWatch) NeedLeaderElection() bool { return true }

// Start reads the refunds every Interval until ctx is done.
func (w *RefundWatch) Start(ctx context.Context) error {
	if w.Refunds == nil || w.Reader == nil {
		return errors.New("the refund watch needs the refund reconciler and an API reader")
	}
	interval := w.Interval
	if interval <= 0 {
		interval = DefaultRefundRecheckInterval
	}
	logger := log.FromContext(ctx).WithName("refund-watch")
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if err := w.Round(log.IntoContext(ctx, logger)); err != nil {
			logger.Error(err, "Cannot read the completed refunds again")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// Round reads every Completed refund of the watch period once.
func (w *RefundWatch) Round(ctx context.Context) error {
	namespaces := w.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	errs := make([]error, 0, len(namespaces))
	for _, ns := range namespaces {
		errs = append(errs, w.roundIn(ctx, ns))
	}
	return errors.Join(errs...)
}

// roundIn is Round in one namespace ("" is all), a page at a time; each
// charge's refunds are read once per page.
func (w *RefundWatch) roundIn(ctx context.Context, ns string) error {
	period := w.Period
	if period <= 0 {
		period = DefaultRefundWatchPeriod
	}
	since := w.Refunds.Clock.Now().Add(-period)
	cont := ""
	var errs []error
	for {
		var list paymentsv1alpha1.PaymentRefundList
		if err := w.Reader.List(ctx, &list, client.InNamespace(ns), client.HasLabels{paymentsv1alpha1.LabelFinished},
			client.Limit(engine.FinishedListPage), client.Continue(cont)); err != nil {
			return fmt.Errorf("cannot list the finished refunds: %w", err)
		}
		books := map[string]payment.RefundBook{}
		for i := range list.Items {
			rf := &list.Items[i]
			st := rf.Status
			if st.Phase != paymentsv1alpha1.PhaseCompleted || st.CompletedAt == nil || st.CompletedAt.Time.Before(since) ||
				st.ProviderResponse == nil || st.Charge == nil {
				continue
			}
			errs = append(errs, w.check(ctx, rf, books))
		}
		if cont = list.Continue; cont == "" {
			return errors.Join(errs...)
		}
	}
}

// check reads rf's refund at its provider (books caches each charge's
// refunds for the round) and sets rf Failed if the provider failed it.
func (w *RefundWatch) check(ctx context.Context, rf *paymentsv1alpha1.PaymentRefund, books map[string]payment.RefundBook) error {
	r := w.Refunds
	charge := rf.Status.Charge.ID
	book, ok := books[charge]
	if !ok {
		t, waiting, err := r.ResolveProvider(ctx, rf)
		if err != nil || waiting != nil {
			// Not readable now (the provider is gone or not ready): the
			// next round tries again.
			return err
		}
		if rf.Status.Provider != nil {
			if same, _ := providercache.SameBooks(*rf.Status.Provider, t.ID, t.AccountsOnly()); !same {
				return nil
			}
		}
		if book, err = lookupBook(ctx, t, charge, false); err != nil {
			return fmt.Errorf("cannot read the refunds of charge %s: %w", charge, err)
		}
		books[charge] = book
	}
	id := rf.Status.ProviderResponse.ID
	for _, f := range book.Refunds[rf.Status.IdempotencyKey] {
		if f.ID == id && f.State == payment.StateNotCharged {
			return w.failed(ctx, rf, f)
		}
	}
	return nil
}

// failed sets rf Failed: its refund f failed at the provider after it
// succeeded.
func (w *RefundWatch) failed(ctx context.Context, rf *paymentsv1alpha1.PaymentRefund, f payment.Found) error {
	msg := payment.CleanMessage(fmt.Sprintf("The provider reports refund %s %s after it succeeded: the %d %s did not go back "+
		"to the customer. Check it at the provider; refund again with a new PaymentRefund if it is still owed",
		f.ID, f.Status, f.Amount, f.Currency), engine.MaxMessageLength)
	return w.Refunds.FailAfterSuccess(ctx, rf, f, paymentsv1alpha1.ReasonRefundFailedAfterSuccess, msg)
}
