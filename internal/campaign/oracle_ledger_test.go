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

package campaign

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// sharedLedgerViolations: "every finished outcome in the ledger exactly
// once and equal to the object's", for the jobs whose key is shared
// (ledgerViolations checks the others). Two outcomes meet under one key
// when jobs sending it ask for different requests: one answered
// first (a key reused at the provider: Failed), the other later (its
// retry replays the charge its first attempt made: Completed). The ledger
// keeps the first; the second object must not finish as if its own outcome
// were recorded: it keeps its finalizer, Stalled (LedgerConflict), for a
// person to settle. So a job of a shared key that finished (its finalizer
// is gone: its Record answered that the key holds its outcome) must agree
// with the ledger's entry under its key. One that still holds its
// finalizer has not passed its Record yet (a crash, a 409) or is stalled
// on the conflict, and is not judged.
func (m *model) sharedLedgerViolations(b books) []string {
	entries := map[string]ledger.Entry{}
	for _, e := range b.ledger {
		entries[e.Key] = e
	}
	var v []string
	for i := range b.jobs {
		j := &b.jobs[i]
		st := j.Status
		key := st.IdempotencyKey
		if key == "" || !m.sharedKey(key) || !finished(st.Phase) ||
			controllerutil.ContainsFinalizer(j, paymentsv1alpha1.Finalizer) || engine.LedgerConflicted(j) {
			continue
		}
		e, ok := entries[key]
		if !ok {
			continue
		}
		charge := responseID(st.ProviderResponse)
		if string(e.Outcome) != string(st.Phase) || (st.Phase == paymentsv1alpha1.PhaseCompleted && e.Charge != charge) {
			v = append(v, fmt.Sprintf("ledger-agrees: PaymentJob %s/%s (shared key) finished %s as %q, the ledger says %s as %q under %s",
				j.Namespace, j.Name, st.Phase, charge, e.Outcome, e.Charge, key))
		}
	}
	return v
}

// failedAfterSuccess reports whether the refund watch set rf Failed: the
// provider failed its refund after it succeeded.
func failedAfterSuccess(rf *paymentsv1alpha1.PaymentRefund) bool {
	f := rf.Status.Failure
	return rf.Status.Phase == paymentsv1alpha1.PhaseFailed && f != nil && f.Reason == paymentsv1alpha1.ReasonRefundFailedAfterSuccess
}

// failedAfterSuccessViolations: a refund the watch set Failed
// (RefundFailedAfterSuccess) names a refund the provider holds under its
// key, failed; the ledger keeps its first outcome, Completed as that
// refund, or holds nothing yet (docs/operations.md: the ledger still
// records that refund as Completed).
func failedAfterSuccessViolations(b books) []string {
	entries := map[string]ledger.Entry{}
	for _, e := range b.ledger {
		entries[e.Key] = e
	}
	var v []string
	for i := range b.refs {
		rf := &b.refs[i]
		if !failedAfterSuccess(rf) {
			continue
		}
		name, id := "PaymentRefund "+rf.Namespace+"/"+rf.Name, responseID(rf.Status.ProviderResponse)
		if r, ok := b.refunds[id]; !ok || r.Status != sandbox.RefundStatusFailed || r.IdempotencyKey != rf.Status.IdempotencyKey {
			v = append(v, fmt.Sprintf("failed-after-success: %s is Failed (RefundFailedAfterSuccess) as %q, which the provider does not hold failed under its key", name, id))
		}
		if e, ok := entries[rf.Status.IdempotencyKey]; ok && (e.Outcome != paymentsv1alpha1.LedgerCompleted || e.Charge != id) {
			v = append(v, fmt.Sprintf("ledger-agrees: %s failed after it succeeded as %q, the ledger says %s as %q", name, id, e.Outcome, e.Charge))
		}
	}
	return v
}
