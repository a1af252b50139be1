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

package egress_test

// Connecting under the policy: DialContext judges the addresses it connects
// to, in order, after resolving, and HTTPClient goes through it.

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment/egress"
)

// newLoopbackServer is an HTTP server on 127.0.0.1 that answers "ok"; it
// returns the server's port.
func newLoopbackServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("cannot listen on 127.0.0.1: %v", err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	_ = srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func TestDialContextReachesListedHostsOnLoopback(t *testing.T) {
	g := NewWithT(t)
	port := newLoopbackServer(t)
	p, calls := newPolicy(t, &stubResolver{hosts: map[string][]string{"payments.test": {"127.0.0.1"}}}, "payments.test")

	conn, err := p.DialContext(context.Background(), "tcp", net.JoinHostPort("Payments.Test", port))

	expectConnected(t, g, conn, err, port)
	g.Expect(calls.Load()).To(BeEquivalentTo(1))
}

func TestDialContextTriesEachAddressInOrder(t *testing.T) {
	g := NewWithT(t)
	port := newLoopbackServer(t)
	p, calls := newPolicy(t, &stubResolver{hosts: map[string][]string{
		"payments.test": {"169.254.169.254", "127.0.0.2", "127.0.0.1", "127.0.0.3"},
	}}, "payments.test")

	conn, err := p.DialContext(context.Background(), "tcp", "payments.test:"+port)

	expectConnected(t, g, conn, err, port)
	// The metadata address was refused by the policy; nothing listens on
	// 127.0.0.2; 127.0.0.3 was never tried.
	g.Expect(calls.Load()).To(BeEquivalentTo(2))
}

// expectConnected asserts that DialContext answered conn, err: a connection
// to the loopback server on port, closed when the test ends.
func expectConnected(t *testing.T, g Gomega, conn net.Conn, err error, port string) {
	t.Helper()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = conn.Close() })
	g.Expect(conn.RemoteAddr().String()).To(Equal("127.0.0.1:" + port))
}

func TestDialContextFailsWithTheRefusalWhenNoAddressConnects(t *testing.T) {
	g := NewWithT(t)
	// A port nothing listens on: take one and close it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	g.Expect(l.Close()).To(Succeed())
	p, _ := newPolicy(t, &stubResolver{hosts: map[string][]string{"payments.test": {"127.0.0.1", "169.254.169.254"}}}, "payments.test")

	_, err = p.DialContext(context.Background(), "tcp", "payments.test:"+port)

	g.Expect(refusal(g, err).Address).To(Equal(netip.MustParseAddr("169.254.169.254")))
}

func TestDialContextRefusesUnlistedHostsOnLoopback(t *testing.T) {
	g := NewWithT(t)
	port := newLoopbackServer(t)
	p, calls := newPolicy(t, &stubResolver{hosts: map[string][]string{
		"payments.test": {"127.0.0.1"},
		"other.test":    {"127.0.0.1"},
	}}, "payments.test")

	_, err := p.DialContext(context.Background(), "tcp", "other.test:"+port)

	g.Expect(refusal(g, err).Error()).To(ContainSubstring("127.0.0.1 is a loopback address, which only hosts listed"))
	g.Expect(calls.Load()).To(BeZero())
}

func TestDialContextChecksTheAddressesOfTheDialNotOfTheCheck(t *testing.T) {
	tests := []struct {
		name        string
		insecure    []string
		check, dial string // the addresses CheckHost, then DialContext, see
	}{
		{name: "public, then private", check: "203.0.113.7", dial: "10.0.0.1"},
		{name: "public, then loopback", check: "203.0.113.7", dial: "127.0.0.1"},
		{name: "listed loopback, then metadata", insecure: []string{"rebind.test"}, check: "127.0.0.1", dial: "169.254.169.254"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := &stubResolver{answer: func(n int, _ string) []string {
				if n == 1 {
					return []string{tt.check}
				}
				return []string{tt.dial}
			}}
			p, calls := newPolicy(t, r, tt.insecure...)

			g.Expect(p.CheckHost(context.Background(), "rebind.test")).To(Succeed())
			_, err := p.DialContext(context.Background(), "tcp", "rebind.test:443")

			refused := refusal(g, err)
			g.Expect(refused.Address).To(Equal(netip.MustParseAddr(tt.dial)))
			g.Expect(calls.Load()).To(BeZero())
		})
	}
}

