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
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"
)

// Signed webhooks: what the Engine sends, to whom, signed how, with which
// faults, and what it counted. The sending itself is in webhook_delivery.go,
// the event bodies in webhook_events.go.

// WebhookFormat is the shape of the events the Engine sends.
type WebhookFormat string

const (
	// WebhookFormatStripe sends Stripe's event objects signed with a
	// Stripe-Signature header, which stripe-go's webhook package verifies.
	WebhookFormatStripe WebhookFormat = "stripe"
	// WebhookFormatHTTP sends the HTTP contract's events signed with a
	// Paymentjob-Signature header.
	WebhookFormatHTTP WebhookFormat = "http"
)

// Signature headers of the two formats. Both are "t=<unix seconds>,v1=<hex
// HMAC-SHA256 of the secret over "<t>.<body>">", Stripe's scheme.
const (
	StripeSignatureHeader = "Stripe-Signature"
	HTTPSignatureHeader   = "Paymentjob-Signature"
)

// StripeAPIVersion is the api_version of the Stripe events the Engine
// sends: stripe-go v85's, so that ConstructEvent accepts them.
const StripeAPIVersion = "2026-03-25.dahlia"

// WebhookMaxAttempts is how many times an event is sent before the Engine
// gives up on it, as Stripe retries for days, compressed: the first try
// and three retries, WebhookRetryBackoff, twice that, and four times that
// later.
const WebhookMaxAttempts = 4

// WebhookRetryBackoff is the wait before the first retry of an event that
// was not answered with a 2xx.
const WebhookRetryBackoff = 100 * time.Millisecond

// WebhookFaults are the faults of the webhooks sent. The probabilities are
// from 0 to 1 and are drawn, per event, from the seeded random source of
// WebhookConfig.Seed, so that a run can be repeated.
type WebhookFaults struct {
	// Duplicate is the probability that an event is sent twice, the copy
	// right after the first (Stripe may deliver an event more than once).
	Duplicate float64 `json:"duplicate"`
	// Reorder is the probability that an event is held and sent after the
	// next one (Stripe does not promise an order); one held with no next
	// event within a second is sent then.
	Reorder float64 `json:"reorder"`
	// Drop is the probability that an event is never sent.
	Drop float64 `json:"drop"`
	// BadSignature is the probability that an event is signed, on every
	// attempt, with a wrong secret, as a forged request would be.
	BadSignature float64 `json:"badSignature"`
	// Delay is sent before every event, on top of any wait.
	Delay time.Duration `json:"-"`
}

// validate returns an error for a probability outside 0 to 1 or a
// negative delay.
func (f WebhookFaults) validate() error {
	for _, p := range []struct {
		name  string
		value float64
	}{{"duplicate", f.Duplicate}, {"reorder", f.Reorder}, {"drop", f.Drop}, {"badSignature", f.BadSignature}} {
		// Written so that NaN is refused too.
		if !(p.value >= 0 && p.value <= 1) {
			return fmt.Errorf("webhook fault %s must be a probability between 0 and 1, got %v", p.name, p.value)
		}
	}
	if f.Delay < 0 {
		return fmt.Errorf("webhook delay must not be negative, got %s", f.Delay)
	}
	return nil
}

// WebhookConfig says where the Engine sends its events and how.
type WebhookConfig struct {
	// URL receives every event as a POST; empty turns webhooks off.
	URL string
	// Secret signs the events; required with a URL. It is never logged,
	// answered or written anywhere by the Engine.
	Secret string
	// Format is WebhookFormatStripe (the default) or WebhookFormatHTTP.
	Format WebhookFormat
	// Faults are the faults of the events sent.
	Faults WebhookFaults
	// Seed seeds the random source of the faults; 0 draws one.
	Seed uint64
	// Client sends the events; a client with a 5-second timeout when nil.
	Client *http.Client
}

// Validate returns an error for a config SetWebhooks refuses: a URL that
// is not absolute http or https, a URL without a secret, an unknown format
// or a fault out of range. A config without a URL is valid (off).
func (c WebhookConfig) Validate() error {
	if c.URL == "" {
		return nil
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("the webhook URL must be an absolute http or https URL")
	}
	if c.Secret == "" {
		return errors.New("a webhook secret is required with a webhook URL")
	}
	if c.Format != "" && c.Format != WebhookFormatStripe && c.Format != WebhookFormatHTTP {
		return fmt.Errorf("unknown webhook format %q: use stripe or http", c.Format)
	}
	return c.Faults.validate()
}

