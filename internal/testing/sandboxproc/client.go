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

package sandboxproc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// APIKey authenticates the client's own reads of the /v1 routes; the
// sandbox accepts any sk_test_ key. It is no scenario's secret value.
const APIKey = "sk_test_sandboxproc"

// maxIntents is the most intents one search for a key returns.
const maxIntents = 100

// Counters are the sandbox's counters (GET /_sandbox/stats). They only
// grow: a window's counts are the difference of two reads (Minus), so runs
// against the same sandbox never count each other's requests.
type Counters struct {
	// Requests are the create (charge) requests, refused ones included.
	Requests int64 `json:"requests"`
	// Charges are the payments whose money moved.
	Charges int64 `json:"charges"`
	// Replays are the answers replayed under a decided key.
	Replays int64 `json:"replays"`
	// InFlightConflicts are the requests refused because their key was in
	// flight.
	InFlightConflicts int64 `json:"inFlightConflicts"`
	// Declines are the card errors saved.
	Declines int64 `json:"declines"`
	// KeyReusedErrors are the requests refused because their key was saved
	// with other parameters.
	KeyReusedErrors int64 `json:"keyReusedErrors"`
	// InvalidRequests are the requests refused as malformed.
	InvalidRequests int64 `json:"invalidRequests"`
	// Faults are the injected faults answered, of every kind.
	Faults int64 `json:"faults"`
	// RateLimited are the creates and searches refused with a 429 beyond
	// the sandbox's rate limits.
	RateLimited int64 `json:"rateLimited"`
	// Searches are the search (lookup) requests, refused ones included.
	Searches int64 `json:"searches"`
	// Retrieves are the reads of one payment intent.
	Retrieves int64 `json:"retrieves"`
	// KeysForgotten are the idempotency keys forgotten (ForgetKeys).
	KeysForgotten int64 `json:"keysForgotten"`
}

// Stats is GET /_sandbox/stats.
type Stats struct {
	// Account is the account the sandbox answers to.
	Account string `json:"account"`
	Counters
	// ChargesByKey counts the payments whose money moved, by idempotency
	// key.
	ChargesByKey map[string]int `json:"chargesByKey"`
}

// combine applies op to each counter of c and o.
func (c Counters) combine(o Counters, op func(a, b int64) int64) Counters {
	return Counters{
		Requests:          op(c.Requests, o.Requests),
		Charges:           op(c.Charges, o.Charges),
		Replays:           op(c.Replays, o.Replays),
		InFlightConflicts: op(c.InFlightConflicts, o.InFlightConflicts),
		Declines:          op(c.Declines, o.Declines),
		KeyReusedErrors:   op(c.KeyReusedErrors, o.KeyReusedErrors),
		InvalidRequests:   op(c.InvalidRequests, o.InvalidRequests),
		Faults:            op(c.Faults, o.Faults),
		RateLimited:       op(c.RateLimited, o.RateLimited),
		Searches:          op(c.Searches, o.Searches),
		Retrieves:         op(c.Retrieves, o.Retrieves),
		KeysForgotten:     op(c.KeysForgotten, o.KeysForgotten),
	}
}

// Minus returns the counts added since before.
func (c Counters) Minus(before Counters) Counters {
	return c.combine(before, func(a, b int64) int64 { return a - b })
}

// Plus adds the counts of two windows.
func (c Counters) Plus(o Counters) Counters {
	return c.combine(o, func(a, b int64) int64 { return a + b })
}

// ProviderCalls are the requests about payments: creates, searches and
// retrieves, refused ones included. The account read (GET /v1/account, once
// per provider and manager process, not per job) is not among the
// sandbox's counters and is not counted.
func (c Counters) ProviderCalls() int64 {
	return c.Requests + c.Searches + c.Retrieves
}

// Intent is the part of a PaymentIntent the callers check.
type Intent struct {
	ID       string            `json:"id"`
	Amount   int64             `json:"amount"`
	Status   string            `json:"status"`
	Metadata map[string]string `json:"metadata"`
}

// Stats reads the sandbox's counters.
func (s *Sandbox) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	if err := s.do(ctx, http.MethodGet, "/_sandbox/stats", nil, &st); err != nil {
		return st, fmt.Errorf("cannot read the sandbox stats: %w", err)
	}
	return st, nil
}

// IntentsFor returns the PaymentIntents whose metadata names the sent
// idempotency key (payment.MetadataKeyIdempotencyKey), through the
// sandbox's Stripe search API.
func (s *Sandbox) IntentsFor(ctx context.Context, key string) ([]Intent, error) {
	q := url.Values{
		"query": {fmt.Sprintf("metadata['%s']:'%s'", payment.MetadataKeyIdempotencyKey, key)},
		"limit": {fmt.Sprint(maxIntents)},
	}
	var page struct {
		Data    []Intent `json:"data"`
		HasMore bool     `json:"has_more"`
	}
	if err := s.do(ctx, http.MethodGet, "/v1/payment_intents/search?"+q.Encode(), nil, &page); err != nil {
		return nil, err
	}
	if page.HasMore {
		return nil, fmt.Errorf("more than %d intents for key %s", maxIntents, key)
	}
	return page.Data, nil
}

