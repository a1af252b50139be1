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

package sandboxprovider

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// DefaultSettleInterval is how often Settle reads a charge that is not final.
const DefaultSettleInterval = 20 * time.Millisecond

var (
	_ payment.Provider   = (*Provider)(nil)
	_ payment.Looker     = (*Provider)(nil)
	_ payment.Identifier = (*Provider)(nil)
)

// Provider is an in-process payment.Provider, payment.Looker and
// payment.Identifier backed by an Engine. It behaves like a remote server:
// a call whose context ends first returns a transient error while the Engine
// goes on, and may charge, in the background.
type Provider struct {
	engine         *sandbox.Engine
	settleInterval time.Duration
	calls          atomic.Int64
	lookups        atomic.Int64
	settles        atomic.Int64
}

// ProviderOption configures a Provider.
type ProviderOption func(*Provider)

// WithSettleInterval sets how often Settle reads a charge that is not final;
// DefaultSettleInterval when d is not positive.
func WithSettleInterval(d time.Duration) ProviderOption {
	return func(p *Provider) {
		if d > 0 {
			p.settleInterval = d
		}
	}
}

// NewProvider returns a Provider that charges through e.
func NewProvider(e *sandbox.Engine, opts ...ProviderOption) *Provider {
	p := &Provider{engine: e, settleInterval: DefaultSettleInterval}
	for _, opt := range opts {
		opt(p)
	}
	return p
}

// Engine returns the Engine behind the provider.
func (p *Provider) Engine() *sandbox.Engine { return p.engine }

// Calls returns how many times Charge was called.
func (p *Provider) Calls() int64 { return p.calls.Load() }

// Lookups returns how many times Lookup was called.
func (p *Provider) Lookups() int64 { return p.lookups.Load() }

// Settles returns how many times Settle was called.
func (p *Provider) Settles() int64 { return p.settles.Load() }

// Charge creates a PaymentIntent at the Engine under key, off-session, with
// the metadata of TaggedRequest, and maps its answer to the payment
// package's outcome and error classes; an intent left waiting for the
// customer is canceled, as the Stripe adapter does. A context that is already done sends nothing; one that ends
// while the Engine works returns a transient error, and the Engine still
// finishes the request.
func (p *Provider) Charge(ctx context.Context, key string, req payment.ChargeRequest) (payment.Outcome, error) {
	p.calls.Add(1)
	if err := ctx.Err(); err != nil {
		return payment.Outcome{}, payment.Transient(fmt.Errorf("cannot send charge: %w", err), 0)
	}
	tagged := sandbox.TaggedRequest(key, sandbox.PaymentIntentParams(req))

	type result struct {
		intent   sandbox.Intent
		replayed bool
		err      error
	}
	// Buffered, so that the request finishes after the caller gave up.
	done := make(chan result, 1)
	go func() {
		// Like the Stripe adapter: no customer is present.
		in, replayed, err := p.engine.CreatePaymentIntentWithOptions(key, tagged, sandbox.ConfirmOptions{OffSession: true})
		done <- result{intent: in, replayed: replayed, err: err}
	}()

	select {
	case r := <-done:
		if se, ok := errors.AsType[*sandbox.StripeError](r.err); ok && se.Code == sandbox.CodeAuthenticationRequired {
			if in, ok := se.PaymentIntent(); ok {
				// Cancel the declined intent, as the Stripe adapter does,
				// so that no one confirms it after the job failed; it
				// moved no money, so the refusal stands either way.
				_, _, _ = p.engine.CancelPaymentIntent("abandon_"+in.ID, in.ID, sandbox.CancellationReasonAbandoned)
			}
		}
		if r.err != nil {
			return payment.Outcome{}, mapError(r.err)
		}
		if waitsForCustomer(r.intent.Status) {
			return p.abandon(r.intent)
		}
		if r.intent.Status == sandbox.StatusProcessing {
			return payment.Outcome{}, settling(r.intent)
		}
		return outcome(r.intent, r.replayed), nil
	case <-ctx.Done():
		return payment.Outcome{}, payment.Transient(fmt.Errorf("charge response not received: %w", ctx.Err()), 0)
	}
}

