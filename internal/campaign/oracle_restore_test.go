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
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// What the oracle accepts after an etcd restore (restoredPast and
// refundedAgainAfterRestore, oracle_refunds.go): a refund a restore took
// out of the books is not the money of the object Git re-applies under
// its key, nor a second refund under that key.

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
			g.Expect(m.violations(b)).To(ConsistOf(tt.want))
		})
	}
}
