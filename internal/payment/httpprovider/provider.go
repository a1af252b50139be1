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

// DefaultPollInterval is the first wait between two lookups of a charge that
// Settle reads until it is final, when Config.PollInterval is zero.
const DefaultPollInterval = payment.DefaultPollInterval

// DefaultMaxPollInterval is the longest wait between two lookups of a charge,
// when Config.MaxPollInterval is zero.
const DefaultMaxPollInterval = payment.DefaultMaxPollInterval

// UserAgent is the User-Agent header of every request.
const UserAgent = "paymentjob-operator"

var (
	_ payment.Provider   = (*Provider)(nil)
	_ payment.Identifier = (*Provider)(nil)
)

// Config configures a Provider.
type Config struct {
	// URL receives the charge requests. It must be an absolute http or https
	// URL without user information. Required.
	URL string
	// LookupURL is the optional lookup endpoint, validated like URL, that
	// answers the charges held under idempotency keys and the account's
	// identifier. With it New returns a *LookupProvider, a payment.Looker.
	LookupURL string
	// RefundURL is the optional refund endpoint, validated like URL, that
	// receives the refund requests. Without it Refund sends nothing and
	// fails; refunds need LookupURL too.
	RefundURL string
	// ListURL is the optional list endpoint, validated like URL, that
	// answers the charges and refunds created in a time window, a page at a
	// time. Without it List sends nothing and returns
	// payment.ErrListUnsupported.
	ListURL string
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
	// PollInterval is the first wait between two lookups of a charge that
	// Settle reads until it is final; it doubles after each lookup. Defaults
	// to DefaultPollInterval.
	PollInterval time.Duration
	// MaxPollInterval caps the wait between two lookups. Defaults to
	// DefaultMaxPollInterval, or PollInterval when that is longer.
	MaxPollInterval time.Duration
}

// Provider is a payment.Provider that charges through a payment service that
// implements the operator's HTTP contract, a payment.Identifier that names no
// account, and a payment.Refunder whose refunds need Config.RefundURL, and
// whose refund lookups need Config.LookupURL (a *LookupProvider), and a
// payment.Lister whose lists need Config.ListURL. It is safe for concurrent
// use.
type Provider struct {
	url       string
	refundURL string
	// listURL is nil without a list endpoint.
	listURL  *url.URL
	token    string
	client   *http.Client
	maxBytes int64
}

// New validates cfg and returns a *Provider, or a *LookupProvider, which is
// also a payment.Looker, when cfg.LookupURL is set. Either is a
// payment.Identifier.
func New(cfg Config) (payment.Provider, error) {
	u, err := endpoint("url", cfg.URL)
	if err != nil {
		return nil, err
	}
	var lookup *url.URL
	if cfg.LookupURL != "" {
		if lookup, err = endpoint("lookup url", cfg.LookupURL); err != nil {
			return nil, err
		}
		for _, param := range []string{keyParameter, chargeParameter} {
			if lookup.Query().Has(param) {
				return nil, fmt.Errorf("cannot use the payment service lookup url: it must not have a %q parameter; the operator adds it", param)
			}
		}
	}
	var refund *url.URL
	if cfg.RefundURL != "" {
		if refund, err = endpoint("refund url", cfg.RefundURL); err != nil {
			return nil, err
		}
	}
	list, err := listEndpointURL(cfg.ListURL)
	if err != nil {
		return nil, err
	}
	token := strings.TrimSpace(cfg.Token)
	if !payment.PrintableASCII(token) {
		return nil, errors.New("cannot use the payment service token: it contains characters that are not allowed in an HTTP header")
	}
	if cfg.MaxResponseBytes < 0 {
		return nil, fmt.Errorf("cannot use a maximum response size of %d bytes", cfg.MaxResponseBytes)
	}
	poll, maxPoll, err := payment.PollIntervals(cfg.PollInterval, cfg.MaxPollInterval)
	if err != nil {
		return nil, err
	}

	p := &Provider{
		url:      u.String(),
		listURL:  list,
		token:    token,
		client:   cfg.HTTPClient,
		maxBytes: cfg.MaxResponseBytes,
	}
	if refund != nil {
		p.refundURL = refund.String()
	}
	if p.client == nil {
		p.client = payment.NewHTTPClient()
	}
	if p.maxBytes == 0 {
		p.maxBytes = DefaultMaxResponseBytes
	}
	if lookup == nil {
		return p, nil
	}
	return &LookupProvider{
		Provider:        p,
		lookupURL:       lookup,
		pollInterval:    poll,
		maxPollInterval: maxPoll,
	}, nil
}

