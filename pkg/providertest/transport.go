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

package providertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment/httpprovider"
)

// errAnswerThrownAway is the error of a request whose answer the transport
// read in full and then threw away, as a client does whose connection
// breaks after the service answered.
var errAnswerThrownAway = errors.New("providertest threw the answer away")

// exchange is one charge request as the recorder sees it: what to do to it,
// and the raw answer.
type exchange struct {
	// withoutKey sends the request without its Idempotency-Key header and
	// without the body's idempotencyKey and fingerprint.
	withoutKey bool
	// withoutFingerprint sends the request without the body's fingerprint,
	// as an operator that sent none did.
	withoutFingerprint bool
	// headerKey, when set, replaces the Idempotency-Key header, and bodyKey
	// the body's idempotencyKey: the two then disagree, which the operator
	// never sends, to tell which one the service keys on.
	headerKey, bodyKey string
	// query, when set, replaces these parameters of the request's url: a
	// smaller page than the operator asks for, or a parameter the contract
	// does not allow.
	query url.Values
	// throwAway reads the answer and then returns errAnswerThrownAway.
	throwAway bool
	// cancelAfterWrite cancels the request once its body is written,
	// before the answer is read; cancel is set by chargeWith.
	cancelAfterWrite bool
	cancel           context.CancelFunc

	// The answer, status 0 when none was read.
	status int
	header http.Header
	body   []byte
}

// exchangeKey is the context key of the *exchange of a request.
type exchangeKey struct{}

// recorder is a transport that records the raw answer of every request
// that carries an *exchange, and tampers with it as the exchange asks.
type recorder struct {
	next http.RoundTripper
}

// RoundTrip sends r with the next transport.
func (rt recorder) RoundTrip(r *http.Request) (*http.Response, error) {
	x, _ := r.Context().Value(exchangeKey{}).(*exchange)
	if x == nil {
		return rt.next.RoundTrip(r)
	}
	if x.withoutKey || x.withoutFingerprint || x.headerKey != "" || x.bodyKey != "" {
		var err error
		if r, err = x.rewrite(r); err != nil {
			return nil, err
		}
	}
	if len(x.query) > 0 {
		r = x.withQuery(r)
	}
	if x.cancelAfterWrite && x.cancel != nil {
		trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { x.cancel() }}
		r = r.WithContext(httptrace.WithClientTrace(r.Context(), trace))
	}
	resp, err := rt.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	// One byte more than the operator reads, so that it sees the excess.
	body, err := io.ReadAll(io.LimitReader(resp.Body, httpprovider.DefaultMaxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read the answer: %w", err)
	}
	x.status, x.header, x.body = resp.StatusCode, resp.Header.Clone(), body
	if x.throwAway {
		return nil, errAnswerThrownAway
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// rewrite returns a copy of the charge request r changed as x asks:
// without the body's fingerprint; without the Idempotency-Key header and the
// body's idempotencyKey (the fingerprint is derived from the key); or with
// another key in the header or in the body.
func (x *exchange) rewrite(r *http.Request) (*http.Request, error) {
	var body map[string]json.RawMessage
	if r.Body != nil {
		raw, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("cannot read the charge body: %w", err)
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			return nil, fmt.Errorf("cannot decode the charge body: %w", err)
		}
	}
	if x.withoutFingerprint || x.withoutKey {
		delete(body, "fingerprint")
	}
	if x.withoutKey {
		delete(body, "idempotencyKey")
	}
	if x.bodyKey != "" {
		if body == nil {
			body = map[string]json.RawMessage{}
		}
		key, _ := json.Marshal(x.bodyKey)
		body["idempotencyKey"] = key
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("cannot encode the charge body: %w", err)
	}
	c := r.Clone(r.Context())
	switch {
	case x.withoutKey:
		c.Header.Del("Idempotency-Key")
	case x.headerKey != "":
		c.Header.Set("Idempotency-Key", x.headerKey)
	}
	c.Body = io.NopCloser(bytes.NewReader(raw))
	c.ContentLength = int64(len(raw))
	c.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil }
	return c, nil
}

// withQuery returns a copy of r whose url has the parameters of x.query
// instead of its own of the same names.
func (x *exchange) withQuery(r *http.Request) *http.Request {
	c := r.Clone(r.Context())
	q := c.URL.Query()
	for name, values := range x.query {
		q[name] = values
	}
	c.URL.RawQuery = q.Encode()
	return c
}
