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

package manifests_test

// The opt-in NetworkPolicies of config/network-policy: the metrics ingress
// policy admits the metrics port of the manager only, and the egress policy
// lets the manager reach cluster DNS, the API server and HTTPS on public
// addresses, never link-local, private or shared addresses or the clouds'
// metadata services. reaches and its helpers read an egress policy the way
// a network plugin applies it to destinations outside the cluster's pods.

import (
	"net/netip"
	"slices"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// networkPolicyCases check the NetworkPolicies; they are part of optInCases.
func networkPolicyCases() []testCase {
	return []testCase{
		{"NetworkPolicy admits metrics traffic to the manager only", func(g Gomega, m *manifest) {
			np := m.get(g, "NetworkPolicy", metricsNetworkPolicyName)
			sel, _, _ := unstructured.NestedStringMap(np.Object, "spec", "podSelector", "matchLabels")
			g.Expect(sel).NotTo(BeEmpty(), "%s: NetworkPolicy %s selects every pod", m.source, metricsNetworkPolicyName)
			labels := m.deployment(g).Spec.Template.Labels
			for k, v := range sel {
				g.Expect(labels).To(HaveKeyWithValue(k, v),
					"%s: NetworkPolicy %s selects %s=%s, which the manager pod does not carry", m.source, metricsNetworkPolicyName, k, v)
			}
			types, _, _ := unstructured.NestedStringSlice(np.Object, "spec", "policyTypes")
			g.Expect(types).To(ContainElement("Ingress"), "%s: NetworkPolicy %s is missing policyTypes: [Ingress]", m.source, metricsNetworkPolicyName)
			ingress, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
			g.Expect(ingress).NotTo(BeEmpty(), "%s: NetworkPolicy %s has no ingress rule", m.source, metricsNetworkPolicyName)
			for _, rule := range ingress {
				ports, _, _ := unstructured.NestedSlice(rule.(map[string]any), "ports")
				g.Expect(ports).NotTo(BeEmpty(), "%s: NetworkPolicy %s has an ingress rule open on every port", m.source, metricsNetworkPolicyName)
				for _, p := range ports {
					port := p.(map[string]any)["port"]
					g.Expect(port).To(Or(BeEquivalentTo(metricsPort), Equal("https")),
						"%s: NetworkPolicy %s opens port %v, not the metrics port %d", m.source, metricsNetworkPolicyName, port, metricsPort)
				}
			}
		}},
		{"egress NetworkPolicy selects the manager and limits its egress", func(g Gomega, m *manifest) {
			np := m.egressPolicy(g)
			g.Expect(np.Spec.PodSelector.MatchLabels).NotTo(BeEmpty(), "%s: NetworkPolicy %s selects every pod", m.source, np.Name)
			labels := m.deployment(g).Spec.Template.Labels
			for k, v := range np.Spec.PodSelector.MatchLabels {
				g.Expect(labels).To(HaveKeyWithValue(k, v),
					"%s: NetworkPolicy %s selects %s=%s, which the manager pod does not carry", m.source, np.Name, k, v)
			}
			g.Expect(np.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeEgress),
				"%s: NetworkPolicy %s must be of policyTypes [Egress] (the metrics policy governs ingress)", m.source, np.Name)
			g.Expect(np.Spec.Egress).NotTo(BeEmpty(), "%s: NetworkPolicy %s has no egress rule: the manager could reach nothing", m.source, np.Name)
			for i, rule := range np.Spec.Egress {
				g.Expect(rule.To).NotTo(BeEmpty(), "%s: egress rule %d of NetworkPolicy %s allows every destination", m.source, i, np.Name)
				g.Expect(rule.Ports).NotTo(BeEmpty(), "%s: egress rule %d of NetworkPolicy %s allows every port", m.source, i, np.Name)
			}
		}},
		{"egress NetworkPolicy allows cluster DNS", func(g Gomega, m *manifest) {
			np := m.egressPolicy(g)
			for _, proto := range []corev1.Protocol{corev1.ProtocolUDP, corev1.ProtocolTCP} {
				g.Expect(slices.ContainsFunc(np.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool {
					return allowsPort(r, proto, 53) && slices.ContainsFunc(r.To, isKubeDNS)
				})).To(BeTrue(), "%s: NetworkPolicy %s does not allow %s 53 to the kube-dns pods in kube-system", m.source, np.Name, proto)
			}
		}},
		{"egress NetworkPolicy allows the API server and HTTPS to public addresses", func(g Gomega, m *manifest) {
			np := m.egressPolicy(g)
			for _, port := range []int32{443, 6443} {
				g.Expect(slices.ContainsFunc(np.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool {
					return allowsPort(r, corev1.ProtocolTCP, port)
				})).To(BeTrue(), "%s: NetworkPolicy %s does not allow TCP %d, an API server port", m.source, np.Name, port)
			}
			for _, addr := range []string{"203.0.113.10", "2001:db8::10"} { // documentation addresses stand for the internet
				g.Expect(reaches(np, netip.MustParseAddr(addr), corev1.ProtocolTCP, 443)).To(BeTrue(),
					"%s: NetworkPolicy %s does not allow HTTPS to the public address %s (the payment providers)", m.source, np.Name, addr)
				g.Expect(reaches(np, netip.MustParseAddr(addr), corev1.ProtocolTCP, 80)).To(BeFalse(),
					"%s: NetworkPolicy %s allows plain http to the public address %s", m.source, np.Name, addr)
			}
		}},
		{"egress NetworkPolicy keeps link-local, private and shared addresses out of its internet rule", func(g Gomega, m *manifest) {
			np := m.egressPolicy(g)
			want := map[string][]string{
				"0.0.0.0/0": {"169.254.0.0/16", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"},
				"::/0":      {"fe80::/10", "fc00::/7"},
			}
			found := false
			for _, r := range np.Spec.Egress {
				for _, peer := range r.To {
					if peer.IPBlock == nil {
						continue
					}
					prefix, err := netip.ParsePrefix(peer.IPBlock.CIDR)
					g.Expect(err).NotTo(HaveOccurred(), "%s: NetworkPolicy %s has an invalid ipBlock %q", m.source, np.Name, peer.IPBlock.CIDR)
					ranges, internet := want[prefix.Masked().String()]
					if !internet {
						continue
					}
					found = found || prefix.Addr().Is4()
					for _, rng := range ranges {
						g.Expect(excepted(peer.IPBlock, netip.MustParsePrefix(rng))).To(BeTrue(),
							"%s: the ipBlock %s of NetworkPolicy %s does not except %s", m.source, peer.IPBlock.CIDR, np.Name, rng)
					}
				}
			}
			g.Expect(found).To(BeTrue(), "%s: NetworkPolicy %s has no internet rule (ipBlock 0.0.0.0/0 with exceptions)", m.source, np.Name)
			// Whatever the other rules allow, the metadata services stay
			// out of reach on every port.
			for _, addr := range []string{"169.254.169.254", "100.100.100.200", "fd00:ec2::254", "fe80::a9fe:a9fe"} {
				for _, port := range []int32{53, 80, 443, 6443} {
					g.Expect(reaches(np, netip.MustParseAddr(addr), corev1.ProtocolTCP, port)).To(BeFalse(),
						"%s: NetworkPolicy %s allows TCP %d to the metadata address %s", m.source, np.Name, port, addr)
				}
			}
		}},
	}
}

func (m *manifest) egressPolicy(g Gomega) *networkingv1.NetworkPolicy {
	var np networkingv1.NetworkPolicy
	m.typed(g, "NetworkPolicy", egressNetworkPolicyName, &np)
	return &np
}

// allowsPort reports whether the egress rule names the port, by number.
func allowsPort(r networkingv1.NetworkPolicyEgressRule, proto corev1.Protocol, port int32) bool {
	if len(r.Ports) == 0 {
		return true
	}
	return slices.ContainsFunc(r.Ports, func(p networkingv1.NetworkPolicyPort) bool {
		if p.Port == nil {
			return protocolOf(p) == proto
		}
		if p.Port.Type != intstr.Int || protocolOf(p) != proto {
			return false // a named port is a pod's, never an ipBlock's
		}
		end := p.Port.IntVal
		if p.EndPort != nil {
			end = *p.EndPort
		}
		return p.Port.IntVal <= port && port <= end
	})
}

func protocolOf(p networkingv1.NetworkPolicyPort) corev1.Protocol {
	if p.Protocol == nil {
		return corev1.ProtocolTCP
	}
	return *p.Protocol
}

// reaches reports whether the policy lets the selected pods connect to addr
// outside the cluster's pods: through an ipBlock, or a rule that allows
// every destination. Peers that select pods or namespaces match pods only.
func reaches(np *networkingv1.NetworkPolicy, addr netip.Addr, proto corev1.Protocol, port int32) bool {
	for _, r := range np.Spec.Egress {
		if !allowsPort(r, proto, port) {
			continue
		}
		if len(r.To) == 0 {
			return true
		}
		for _, peer := range r.To {
			if peer.IPBlock == nil {
				continue
			}
			cidr, err := netip.ParsePrefix(peer.IPBlock.CIDR)
			if err != nil || !cidr.Contains(addr) {
				continue
			}
			if !slices.ContainsFunc(peer.IPBlock.Except, func(e string) bool {
				p, err := netip.ParsePrefix(e)
				return err == nil && p.Contains(addr)
			}) {
				return true
			}
		}
	}
	return false
}

// excepted reports whether the ipBlock's exceptions cover all of rng.
func excepted(b *networkingv1.IPBlock, rng netip.Prefix) bool {
	return slices.ContainsFunc(b.Except, func(e string) bool {
		p, err := netip.ParsePrefix(e)
		return err == nil && p.Bits() <= rng.Bits() && p.Contains(rng.Addr())
	})
}

// isKubeDNS reports whether the peer selects the kube-dns pods of kube-system.
func isKubeDNS(peer networkingv1.NetworkPolicyPeer) bool {
	return peer.NamespaceSelector != nil && peer.PodSelector != nil &&
		peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == "kube-system" &&
		peer.PodSelector.MatchLabels["k8s-app"] == "kube-dns"
}