// Lookup returns every intent whose metadata carries one of keys, newest
// first under each key, with one Engine search that joins the keys with OR:
// it counts in Stats.Searches, lags behind writes and is rate limited like
// a search over HTTP. More than payment.MaxLookupKeys keys is an error and
// searches nothing; a refused search (a 429, or any other error) is a
// payment.TransientError. See chargeState for the State of each charge.
func (p *Provider) Lookup(ctx context.Context, keys []string) (map[string][]payment.Found, error) {
	p.lookups.Add(1)
	if len(keys) > payment.MaxLookupKeys {
		return nil, fmt.Errorf("cannot look up %d keys: at most %d in one lookup", len(keys), payment.MaxLookupKeys)
	}
	if err := ctx.Err(); err != nil {
		return nil, payment.Transient(fmt.Errorf("cannot look up charges: %w", err), 0)
	}
	found := map[string][]payment.Found{}
	if len(keys) == 0 {
		return found, nil
	}
	intents, err := p.engine.SearchKeys(keys)
	if err != nil {
		var retryAfter time.Duration
		if se, ok := errors.AsType[*sandbox.StripeError](err); ok {
			retryAfter = se.RetryAfter
		}
		return nil, payment.Transient(fmt.Errorf("cannot look up charges: %w", err), retryAfter)
	}
	for _, in := range intents {
		key := in.Metadata[payment.MetadataKeyIdempotencyKey]
		found[key] = append(found[key], payment.Found{
			Key:         key,
			Outcome:     outcome(in, false),
			State:       chargeState(in.Status),
			Fingerprint: in.Metadata[payment.MetadataKeyFingerprint],
		})
	}
	return found, nil
}

// Settle reads the intent with id, every settle interval, until its status
// is final or ctx is done: a succeeded (or requires_capture) intent is
// returned as an outcome, one that ended without moving money is a
// payment.Declined refusal (a bank debit that failed with its failure
// code, such as insufficient_funds, as the reason), one that waits for a
// customer is canceled as Charge does, and an unknown id, an intent
// carrying another key or a context done are transient. A processing
// intent (a bank debit not settled yet) returns payment.Settling after one
// read: it is read again by a later Settle, never polled here. Each read
// counts in Stats.Retrieves.
func (p *Provider) Settle(ctx context.Context, key, id string) (payment.Outcome, error) {
	p.settles.Add(1)
	var tick *time.Timer
	for {
		if err := ctx.Err(); err != nil {
			return payment.Outcome{}, payment.Transient(fmt.Errorf("cannot settle charge %s: %w", id, err), 0)
		}
		in, ok := p.engine.GetPaymentIntent(id)
		if !ok {
			return payment.Outcome{}, payment.Transient(fmt.Errorf("cannot settle charge %s: no such payment intent", id), 0)
		}
		if k, tagged := in.Metadata[payment.MetadataKeyIdempotencyKey]; tagged && k != key {
			return payment.Outcome{}, payment.Transient(fmt.Errorf("cannot settle charge %s: it carries another idempotency key", id), 0)
		}
		if waitsForCustomer(in.Status) {
			return p.abandon(in)
		}
		if in.Status == sandbox.StatusProcessing {
			return payment.Outcome{}, settling(in)
		}
		switch chargeState(in.Status) {
		case payment.StateSucceeded:
			return outcome(in, false), nil
		case payment.StateNotCharged:
			if le := in.LastPaymentError; le != nil && payment.BankDebit(in.PaymentMethodType) {
				return payment.Outcome{}, payment.Declined(cmp.Or(le.DeclineCode, le.Code),
					fmt.Sprintf("%s payment intent %s failed (%s): %s", in.PaymentMethodType, id, le.Code, le.Message))
			}
			return payment.Outcome{}, payment.Declined(payment.ReasonCardDeclined,
				fmt.Sprintf("payment intent %s ended with status %s", id, in.Status))
		}
		if tick == nil {
			tick = time.NewTimer(p.settleInterval)
			defer tick.Stop()
		} else {
			tick.Reset(p.settleInterval)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return payment.Outcome{}, payment.Transient(
				fmt.Errorf("charge %s not final (%s): %w", id, in.Status, ctx.Err()), 0)
		}
	}
}

