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
func (e *Env) Faults() Faults { return Faults{engine: e.engine} }

// Faults are the sandbox's fault switches, for the providers of
// CreateProvider and CreateHTTPProvider alike. Each takes effect for the
// requests that come after it.
//
// Every switch returns an error, nil when the sandbox took it, so that a
// test writes each the same way:
//
//	g.Expect(env.Faults().LoseResponses(1)).To(Succeed())
//
// ForgetKeys, which acts at once instead of switching, returns how many
// keys it forgot and cannot fail.
type Faults struct{ engine *sandbox.Engine }

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

// LoseResponses charges the next n new payments and then answers them with
// a server error, as when the answer is lost on the way back: the operator
// retries with the same key and the sandbox replays the charge. Zero
// cancels the ones still pending; a negative n is an error.
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

// ForgetKeys makes the sandbox forget every idempotency key, as Stripe does
// after 24 hours; it returns how many it forgot. Charges stay.
func (f Faults) ForgetKeys() int { return f.engine.ForgetKeys() }

// Reset turns every fault off: latency, the pending LoseResponses and
// RateLimit counts, and the payment methods Decline added. Faults belong to
// the Env, not to a test: tests that switch them do not run in parallel.
func (f Faults) Reset() error {
	f.engine.ClearDeclines()
	for _, kind := range []sandbox.FaultKind{sandbox.FaultBeforeCommit, sandbox.FaultAfterCommit, sandbox.FaultRateLimit} {
		f.engine.FailNext(kind, 0)
		f.engine.FailNextAny(kind, 0)
	}
	return f.engine.SetFaults(sandbox.Faults{})
}
