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

package sandboxprovider_test

import (
	"errors"
	"sync"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// The helpers of pkg/sandbox's own tests that the provider's tests use too.

// timeout bounds every wait of these tests.
const timeout = 5 * time.Second

// request returns a valid charge of amount paid with the payment method.
func request(amount int64, paymentMethod string) sandbox.PaymentIntentParams {
	return sandbox.PaymentIntentParams{
		Amount:        amount,
		Currency:      "eur",
		Customer:      "cus_123",
		PaymentMethod: paymentMethod,
		Description:   "order 42",
		Metadata:      map[string]string{"paymentjob": "default/order-42"},
	}
}

// stripeError returns err as a *sandbox.StripeError, failing when it is not.
func stripeError(g *WithT, err error) *sandbox.StripeError {
	var se *sandbox.StripeError
	g.ExpectWithOffset(1, errors.As(err, &se)).To(BeTrue(), "want a *StripeError, got %v", err)
	return se
}

// fakeClock is an Engine clock that moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// newFakeClock returns a clock stopped at 2026-03-01 12:00 UTC.
func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

// Now returns the clock's time.
func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Add moves the clock forward by d.
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
