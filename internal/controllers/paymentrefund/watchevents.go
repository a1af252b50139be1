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
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// wakeTimeout bounds the check an event starts.
const wakeTimeout = 30 * time.Second

// maxWakeChecks is how many event checks run at once; an event beyond them
// is left to the next round.
const maxWakeChecks = 4

// Wake reads again, at once, the Completed refunds of provider's namespace
// that a verified refund event names (the key they sent, the provider's
// refund id, or the charge they refund), and sets Failed those the
// provider failed since: what the next round would find, right away; and,
// with Jobs, the refunds of the Completed PaymentJob whose charge it names,
// reporting one refunded outside the operator (watchoutside.go). The
// event is only a hint: each refund is read at its provider before
// anything is written. It runs in the background, a few checks at a time,
// and returns how many refunds it checks.
func (w *RefundWatch) Wake(ctx context.Context, provider types.NamespacedName, ev payment.Event) int {
	if ev.Subject != payment.SubjectRefund || w.Refunds == nil || w.Reader == nil {
		return 0
	}
	w.wakeOnce.Do(func() { w.wakeSlots = make(chan struct{}, maxWakeChecks) })
	refunds, err := w.named(ctx, provider, ev)
	if err != nil {
		log.FromContext(ctx).Error(err, "Cannot list the refunds an event names", "event", ev.ID)
		return 0
	}
	var jobs []paymentsv1alpha1.PaymentJob
	if w.Jobs != nil && ev.PaymentID != "" {
		if jobs, err = w.paidJobs(ctx, provider, ev.PaymentID); err != nil {
			log.FromContext(ctx).Error(err, "Cannot list the payments an event names", "event", ev.ID)
		}
	}
	if len(refunds) == 0 && len(jobs) == 0 {
		return 0
	}
	select {
	case w.wakeSlots <- struct{}{}:
	default:
		// Busy: the next round reads them.
		return 0
	}
	logger := log.FromContext(ctx)
	go func() {
		defer func() { <-w.wakeSlots }()
		cctx, cancel := context.WithTimeout(log.IntoContext(context.Background(), logger), wakeTimeout)
		defer cancel()
		books := map[string]payment.RefundBook{}
		for i := range refunds {
			if err := w.check(cctx, &refunds[i], books); err != nil {
				logger.Error(err, "Cannot read a refund an event names", "event", ev.ID, "refund", refunds[i].Name)
			}
		}
		for i := range jobs {
			if err := w.checkOutside(cctx, &jobs[i], ev.ID); err != nil {
				logger.Error(err, "Cannot read the refunds of a payment an event names", "event", ev.ID, "job", jobs[i].Name)
			}
		}
	}()
	return len(refunds) + len(jobs)
}

// named lists the Completed refunds of provider that ev names, from the
// API server: finished ones are out of the cache.
func (w *RefundWatch) named(ctx context.Context, provider types.NamespacedName, ev payment.Event) ([]paymentsv1alpha1.PaymentRefund, error) {
	var out []paymentsv1alpha1.PaymentRefund
	cont := ""
	for {
		var list paymentsv1alpha1.PaymentRefundList
		// The finished ones only, as a round reads them: one not finished
		// yet still has its outcome to record in the ledger, which a
		// Failed written now would contradict.
		if err := w.Reader.List(ctx, &list, client.InNamespace(provider.Namespace), client.HasLabels{paymentsv1alpha1.LabelFinished},
			client.Limit(engine.FinishedListPage), client.Continue(cont)); err != nil {
			return nil, err
		}
		for _, rf := range list.Items {
			st := rf.Status
			if rf.Spec.ProviderRef.Name != provider.Name || st.Phase != paymentsv1alpha1.PhaseCompleted ||
				st.ProviderResponse == nil || st.Charge == nil {
				continue
			}
			if (ev.Key != "" && st.IdempotencyKey == ev.Key) || (ev.ObjectID != "" && st.ProviderResponse.ID == ev.ObjectID) ||
				(ev.PaymentID != "" && st.Charge.ID == ev.PaymentID) {
				out = append(out, rf)
			}
		}
		if cont = list.Continue; cont == "" {
			return out, nil
		}
	}
}
