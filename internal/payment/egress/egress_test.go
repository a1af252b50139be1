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

// These tests never send a packet anywhere but loopback: names resolve
// through stubResolver, and every Policy's Control hook is loopbackOnly,
// which fails the test and refuses the connection, before anything is
// sent, when an address outside 127.0.0.0/8 was about to be connected to.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment/egress"
)

// stubResolver answers from a map of host names to addresses; answer, when
// set, answers instead, with the number of the lookup, from 1.
type stubResolver struct {
	hosts  map[string][]string
	answer func(n int, host string) []string

	mu      sync.Mutex
	lookups int
}

func (r *stubResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	r.mu.Lock()
	r.lookups++
	n := r.lookups
	r.mu.Unlock()
	// Names compare without regard to case, as in DNS.
	ips, ok := r.hosts[strings.ToLower(host)]
	if r.answer != nil {
		ips, ok = r.answer(n, host), true
	}
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var addrs []net.IPAddr
	for _, s := range ips {
		ip, zone, _ := strings.Cut(s, "%")
		addrs = append(addrs, net.IPAddr{IP: net.ParseIP(ip), Zone: zone})
	}
	return addrs, nil
}

// loopbackOnly is a Control hook that counts its calls and refuses, failing
// t, any address outside 127.0.0.0/8.
func loopbackOnly(t *testing.T, calls *atomic.Int32) func(network, address string, c syscall.RawConn) error {
	loopback := netip.MustParsePrefix("127.0.0.0/8")
	return func(network, address string, _ syscall.RawConn) error {
		calls.Add(1)
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !loopback.Contains(ap.Addr()) {
			t.Errorf("the policy let a connection to %s %s through", network, address)
			return fmt.Errorf("test refuses %s: only 127.0.0.0/8 may be reached", address)
		}
		return nil
	}
}

// newPolicy is a Policy with the resolver r and the Control hook
// loopbackOnly, whose calls it counts in the returned counter.
func newPolicy(t *testing.T, r egress.Resolver, insecure ...string) (*egress.Policy, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	return &egress.Policy{InsecureHosts: insecure, Resolver: r, Control: loopbackOnly(t, &calls)}, &calls
}

// refusal asserts that err is a *egress.RefusedError and returns it.
func refusal(g Gomega, err error) *egress.RefusedError {
	var refused *egress.RefusedError
	g.Expect(errors.As(err, &refused)).To(BeTrue(), "error %v is not a *RefusedError", err)
	return refused
}

func TestCheckHost(t *testing.T) {
	r := &stubResolver{hosts: map[string][]string{
		"api.payments.test": {"203.0.113.7", "2001:db8::7"},
		"mixed.test":        {"203.0.113.7", "10.0.0.1"},
		"local.test":        {"127.0.0.1", "::1"},
		"metadata.test":     {"169.254.169.254"},
		"empty.test":        {},
	}}
	tests := []struct {
		name        string
		host        string
		wantRefused string // the refused address
		wantError   string // another error
	}{
		{name: "public addresses", host: "api.payments.test"},
		{name: "one private address among public ones", host: "mixed.test", wantRefused: "10.0.0.1"},
		{name: "listed host on loopback", host: "local.test"},
		{name: "listed host at metadata", host: "metadata.test", wantRefused: "169.254.169.254"},
		{name: "IP address", host: "10.1.2.3", wantRefused: "10.1.2.3"},
		{name: "unknown host", host: "nowhere.test", wantError: "no such host"},
		{name: "no address", host: "empty.test", wantError: "it has no address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			p, calls := newPolicy(t, r, "local.test", "metadata.test")

			err := p.CheckHost(context.Background(), tt.host)

			var refused *egress.RefusedError
			switch {
			case tt.wantRefused != "":
				g.Expect(errors.As(err, &refused)).To(BeTrue(), "error %v is not a *RefusedError", err)
				g.Expect(refused.Address).To(Equal(netip.MustParseAddr(tt.wantRefused)))
			case tt.wantError != "":
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantError)))
				g.Expect(errors.As(err, &refused)).To(BeFalse())
			default:
				g.Expect(err).NotTo(HaveOccurred())
			}
			g.Expect(calls.Load()).To(BeZero(), "checking connects to nothing")
		})
	}
}