// endpoint validates the url of the field named name: absolute, http or
// https, without user information.
func endpoint(name, raw string) (*url.URL, error) {
	u, err := payment.ParseEndpoint(raw, "the token")
	if err != nil {
		return nil, fmt.Errorf("cannot use the payment service %s: %w", name, err)
	}
	return u, nil
}

// Account returns "": without a lookup endpoint the service names no
// account, and nothing is sent.
func (p *Provider) Account(context.Context) (string, error) {
	return "", nil
}

// chargeBody is the JSON body of a charge request: the request's fields, as
// payment.ChargeRequest encodes them, then the key and the fingerprint.
type chargeBody struct {
	payment.ChargeRequest
	IdempotencyKey string `json:"idempotencyKey"`
	Fingerprint    string `json:"fingerprint"`
}

// Charge sends req to the payment service under key and maps the answer to an
// outcome or to one of package payment's error classes, as the package
// documentation describes. A context that is already done sends nothing.
func (p *Provider) Charge(ctx context.Context, key string, req payment.ChargeRequest) (payment.Outcome, error) {
	body := chargeBody{ChargeRequest: req, IdempotencyKey: key, Fingerprint: payment.RequestHash(key, req)}
	return p.create(ctx, chargeOp, p.url, key, body, payment.Outcome{Amount: req.Amount, Currency: req.Currency})
}

// create sends payload to target under key and maps the answer to op's
// outcome, whose amount and currency default to fallback's. An invalid key
// sends nothing, so nothing can have been created: a payment.Invalid
// refusal.
func (p *Provider) create(ctx context.Context, op operation, target, key string, payload any, fallback payment.Outcome) (payment.Outcome, error) {
	if !payment.ValidKey(key) {
		return payment.Outcome{}, payment.Invalid("the idempotency key must be 1 to 255 visible ASCII characters")
	}
	a, err := p.post(ctx, op, target, key, payload)
	if err != nil {
		return payment.Outcome{}, err
	}
	return p.interpret(op, a, fallback)
}

// answer is a complete answer of the service.
type answer struct {
	code       int
	header     http.Header
	raw        []byte
	retryAfter time.Duration
}

// post sends payload, encoded as JSON, in one POST to target under key with
// the contract's headers, and reads the whole answer. Every error is
// uncertain but one in encoding payload, which sends nothing: a
// payment.Invalid refusal.
func (p *Provider) post(ctx context.Context, op operation, target, key string, payload any) (answer, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return answer{}, payment.Invalid(fmt.Sprintf("cannot encode the %s request: %v", op.noun, err))
	}
	if err := ctx.Err(); err != nil {
		return answer{}, payment.Transient(fmt.Errorf("cannot send the %s: %w", op.noun, err), 0)
	}
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return answer{}, payment.Transient(fmt.Errorf("cannot build the %s request: %w", op.noun, err), 0)
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
		return answer{}, payment.Transient(fmt.Errorf("cannot reach the payment service: %w", err), 0)
	}
	defer func() { _ = resp.Body.Close() }()

	a := answer{code: resp.StatusCode, header: resp.Header,
		retryAfter: payment.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	if a.raw, err = readBody(resp.Body, p.maxBytes); err != nil {
		return answer{}, payment.Transient(
			fmt.Errorf("payment service answered %s, but %w", statusLine(resp.StatusCode), err), a.retryAfter)
	}
	return a, nil
}