func TestDialContextRefusesOtherNetworks(t *testing.T) {
	g := NewWithT(t)
	p, calls := newPolicy(t, &stubResolver{hosts: map[string][]string{"payments.test": {"127.0.0.1"}}}, "payments.test")

	_, err := p.DialContext(context.Background(), "udp", "payments.test:53")

	g.Expect(err).To(MatchError(ContainSubstring(`network "udp" is not allowed`)))
	g.Expect(calls.Load()).To(BeZero())
}

func TestDialContextReportsResolutionFailures(t *testing.T) {
	g := NewWithT(t)
	p, calls := newPolicy(t, &stubResolver{})

	_, err := p.DialContext(context.Background(), "tcp", "nowhere.test:443")

	var dnsErr *net.DNSError
	g.Expect(errors.As(err, &dnsErr)).To(BeTrue(), "error %v is not a *net.DNSError", err)
	g.Expect(err.Error()).To(ContainSubstring(`cannot resolve "nowhere.test"`))
	g.Expect(calls.Load()).To(BeZero())
}

func TestDialContextRefusesLiteralAddresses(t *testing.T) {
	g := NewWithT(t)
	r := &stubResolver{}
	p, calls := newPolicy(t, r)

	_, err := p.DialContext(context.Background(), "tcp", "[::ffff:169.254.169.254]:80")

	g.Expect(refusal(g, err).Address).To(Equal(netip.MustParseAddr("169.254.169.254")), "judged by the IPv4 address it carries")
	g.Expect(calls.Load()).To(BeZero())
	g.Expect(r.lookups).To(BeZero(), "an IP address is not looked up")
}

func TestHTTPClientGoesThroughTheGuard(t *testing.T) {
	port := newLoopbackServer(t)
	r := &stubResolver{hosts: map[string][]string{
		"payments.test": {"127.0.0.1"},
		"metadata.test": {"169.254.169.254"},
		"internal.test": {"10.0.0.1"},
	}}
	tests := []struct {
		name        string
		url         string
		wantRefused bool   // a *RefusedError
		wantError   string // any other error
	}{
		{name: "listed host on loopback", url: "http://payments.test:" + port + "/charges"},
		{name: "listed host resolving to metadata", url: "http://metadata.test/latest/meta-data/", wantRefused: true},
		{name: "https to metadata", url: "https://metadata.test/", wantRefused: true},
		{name: "https to a private address", url: "https://internal.test/", wantRefused: true},
		{name: "plain http to an unlisted host", url: "http://internal.test/", wantError: `use https, or list host "internal.test"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			p, calls := newPolicy(t, r, "payments.test", "metadata.test")
			c := p.HTTPClient()
			t.Cleanup(c.CloseIdleConnections)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, tt.url, nil)
			g.Expect(err).NotTo(HaveOccurred())

			resp, err := c.Do(req)

			if !tt.wantRefused && tt.wantError == "" {
				g.Expect(err).NotTo(HaveOccurred())
				defer func() { _ = resp.Body.Close() }()
				body, err := io.ReadAll(resp.Body)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(string(body)).To(Equal("ok"))
				return
			}
			g.Expect(err).To(HaveOccurred())
			var refused *egress.RefusedError
			g.Expect(errors.As(err, &refused)).To(Equal(tt.wantRefused), "error %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.wantError))
			g.Expect(calls.Load()).To(BeZero())
		})
	}
}
