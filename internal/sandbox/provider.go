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

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// InFlightRetryAfter is the Retry-After the Provider reports when a key is in
// flight at the Engine.
const InFlightRetryAfter = time.Second

var (
	_ payment.Provider = (*Provider)(nil)
	_ payment.Looker   = (*Provider)(nil)
)

// Provider is an in-process payment.Provider and payment.Looker backed by an
// Engine. It behaves like a remote server: a call whose context ends first
// returns a transient error while the Engine goes on, and may charge, in the
// background.
type Provider struct {
	engine  *Engine
	calls   atomic.Int64
	lookups atomic.Int64
}

// NewProvider returns a Provider that charges through e.
func NewProvider(e *Engine) *Provider {
	return &Provider{engine: e}
}

// Engine returns the Engine behind the provider.
func (p *Provider) Engine() *Engine { return p.engine }

// Calls returns how many times Charge was called.
func (p *Provider) Calls() int64 { return p.calls.Load() }

// Lookups returns how many times Lookup was called.
func (p *Provider) Lookups() int64 { return p.lookups.Load() }

// Charge creates a PaymentIntent at the Engine under key and maps its answer
// to the payment package's outcome and error classes. A context that is
// already done sends nothing; one that ends while the Engine works returns a
// transient error, and the Engine still finishes the request.
func (p *Provider) Charge(ctx context.Context, key string, req payment.ChargeRequest) (payment.Outcome, error) {
	p.calls.Add(1)
	if err := ctx.Err(); err != nil {
		return payment.Outcome{}, payment.Transient(fmt.Errorf("cannot send charge: %w", err), 0)
	}

	type result struct {
		intent   Intent
		replayed bool
		err      error
	}
	// Buffered, so that the request finishes after the caller gave up.
	done := make(chan result, 1)
	go func() {
		in, replayed, err := p.engine.CreatePaymentIntent(key, req)
		done <- result{intent: in, replayed: replayed, err: err}
	}()

	select {
	case r := <-done:
		if r.err != nil {
			return payment.Outcome{}, mapError(r.err)
		}
		return outcome(r.intent, r.replayed), nil
	case <-ctx.Done():
		return payment.Outcome{}, payment.Transient(fmt.Errorf("charge response not received: %w", ctx.Err()), 0)
	}
}

// Lookup returns the successful charge saved under key, and false when there
// is none.
func (p *Provider) Lookup(ctx context.Context, key string) (payment.Outcome, bool, error) {
	p.lookups.Add(1)
	if err := ctx.Err(); err != nil {
		return payment.Outcome{}, false, payment.Transient(fmt.Errorf("cannot look up charge: %w", err), 0)
	}
	in, ok := p.engine.LookupByKey(key)
	if !ok {
		return payment.Outcome{}, false, nil
	}
	return outcome(in, false), true, nil
}

// outcome is the payment outcome of a successful intent.
func outcome(in Intent, replayed bool) payment.Outcome {
	return payment.Outcome{
		ID:       in.ID,
		Status:   in.Status,
		Amount:   in.Amount,
		Currency: in.Currency,
		Created:  in.Created,
		Replayed: replayed,
	}
}

// mapError maps an Engine error to the payment package's classes: card
// errors, malformed requests and reused keys are refusals; keys in flight,
// rate limits and server errors are transient.
func mapError(err error) error {
	var se *StripeError
	if !errors.As(err, &se) {
		return payment.Transient(err, 0)
	}
	switch {
	case se.Type == ErrorTypeCard:
		return payment.Declined(payment.ReasonCardDeclined,
			fmt.Sprintf("%s (%s): %s", se.Code, se.DeclineCode, se.Message))
	case se.Type == ErrorTypeIdempotency:
		return payment.KeyReused(se.Message)
	case se.Code == CodeIdempotencyKeyInUse:
		return payment.InFlight(InFlightRetryAfter)
	case se.Code == CodeRateLimit:
		return payment.Transient(se, se.RetryAfter)
	case se.Type == ErrorTypeInvalidRequest:
		return payment.Invalid(se.Message)
	default:
		return payment.Transient(se, 0)
	}
}
