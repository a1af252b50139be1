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
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
)

// A quiet world whose ledger lacks a Completed object's outcome is stuck:
// the rule that makes "every finished outcome in the ledger" fail when a
// world never writes its ledger (as the process campaign on PostgreSQL
// could, unseen, before it).
func TestACompletedObjectWithoutItsLedgerEntryIsStuck(t *testing.T) {
	completed := func(name, key string) paymentsv1alpha1.PaymentJob {
		return paymentsv1alpha1.PaymentJob{ObjectMeta: metav1.ObjectMeta{Namespace: "books", Name: name},
			Status: paymentsv1alpha1.PaymentJobStatus{PaymentStatus: paymentsv1alpha1.PaymentStatus{
				Phase: paymentsv1alpha1.PhaseCompleted, IdempotencyKey: key}}}
	}
	refund := paymentsv1alpha1.PaymentRefund{ObjectMeta: metav1.ObjectMeta{Namespace: "books", Name: "refund-0"},
		Status: paymentsv1alpha1.PaymentRefundStatus{PaymentStatus: paymentsv1alpha1.PaymentStatus{
			Phase: paymentsv1alpha1.PhaseCompleted, IdempotencyKey: "refund/books/refund-0"}}}
	b := books{jobs: []paymentsv1alpha1.PaymentJob{completed("job-0", "books/job-0"), completed("job-1", "books/order-1")},
		refs: []paymentsv1alpha1.PaymentRefund{refund}}

	s := stuck(b)
	if len(s) != 3 {
		t.Fatalf("want the two jobs and the refund without their ledger entries stuck, got %d:\n%s", len(s), strings.Join(s, "\n"))
	}
	for _, want := range []string{"PaymentJob books/job-0", "PaymentJob books/job-1", "PaymentRefund books/refund-0"} {
		if !strings.Contains(strings.Join(s, "\n"), want) {
			t.Errorf("%s is not reported: %v", want, s)
		}
	}

	b.ledger = []ledger.Entry{{Key: "books/job-0"}, {Key: "books/order-1"}, {Key: "refund/books/refund-0"}}
	if s := stuck(b); len(s) != 0 {
		t.Fatalf("every outcome is recorded, yet: %v", s)
	}
}
