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

package paymentjobtest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// Bank debits: a job paid with one of these payment methods is accepted by
// the sandbox and settles later, as a SEPA Direct Debit settles days later
// at Stripe. The job waits Processing with Ready=False reason
// AwaitingSettlement (WaitForReason) and is never charged again; it ends
// Completed or Failed when the sandbox decides, after the debit settle
// delay (5 seconds unless Faults.PendingDebits sets another), or at once
// with SettleDebits. The operator learns the decision at its next read of
// the payment (every few seconds in a test), or from a signed event
// (SendEvent).

// Test bank-debit payment methods of the sandbox.
const (
	// PaymentMethodDebitSettles is a SEPA Direct Debit that settles: the
	// job waits AwaitingSettlement, then is Completed.
	PaymentMethodDebitSettles = sandbox.PaymentMethodSEPADebit
	// PaymentMethodDebitFails is a SEPA Direct Debit the bank returns for
	// insufficient funds: the job waits AwaitingSettlement, then is Failed.
	PaymentMethodDebitFails = sandbox.PaymentMethodSEPADebitInsufficientFunds
)

// clock is the sandbox's clock: the wall clock, moved forward by
// SettleDebits so that the debits the sandbox holds fall due.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
	// longest is the longest debit settle delay set through the kit.
	longest time.Duration
}

// now is the wall clock plus the offset.
func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// PendingDebits keeps the bank debits the sandbox accepts from now on
// processing for d (by its clock) before they settle or fail; the default
// is 5 seconds. A long d keeps them pending until the test calls
// SettleDebits. Zero decides them at the sandbox's next read; a negative d
// is an error.
func (f Faults) PendingDebits(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("paymentjobtest: cannot keep debits pending for %s", d)
	}
	f.clock.mu.Lock()
	f.clock.longest = max(f.clock.longest, d)
	f.clock.mu.Unlock()
	f.engine.SetDebitSettleDelay(d)
	return nil
}

// SettleDebits decides now every bank debit the sandbox holds processing:
// each settles or fails as its payment method says (PaymentMethodDebitSettles,
// PaymentMethodDebitFails), and it returns how many it decided. It moves
// the sandbox's clock forward by the longest debit settle delay set
// (Faults.PendingDebits), so the payments made afterwards carry the moved
// clock's times. The jobs learn it at their next read of the payment, or
// at once from an event (SendEvent).
func (e *Env) SettleDebits() int {
	e.clock.mu.Lock()
	e.clock.offset += max(e.clock.longest, e.engine.DebitSettleDelay(), sandbox.DefaultDebitSettleDelay)
	e.clock.mu.Unlock()
	return e.engine.SettleDebits()
}

// WaitForReason waits up to timeout until the job's Ready condition has
// reason, such as paymentsv1alpha1.ReasonAwaitingSettlement for a debit
// the provider accepted and has not settled yet, and returns the job.
// Otherwise the error says where the job is. A job that reached a final
// phase with another reason fails the wait at once.
func (e *Env) WaitForReason(ctx context.Context, namespace, name, reason string,
	timeout time.Duration) (*paymentsv1alpha1.PaymentJob, error) {
	return e.WaitFor(ctx, namespace, name, "Ready reason "+reason, timeout, func(job *paymentsv1alpha1.PaymentJob) (bool, error) {
		c := meta.FindStatusCondition(job.Status.Conditions, paymentsv1alpha1.ConditionReady)
		switch p := job.Status.Phase; {
		case c != nil && c.Reason == reason:
			return true, nil
		case p == paymentsv1alpha1.PhaseCompleted, p == paymentsv1alpha1.PhaseFailed:
			return false, fmt.Errorf("it is %s, which is final", p)
		}
		return false, nil
	})
}
