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

package payment_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		value string
		want  time.Duration
	}{
		{name: "absent", value: "", want: 0},
		{name: "zero seconds", value: "0", want: 0},
		{name: "seconds", value: "120", want: 2 * time.Minute},
		{name: "seconds with spaces", value: " 5 ", want: 5 * time.Second},
		{name: "seconds at the cap", value: "600", want: 10 * time.Minute},
		{name: "seconds over the cap", value: "601", want: 10 * time.Minute},
		{name: "seconds too large for an integer", value: "99999999999999999999999", want: 10 * time.Minute},
		{name: "negative seconds", value: "-5", want: 0},
		{name: "fractional seconds", value: "1.5", want: 0},
		{name: "HTTP date ahead", value: now.Add(90 * time.Second).Format(http.TimeFormat), want: 90 * time.Second},
		{name: "HTTP date far ahead", value: now.Add(time.Hour).Format(http.TimeFormat), want: 10 * time.Minute},
		{name: "HTTP date in the past", value: now.Add(-time.Hour).Format(http.TimeFormat), want: 0},
		{name: "RFC 850 date", value: now.Add(30 * time.Second).Format(time.RFC850), want: 30 * time.Second},
		{name: "garbage", value: "soon", want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(payment.ParseRetryAfter(tt.value, now)).To(Equal(tt.want))
		})
	}
}

func TestValidKey(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"billing/invoice-42", true},
		{"", false},
		{"has space", false},
		{"tab\there", false},
		{"ключ", false},
		{string(make([]byte, 256)), false},
	}
	for _, tt := range tests {
		NewWithT(t).Expect(payment.ValidKey(tt.key)).To(Equal(tt.want), "%q", tt.key)
	}
}

func TestNewHTTPClientDoesNotFollowRedirects(t *testing.T) {
	g := NewWithT(t)
	c := payment.NewHTTPClient()
	g.Expect(c.CheckRedirect(nil, nil)).To(MatchError(http.ErrUseLastResponse))
}

func TestNewHTTPClientWithDialConnectsThroughDial(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	var dials atomic.Int32
	c := payment.NewHTTPClientWithDial(func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return payment.NewDialer().DialContext(ctx, network, addr)
	})
	t.Cleanup(c.CloseIdleConnections)

	resp, err := c.Get(srv.URL)

	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(body)).To(Equal("ok"))
	g.Expect(dials.Load()).To(BeEquivalentTo(1))
	g.Expect(c.CheckRedirect(nil, nil)).To(MatchError(http.ErrUseLastResponse))
}

func TestNewDialerBoundsConnecting(t *testing.T) {
	g := NewWithT(t)
	d := payment.NewDialer()
	g.Expect(d.Timeout).To(Equal(10 * time.Second))
	g.Expect(d.KeepAlive).To(Equal(30 * time.Second))
	d.Timeout = 0
	g.Expect(payment.NewDialer().Timeout).To(Equal(10*time.Second), "each call returns a new dialer")
}