// Books reads the sandbox's whole books at one moment (GET
// /_sandbox/books): every intent and refund with its idempotency key, and
// the counters.
func (s *Sandbox) Books(ctx context.Context) (sandbox.Books, error) {
	var b sandbox.Books
	if err := s.do(ctx, http.MethodGet, "/_sandbox/books", nil, &b); err != nil {
		return b, fmt.Errorf("cannot read the sandbox's books: %w", err)
	}
	return b, nil
}

// SetFaults replaces the sandbox's random faults (PUT /_sandbox/faults):
// the chance of an error before and after it commits and of a 429, each
// in [0, 1]; every other fault, latency included, is zero.
func (s *Sandbox) SetFaults(ctx context.Context, beforeCommit, afterCommit, rateLimit float64) error {
	body := map[string]float64{"errorBeforeCommit": beforeCommit, "errorAfterCommit": afterCommit, "rateLimit": rateLimit}
	if err := s.do(ctx, http.MethodPut, "/_sandbox/faults", body, nil); err != nil {
		return fmt.Errorf("cannot set the sandbox's faults: %w", err)
	}
	return nil
}

// ForgetKeys makes the sandbox forget every decided idempotency key, as
// Stripe does after 24 hours; the intents stay, searchable. It returns how
// many keys it forgot.
func (s *Sandbox) ForgetKeys(ctx context.Context) (int, error) {
	var out struct {
		Forgotten int `json:"forgotten"`
	}
	err := s.do(ctx, http.MethodPost, "/_sandbox/forget-keys", nil, &out)
	return out.Forgotten, err
}

// SetLatency replaces the sandbox's faults with a fixed latency for new
// keys, and nothing else.
func (s *Sandbox) SetLatency(ctx context.Context, d time.Duration) error {
	body := map[string]string{"latencyMin": d.String(), "latencyMax": d.String()}
	if err := s.do(ctx, http.MethodPut, "/_sandbox/faults", body, nil); err != nil {
		return fmt.Errorf("cannot set the sandbox latency: %w", err)
	}
	return nil
}

// SetLookup turns the sandbox's search and lookups on or off: off, they
// answer 404 as at a provider without lookup.
func (s *Sandbox) SetLookup(ctx context.Context, on bool) error {
	if err := s.do(ctx, http.MethodPut, "/_sandbox/lookup", map[string]bool{"enabled": on}, nil); err != nil {
		return fmt.Errorf("cannot turn the sandbox's lookup %s: %w", map[bool]string{true: "on", false: "off"}[on], err)
	}
	return nil
}

// SetDebitSettleDelay sets how long new bank debits stay processing before
// they succeed or fail.
func (s *Sandbox) SetDebitSettleDelay(ctx context.Context, d time.Duration) error {
	if err := s.do(ctx, http.MethodPut, "/_sandbox/debits", map[string]string{"settleDelay": d.String()}, nil); err != nil {
		return fmt.Errorf("cannot set the sandbox's debit settle delay: %w", err)
	}
	return nil
}

// SetWebhooks has the sandbox send its events to the URL to, signed with secret,
// in format, with faults drawn from seed (the control endpoint PUT
// /_sandbox/webhooks); the secret goes in the request body, over loopback.
func (s *Sandbox) SetWebhooks(ctx context.Context, to, secret string, format sandbox.WebhookFormat, faults sandbox.WebhookFaults, seed uint64) error {
	body := map[string]any{"url": to, "secret": secret, "format": format, "seed": seed, "faults": map[string]any{
		"duplicate": faults.Duplicate, "reorder": faults.Reorder, "drop": faults.Drop,
		"badSignature": faults.BadSignature, "delay": faults.Delay.String()}}
	if err := s.do(ctx, http.MethodPut, "/_sandbox/webhooks", body, nil); err != nil {
		return fmt.Errorf("cannot set the sandbox's webhooks: %w", err)
	}
	return nil
}

// WebhookStats returns the counters of the webhooks the sandbox sent.
func (s *Sandbox) WebhookStats(ctx context.Context) (sandbox.WebhookStats, error) {
	var body struct {
		Stats sandbox.WebhookStats `json:"stats"`
	}
	if err := s.do(ctx, http.MethodGet, "/_sandbox/webhooks", nil, &body); err != nil {
		return sandbox.WebhookStats{}, fmt.Errorf("cannot read the sandbox's webhook counters: %w", err)
	}
	return body.Stats, nil
}

// do sends body, when set, as JSON and decodes a 200 answer into into, when
// set. Any other status is an error with the start of the answer.
func (s *Sandbox) do(ctx context.Context, method, path string, body, into any) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+APIKey)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %.512s", method, path, resp.Status, answer)
	}
	if into == nil {
		return nil
	}
	if err := json.Unmarshal(answer, into); err != nil {
		return fmt.Errorf("%s %s: cannot decode the answer: %w", method, path, err)
	}
	return nil
}
