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

// The table of address kinds: which are refused to every host, which only to
// hosts not listed in --insecure-provider-hosts, and how IPv4-mapped and NAT64
// addresses are judged, each refused before a connection is made.

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
)

func TestDialContextRefusesAddressesBeforeConnecting(t *testing.T) {
	tests := []struct {
		name, ip, want string
		insecure       []string
	}{
		{name: "metadata", ip: "169.254.169.254", want: "169.254.169.254 is a link-local address"},
		{name: "metadata for a listed host", ip: "169.254.169.254", insecure: []string{"evil.test"}, want: "is a link-local address"},
		{name: "IPv6 link-local for a listed host", ip: "fe80::1", insecure: []string{"evil.test"}, want: "is a link-local address"},
		{name: "private", ip: "10.0.0.1", want: "10.0.0.1 is a private address, which only hosts listed in the manager's --insecure-provider-hosts may reach"},
		{name: "private 172.16/12", ip: "172.31.255.1", want: "is a private address"},
		{name: "private 192.168/16", ip: "192.168.1.1", want: "is a private address"},
		{name: "carrier-grade NAT", ip: "100.64.0.1", want: "is a shared (carrier-grade NAT) address"},
		{name: "unique local IPv6", ip: "fd00::1", want: "is a private address"},
		{name: "IPv6 loopback", ip: "::1", want: "::1 is a loopback address"},
		{name: "loopback", ip: "127.0.0.1", want: "127.0.0.1 is a loopback address"},
		{name: "IPv4-mapped private", ip: "::ffff:10.0.0.1", want: "10.0.0.1 is a private address"},
		{name: "IPv4-mapped loopback", ip: "::ffff:127.0.0.1", want: "is a loopback address"},
		{name: "AWS IPv6 metadata for a listed host", ip: "fd00:ec2::254", insecure: []string{"evil.test"}, want: "fd00:ec2::254 is a cloud metadata address"},
		{name: "Alibaba Cloud metadata for a listed host", ip: "100.100.100.200", insecure: []string{"evil.test"}, want: "is a cloud metadata address"},
		{name: "NAT64 metadata", ip: "64:ff9b::a9fe:a9fe", insecure: []string{"evil.test"}, want: "64:ff9b::a9fe:a9fe is the NAT64 form of 169.254.169.254, a link-local address"},
		{name: "unspecified", ip: "0.0.0.0", insecure: []string{"evil.test"}, want: "0.0.0.0 is an unspecified address"},
		{name: "unspecified IPv6", ip: "::", insecure: []string{"evil.test"}, want: "is an unspecified address"},
		{name: "multicast", ip: "224.0.0.1", insecure: []string{"evil.test"}, want: "is a multicast or broadcast address"},
		{name: "broadcast", ip: "255.255.255.255", insecure: []string{"evil.test"}, want: "is a multicast or broadcast address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			p, calls := newPolicy(t, &stubResolver{hosts: map[string][]string{"evil.test": {tt.ip}}}, tt.insecure...)

			conn, err := p.DialContext(context.Background(), "tcp", "evil.test:443")

			g.Expect(conn).To(BeNil())
			refused := refusal(g, err)
			g.Expect(refused.Host).To(Equal("evil.test"))
			g.Expect(err.Error()).To(HavePrefix(`egress to "evil.test" refused: `))
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
			g.Expect(calls.Load()).To(BeZero(), "the connection got past the policy")
		})
	}
}
