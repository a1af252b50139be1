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
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// TestOracleAfterRestores: a Failed refund is judged by the refunds under
// its key of the charge it names; a refund a restore took out of the
// books, of another charge, is not its money, nor a second refund under
// its key. Anything else the rules say stands.
func TestOracleAfterRestores(t *testing.T) {
	const key = "books.refund/refund-2"
	failed := paymentsv1alpha1.PaymentRefund{ObjectMeta: metav1.ObjectMeta{Namespace: "books", Name: "refund-2"},
		Status: paymentsv1alpha1.PaymentRefundStatus{PaymentStatus: paymentsv1alpha1.PaymentStatus{Phase: paymentsv1alpha1.PhaseFailed,
			IdempotencyKey: key}, Charge: &paymentsv1alpha1.RefundedCharge{ID: "pi_again", IdempotencyKey: "books/job-2", Amount: 500}}}
	refund := func(id, charge string) sandbox.Refund {
		return sandbox.Refund{ID: id, IdempotencyKey: key, PaymentIntent: charge, Amount: 251, Status: sandbox.RefundStatusSucceeded}
	}
	tests := []struct {
		name     string
		refunds  []sandbox.Refund
		restored map[string]bool
		want     []string
	}{{
		name:     "the first charge's refund, taken out of the books by a restore",
		refunds:  []sandbox.Refund{refund("re_first", "pi_first")},
		restored: map[string]bool{"re_first": true},
	}, {
		name:    "the first charge's refund, the books still holding it",
		refunds: []sandbox.Refund{refund("re_first", "pi_first")},
		want:    []string{"failed-moved-nothing: PaymentRefund books/refund-2 is Failed but the provider refunded 251 under its key as re_first"},
	}, {
		name:     "a refund of the charge it names",
		refunds:  []sandbox.Refund{refund("re_own", "pi_again")},
		restored: map[string]bool{"re_own": true},
		want:     []string{"failed-moved-nothing: PaymentRefund books/refund-2 is Failed but the provider refunded 251 under its key as re_own"},
	}, {
		name:     "its key refunded again, of the charge made again",
		refunds:  []sandbox.Refund{refund("re_first", "pi_first"), refund("re_again", "pi_again")},
		restored: map[string]bool{"re_first": true},
		// Two refunds under the key, of two charges: no at-most-one-refund
		// line. But the refund of pi_again, the charge the Failed object
		// names, is its money: that line stands.
		want: []string{"failed-moved-nothing: PaymentRefund books/refund-2 is Failed but the provider refunded 251 under its key as re_again"},
	}, {
		name:     "one charge refunded twice under its key",
		refunds:  []sandbox.Refund{refund("re_first", "pi_first"), refund("re_twice", "pi_first")},
		restored: map[string]bool{"re_first": true},
		want: []string{"at-most-one-refund: key books.refund/refund-2 refunded 2 times, 2 of them not failed",
			"failed-moved-nothing: PaymentRefund books/refund-2 is Failed but the provider refunded 251 under its key as re_twice"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			b := books{refunds: map[string]sandbox.Refund{}, intents: map[string]sandbox.Intent{},
				stats: sandbox.Stats{RefundsByKey: map[string]int{key: len(tt.refunds)}}, refs: []paymentsv1alpha1.PaymentRefund{failed}}
			for _, r := range tt.refunds {
				b.refunds[r.ID] = r
			}
			m := &model{restoredRefunds: tt.restored}
			g.Expect(m.afterRestores(b, m.violations(b))).To(ConsistOf(tt.want))
		})
	}
}
