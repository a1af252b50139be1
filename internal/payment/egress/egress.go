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

// Package egress decides which provider endpoints the operator may reach.
//
// A tenant writes the URL of a PaymentProvider, and the operator calls it
// with a bearer token, so a URL must not turn the operator into a way into
// the cluster's network or the cloud's metadata service. A Policy requires
// https, and refuses connections to link-local (169.254.0.0/16 and
// fe80::/10, where metadata services answer), cloud metadata addresses
// outside them (fd00:ec2::254, fd20:ce::254, 100.100.100.200), loopback,
// unspecified, broadcast and multicast addresses, and to private and shared
// addresses (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10,
// fc00::/7, fec0::/10). IPv4-mapped IPv6 addresses and addresses in the NAT64 prefix
// 64:ff9b::/96 are judged by the IPv4 address they carry.
//
// The hosts of the manager's --insecure-provider-hosts flag may be reached
// over plain http and at loopback, private and shared addresses, never at
// the others.
//
// The decision on an address is made when connecting, on the address
// connected to, after the host name was resolved: a name that resolves to an
// allowed address when the PaymentProvider is checked and to a refused one
// when the operator connects (DNS rebinding) is refused. CheckURL and
// CheckHost are the early, advisory checks that let a PaymentProvider report
// a refused URL before any payment is attempted.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
)

// FlagName is the manager flag that lists the insecure provider hosts.
const FlagName = "insecure-provider-hosts"

// Resolver looks host names up. *net.Resolver is one.
type Resolver interface {
	// LookupIPAddr returns the addresses of host.
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Policy decides which provider endpoints the operator may reach. The zero
// Policy lists no insecure host and resolves with net.DefaultResolver. A
// Policy must not be changed once in use; it is safe for concurrent use.
type Policy struct {
	// InsecureHosts may be reached over plain http and at loopback,
	// private and shared addresses: the manager's --insecure-provider-hosts flag, as
	// ParseHosts returns it. They are compared without regard to case with
	// the host name of a URL, without its port.
	InsecureHosts []string
	// Resolver looks host names up; nil is net.DefaultResolver.
	Resolver Resolver
	// Control, when set, runs after the policy allowed an address, just
	// before the connection to it is made, with the address as net.Dialer's
	// Control hook receives it. An error refuses the connection.
	Control func(network, address string, c syscall.RawConn) error
}

// RefusedError is a connection to an address that the Policy refuses.
type RefusedError struct {
	// Host is the host name, or the IP address, connected to.
	Host string
	// Address is the refused address.
	Address netip.Addr
	// Reason says what kind of address it is, such as "a link-local
	// address".
	Reason string
}

// Error says which host and address were refused, and why.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("egress to %q refused: %s is %s", e.Host, e.Address, e.Reason)
}

// ParseHosts reads the value of the --insecure-provider-hosts flag: host
// names or IP addresses separated by commas. Each is trimmed and lowercased,
// and empty ones are dropped. An entry with a scheme, a port, a path, user
// information or a space is an error that names it: the flag lists hosts,
// and a listed host may be reached on every port.
func ParseHosts(flagValue string) ([]string, error) {
	var hosts []string
	for entry := range strings.SplitSeq(flagValue, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		host, err := parseHost(entry)
		if err != nil {
			return nil, fmt.Errorf("invalid --%s entry %q: %w", FlagName, entry, err)
		}
		if !slices.Contains(hosts, host) {
			hosts = append(hosts, host)
		}
	}
	return hosts, nil
}

