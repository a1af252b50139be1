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

// This file classifies addresses: which kinds are refused to every host
// (unspecified, link-local, cloud metadata, multicast and broadcast), which
// only hosts listed in --insecure-provider-hosts may reach (loopback, private
// and shared), and how an IPv4-mapped or NAT64 address is judged by the IPv4
// address it carries. check applies the classification to one host and
// address; DialContext, CheckURL and CheckHost all decide through it.

import (
	"fmt"
	"net/netip"
	"slices"
)

// check returns a *RefusedError when host may not be reached at addr.
func (p *Policy) check(host string, addr netip.Addr) error {
	reason, always := kind(addr)
	switch {
	case reason == "":
		return nil
	case always:
		return &RefusedError{Host: host, Address: addr, Reason: reason}
	case p.listed(host):
		return nil
	default:
		return &RefusedError{Host: host, Address: addr,
			Reason: fmt.Sprintf("%s, which only hosts listed in the manager's --%s may reach", reason, FlagName)}
	}
}

var (
	// nat64 is the well-known NAT64 prefix, whose addresses reach the IPv4
	// address in their last 32 bits.
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
	// shared is the shared address space of carrier-grade NAT.
	shared = netip.MustParsePrefix("100.64.0.0/10")
	// thisNetwork is "this host on this network"; Linux connects
	// 0.0.0.0 to the host itself.
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	// siteLocal is IPv6's deprecated site-local range, private in use.
	siteLocal = netip.MustParsePrefix("fec0::/10")
	// broadcast is the limited broadcast address.
	broadcast = netip.AddrFrom4([4]byte{255, 255, 255, 255})
	// metadata are the metadata services of clouds outside link-local
	// space: AWS's and Google Cloud's over IPv6, Alibaba Cloud's. They are
	// refused even to listed hosts, as 169.254.169.254 is.
	metadata = []netip.Addr{
		netip.MustParseAddr("fd00:ec2::254"),
		netip.MustParseAddr("fd20:ce::254"),
		netip.MustParseAddr("100.100.100.200"),
	}
)

// kind names the kind of addr when it is refused, and reports whether it is
// refused even to listed hosts; a public address has no kind.
func kind(addr netip.Addr) (reason string, always bool) {
	a := addr.WithZone("").Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		v4 := netip.AddrFrom4([4]byte(b[12:]))
		if reason, always = kind(v4); reason != "" {
			reason = fmt.Sprintf("the NAT64 form of %s, %s", v4, reason)
		}
		return reason, always
	}
	switch {
	case !a.IsValid():
		return "not a valid address", true
	case a.IsUnspecified() || thisNetwork.Contains(a):
		return "an unspecified address", true
	case a.IsLinkLocalUnicast():
		return "a link-local address", true
	case slices.Contains(metadata, a):
		return "a cloud metadata address", true
	case a.IsMulticast() || a == broadcast:
		return "a multicast or broadcast address", true
	case a.IsLoopback():
		return "a loopback address", false
	case a.IsPrivate() || siteLocal.Contains(a):
		return "a private address", false
	case shared.Contains(a):
		return "a shared (carrier-grade NAT) address", false
	}
	return "", false
}
