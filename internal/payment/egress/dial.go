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

package egress

// This file connects under the policy: DialContext resolves a host and
// judges each address in the dialer's Control hook just before connecting to
// it, and HTTPClient is the HTTP client built on DialContext that also refuses
// a URL's scheme before connecting.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"syscall"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// minDialTimeout is the least time given to connecting to one address when
// a host has several, as the standard library's dialer gives.
const minDialTimeout = 2 * time.Second

// DialContext connects to addr, a host and a port, on a TCP network. It
// resolves the host with the Policy's resolver and connects to each address
// in turn until one connection succeeds, with payment.NewDialer's timeouts.
// Each address is judged in the dialer's Control hook, on the address about
// to be connected to, so that nothing is sent to a refused one; when every
// address fails and one was refused, the error is that *RefusedError.
func (p *Policy) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("cannot connect to %s: network %q is not allowed", addr, network)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("cannot connect: %w", err)
	}

	dialer := payment.NewDialer()
	deadline := time.Now().Add(dialer.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()

	addrs, err := p.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	addrs = slices.DeleteFunc(addrs, func(a netip.Addr) bool {
		return (network == "tcp4" && !a.Is4()) || (network == "tcp6" && !a.Is6())
	})
	if len(addrs) == 0 {
		return nil, fmt.Errorf("cannot connect to %q: it has no address on network %s", host, network)
	}

	dialer.Timeout = 0
	dialer.Control = p.control(host)
	var refused, first error
	for i, a := range addrs {
		dialer.Deadline = partialDeadline(time.Now(), deadline, len(addrs)-i)
		conn, err := dialer.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return conn, nil
		}
		var re *RefusedError
		if refused == nil && errors.As(err, &re) {
			refused = re
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if refused != nil {
		return nil, refused
	}
	return nil, first
}

// HTTPClient is payment.NewHTTPClient connecting through DialContext, and
// refusing, before connecting, a URL whose scheme CheckURL refuses. When the
// environment names a proxy (http.ProxyFromEnvironment), the client
// connects to the proxy, and it is the proxy's address that is judged: a
// proxy at a loopback or private address must be listed in InsecureHosts,
// and the proxy alone decides where it forwards the request.
//
// Each call returns a client with its own connections; share one.
func (p *Policy) HTTPClient() *http.Client {
	c := payment.NewHTTPClientWithDial(p.DialContext)
	c.Transport = &schemeGuard{next: c.Transport, policy: p}
	return c
}

// schemeGuard refuses a request whose URL's scheme the policy refuses.
type schemeGuard struct {
	next   http.RoundTripper
	policy *Policy
}

// RoundTrip sends req through the transport when its scheme is allowed.
func (g *schemeGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := g.policy.checkScheme(req.URL.Scheme, req.URL.Hostname()); err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	return g.next.RoundTrip(req)
}

// CloseIdleConnections closes the transport's idle connections, so that
// http.Client's CloseIdleConnections reaches them.
func (g *schemeGuard) CloseIdleConnections() {
	if c, ok := g.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// control is the Control hook of a dialer connecting to host: it refuses
// the address, which the dialer gives as a literal IP and port, when the
// policy does, and then runs the policy's Control hook.
func (p *Policy) control(host string) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			// Fail closed: only literal addresses are judged.
			return fmt.Errorf("egress to %q refused: cannot read the address %q", host, address)
		}
		if err := p.check(host, ap.Addr()); err != nil {
			return err
		}
		if p.Control != nil {
			return p.Control(network, address, c)
		}
		return nil
	}
}

// partialDeadline is the deadline of one of addrsRemaining connection
// attempts that share what is left until deadline, but no less than
// minDialTimeout while there is that much time left.
func partialDeadline(now, deadline time.Time, addrsRemaining int) time.Time {
	remaining := deadline.Sub(now)
	timeout := remaining / time.Duration(addrsRemaining)
	if timeout < minDialTimeout {
		timeout = min(remaining, minDialTimeout)
	}
	return now.Add(timeout)
}