// settling is the payment.SettlingError of a processing intent: accepted,
// not settled yet.
func settling(in sandbox.Intent) error {
	return payment.Settling(in.ID, in.Status, in.PaymentMethodType)
}

// waitsForCustomer reports whether an intent in status waits for a customer
// who is not there: requires_action (3-D Secure) or requires_confirmation.
func waitsForCustomer(status string) bool {
	return status == sandbox.StatusRequiresAction || status == sandbox.StatusRequiresConfirmation
}

// abandon cancels an intent that waits for a customer, as the Stripe
// adapter does, and reads it again when the cancel is refused: canceled is a
// refusal with the reason authentication_required, succeeded (the customer
// came back first) an outcome, anything else transient.
func (p *Provider) abandon(in sandbox.Intent) (payment.Outcome, error) {
	canceled, _, err := p.engine.CancelPaymentIntent("abandon_"+in.ID, in.ID, sandbox.CancellationReasonAbandoned)
	if err != nil {
		now, ok := p.engine.GetPaymentIntent(in.ID)
		if !ok {
			return payment.Outcome{}, payment.Transient(fmt.Errorf("cannot cancel payment intent %s: %w", in.ID, err), 0)
		}
		canceled = now
	}
	switch chargeState(canceled.Status) {
	case payment.StateSucceeded:
		return outcome(canceled, false), nil
	case payment.StateNotCharged:
		return payment.Outcome{}, payment.Declined(sandbox.CodeAuthenticationRequired, fmt.Sprintf(
			"payment intent %s waited for the customer (%s) and was canceled: no customer is present", in.ID, in.Status))
	}
	return payment.Outcome{}, payment.Transient(fmt.Errorf("cannot cancel payment intent %s (status %s): %w",
		in.ID, canceled.Status, err), 0)
}

// Account returns the Engine's account.
func (p *Provider) Account(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", payment.Transient(fmt.Errorf("cannot read the account: %w", err), 0)
	}
	return p.engine.Account(), nil
}

// chargeState classifies a PaymentIntent status. A status it does not know
// is pending: a charge is never made around the unknown.
func chargeState(status string) payment.ChargeState {
	switch status {
	case sandbox.StatusSucceeded, sandbox.StatusRequiresCapture:
		return payment.StateSucceeded
	case sandbox.StatusRequiresPaymentMethod, sandbox.StatusCanceled:
		return payment.StateNotCharged
	default:
		return payment.StatePending
	}
}

// outcome is the payment outcome of a successful intent.
func outcome(in sandbox.Intent, replayed bool) payment.Outcome {
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
	var se *sandbox.StripeError
	if !errors.As(err, &se) {
		return payment.Transient(err, 0)
	}
	switch {
	case se.Type == sandbox.ErrorTypeCard && se.Code == sandbox.CodeAuthenticationRequired:
		return payment.Declined(sandbox.CodeAuthenticationRequired,
			fmt.Sprintf("%s (%s): %s", se.Code, se.DeclineCode, se.Message))
	case se.Type == sandbox.ErrorTypeCard:
		return payment.Declined(payment.ReasonCardDeclined,
			fmt.Sprintf("%s (%s): %s", se.Code, se.DeclineCode, se.Message))
	case se.Type == sandbox.ErrorTypeIdempotency:
		return payment.KeyReused(se.Message)
	case se.Code == sandbox.CodeIdempotencyKeyInUse:
		return payment.InFlight(sandbox.InFlightRetryAfter)
	case se.Code == sandbox.CodeRateLimit:
		return payment.Transient(se, se.RetryAfter)
	case se.Type == sandbox.ErrorTypeInvalidRequest:
		return payment.Invalid(se.Message)
	default:
		return payment.Transient(se, 0)
	}
}
