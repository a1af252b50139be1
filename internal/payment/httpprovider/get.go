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

package httpprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// getEndpoint is what differs between the endpoints the operator reads
// with GET, the lookup and the list endpoint: the words of their errors
// and what to fix when they answer a status code the contract does not
// use.
type getEndpoint struct {
	// name names the endpoint: "lookup endpoint".
	name string
	// doing says what a request does: "look charges up".
	doing string
	// hints say what to fix.
	hints endpointHints
}

var (
	// lookupEndpoint is the lookup endpoint.
	lookupEndpoint = getEndpoint{name: "lookup endpoint", doing: "look charges up", hints: lookupHints}
	// listEndpoint is the list endpoint.
	listEndpoint = getEndpoint{name: "list endpoint", doing: "list charges or refunds", hints: listHints}
)

// getJSON sends one GET to target, the endpoint e's url with its
// parameters, with the contract's headers (Accept, User-Agent, and the
// bearer token when there is one), and decodes a 200 answer whose body is a
// JSON object into out. Anything else is a payment.TransientError, with the
// answer's Retry-After: another status code (saying what to fix for the
// ones the contract does not use), a body that is not that JSON object or
// is larger than the maximum, a network error. No error quotes target,
// whose parameters may hold keys.
func (p *Provider) getJSON(ctx context.Context, e getEndpoint, target string, out any) error {
	if err := ctx.Err(); err != nil {
		return payment.Transient(fmt.Errorf("cannot %s: %w", e.doing, err), 0)
	}
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return payment.Transient(fmt.Errorf("cannot build the request to the %s", e.name), 0)
	}
	httpReq.Header.Set("Accept", "application/json")
	httpReq.Header.Set("User-Agent", UserAgent)
	if p.token != "" {
		httpReq.Header.Set("Authorization", "Bearer "+p.token)
	}

	resp, err := p.client.Do(httpReq)
	if err != nil {
		// A *url.Error quotes the url, and with it the keys; the cause is
		// what tells what went wrong.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return payment.Transient(fmt.Errorf("cannot reach the payment service's %s: %w", e.name, err), 0)
	}
	defer func() { _ = resp.Body.Close() }()

	retryAfter := payment.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	line := statusLine(resp.StatusCode)
	raw, err := readBody(resp.Body, p.maxBytes)
	if err != nil {
		return payment.Transient(fmt.Errorf("payment service's %s answered %s, but %w", e.name, line, err), retryAfter)
	}
	switch code := resp.StatusCode; {
	case code == http.StatusOK:
	case code == http.StatusTooManyRequests || (code >= 500 && code <= 599):
		return payment.Transient(
			fmt.Errorf("payment service's %s answered %s%s", e.name, line, p.serviceSaid(raw)), retryAfter)
	default:
		return payment.Transient(
			fmt.Errorf("payment service's %s answered %s: %s%s", e.name, line, e.hints.hint(code), p.serviceSaid(raw)), retryAfter)
	}

	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return payment.Transient(
			fmt.Errorf("payment service's %s answered %s with a body that is not a JSON object", e.name, line), retryAfter)
	}
	if err := json.Unmarshal(trimmed, out); err != nil {
		return payment.Transient(
			fmt.Errorf("payment service's %s answered %s with a body that is not the expected JSON object: %s",
				e.name, line, p.clean(err.Error())), retryAfter)
	}
	return nil
}

// withQuery is u with the encoded parameters query after the parameters u
// has.
func withQuery(u *url.URL, query string) string {
	c := *u
	if query != "" {
		if c.RawQuery != "" {
			c.RawQuery += "&"
		}
		c.RawQuery += query
	}
	return c.String()
}
