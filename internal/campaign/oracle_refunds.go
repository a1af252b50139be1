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

// The oracle's rules for refunds, and for keys several jobs share.

// refundKeyViolations: at most one refund moved money under a key.
func (m *model) refundKeyViolations(b books) []string {
	var v []string
	// A refund the provider failed after it succeeded moved no money: a
	// retry under its key, sent once the provider forgot the key, after
	// the charge's list showed it failed, is the one refund.
	moved := map[string]int{}
	byKey := map[string][]sandbox.Refund{}
	for _, r := range b.refunds {
		if r.Status != sandbox.RefundStatusFailed {
			moved[r.IdempotencyKey]++
			byKey[r.IdempotencyKey] = append(byKey[r.IdempotencyKey], r)
		}
	}
	for key, n := range b.stats.RefundsByKey {
		// A refund key the provider forgot while no book held it is sent
		// again by a refund Git re-applies, of the charge its job made
		// again: a refund of another charge, as docs/reliability.md says
		// of a job re-created after its key was forgotten.
		if n > 1 && moved[key] > 1 && !m.forgotten[key] && !m.refundedAgainAfterRestore(byKey[key]) {
			v = append(v, fmt.Sprintf("at-most-one-refund: key %s refunded %d times, %d of them not failed", key, n, moved[key]))
		}
	}
	return v
}

// refundViolations: a Completed refund is at the provider under its own
// key, charge and amount; a Failed refund moved no money.
func (m *model) refundViolations(b books) []string {
	var v []string
	byKey := map[string][]sandbox.Refund{}
	for _, r := range b.refunds {
		byKey[r.IdempotencyKey] = append(byKey[r.IdempotencyKey], r)
	}
	for i := range b.refs {
		rf := &b.refs[i]
		name := "PaymentRefund " + rf.Namespace + "/" + rf.Name
		st := rf.Status
		if st.Resolution != nil && !st.Resolution.Verified {
			// A person's word the provider could not check stands, as a
			// job's does (the reconciliation reports it).
			continue
		}
		switch st.Phase {
		case paymentsv1alpha1.PhaseCompleted:
			if st.ProviderResponse == nil || st.Charge == nil {
				v = append(v, fmt.Sprintf("completed-is-refunded: %s is Completed without a provider response or charge", name))
				continue
			}
			want := st.Charge.Amount
			if rf.Spec.Amount != nil {
				want = *rf.Spec.Amount
			}
			r, ok := b.refunds[st.ProviderResponse.ID]
			switch {
			case !ok:
				v = append(v, fmt.Sprintf("completed-is-refunded: %s is Completed as %s, which the provider does not hold", name, st.ProviderResponse.ID))
			case r.IdempotencyKey != st.IdempotencyKey || r.Amount != want || r.PaymentIntent != st.Charge.ID:
				v = append(v, fmt.Sprintf("completed-is-refunded: %s (key %s, %d of %s) is Completed as %s: key %s, %d of %s",
					name, st.IdempotencyKey, want, st.Charge.ID, r.ID, r.IdempotencyKey, r.Amount, r.PaymentIntent))
			}
		case paymentsv1alpha1.PhaseFailed:
			if st.IdempotencyKey == "" {
				continue
			}
			for _, r := range byKey[st.IdempotencyKey] {
				if r.Status != sandbox.RefundStatusFailed && !m.restoredPast(r, st.Charge) {
					v = append(v, fmt.Sprintf("failed-moved-nothing: %s is Failed but the provider refunded %d under its key as %s", name, r.Amount, r.ID))
				}
			}
		}
	}
	return v
}

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
	entries := b.ledgerByKey()
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

// ledgerByKey is the ledger's entries by key; of a key recorded twice
// (ledgerViolations reports it), the last.
func (b books) ledgerByKey() map[string]ledger.Entry {
	entries := make(map[string]ledger.Entry, len(b.ledger))
	for _, e := range b.ledger {
		entries[e.Key] = e
	}
	return entries
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
	entries := b.ledgerByKey()
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

// restoredPast reports whether r, a refund under a Failed object's key, is
// the money of a past an etcd restore took out of the books rather than
// the object's: a refund of another charge than the one the object names
// (or of a charge it does not name yet). With the CRD ledger restored with
// the objects, a job whose charge the restore took back and whose key the
// provider forgot is charged again (no lookup before a first charge:
// docs/reliability.md, a job re-created after the provider forgot its
// key), and its refunds, re-applied too, refund that second charge; two
// racing for the last of it, one is refused (RefundExceedsCharge), rightly
// Failed, while the provider still holds under its key the refund of the
// first charge (found by the campaign about once in 400 histories with the
// first version of the restore).
func (m *model) restoredPast(r sandbox.Refund, charge *paymentsv1alpha1.RefundedCharge) bool {
	return m.restoredRefunds[r.ID] && (charge == nil || charge.ID != r.PaymentIntent)
}

// refundedAgainAfterRestore reports whether rs, the refunds that moved
// money under one key, are that key refunded again after a restore took
// its refund out of the books: each charge refunded at most once under
// the key, and at most one of the refunds not taken out of the books.
func (m *model) refundedAgainAfterRestore(rs []sandbox.Refund) bool {
	charges, kept := map[string]bool{}, 0
	for _, r := range rs {
		if charges[r.PaymentIntent] {
			return false
		}
		charges[r.PaymentIntent] = true
		if !m.restoredRefunds[r.ID] {
			kept++
		}
	}
	return kept <= 1 && kept < len(rs)
}
