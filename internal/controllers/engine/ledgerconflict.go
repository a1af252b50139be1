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

package engine

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// A finished object whose outcome is not the one the ledger holds under its
// key (another object with the same key recorded first): kept, Stalled.

// stallOnLedgerConflict keeps a finished object whose key the ledger holds
// with another outcome (held), recorded first by another object under the
// same key: the object stays Completed or Failed with its finalizer, Stalled
// (LedgerConflict), announced once by a Warning event. What the ledger
// holds goes to the manager's log only: it may be another tenant's
// payment. Every later pass asks the ledger again and writes nothing new.
func (r *Reconciler) stallOnLedgerConflict(ctx context.Context, obj Object, held ledger.Entry) error {
	r.conflicts.set(client.ObjectKeyFromObject(obj), true, ledgerConflictsGauge.WithLabelValues(r.Kind.Name()))
	log.FromContext(ctx).Info("Keeping a finished job: the outcome ledger holds another outcome under its key",
		"key", held.Key, "outcome", obj.GetPaymentStatus().Phase, "heldOutcome", held.Outcome, "heldCharge", held.Charge,
		"heldFingerprint", held.Fingerprint, "heldAt", held.At, "heldAccount", held.Provider.Account,
		"heldEndpoint", held.Provider.Endpoint)
	own := string(obj.GetPaymentStatus().Phase)
	if resp := obj.GetPaymentStatus().ProviderResponse; resp != nil && resp.ID != "" && obj.GetPaymentStatus().Phase == paymentsv1alpha1.PhaseCompleted {
		own += " as " + resp.ID
	}
	msg := payment.CleanMessage(fmt.Sprintf("This %s is %s, but the operator's ledger holds another outcome under its "+
		"idempotency key %q, recorded first by another object with the same key; the ledger keeps the first, so this "+
		"outcome is not recorded there. The finalizer stays and no TTL deletes this object: compare it with what the "+
		"provider holds under the key (the operator's log names the ledger's entry), settle the money, then remove the "+
		"finalizer by hand (docs/operations.md, PaymentJobLedgerConflict)",
		r.Kind.Name(), own, held.Key), MaxMessageLength)
	return r.noteStatus(ctx, obj, Progress{Reason: paymentsv1alpha1.ReasonLedgerConflict, Message: msg, Stalled: true}, func() {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, paymentsv1alpha1.ReasonLedgerConflict, r.Kind.Words().Action, "%s", msg)
	})
}

// LedgerConflicted reports whether a finished object is stalled because
// the ledger holds another outcome under its key: it keeps its finalizer,
// and no TTL deletes it.
func LedgerConflicted(obj Object) bool {
	c := meta.FindStatusCondition(obj.GetPaymentStatus().Conditions, paymentsv1alpha1.ConditionStalled)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == paymentsv1alpha1.ReasonLedgerConflict
}
