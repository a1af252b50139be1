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
	"slices"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// What the oracle accepts after an etcd restore that its rules in
// oracle.go and oracle_refunds.go do not say yet.
//
// A refund the restore took out of the books is not the money of the
// object Git re-applies under its key. With the CRD ledger restored with
// the objects, a job whose charge the restore took back and whose key the
// provider forgot is charged again (no lookup before a first charge:
// docs/reliability.md, a job re-created after the provider forgot its
// key), and its refunds, re-applied too, refund that second charge. Two
// of them racing for the last of it, one is refused (RefundExceedsCharge)
// and Failed: rightly, for it moved nothing of the charge it names. The
// provider still holds, under its key, the refund of the first charge
// that the restore took out of the books (found by the campaign: about
// one history in 400 with the first version of the restore, where the
// rule "nothing Failed moved money" read it as this object's). So a
// Failed refund is judged by the refunds under its key of the charge it
// names: one of another charge made before a restore that took it out
// of the books is the forgotten past's, not this object's.

// afterRestores drops from v the failed-moved-nothing lines that name a
// refund a restore took out of the books, of another charge than the
// Failed refund's own. The rest of v is kept as it is.
//
// The condition belongs in refundViolations (oracle_refunds.go): a refund
// r under a Failed object's key is skipped when m.restoredRefunds[r.ID]
// and the object names no charge or another one.
func (m *model) afterRestores(b books, v []string) []string {
	if len(m.restoredRefunds) == 0 {
		return v
	}
	exempt := map[string]bool{}
	for i := range b.refs {
		rf := &b.refs[i]
		st := rf.Status
		if st.Phase != paymentsv1alpha1.PhaseFailed || st.IdempotencyKey == "" {
			continue
		}
		for _, r := range b.refunds {
			if r.IdempotencyKey != st.IdempotencyKey || r.Status == sandbox.RefundStatusFailed || !m.restoredRefunds[r.ID] ||
				(st.Charge != nil && st.Charge.ID == r.PaymentIntent) {
				continue
			}
			// The line refundViolations writes for it.
			exempt[fmt.Sprintf("failed-moved-nothing: PaymentRefund %s/%s is Failed but the provider refunded %d under its key as %s",
				rf.Namespace, rf.Name, r.Amount, r.ID)] = true
		}
	}
	for _, line := range m.restoredRefundKeys(b) {
		exempt[line] = true
	}
	return slices.DeleteFunc(v, func(line string) bool { return exempt[line] })
}

// restoredRefundKeys are the at-most-one-refund lines, by key, that name
// a key refunded again after a restore took its refund out of the books:
// each charge refunded at most once under the key, and at most one of
// the refunds not taken out of the books (a key the provider forgot is
// no line: refundKeyViolations allows it).
func (m *model) restoredRefundKeys(b books) map[string]string {
	moved := map[string][]sandbox.Refund{}
	for _, r := range b.refunds {
		if r.Status != sandbox.RefundStatusFailed {
			moved[r.IdempotencyKey] = append(moved[r.IdempotencyKey], r)
		}
	}
	lines := map[string]string{}
	for key, rs := range moved {
		if len(rs) < 2 || m.forgotten[key] {
			continue
		}
		charges, kept := map[string]bool{}, 0
		ok := true
		for _, r := range rs {
			ok = ok && !charges[r.PaymentIntent]
			charges[r.PaymentIntent] = true
			if !m.restoredRefunds[r.ID] {
				kept++
			}
		}
		if ok && kept <= 1 && kept < len(rs) {
			lines[key] = fmt.Sprintf("at-most-one-refund: key %s refunded %d times, %d of them not failed", key, b.stats.RefundsByKey[key], len(rs))
		}
	}
	return lines
}
