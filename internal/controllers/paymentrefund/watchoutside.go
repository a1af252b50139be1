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

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
)

// Money moved outside the operator: a refund event that names a Completed
// PaymentJob's charge has the charge's refunds read at its provider; when
// they hold more than the operator's own refunds (one made in the
// dashboard, without our key), the job is reported: condition
// MovedOutsideOperator and a Warning event RefundedOutsideOperator, as the
// next PaymentReconciliation would report it.

// paidJobs lists the Completed PaymentJobs of provider whose charge is
// charge, from the API server: finished ones are out of the cache (and a
// job Completed a moment ago may not carry the finished label yet).
func (w *RefundWatch) paidJobs(ctx context.Context, provider types.NamespacedName, charge string) ([]paymentsv1alpha1.PaymentJob, error) {
	var out []paymentsv1alpha1.PaymentJob
	cont := ""
	for {
		var list paymentsv1alpha1.PaymentJobList
		if err := w.Reader.List(ctx, &list, client.InNamespace(provider.Namespace),
			client.Limit(engine.FinishedListPage), client.Continue(cont)); err != nil {
			return nil, err
		}
		for _, j := range list.Items {
			st := j.Status
			if j.Spec.ProviderRef.Name == provider.Name && st.Phase == paymentsv1alpha1.PhaseCompleted &&
				st.ProviderResponse != nil && st.ProviderResponse.ID == charge {
				out = append(out, j)
			}
		}
		if cont = list.Continue; cont == "" {
			return out, nil
		}
	}
}

// checkOutside reads the refunds of job's charge at its provider and
// reports the job when some were made outside the operator.
func (w *RefundWatch) checkOutside(ctx context.Context, job *paymentsv1alpha1.PaymentJob, eventID string) error {
	r := w.Jobs
	t, waiting, err := r.ResolveProvider(ctx, job)
	if err != nil || waiting != nil {
		return err
	}
	if job.Status.Provider != nil {
		if same, _ := providercache.SameBooks(*job.Status.Provider, t.ID, t.AccountsOnly()); !same {
			return nil
		}
	}
	charge := job.Status.ProviderResponse.ID
	book, err := lookupBook(ctx, t, charge, false)
	if err != nil {
		return fmt.Errorf("cannot read the refunds of charge %s: %w", charge, err)
	}
	outside := refundedOutside(book)
	if outside <= 0 {
		return nil
	}
	msg := payment.CleanMessage(fmt.Sprintf("The provider reports %d %s of charge %s refunded outside the operator "+
		"(without one of its keys: the dashboard), read at the provider after event %s. The payment stays Completed; "+
		"check the refund at the provider, and do not refund that amount again", outside, job.Status.ProviderResponse.Currency,
		charge, eventID), engine.MaxMessageLength)
	return r.ReportMovedOutside(ctx, job, paymentsv1alpha1.ReasonRefundedOutsideOperator, msg)
}

// refundedOutside is what book holds refunded (succeeded or pending)
// beyond the operator's own refunds; 0 for a book that counts only the
// operator's (an HTTP service's lookup).
func refundedOutside(book payment.RefundBook) int64 {
	if !book.Complete {
		return 0
	}
	ours := int64(0)
	for key, refunds := range book.Refunds {
		if !payment.IsRefundKey(key) {
			continue
		}
		for _, f := range refunds {
			if f.State == payment.StateSucceeded || f.State == payment.StatePending {
				ours += f.Amount
			}
		}
	}
	return book.Refunded - ours
}