func TestCheckURL(t *testing.T) {
	p := &egress.Policy{InsecureHosts: []string{"127.0.0.1", "sandbox.test", "::1", "10.0.0.9"}}
	tests := []struct {
		name        string
		raw         string
		wantError   string // empty when the URL is allowed
		wantRefused bool   // the error is a *RefusedError
	}{
		{name: "https", raw: "https://api.stripe.com"},
		{name: "https with a port and a path", raw: "https://payments.example:8443/v1/charges"},
		{name: "https in capitals", raw: "HTTPS://payments.example/"},
		{name: "http to a listed host", raw: "http://sandbox.test:8080/charges"},
		{name: "http to a listed host in capitals", raw: "http://SandBox.Test./charges"},
		{name: "http to a listed IP address", raw: "http://127.0.0.1:8080/charges"},
		{name: "http to a listed IPv6 address", raw: "http://[::1]:8080/charges"},
		{name: "https to a public IP address", raw: "https://203.0.113.7/charges"},
		{name: "listed private IP address", raw: "https://10.0.0.9/charges"},
		{
			name: "http to an unlisted host", raw: "http://payments.example/charges",
			wantError: `spec.http.url: plain http to "payments.example" is refused: use https, or list host "payments.example" in the manager's --insecure-provider-hosts`,
		},
		{name: "http to a listed host's subdomain", raw: "http://api.sandbox.test/", wantError: `list host "api.sandbox.test"`},
		{name: "ftp", raw: "ftp://payments.example/", wantError: `spec.http.url: scheme "ftp" is not allowed: use https`},
		{name: "file", raw: "file:///etc/passwd", wantError: "spec.http.url must be an absolute URL with a host"},
		{name: "relative", raw: "/charges", wantError: "spec.http.url must be an absolute URL with a host"},
		{name: "invalid", raw: "https://user:secret@[::1", wantError: "spec.http.url is not a valid URL"},
		{
			name: "metadata address", raw: "https://169.254.169.254/latest/meta-data/", wantRefused: true,
			wantError: `spec.http.url: egress to "169.254.169.254" refused: 169.254.169.254 is a link-local address`,
		},
		{name: "IPv6 link-local", raw: "https://[fe80::1%25eth0]/", wantRefused: true, wantError: "is a link-local address"},
		{name: "unspecified", raw: "https://0.0.0.0/", wantRefused: true, wantError: "is an unspecified address"},
		{name: "unlisted loopback", raw: "https://127.0.0.2/", wantRefused: true, wantError: "127.0.0.2 is a loopback address, which only hosts listed"},
		{name: "unlisted private", raw: "https://192.168.0.10/", wantRefused: true, wantError: "is a private address"},
		{name: "unlisted IPv4-mapped private", raw: "https://[::ffff:10.0.0.1]/", wantRefused: true, wantError: "is a private address"},
		{name: "unlisted IPv4-mapped loopback", raw: "https://[::ffff:127.0.0.1]/", wantRefused: true, wantError: "is a loopback address"},
		{name: "unlisted unique local", raw: "https://[fd12::1]/", wantRefused: true, wantError: "is a private address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			err := p.CheckURL("spec.http.url", tt.raw)

			if tt.wantError == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantError)))
			g.Expect(err.Error()).NotTo(ContainSubstring("secret"))
			var refused *egress.RefusedError
			g.Expect(errors.As(err, &refused)).To(Equal(tt.wantRefused), "error %v", err)
		})
	}
}

func TestParseHosts(t *testing.T) {
	tests := []struct {
		name      string
		value     string
		want      []string
		wantError string
	}{
		{name: "empty", value: "", want: nil},
		{name: "only commas and spaces", value: " , ,", want: nil},
		{name: "one address", value: "127.0.0.1", want: []string{"127.0.0.1"}},
		{
			name: "trimmed, lowercased, deduplicated", value: " Sandbox.Test ,127.0.0.1,,sandbox.test.,localhost",
			want: []string{"sandbox.test", "127.0.0.1", "localhost"},
		},
		{name: "IPv6 address", value: "::1,[0:0::2]", want: []string{"::1", "::2"}},
		{name: "underscore", value: "stripe_mock", want: []string{"stripe_mock"}},
		{name: "scheme", value: "127.0.0.1,http://sandbox.test", wantError: `invalid --insecure-provider-hosts entry "http://sandbox.test": it has a scheme`},
		{name: "port", value: "sandbox.test:8080", wantError: `invalid --insecure-provider-hosts entry "sandbox.test:8080": it has a port`},
		{name: "IPv6 port", value: "[::1]:8080", wantError: `entry "[::1]:8080": it has a port`},
		{name: "path", value: "sandbox.test/charges", wantError: `entry "sandbox.test/charges": it has a path`},
		{name: "space", value: "sandbox.test other.test", wantError: `entry "sandbox.test other.test": it contains a space`},
		{name: "user information", value: "user@sandbox.test", wantError: "it has user information"},
		{name: "wildcard", value: "*.sandbox.test", wantError: `entry "*.sandbox.test": it is not a host name or an IP address`},
		{name: "IPv6 zone", value: "fe80::1%eth0", wantError: `entry "fe80::1%eth0": it has an IPv6 zone`},
		{name: "empty label", value: "sandbox..test", wantError: "it is not a host name or an IP address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			got, err := egress.ParseHosts(tt.value)

			if tt.wantError != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantError)))
				g.Expect(got).To(BeNil())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}
