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

package payment

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxRetryAfter caps a provider's Retry-After hint.
const MaxRetryAfter = 10 * time.Minute

// DialFunc connects to addr on network, as net.Dialer's DialContext does.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// NewDialer is the dialer of NewHTTPClient: it bounds connecting, name
// resolution included, and keeps connections alive. Each call returns a new
// dialer, which the caller may change, for instance to set its Control hook.
func NewDialer() *net.Dialer {
	return &net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
	}
}

// NewHTTPClient is the HTTP client of the provider adapters. It bounds
// connecting and the TLS handshake; each call is bounded by its context's
// deadline. Redirects are returned, not followed: a payment endpoint that
// redirects is a configuration to fix, and following it could resend the
// request, or drop its Authorization header, elsewhere. It connects with
// NewDialer, through the proxy the environment names, if any
// (http.ProxyFromEnvironment).
func NewHTTPClient() *http.Client {
	return NewHTTPClientWithDial(nil)
}

// NewHTTPClientWithDial is NewHTTPClient with its connections made by dial;
// nil dial is NewDialer's DialContext. When the environment names a proxy,
// dial connects to the proxy, not to the payment service.
func NewHTTPClientWithDial(dial DialFunc) *http.Client {
	if dial == nil {
		dial = NewDialer().DialContext
	}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           dial,
			TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2:     true,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
			IdleConnTimeout:       90 * time.Second,
			MaxIdleConns:          100,
			MaxIdleConnsPerHost:   16,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// ParseRetryAfter reads a Retry-After header value, seconds or an HTTP date,
// as a duration from now between zero and MaxRetryAfter. A missing or
// malformed value is zero.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseUint(v, 10, 64); err == nil {
		if secs >= uint64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter
		}
		d = time.Duration(secs) * time.Second
	} else if errors.Is(err, strconv.ErrRange) {
		return MaxRetryAfter
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), MaxRetryAfter)
}

// ValidKey reports whether key can be sent as it is in an Idempotency-Key
// header: 1 to MaxKeyLength visible ASCII characters, no spaces.
func ValidKey(key string) bool {
	return key != "" && len(key) <= MaxKeyLength && VisibleASCII(key)
}