// parseHost returns entry as it is compared: lowercased, without a trailing
// dot, an IP address in its canonical form.
func parseHost(entry string) (string, error) {
	switch {
	case strings.Contains(entry, "://"):
		return "", errors.New("it has a scheme; list the host name only")
	case strings.ContainsAny(entry, " \t\r\n"):
		return "", errors.New("it contains a space; separate hosts with commas")
	case strings.Contains(entry, "@"):
		return "", errors.New("it has user information; list the host name only")
	case strings.ContainsAny(entry, "/?#"):
		return "", errors.New("it has a path; list the host name only")
	}
	ip := strings.TrimSuffix(strings.TrimPrefix(entry, "["), "]")
	if addr, err := netip.ParseAddr(ip); err == nil {
		if addr.Zone() != "" {
			return "", errors.New("it has an IPv6 zone; list the address without it")
		}
		return addr.String(), nil
	}
	if strings.Contains(entry, ":") {
		return "", errors.New("it has a port; list the host name only, every port of a listed host may be reached")
	}
	host := strings.TrimSuffix(strings.ToLower(entry), ".")
	if host == "" || strings.HasPrefix(host, ".") || strings.Contains(host, "..") {
		return "", errors.New("it is not a host name or an IP address")
	}
	for _, c := range host {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '.' && c != '_' {
			return "", errors.New("it is not a host name or an IP address")
		}
	}
	return host, nil
}

// CheckURL checks the provider URL raw, the value of the field named field
// (such as "spec.http.url"): its scheme must be https, or http when its host
// is listed in InsecureHosts; a host that is an IP address must not be one
// that is always refused, nor, unless listed, a loopback or private one. The
// error names field and says how to fix it; a refused address is a
// *RefusedError. CheckURL does not resolve the host: DialContext judges the
// addresses it resolves to.
func (p *Policy) CheckURL(field, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes the URL, which might hold credentials.
		return fmt.Errorf("%s is not a valid URL", field)
	}
	host := u.Hostname()
	if !u.IsAbs() || host == "" {
		return fmt.Errorf("%s must be an absolute URL with a host", field)
	}
	if err := p.checkScheme(u.Scheme, host); err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if err := p.check(host, addr); err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
	}
	return nil
}

// checkScheme refuses a scheme other than https, and http for a host that
// is not listed.
func (p *Policy) checkScheme(scheme, host string) error {
	switch scheme = strings.ToLower(scheme); {
	case scheme == "https":
		return nil
	case scheme == "http" && p.listed(host):
		return nil
	case scheme == "http":
		return fmt.Errorf("plain http to %q is refused: use https, or list host %q in the manager's --%s",
			host, normalize(host), FlagName)
	default:
		return fmt.Errorf("scheme %q is not allowed: use https", scheme)
	}
}

// CheckHost resolves host, a host name or an IP address without a port, and
// checks every address it resolves to; the first refused one is a
// *RefusedError. It is advisory, for a PaymentProvider's status: the
// addresses may change before the operator connects, and DialContext checks
// the ones it connects to.
func (p *Policy) CheckHost(ctx context.Context, host string) error {
	addrs, err := p.resolve(ctx, host)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if err := p.check(host, a); err != nil {
			return err
		}
	}
	return nil
}

// listed reports whether host is one of InsecureHosts.
func (p *Policy) listed(host string) bool {
	return host != "" && slices.Contains(p.InsecureHosts, normalize(host))
}

// normalize returns host as ParseHosts does, so that the two compare.
func normalize(host string) string {
	if a, err := netip.ParseAddr(host); err == nil {
		return a.String()
	}
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

// resolve returns the addresses of host, an IP address or a host name, in
// the resolver's order, IPv4-mapped addresses as IPv4.
func (p *Policy) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if host == "" {
		return nil, errors.New("cannot connect: no host")
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a.Unmap()}, nil
	}
	r := p.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	ipAddrs, err := r.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("cannot resolve %q: %w", host, err)
	}
	addrs := make([]netip.Addr, 0, len(ipAddrs))
	for _, ia := range ipAddrs {
		a, ok := netip.AddrFromSlice(ia.IP)
		if !ok {
			continue
		}
		addrs = append(addrs, a.Unmap().WithZone(ia.Zone))
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("cannot resolve %q: it has no address", host)
	}
	return addrs, nil
}
