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
	"strings"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// DefaultMaxResponseBytes is the largest response body read when
// Config.MaxResponseBytes is zero: 1 MiB.
const DefaultMaxResponseBytes int64 = 1 << 20

// UserAgent is the User-Agent header of every request.
const UserAgent = "paymentjob-operator"

var _ payment.Provider = (*Provider)(nil)

// Config configures a Provider.
type Config struct {
	// URL receives the charge requests. It must be an absolute http or https
	// URL without user information. Required.
	URL string
	// Token is the optional bearer token sent in the Authorization header.
	// Surrounding whitespace, such as the newline a Secret created from a
	// file often ends with, is removed. It never appears in errors.
	Token string
	// HTTPClient sends the requests. The default has dial and TLS handshake
	// timeouts and does not follow redirects; the deadline of a call comes
	// from the context given to Charge.
	HTTPClient *http.Client
	// MaxResponseBytes is the largest response body read; a larger one is a
	// transient error. Defaults to DefaultMaxResponseBytes.
	MaxResponseBytes int64
}

// Provider is a payment.Provider that charges through a payment service that
// implements the operator's HTTP contract. It is safe for concurrent use.
type Provider struct {
	url      string
	token    string
	client   *http.Client
	maxBytes int64
}

// New validates cfg and returns a Provider.
func New(cfg Config) (*Provider, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		// url.Parse quotes the input, which might hold credentials.
		return nil, errors.New("cannot use the payment service url: it is not a valid URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("cannot use the payment service url: scheme must be http or https, not %q", u.Scheme)
	case u.User != nil:
		return nil, errors.New("cannot use the payment service url: it must not contain user information; use the token")
	case u.Host == "" || u.Opaque != "":
		return nil, errors.New("cannot use the payment service url: it must be absolute, with a host")
	}
	token := strings.TrimSpace(cfg.Token)
	if !validHeaderValue(token) {
		return nil, errors.New("cannot use the payment service token: it contains characters that are not allowed in an HTTP header")
	}
	if cfg.MaxResponseBytes < 0 {
		return nil, fmt.Errorf("cannot use a maximum response size of %d bytes", cfg.MaxResponseBytes)
	}
	p := &Provider{
		url:      u.String(),
		token:    token,
		client:   cfg.HTTPClient,
		maxBytes: cfg.MaxResponseBytes,
	}
	if p.client == nil {
		p.client = payment.NewHTTPClient()
	}
	if p.maxBytes == 0 {
		p.maxBytes = DefaultMaxResponseBytes
	}
	return p, nil
}

// chargeBody is the JSON body of a charge request.
type chargeBody struct {
	Amount         int64             `json:"amount"`
	Currency       string            `json:"currency"`
	Customer       string            `json:"customer,omitempty"`
	PaymentMethod  string            `json:"paymentMethod,omitempty"`
	Description    string            `json:"description,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
	IdempotencyKey string            `json:"idempotencyKey"`
}

// Charge sends req to the payment service under key and maps the answer to an
// outcome or to one of package payment's error classes, as the package
// documentation describes. A context that is already done sends nothing.
func (p *Provider) Charge(ctx context.Context, key string, req payment.ChargeRequest) (payment.Outcome, error) {
	if !payment.ValidKey(key) {
		// Nothing is sent, so nothing can have been charged.
		return payment.Outcome{}, payment.Invalid("the idempotency key must be 1 to 255 visible ASCII characters")
	}
	body, err := json.Marshal(chargeBody{
		Amount:         req.Amount,
		Currency:       req.Currency,
		Customer:       req.Customer,
		PaymentMethod:  req.PaymentMethod,
		Description:    req.Description,
		Metadata:       req.Metadata,
		IdempotencyKey: key,
	})
	if err != nil {
		return payment.Outcome{}, payment.Invalid(fmt.Sprintf("cannot encode the charge request: %v", err))
	}
	if err := ctx.Err(); err != nil {
		return payment.Outcome{}, payment.Transient(fmt.Errorf("cannot send the charge: %w", err), 0)
	}
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return payment.Outcome{}, payment.Transient(fmt.Errorf("cannot build the charge request: %w", err), 0)
	}
	httpReq.Header.Set("Content-Type", "application/json")
	httpReq.Header.Set("Accept", "application/json")
	httpReq.Header.Set("Idempotency-Key", key)
	httpReq.Header.Set("User-Agent", UserAgent)
	if p.token != "" {
		httpReq.Header.Set("Authorization", "Bearer "+p.token)
	}

	resp, err := p.client.Do(httpReq)
	if err != nil {
		// Neither the token nor the body is part of a client error; the
		// url is, and New refuses urls with user information.
		return payment.Outcome{}, payment.Transient(fmt.Errorf("cannot reach the payment service: %w", err), 0)
	}
	defer func() { _ = resp.Body.Close() }()

	retryAfter := payment.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	raw, err := readBody(resp.Body, p.maxBytes)
	if err != nil {
		return payment.Outcome{}, payment.Transient(
			fmt.Errorf("payment service answered %s, but %w", statusLine(resp.StatusCode), err), retryAfter)
	}
	return p.interpret(resp.StatusCode, resp.Header, raw, req, retryAfter)
}

// validHeaderValue reports whether s holds only visible ASCII and spaces, so
// that it can be sent as a header value as it is.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' {
			return false
		}
	}
	return true
}
