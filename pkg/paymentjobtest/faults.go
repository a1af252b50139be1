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
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// Faults switches the sandbox's faults.
func (e *Env) Faults() Faults { return Faults{engine: e.engine, clock: e.clock} }

// Faults are the sandbox's fault switches, for the providers of
// CreateProvider and CreateHTTPProvider alike. Each takes effect for the
// requests that come after it.
//
// Every switch returns an error, nil when the sandbox took it, so that a
// test writes each the same way:
//
//	g.Expect(env.Faults().LoseResponses(1)).To(Succeed())
//
// FailRefund acts at once on one refund instead of switching, and returns
// an error all the same. ForgetKeys, which acts at once too, returns how
// many keys it forgot and cannot fail.
type Faults struct {
	engine *sandbox.Engine
	clock  *clock
}

// Decline makes the sandbox decline paymentMethod from now on: the jobs
// that use it fail with CardDeclined and are not charged. An empty payment
// method is an error.
func (f Faults) Decline(paymentMethod string) error {
	if strings.TrimSpace(paymentMethod) == "" {
		return errors.New("paymentjobtest: cannot decline an empty payment method")
	}
	f.engine.DeclinePaymentMethod(paymentMethod)
	return nil
}

// LoseResponses makes the next n new payments or refunds and then answers
// them with a server error, as when the answer is lost on the way back:
// the operator retries with the same key and the sandbox replays the
// charge (or the refund). Zero cancels the ones still pending; a negative
// n is an error.
func (f Faults) LoseResponses(n int) error {
	if n < 0 {
		return fmt.Errorf("paymentjobtest: cannot lose %d responses", n)
	}
	f.engine.FailNext(sandbox.FaultAfterCommit, n)
	return nil
}

// RateLimit answers the next n requests with 429 and a Retry-After of
// retryAfter (rounded up to seconds; zero is the sandbox's default). A
// negative n or retryAfter is an error.
func (f Faults) RateLimit(n int, retryAfter time.Duration) error {
	if n < 0 || retryAfter < 0 {
		return fmt.Errorf("paymentjobtest: cannot rate-limit %d requests for %s", n, retryAfter)
	}
	faults := f.engine.Faults()
	faults.RetryAfter = retryAfter
	if err := f.engine.SetFaults(faults); err != nil {
		return err
	}
	f.engine.FailNextAny(sandbox.FaultRateLimit, n)
	return nil
}

// Latency keeps each new payment in flight for between least and most
// before the sandbox decides it.
func (f Faults) Latency(least, most time.Duration) error {
	if least > most {
		return errors.New("paymentjobtest: the least latency is more than the most")
	}
	faults := f.engine.Faults()
	faults.LatencyMin, faults.LatencyMax = least, most
	return f.engine.SetFaults(faults)
}

// PendingRefunds keeps the refunds the sandbox makes from now on pending
// for d, as refunds of some payment methods are at Stripe, after which
// they succeed by themselves: the operator reads a pending refund again
// until it is final, and the PaymentRefund stays Processing meanwhile. A
// pending refund counts against what is left of its charge. Zero makes
// new refunds succeed at once again; a negative d is an error.
func (f Faults) PendingRefunds(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("paymentjobtest: cannot keep refunds pending for %s", d)
	}
	f.engine.SetRefundSettleDelay(d)
	return nil
}

// FailRefund fails the sandbox's refund with the id (a PaymentRefund's
// status.providerResponse.id) after it succeeded, as a card refund fails
// days later when the card was closed: the money did not go back, and its
// amount may be refunded again. The operator reads its Completed refunds
// again (every second in the kit: Options.Operator.RefundRecheckInterval)
// and sets this one Failed with RefundFailedAfterSuccess and a Warning
// event. An id the sandbox never answered, or a refund that already
// failed, is an error.
func (f Faults) FailRefund(id string) error {
	if strings.TrimSpace(id) == "" {
		return errors.New("paymentjobtest: cannot fail a refund without an id")
	}
	if _, err := f.engine.FailRefund(id, sandbox.RefundFailureUnknown); err != nil {
		return fmt.Errorf("paymentjobtest: %w", err)
	}
	return nil
}

// ForgetKeys makes the sandbox forget every idempotency key, as Stripe does
// after 24 hours; it returns how many it forgot. Charges stay.
func (f Faults) ForgetKeys() int { return f.engine.ForgetKeys() }

// Reset turns every fault off: latency, the pending LoseResponses and
// RateLimit counts, the payment methods Decline added, and PendingRefunds;
// PendingDebits goes back to 5 seconds.
// Refunds FailRefund failed stay failed. Faults belong to
// the Env, not to a test: tests that switch them do not run in parallel.
func (f Faults) Reset() error {
	f.engine.ClearDeclines()
	f.engine.SetRefundSettleDelay(0)
	f.engine.SetDebitSettleDelay(sandbox.DefaultDebitSettleDelay)
	for _, kind := range []sandbox.FaultKind{sandbox.FaultBeforeCommit, sandbox.FaultAfterCommit, sandbox.FaultRateLimit} {
		f.engine.FailNext(kind, 0)
		f.engine.FailNextAny(kind, 0)
	}
	return f.engine.SetFaults(sandbox.Faults{})
}