// WebhookStats are the counters of the webhooks since they were turned on.
type WebhookStats struct {
	// Events counts the events made, one per change the Engine made.
	Events int64 `json:"events"`
	// Attempts counts the POST requests made, retries and duplicates
	// included.
	Attempts int64 `json:"attempts"`
	// Delivered counts the attempts answered with a 2xx.
	Delivered int64 `json:"delivered"`
	// Failed counts the attempts answered otherwise, or not answered.
	Failed int64 `json:"failed"`
	// Retries counts the attempts that were retries.
	Retries int64 `json:"retries"`
	// GaveUp counts the events given up after WebhookMaxAttempts.
	GaveUp int64 `json:"gaveUp"`
	// Dropped counts the events never sent (WebhookFaults.Drop).
	Dropped int64 `json:"dropped"`
	// Duplicated counts the events sent twice (WebhookFaults.Duplicate).
	Duplicated int64 `json:"duplicated"`
	// Reordered counts the events held and sent after the next one.
	Reordered int64 `json:"reordered"`
	// Delayed counts the events sent after WebhookFaults.Delay.
	Delayed int64 `json:"delayed"`
	// BadSignatures counts the events signed with a wrong secret.
	BadSignatures int64 `json:"badSignatures"`
}

// WithWebhooks turns webhooks on as SetWebhooks does; it panics on a config
// SetWebhooks refuses, as a program's own constant would be wrong.
func WithWebhooks(c WebhookConfig) Option {
	if err := c.Validate(); err != nil {
		panic(fmt.Sprintf("sandbox: %v", err))
	}
	return func(e *Engine) { e.startHooks = &c }
}

// SetWebhooks sends, from now on, an event for every change the Engine
// makes (a PaymentIntent processing, succeeded, failed or canceled; a
// refund created, succeeded or failed; a dispute opened) to c.URL, signed
// with c.Secret, in c.Format, with c.Faults; a goroutine sends them and
// decides the bank debits as they fall due, until Close. An empty URL
// turns webhooks off; events not sent yet are forgotten. A new config
// resets the counters and the random source. It returns an error for a
// malformed URL, a missing secret, an unknown format or a fault out of
// range, and keeps the config in force.
func (e *Engine) SetWebhooks(c WebhookConfig) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.setWebhooksLocked(c)
}

// setWebhooksLocked is SetWebhooks under the lock (or in NewEngine).
func (e *Engine) setWebhooksLocked(c WebhookConfig) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if c.Format == "" {
		c.Format = WebhookFormatStripe
	}
	if c.Client == nil {
		c.Client = &http.Client{Timeout: 5 * time.Second}
	}
	seed := c.Seed
	if seed == 0 {
		seed = e.rnd.Uint64()
	}
	start := false
	if e.hooks == nil {
		if c.URL == "" {
			return nil
		}
		e.hooks, start = newWebhooks(), true
	}
	h := e.hooks
	h.cfg = c
	h.rnd = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	h.queue, h.held = nil, nil
	h.stats = WebhookStats{}
	if start {
		go e.deliver(h)
	}
	h.signal()
	return nil
}

// Webhooks returns the webhook config in force without its secret and
// client: Secret is "" and HasSecret says whether one is set.
func (e *Engine) Webhooks() (c WebhookConfig, hasSecret bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.hooks == nil {
		return WebhookConfig{}, false
	}
	c = e.hooks.cfg
	hasSecret = c.Secret != ""
	c.Secret, c.Client = "", nil
	return c, hasSecret
}

// WebhookStats returns a copy of the webhook counters.
func (e *Engine) WebhookStats() WebhookStats {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.hooks == nil {
		return WebhookStats{}
	}
	return e.hooks.stats
}

// Close stops the goroutine that sends webhooks and waits for it; events
// not sent are forgotten. The Engine still answers requests; webhooks stay
// off until SetWebhooks turns them on again. Close is safe to call more than once, and on an Engine that never
// sent webhooks.
func (e *Engine) Close() {
	e.mu.Lock()
	h := e.hooks
	e.hooks = nil
	e.mu.Unlock()
	if h == nil {
		return
	}
	close(h.stop)
	<-h.done
}
