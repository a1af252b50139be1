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

// Package manifests_test renders the kustomize configuration of the operator
// and checks what a cluster would receive: the manager Deployment and its
// restricted security posture, the metrics endpoint, the optional
// NetworkPolicies, and least-privilege RBAC, as docs/security.md tables it.
//
// It needs the kustomize binary named by the KUSTOMIZE environment variable
// (`make kustomize` installs it into bin/). When INSTALLER names a rendered
// installer (dist/install.yaml from `make build-installer`), the same
// assertions run on that file too.
package manifests_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

const (
	namespace  = "paymentjob-operator-system"
	namePrefix = "paymentjob-operator-"
	group      = "payments.idempotency.dev"

	deploymentName     = namePrefix + "controller-manager"
	serviceAccountName = namePrefix + "controller-manager"
	containerName      = "manager"
	metricsServiceName = namePrefix + "controller-manager-metrics-service"
	metricsPort        = 8443
	probePort          = 8081

	managerRoleName          = namePrefix + "manager-role"
	managerRoleBindingName   = namePrefix + "manager-rolebinding"
	leaderRoleName           = namePrefix + "leader-election-role"
	leaderRoleBindingName    = namePrefix + "leader-election-rolebinding"
	metricsAuthRoleName      = namePrefix + "metrics-auth-role"
	metricsAuthRoleBinding   = namePrefix + "metrics-auth-rolebinding"
	metricsReaderRoleName    = namePrefix + "metrics-reader"
	serviceMonitorName       = namePrefix + "controller-manager-metrics-monitor"
	metricsNetworkPolicyName = namePrefix + "allow-metrics-traffic"
	egressNetworkPolicyName  = namePrefix + "allow-provider-egress"
	podSecurityEnforceLabel  = "pod-security.kubernetes.io/enforce"
	aggregateToEditLabel     = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToAdminLabel    = "rbac.authorization.k8s.io/aggregate-to-admin"

	// securityDoc holds the RBAC table, relative to the repository root.
	securityDoc = "docs/security.md"

	// kustomizeEnv names the kustomize binary; installerEnv a rendered
	// installer to check too.
	kustomizeEnv = "KUSTOMIZE"
	installerEnv = "INSTALLER"
)

// userRoles are the user-facing ClusterRoles, by what they may do.
var userRoles = map[string][]string{
	"admin":  {namePrefix + "paymentjob-admin-role", namePrefix + "paymentprovider-admin-role"},
	"editor": {namePrefix + "paymentjob-editor-role", namePrefix + "paymentprovider-editor-role"},
	"viewer": {namePrefix + "paymentjob-viewer-role", namePrefix + "paymentprovider-viewer-role"},
}

// clusterScoped lists the kinds of the output that have no namespace; every
// other kind must land in the operator's namespace.
var clusterScoped = map[string]bool{
	"Namespace":                true,
	"CustomResourceDefinition": true,
	"ClusterRole":              true,
	"ClusterRoleBinding":       true,
	// The finished-label policy (config/policy).
	"ValidatingAdmissionPolicy":        true,
	"ValidatingAdmissionPolicyBinding": true,
	"MutatingAdmissionPolicy":          true,
	"MutatingAdmissionPolicyBinding":   true,
}

var (
	writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}
	readVerbs  = []string{"get", "list", "watch"}
)

// manifest is one rendered set of objects.
type manifest struct {
	source string
	objs   []*unstructured.Unstructured
}

type testCase struct {
	name   string
	assert func(g Gomega, m *manifest)
}

// TestConfigDefault renders config/default as `make deploy` would.
func TestConfigDefault(t *testing.T) {
	m := render(t, filepath.Join(repoRoot(t), "config", "default"))
	run(t, m, baseCases(), defaultOnlyCases())
}

// TestConfigDefaultWithOptIns renders config/default plus the opt-in
// ServiceMonitor and NetworkPolicies (metrics ingress, provider egress), the
// way uncommenting them would, to prove that they render, land in the
// operator's namespace, select the manager and allow what they should.
func TestConfigDefaultWithOptIns(t *testing.T) {
	root := repoRoot(t)
	dir := optInOverlay(t, root)
	m := render(t, dir)
	run(t, m, baseCases(), optInCases())
}

// TestInstaller checks the rendered installer (dist/install.yaml) that
// INSTALLER names; make test and make test-installer render it first.
func TestInstaller(t *testing.T) {
	path := os.Getenv(installerEnv)
	if path == "" {
		t.Fatalf("%s is not set: run the tests with `make test` or `make test-installer`, which render dist/install.yaml and set it",
			installerEnv)
	}
	path = resolve(t, path)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s=%q does not name a readable installer: %v", installerEnv, path, err)
	}
	m := parse(t, path, data)
	run(t, m, baseCases(), defaultOnlyCases())
}

// TestOptInsStayCommented keeps the ServiceMonitor and the NetworkPolicy
// opt-in: config/default names them only in comments.
func TestOptInsStayCommented(t *testing.T) {
	path := filepath.Join(repoRoot(t), "config", "default", "kustomization.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("cannot read %s: %v", path, err)
	}
	var active, commented []string
	for line := range strings.SplitSeq(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") {
			commented = append(commented, strings.TrimSpace(strings.TrimPrefix(trimmed, "#")))
		} else {
			active = append(active, trimmed)
		}
	}
	for _, tc := range []struct{ name, line string }{
		{"prometheus ServiceMonitor", "- ../prometheus"},
		{"metrics NetworkPolicy", "- ../network-policy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(active).NotTo(ContainElement(tc.line),
				"%s: %q must stay commented out; the %s is opt-in", path, tc.line, tc.name)
			g.Expect(commented).To(ContainElement(tc.line),
				"%s: the commented %q that documents how to enable the %s is missing", path, tc.line, tc.name)
		})
	}
}

func run(t *testing.T, m *manifest, tables ...[]testCase) {
	t.Helper()
	for _, table := range tables {
		for _, tc := range table {
			t.Run(tc.name, func(t *testing.T) {
				tc.assert(NewWithT(t), m)
			})
		}
	}
}

// baseCases hold for config/default with or without the opt-ins, and for
// the installer rendered from it.
func baseCases() []testCase {
	return []testCase{
		{"manager Deployment exists", func(g Gomega, m *manifest) {
			d := m.deployment(g)
			g.Expect(d.Namespace).To(Equal(namespace), "%s: Deployment %s is not in %s", m.source, d.Name, namespace)
			g.Expect(d.Spec.Template.Labels).To(HaveKeyWithValue("control-plane", "controller-manager"),
				"%s: the manager pod template is missing the control-plane: controller-manager label", m.source)
		}},
		{"leader election is on", func(g Gomega, m *manifest) {
			c := m.managerContainer(g)
			v, ok := flagValue(c.Args, "leader-elect", true)
			g.Expect(ok).To(BeTrue(), "%s: manager args %v are missing --leader-elect", m.source, c.Args)
			on, err := strconv.ParseBool(v)
			g.Expect(err).NotTo(HaveOccurred(), "%s: --leader-elect=%s is not a boolean", m.source, v)
			g.Expect(on).To(BeTrue(), "%s: --leader-elect is turned off (%q)", m.source, v)
		}},
		{"liveness and readiness probes", func(g Gomega, m *manifest) {
			c := m.managerContainer(g)
			v, ok := flagValue(c.Args, "health-probe-bind-address", false)
			g.Expect(ok).To(BeTrue(), "%s: manager args %v are missing --health-probe-bind-address", m.source, c.Args)
			g.Expect(v).To(Equal(fmt.Sprintf(":%d", probePort)),
				"%s: --health-probe-bind-address must be :%d, where the probes point", m.source, probePort)
			for _, p := range []struct {
				kind, path string
				probe      *corev1.Probe
			}{{"livenessProbe", "/healthz", c.LivenessProbe}, {"readinessProbe", "/readyz", c.ReadinessProbe}} {
				g.Expect(p.probe).NotTo(BeNil(), "%s: manager container is missing its %s", m.source, p.kind)
				g.Expect(p.probe.HTTPGet).NotTo(BeNil(), "%s: %s is missing its httpGet", m.source, p.kind)
				g.Expect(p.probe.HTTPGet.Path).To(Equal(p.path), "%s: %s must GET %s", m.source, p.kind, p.path)
				g.Expect(p.probe.HTTPGet.Port).To(Equal(intstr.FromInt32(probePort)),
					"%s: %s must target port %d", m.source, p.kind, probePort)
			}
		}},
		{"resource requests and limits", func(g Gomega, m *manifest) {
			c := m.managerContainer(g)
			for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				req, hasReq := c.Resources.Requests[res]
				lim, hasLim := c.Resources.Limits[res]
				g.Expect(hasReq).To(BeTrue(), "%s: manager container is missing a %s request", m.source, res)
				g.Expect(hasLim).To(BeTrue(), "%s: manager container is missing a %s limit", m.source, res)
				g.Expect(req.Cmp(lim)).To(BeNumerically("<=", 0),
					"%s: the %s request %s exceeds the limit %s", m.source, res, req.String(), lim.String())
			}
		}},
		{"pod security context is restricted", func(g Gomega, m *manifest) {
			sc := m.deployment(g).Spec.Template.Spec.SecurityContext
			g.Expect(sc).NotTo(BeNil(), "%s: the manager pod is missing its securityContext", m.source)
			g.Expect(sc.RunAsNonRoot).To(HaveValue(BeTrue()), "%s: pod securityContext is missing runAsNonRoot: true", m.source)
			g.Expect(sc.SeccompProfile).NotTo(BeNil(), "%s: pod securityContext is missing seccompProfile", m.source)
			g.Expect(sc.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault),
				"%s: pod seccompProfile must be RuntimeDefault", m.source)
		}},
		{"container security context is restricted", func(g Gomega, m *manifest) {
			spec := m.deployment(g).Spec.Template.Spec
			for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
				sc := c.SecurityContext
				g.Expect(sc).NotTo(BeNil(), "%s: container %q is missing its securityContext", m.source, c.Name)
				g.Expect(sc.AllowPrivilegeEscalation).To(HaveValue(BeFalse()),
					"%s: container %q is missing allowPrivilegeEscalation: false", m.source, c.Name)
				g.Expect(sc.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()),
					"%s: container %q is missing readOnlyRootFilesystem: true", m.source, c.Name)
				g.Expect(sc.RunAsNonRoot).To(HaveValue(BeTrue()),
					"%s: container %q is missing runAsNonRoot: true", m.source, c.Name)
				g.Expect(sc.Privileged == nil || !*sc.Privileged).To(BeTrue(), "%s: container %q is privileged", m.source, c.Name)
				g.Expect(sc.Capabilities).NotTo(BeNil(), "%s: container %q is missing capabilities.drop: [ALL]", m.source, c.Name)
				g.Expect(sc.Capabilities.Drop).To(ContainElement(corev1.Capability("ALL")),
					"%s: container %q is missing capabilities.drop: [ALL]", m.source, c.Name)
				g.Expect(sc.Capabilities.Add).To(BeEmpty(), "%s: container %q adds capabilities %v", m.source, c.Name, sc.Capabilities.Add)
				if sc.SeccompProfile != nil {
					g.Expect(sc.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault),
						"%s: container %q overrides the seccompProfile with %s", m.source, c.Name, sc.SeccompProfile.Type)
				}
			}
		}},
		{"no host namespaces or host paths", func(g Gomega, m *manifest) {
			spec := m.deployment(g).Spec.Template.Spec
			g.Expect(spec.HostNetwork || spec.HostPID || spec.HostIPC).To(BeFalse(),
				"%s: the manager pod shares a host namespace (restricted profile forbids it)", m.source)
			for _, v := range spec.Volumes {
				g.Expect(v.HostPath).To(BeNil(), "%s: volume %q is a hostPath (restricted profile forbids it)", m.source, v.Name)
			}
		}},
		{"POD_NAME from the downward API", func(g Gomega, m *manifest) {
			c := m.managerContainer(g)
			i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "POD_NAME" })
			g.Expect(i).NotTo(Equal(-1), "%s: manager container is missing the POD_NAME env (claim holder identity)", m.source)
			e := c.Env[i]
			g.Expect(e.ValueFrom).NotTo(BeNil(), "%s: POD_NAME must come from the downward API, not a value", m.source)
			g.Expect(e.ValueFrom.FieldRef).NotTo(BeNil(), "%s: POD_NAME is missing its fieldRef", m.source)
			g.Expect(e.ValueFrom.FieldRef.FieldPath).To(Equal("metadata.name"),
				"%s: POD_NAME must reference metadata.name", m.source)
		}},
		{"secure metrics on :8443", func(g Gomega, m *manifest) {
			c := m.managerContainer(g)
			v, ok := flagValue(c.Args, "metrics-bind-address", false)
			g.Expect(ok).To(BeTrue(), "%s: manager args %v are missing --metrics-bind-address", m.source, c.Args)
			g.Expect(v).To(Equal(fmt.Sprintf(":%d", metricsPort)), "%s: --metrics-bind-address must be :%d", m.source, metricsPort)
			if v, ok := flagValue(c.Args, "metrics-secure", true); ok {
				on, err := strconv.ParseBool(v)
				g.Expect(err).NotTo(HaveOccurred(), "%s: --metrics-secure=%s is not a boolean", m.source, v)
				g.Expect(on).To(BeTrue(), "%s: --metrics-secure is turned off: metrics would be served without TLS and authn/authz", m.source)
			}
		}},
		{"metrics Service", func(g Gomega, m *manifest) {
			var svc corev1.Service
			m.typed(g, "Service", metricsServiceName, &svc)
			g.Expect(svc.Namespace).To(Equal(namespace), "%s: Service %s is not in %s", m.source, svc.Name, namespace)
			i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "https" })
			g.Expect(i).NotTo(Equal(-1), "%s: Service %s is missing its https port", m.source, svc.Name)
			p := svc.Spec.Ports[i]
			g.Expect(p.Port).To(BeEquivalentTo(metricsPort), "%s: the https port of %s must be %d", m.source, svc.Name, metricsPort)
			g.Expect(p.TargetPort).To(Or(Equal(intstr.FromInt32(metricsPort)), Equal(intstr.FromString("https"))),
				"%s: the https port of %s must target the manager's %d", m.source, svc.Name, metricsPort)
			g.Expect(svc.Spec.Selector).NotTo(BeEmpty(), "%s: Service %s has no selector", m.source, svc.Name)
			labels := m.deployment(g).Spec.Template.Labels
			for k, v := range svc.Spec.Selector {
				g.Expect(labels).To(HaveKeyWithValue(k, v),
					"%s: Service %s selects %s=%s, which the manager pod does not carry", m.source, svc.Name, k, v)
			}
		}},
		{"the admission policies ship, bound", func(g Gomega, m *manifest) {
			policies, bindings := m.byKind("ValidatingAdmissionPolicy"), m.byKind("ValidatingAdmissionPolicyBinding")
			g.Expect(policies).To(HaveLen(1), "%s: want the finished-label ValidatingAdmissionPolicy", m.source)
			g.Expect(bindings).To(HaveLen(1), "%s: want the binding of the finished-label policy", m.source)
			var binding admissionregistrationv1.ValidatingAdmissionPolicyBinding
			m.convert(g, bindings[0], &binding)
			g.Expect(binding.Spec.PolicyName).To(Equal(policies[0].GetName()), "%s: the binding names another policy", m.source)
			g.Expect(binding.Spec.ValidationActions).To(ConsistOf(admissionregistrationv1.Deny))

			mutating, mutatingBindings := m.byKind("MutatingAdmissionPolicy"), m.byKind("MutatingAdmissionPolicyBinding")
			var names []string
			for _, p := range mutating {
				names = append(names, strings.TrimPrefix(p.GetName(), namePrefix))
			}
			g.Expect(names).To(ConsistOf("release-on-spec-change", "outcome-guard-at-create", "resolve-attribution"),
				"%s: want the MutatingAdmissionPolicies of config/policy", m.source)
			g.Expect(mutatingBindings).To(HaveLen(len(mutating)), "%s: want one binding per mutating policy", m.source)
			bound := map[string]bool{}
			for _, u := range mutatingBindings {
				var mb admissionregistrationv1.MutatingAdmissionPolicyBinding
				m.convert(g, u, &mb)
				bound[mb.Spec.PolicyName] = true
			}
			for _, p := range mutating {
				g.Expect(bound).To(HaveKey(p.GetName()), "%s: no binding names MutatingAdmissionPolicy %s", m.source, p.GetName())
			}
		}},
		{"namespace enforces the restricted Pod Security profile", func(g Gomega, m *manifest) {
			ns := m.get(g, "Namespace", namespace)
			g.Expect(ns.GetLabels()).To(HaveKeyWithValue(podSecurityEnforceLabel, "restricted"),
				"%s: Namespace %s is missing the label %s: restricted", m.source, namespace, podSecurityEnforceLabel)
		}},
		{"every namespaced object lands in the operator namespace", func(g Gomega, m *manifest) {
			for _, o := range m.objs {
				if clusterScoped[o.GetKind()] {
					g.Expect(o.GetNamespace()).To(BeEmpty(), "%s: cluster-scoped %s %s has a namespace", m.source, o.GetKind(), o.GetName())
					continue
				}
				g.Expect(o.GetNamespace()).To(Equal(namespace),
					"%s: %s %s is in namespace %q, not %s", m.source, o.GetKind(), o.GetName(), o.GetNamespace(), namespace)
			}
			for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
				for _, u := range m.byKind(kind) {
					var b rbacv1.RoleBinding // same subjects and roleRef as a ClusterRoleBinding
					m.convert(g, u, &b)
					for _, s := range b.Subjects {
						if s.Kind == rbacv1.ServiceAccountKind {
							g.Expect(s.Namespace).To(Equal(namespace),
								"%s: %s %s binds ServiceAccount %s in %q, not %s", m.source, kind, b.Name, s.Name, s.Namespace, namespace)
						}
					}
				}
			}
		}},
		{"manager ServiceAccount", func(g Gomega, m *manifest) {
			m.get(g, "ServiceAccount", serviceAccountName)
			g.Expect(m.deployment(g).Spec.Template.Spec.ServiceAccountName).To(Equal(serviceAccountName),
				"%s: the manager pod must run as ServiceAccount %s", m.source, serviceAccountName)
		}},
		{"CRDs for the namespaced kinds PaymentJob and PaymentProvider", func(g Gomega, m *manifest) {
			for _, want := range []struct{ plural, kind string }{{"paymentjobs", "PaymentJob"}, {"paymentproviders", "PaymentProvider"}} {
				name := want.plural + "." + group
				crd := m.get(g, "CustomResourceDefinition", name)
				kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
				scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
				g.Expect(kind).To(Equal(want.kind), "%s: CRD %s must define kind %s", m.source, name, want.kind)
				g.Expect(scope).To(Equal("Namespaced"), "%s: CRD %s must be Namespaced", m.source, name)
				versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
				g.Expect(versions).NotTo(BeEmpty(), "%s: CRD %s has no versions", m.source, name)
				for _, v := range versions {
					_, hasStatus, _ := unstructured.NestedMap(v.(map[string]any), "subresources", "status")
					g.Expect(hasStatus).To(BeTrue(),
						"%s: CRD %s version %v is missing the status subresource (status RBAC would mean nothing)",
						m.source, name, v.(map[string]any)["name"])
				}
			}
		}},
		{"manager ClusterRole has the verbs the operator needs", func(g Gomega, m *manifest) {
			rules := m.clusterRoleRules(g, managerRoleName)
			for _, need := range []struct {
				group, resource string
				verbs           []string
			}{
				{group, "paymentjobs", []string{"get", "list", "watch", "update", "patch"}},
				{group, "paymentjobs/status", []string{"update", "patch"}},
				{group, "paymentjobs/finalizers", []string{"update"}},
				{group, "paymentproviders", []string{"get", "list", "watch", "update", "patch"}},
				{group, "paymentproviders/status", []string{"update", "patch"}},
				{group, "paymentproviders/finalizers", []string{"update"}},
				{group, "paymentledgers", []string{"get", "list", "watch", "create", "update", "delete"}},
				{"", "secrets", []string{"get", "list", "watch"}},
				{"", "events", []string{"create", "patch"}},
				{"events.k8s.io", "events", []string{"create", "patch"}},
				{"admissionregistration.k8s.io", "validatingadmissionpolicies", []string{"get", "list"}},
				{"admissionregistration.k8s.io", "validatingadmissionpolicybindings", []string{"get", "list"}},
				{"admissionregistration.k8s.io", "mutatingadmissionpolicies", []string{"get", "list"}},
				{"admissionregistration.k8s.io", "mutatingadmissionpolicybindings", []string{"get", "list"}},
			} {
				for _, verb := range need.verbs {
					g.Expect(grants(rules, need.group, need.resource, verb)).To(BeTrue(),
						"%s: ClusterRole %s is missing %s on %s (group %q); run `make manifests`",
						m.source, managerRoleName, verb, need.resource, need.group)
				}
			}
		}},
		// The manager reads Secrets through a cache that lists and watches
		// only those labelled payments.idempotency.dev/credentials: "true".
		// RBAC cannot restrict a list to a label, so get, list and watch on
		// every Secret is the least it can be given; it must never write one.
		{"manager ClusterRole reads Secrets with get, list and watch only", func(g Gomega, m *manifest) {
			rules := m.clusterRoleRules(g, managerRoleName)
			g.Expect(grantedVerbs(rules, "", "secrets")).To(ConsistOf(readVerbs),
				"%s: ClusterRole %s must grant exactly get, list and watch on secrets (the label-selected credentials cache)",
				m.source, managerRoleName)
			for _, r := range rules {
				if slices.Contains(r.Resources, "secrets") {
					g.Expect(r.ResourceNames).To(BeEmpty(), "%s: ClusterRole %s limits secrets to names %v; the cache lists them all",
						m.source, managerRoleName, r.ResourceNames)
				}
			}
		}},
		{"manager ClusterRole is bound to the manager ServiceAccount", func(g Gomega, m *manifest) {
			m.expectBinding(g, "ClusterRoleBinding", managerRoleBindingName, "ClusterRole", managerRoleName)
		}},
		{"leader election Role", func(g Gomega, m *manifest) {
			var r rbacv1.Role
			m.typed(g, "Role", leaderRoleName, &r)
			for _, verb := range []string{"get", "create", "update"} {
				g.Expect(grants(r.Rules, "coordination.k8s.io", "leases", verb)).To(BeTrue(),
					"%s: Role %s is missing %s on coordination.k8s.io leases", m.source, leaderRoleName, verb)
			}
			for _, verb := range []string{"create", "patch"} {
				g.Expect(grants(r.Rules, "", "events", verb)).To(BeTrue(),
					"%s: Role %s is missing %s on events", m.source, leaderRoleName, verb)
			}
			g.Expect(m.find("ClusterRole", leaderRoleName)).To(BeNil(),
				"%s: leader election must be a namespaced Role, not a ClusterRole", m.source)
			m.expectBinding(g, "RoleBinding", leaderRoleBindingName, "Role", leaderRoleName)
		}},
		{"metrics auth ClusterRole and binding", func(g Gomega, m *manifest) {
			rules := m.clusterRoleRules(g, metricsAuthRoleName)
			g.Expect(grants(rules, "authentication.k8s.io", "tokenreviews", "create")).To(BeTrue(),
				"%s: ClusterRole %s is missing create on authentication.k8s.io tokenreviews", m.source, metricsAuthRoleName)
			g.Expect(grants(rules, "authorization.k8s.io", "subjectaccessreviews", "create")).To(BeTrue(),
				"%s: ClusterRole %s is missing create on authorization.k8s.io subjectaccessreviews", m.source, metricsAuthRoleName)
			for _, r := range rules {
				g.Expect(r.Verbs).To(ConsistOf("create"), "%s: ClusterRole %s grants more than create: %v", m.source, metricsAuthRoleName, r)
				g.Expect(r.Resources).To(SatisfyAll(Not(BeEmpty()), HaveEach(BeElementOf("tokenreviews", "subjectaccessreviews"))),
					"%s: ClusterRole %s grants more than tokenreviews and subjectaccessreviews: %v", m.source, metricsAuthRoleName, r)
			}
			m.expectBinding(g, "ClusterRoleBinding", metricsAuthRoleBinding, "ClusterRole", metricsAuthRoleName)
		}},
		{"metrics-reader ClusterRole", func(g Gomega, m *manifest) {
			rules := m.clusterRoleRules(g, metricsReaderRoleName)
			g.Expect(rules).To(HaveLen(1), "%s: ClusterRole %s must have exactly one rule", m.source, metricsReaderRoleName)
			g.Expect(rules[0].NonResourceURLs).To(ConsistOf("/metrics"),
				"%s: ClusterRole %s must grant the /metrics URL only", m.source, metricsReaderRoleName)
			g.Expect(rules[0].Verbs).To(ConsistOf("get"), "%s: ClusterRole %s must grant get only", m.source, metricsReaderRoleName)
			g.Expect(rules[0].Resources).To(BeEmpty(), "%s: ClusterRole %s must not grant resources", m.source, metricsReaderRoleName)
		}},
		{"user-facing admin, editor and viewer ClusterRoles exist", func(g Gomega, m *manifest) {
			for kind, names := range userRoles {
				for _, name := range names {
					g.Expect(m.find("ClusterRole", name)).NotTo(BeNil(), "%s: the %s ClusterRole %s is missing", m.source, kind, name)
				}
			}
		}},
		{"user-facing roles do not include paymentjobs/status or paymentproviders/status", func(g Gomega, m *manifest) {
			for _, names := range userRoles {
				for _, name := range names {
					rules := m.clusterRoleRules(g, name)
					for _, res := range []string{"paymentjobs/status", "paymentproviders/status"} {
						for _, verb := range append([]string{"get", "list", "watch"}, writeVerbs...) {
							g.Expect(grants(rules, group, res, verb)).To(BeFalse(),
								"%s: ClusterRole %s grants %s on %s; status is the operator's record (users read it through the resource itself)",
								m.source, name, verb, res)
						}
					}
				}
			}
		}},
		{"editor roles manage their resource but not its status", func(g Gomega, m *manifest) {
			for i, res := range []string{"paymentjobs", "paymentproviders"} {
				name := userRoles["editor"][i]
				rules := m.clusterRoleRules(g, name)
				for _, verb := range append([]string{"create", "update", "patch", "delete"}, readVerbs...) {
					g.Expect(grants(rules, group, res, verb)).To(BeTrue(), "%s: ClusterRole %s is missing %s on %s", m.source, name, verb, res)
				}
				for _, verb := range writeVerbs {
					g.Expect(grants(rules, group, res+"/status", verb)).To(BeFalse(),
						"%s: ClusterRole %s grants %s on %s/status", m.source, name, verb, res)
				}
			}
		}},
		{"viewer roles are read-only", func(g Gomega, m *manifest) {
			for i, res := range []string{"paymentjobs", "paymentproviders"} {
				name := userRoles["viewer"][i]
				rules := m.clusterRoleRules(g, name)
				for _, verb := range readVerbs {
					g.Expect(grants(rules, group, res, verb)).To(BeTrue(), "%s: ClusterRole %s is missing %s on %s", m.source, name, verb, res)
				}
				for _, r := range rules {
					g.Expect(r.Verbs).To(HaveEach(BeElementOf(readVerbs)), "%s: ClusterRole %s grants more than reads: %v", m.source, name, r)
				}
			}
		}},
		{"roles that create payments are not aggregated into the built-in edit or admin roles", func(g Gomega, m *manifest) {
			for _, u := range m.byKind("ClusterRole") {
				labels := u.GetLabels()
				if labels[aggregateToEditLabel] != "true" && labels[aggregateToAdminLabel] != "true" {
					continue
				}
				var cr rbacv1.ClusterRole
				m.convert(g, u, &cr)
				for _, res := range []string{"paymentjobs", "paymentproviders"} {
					for _, verb := range writeVerbs {
						g.Expect(grants(cr.Rules, group, res, verb)).To(BeFalse(),
							"%s: ClusterRole %s grants %s on %s and is aggregated into a built-in role; bind it explicitly instead",
							m.source, cr.Name, verb, res)
					}
				}
			}
		}},
		{"no role but the manager's grants anything on secrets", func(g Gomega, m *manifest) {
			for name, rules := range m.allRoleRules(g) {
				if name == "ClusterRole "+managerRoleName {
					continue
				}
				g.Expect(grantedVerbs(rules, "", "secrets")).To(BeEmpty(),
					"%s: %s grants verbs on secrets; only the manager reads them, and only the labelled ones", m.source, name)
			}
		}},
		{"no role grants * on *", func(g Gomega, m *manifest) {
			for name, rules := range m.allRoleRules(g) {
				for _, r := range rules {
					wildVerb := slices.Contains(r.Verbs, rbacv1.VerbAll)
					g.Expect(wildVerb && (slices.Contains(r.Resources, rbacv1.ResourceAll) ||
						slices.Contains(r.NonResourceURLs, rbacv1.NonResourceAll))).To(BeFalse(),
						"%s: %s grants * on *: %v", m.source, name, r)
				}
			}
		}},
		{"the RBAC table of docs/security.md matches the roles", func(g Gomega, m *manifest) {
			root, err := findRepoRoot()
			g.Expect(err).NotTo(HaveOccurred())
			path := filepath.Join(root, securityDoc)
			data, err := os.ReadFile(path)
			g.Expect(err).NotTo(HaveOccurred(), "cannot read %s, which documents the RBAC of every shipped role", path)
			table, err := parseRBACTable(string(data))
			g.Expect(err).NotTo(HaveOccurred(), "%s: cannot read its RBAC table", path)
			g.Expect(compareRBAC(m.roleGrants(g), table)).To(BeEmpty(),
				"%s: the RBAC table of %s does not match the rendered roles; fix the table or config/rbac", m.source, securityDoc)
		}},
		{"every binding refers to a role in the output", func(g Gomega, m *manifest) {
			for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
				for _, u := range m.byKind(kind) {
					var b rbacv1.RoleBinding
					m.convert(g, u, &b)
					g.Expect(m.find(b.RoleRef.Kind, b.RoleRef.Name)).NotTo(BeNil(),
						"%s: %s %s refers to %s %s, which is not in the output", m.source, kind, b.Name, b.RoleRef.Kind, b.RoleRef.Name)
				}
			}
		}},
	}
}

// defaultOnlyCases hold for config/default as committed: the opt-ins are off.
func defaultOnlyCases() []testCase {
	return []testCase{
		{"ServiceMonitor and NetworkPolicy stay opt-in", func(g Gomega, m *manifest) {
			g.Expect(m.byKind("ServiceMonitor")).To(BeEmpty(),
				"%s: a ServiceMonitor is rendered by default; it needs the Prometheus Operator and must stay opt-in", m.source)
			g.Expect(m.byKind("NetworkPolicy")).To(BeEmpty(), "%s: a NetworkPolicy is rendered by default; it must stay opt-in", m.source)
		}},
	}
}

// optInCases hold when config/prometheus and config/network-policy are added.
func optInCases() []testCase {
	return []testCase{
		{"ServiceMonitor scrapes the metrics Service over HTTPS", func(g Gomega, m *manifest) {
			sm := m.get(g, "ServiceMonitor", serviceMonitorName)
			endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
			g.Expect(endpoints).To(HaveLen(1), "%s: ServiceMonitor %s must have one endpoint", m.source, serviceMonitorName)
			ep := endpoints[0].(map[string]any)
			g.Expect(ep).To(HaveKeyWithValue("port", "https"), "%s: ServiceMonitor %s must scrape the Service's https port", m.source, serviceMonitorName)
			g.Expect(ep).To(HaveKeyWithValue("scheme", "https"), "%s: ServiceMonitor %s must scrape over https", m.source, serviceMonitorName)
			g.Expect(ep).To(HaveKeyWithValue("path", "/metrics"), "%s: ServiceMonitor %s must scrape /metrics", m.source, serviceMonitorName)
			sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
			g.Expect(sel).NotTo(BeEmpty(), "%s: ServiceMonitor %s has no selector", m.source, serviceMonitorName)
			svc := m.get(g, "Service", metricsServiceName)
			for k, v := range sel {
				g.Expect(svc.GetLabels()).To(HaveKeyWithValue(k, v),
					"%s: ServiceMonitor %s selects %s=%s, which Service %s does not carry", m.source, serviceMonitorName, k, v, metricsServiceName)
			}
		}},
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

// repoRoot is the module root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := findRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func findRepoRoot() (string, error) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return "", fmt.Errorf("cannot resolve the repository root: %w", err)
	}
	if _, err := os.Stat(filepath.Join(root, "config", "default", "kustomization.yaml")); err != nil {
		return "", fmt.Errorf("%s does not look like the repository root (no config/default/kustomization.yaml): %w", root, err)
	}
	return root, nil
}

// kustomize is the binary named by KUSTOMIZE. A missing binary fails the
// test: these checks guard the security of every install and must not be
// silently skipped.
func kustomize(t *testing.T) string {
	t.Helper()
	bin := os.Getenv(kustomizeEnv)
	if bin == "" {
		t.Fatalf("%s is not set: run `make kustomize` and set %s to the binary (for example %s=$PWD/bin/kustomize)",
			kustomizeEnv, kustomizeEnv, kustomizeEnv)
	}
	if !strings.ContainsRune(bin, filepath.Separator) && !strings.Contains(bin, "/") {
		path, err := exec.LookPath(bin)
		if err != nil {
			t.Fatalf("%s=%q: the kustomize binary is not on PATH (run `make kustomize`): %v", kustomizeEnv, bin, err)
		}
		bin = path
	}
	bin = resolve(t, bin)
	info, err := os.Stat(bin)
	if err != nil {
		t.Fatalf("%s=%q: the kustomize binary is missing (run `make kustomize`): %v", kustomizeEnv, bin, err)
	}
	if info.IsDir() || info.Mode().Perm()&0o111 == 0 {
		t.Fatalf("%s=%q is not an executable file", kustomizeEnv, bin)
	}
	return bin
}

// resolve makes a path from the environment absolute. `go test` runs in
// this package's directory while make runs in the repository root, so a
// relative path that does not exist here is taken from the repository root.
func resolve(t *testing.T, path string) string {
	t.Helper()
	if filepath.IsAbs(path) {
		return path
	}
	if _, err := os.Stat(path); err == nil {
		abs, err := filepath.Abs(path)
		if err != nil {
			t.Fatalf("cannot resolve %s: %v", path, err)
		}
		return abs
	}
	return filepath.Join(repoRoot(t), path)
}

// render runs `kustomize build dir` and parses its output.
func render(t *testing.T, dir string) *manifest {
	t.Helper()
	bin := kustomize(t)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "build", dir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s build %s failed: %v\n%s", bin, dir, err, stderr.String())
	}
	return parse(t, "kustomize build "+dir, stdout.Bytes())
}

// optInOverlay writes a kustomization into a temporary directory that adds
// config/prometheus and config/network-policy to config/default, with the
// namespace and name prefix of config/default, so that the opt-in objects
// come out as uncommenting them in config/default would make them.
// kustomize refuses absolute paths to kustomization directories ("new root
// cannot be absolute"), so the real folders are referenced by their
// absolute location made relative to the temporary directory.
func optInOverlay(t *testing.T, root string) string {
	t.Helper()
	defaults := readKustomization(t, filepath.Join(root, "config", "default", "kustomization.yaml"))
	ns, _ := defaults["namespace"].(string)
	prefix, _ := defaults["namePrefix"].(string)
	if ns != namespace || prefix != namePrefix {
		t.Fatalf("config/default/kustomization.yaml sets namespace %q and namePrefix %q; want %q and %q",
			ns, prefix, namespace, namePrefix)
	}

	dir := t.TempDir()
	optIn := filepath.Join(dir, "opt-in")
	if err := os.Mkdir(optIn, 0o755); err != nil {
		t.Fatal(err)
	}
	ref := func(from, folder string) string {
		abs := filepath.Join(root, "config", folder)
		rel, err := filepath.Rel(from, abs)
		if err != nil {
			t.Fatalf("cannot reference %s from %s: %v", abs, from, err)
		}
		return filepath.ToSlash(rel)
	}
	write := func(path, content string) {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(optIn, "kustomization.yaml"), fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: %s
namePrefix: %s
resources:
- %s
- %s
`, ns, prefix, ref(optIn, "prometheus"), ref(optIn, "network-policy")))
	write(filepath.Join(dir, "kustomization.yaml"), fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- %s
- opt-in
`, ref(dir, "default")))
	return dir
}

func readKustomization(t *testing.T, path string) map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("cannot read %s: %v", path, err)
	}
	defer func() { _ = f.Close() }()
	var k map[string]any
	if err := utilyaml.NewYAMLOrJSONDecoder(f, 4096).Decode(&k); err != nil {
		t.Fatalf("cannot parse %s: %v", path, err)
	}
	return k
}

// parse splits a multi-document YAML stream into objects. Each document
// goes through JSON into Unstructured, so that numbers are int64 as the API
// server would see them.
func parse(t *testing.T, source string, data []byte) *manifest {
	t.Helper()
	m := &manifest{source: source}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 0; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: cannot read document %d: %v", source, i, err)
		}
		js, err := utilyaml.ToJSON(doc)
		if err != nil {
			t.Fatalf("%s: document %d is not valid YAML: %v", source, i, err)
		}
		if trimmed := bytes.TrimSpace(js); len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
			continue // an empty document
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			t.Fatalf("%s: document %d is not a Kubernetes object: %v\n%s", source, i, err, doc)
		}
		if u.GetName() == "" {
			t.Fatalf("%s: document %d (%s) has no name", source, i, u.GetKind())
		}
		m.objs = append(m.objs, u)
	}
	if len(m.objs) == 0 {
		t.Fatalf("%s: no objects rendered", source)
	}
	return m
}

func (m *manifest) byKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range m.objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

func (m *manifest) find(kind, name string) *unstructured.Unstructured {
	for _, o := range m.byKind(kind) {
		if o.GetName() == name {
			return o
		}
	}
	return nil
}

func (m *manifest) get(g Gomega, kind, name string) *unstructured.Unstructured {
	o := m.find(kind, name)
	g.Expect(o).NotTo(BeNil(), "%s: %s %s is missing from the output", m.source, kind, name)
	return o
}

func (m *manifest) convert(g Gomega, u *unstructured.Unstructured, into any) {
	err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, into, true)
	g.Expect(err).NotTo(HaveOccurred(), "%s: %s %s does not match its schema", m.source, u.GetKind(), u.GetName())
}

func (m *manifest) typed(g Gomega, kind, name string, into any) {
	m.convert(g, m.get(g, kind, name), into)
}

func (m *manifest) deployment(g Gomega) *appsv1.Deployment {
	g.Expect(m.byKind("Deployment")).To(HaveLen(1), "%s: want exactly one Deployment, the manager", m.source)
	var d appsv1.Deployment
	m.typed(g, "Deployment", deploymentName, &d)
	return &d
}

func (m *manifest) managerContainer(g Gomega) corev1.Container {
	cs := m.deployment(g).Spec.Template.Spec.Containers
	i := slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == containerName })
	g.Expect(i).NotTo(Equal(-1), "%s: Deployment %s is missing the %q container", m.source, deploymentName, containerName)
	return cs[i]
}

func (m *manifest) clusterRoleRules(g Gomega, name string) []rbacv1.PolicyRule {
	var cr rbacv1.ClusterRole
	m.typed(g, "ClusterRole", name, &cr)
	return cr.Rules
}

// allRoleRules maps "Kind name" to the rules of every Role and ClusterRole.
func (m *manifest) allRoleRules(g Gomega) map[string][]rbacv1.PolicyRule {
	out := map[string][]rbacv1.PolicyRule{}
	for _, kind := range []string{"Role", "ClusterRole"} {
		for _, u := range m.byKind(kind) {
			var r rbacv1.ClusterRole // Role has the same rules
			m.convert(g, u, &r)
			out[kind+" "+r.Name] = r.Rules
		}
	}
	return out
}

// expectBinding checks that the named binding grants roleKind/roleName to
// the manager ServiceAccount in the operator namespace.
func (m *manifest) expectBinding(g Gomega, kind, name, roleKind, roleName string) {
	var b rbacv1.RoleBinding
	m.typed(g, kind, name, &b)
	g.Expect(b.RoleRef.Kind).To(Equal(roleKind), "%s: %s %s must refer to a %s", m.source, kind, name, roleKind)
	g.Expect(b.RoleRef.Name).To(Equal(roleName), "%s: %s %s must refer to %s", m.source, kind, name, roleName)
	g.Expect(b.Subjects).To(ContainElement(rbacv1.Subject{
		Kind: rbacv1.ServiceAccountKind, Name: serviceAccountName, Namespace: namespace,
	}), "%s: %s %s is missing the subject ServiceAccount %s/%s", m.source, kind, name, namespace, serviceAccountName)
}

// allVerbs are the verbs that grantedVerbs tries.
var allVerbs = slices.Concat(readVerbs, writeVerbs, []string{"escalate", "bind", "impersonate"})

// grantedVerbs returns the verbs of allVerbs that rules allow on resource
// in the API group, wildcards included.
func grantedVerbs(rules []rbacv1.PolicyRule, apiGroup, resource string) []string {
	var out []string
	for _, verb := range allVerbs {
		if grants(rules, apiGroup, resource, verb) {
			out = append(out, verb)
		}
	}
	return out
}

// grants reports whether rules allow verb on resource (which may be a
// subresource such as paymentjobs/status) in the API group, following the
// RBAC wildcards: "*" for groups, resources and verbs, "name/*" and "*/sub".
func grants(rules []rbacv1.PolicyRule, apiGroup, resource, verb string) bool {
	for _, r := range rules {
		if (slices.Contains(r.APIGroups, apiGroup) || slices.Contains(r.APIGroups, rbacv1.APIGroupAll)) &&
			slices.ContainsFunc(r.Resources, func(p string) bool { return resourceMatches(p, resource) }) &&
			(slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, rbacv1.VerbAll)) {
			return true
		}
	}
	return false
}

func resourceMatches(pattern, resource string) bool {
	if pattern == rbacv1.ResourceAll || pattern == resource {
		return true
	}
	base, sub, hasSub := strings.Cut(resource, "/")
	if !hasSub {
		return false
	}
	return pattern == base+"/*" || pattern == "*/"+sub
}

// flagValue finds a flag of the manager in args the way the flag package
// reads them: -name or --name, then =value; a bare boolean flag is "true",
// a bare other flag takes the next argument. The last occurrence wins.
func flagValue(args []string, name string, isBool bool) (value string, found bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		trimmed := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if trimmed == a {
			continue
		}
		switch {
		case trimmed == name && isBool:
			value, found = "true", true
		case trimmed == name && i+1 < len(args):
			value, found = args[i+1], true
			i++
		default:
			if v, ok := strings.CutPrefix(trimmed, name+"="); ok {
				value, found = v, true
			}
		}
	}
	return value, found
}

// rbacTableHeader are the first columns of the RBAC table in docs/security.md;
// further columns are prose.
var rbacTableHeader = []string{"kind", "role", "API group", "resource", "verbs"}

// rbacEntry is one resource (or non-resource URL, which starts with "/") of
// one API group in one role: "ClusterRole paymentjob-operator-manager-role".
type rbacEntry struct {
	role, group, resource string
}

func (e rbacEntry) String() string {
	switch {
	case strings.HasPrefix(e.resource, "/"):
		return fmt.Sprintf("%s on the URL %s", e.role, e.resource)
	case e.group == "":
		return fmt.Sprintf("%s on %s (core)", e.role, e.resource)
	default:
		return fmt.Sprintf("%s on %s (%s)", e.role, e.resource, e.group)
	}
}

// rbacTable is what docs/security.md says: the roles it lists, and the
// verbs of each entry (none for a row whose verbs are "—").
type rbacTable struct {
	roles map[string]bool
	verbs map[rbacEntry][]string
}

// parseRBACTable reads the markdown table whose header starts with
// rbacTableHeader. A row is `| kind | role | API group | resource | verbs | ... |`:
// kind is Role or ClusterRole; role is the name in config/rbac, without the
// name prefix; API group is a comma list of groups, "core" for the core
// group, or "—" for non-resource URLs; resource a comma list of resources
// or URLs; verbs a comma list, or "—" for none. Backticks are ignored.
func parseRBACTable(doc string) (*rbacTable, error) {
	lines := strings.Split(doc, "\n")
	start := -1
	for i, line := range lines {
		cells := tableCells(line)
		if len(cells) >= len(rbacTableHeader) && slices.Equal(cells[:len(rbacTableHeader)], rbacTableHeader) {
			if start >= 0 {
				return nil, fmt.Errorf("two tables start with the columns %v (lines %d and %d)", rbacTableHeader, start+1, i+1)
			}
			start = i
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("no table starts with the columns %v", rbacTableHeader)
	}
	if start+1 >= len(lines) || !strings.HasPrefix(strings.TrimSpace(lines[start+1]), "|---") {
		return nil, fmt.Errorf("line %d: the header of the table is not followed by its |---| line", start+1)
	}
	t := &rbacTable{roles: map[string]bool{}, verbs: map[rbacEntry][]string{}}
	for i := start + 2; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
		cells := tableCells(lines[i])
		if len(cells) < len(rbacTableHeader) {
			return nil, fmt.Errorf("line %d: want at least %d cells, have %d", i+1, len(rbacTableHeader), len(cells))
		}
		kind, name := cells[0], cells[1]
		if kind != "Role" && kind != "ClusterRole" {
			return nil, fmt.Errorf("line %d: kind %q is neither Role nor ClusterRole", i+1, kind)
		}
		role := kind + " " + namePrefix + name
		t.roles[role] = true
		groups := []string{""}
		if cells[2] != "—" {
			groups = splitList(cells[2])
			for j, grp := range groups {
				if grp == "core" {
					groups[j] = ""
				}
			}
		}
		var verbs []string
		if cells[4] != "—" {
			verbs = splitList(cells[4])
		}
		for _, grp := range groups {
			for _, res := range splitList(cells[3]) {
				if strings.HasPrefix(res, "/") != (cells[2] == "—") {
					return nil, fmt.Errorf("line %d: %s: a URL goes with the API group —, a resource with a group", i+1, res)
				}
				e := rbacEntry{role: role, group: grp, resource: res}
				if _, dup := t.verbs[e]; dup {
					return nil, fmt.Errorf("line %d: a second row for %s", i+1, e)
				}
				t.verbs[e] = verbs
			}
		}
	}
	return t, nil
}

// tableCells splits a markdown table row into its trimmed cells, without
// backticks; a line that is not a row has none.
func tableCells(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") || len(line) < 2 {
		return nil
	}
	cells := strings.Split(line[1:len(line)-1], "|")
	for i, c := range cells {
		cells[i] = strings.TrimSpace(strings.ReplaceAll(c, "`", ""))
	}
	return cells
}

func splitList(cell string) []string {
	var out []string
	for item := range strings.SplitSeq(cell, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// roleGrants maps each rendered Role and ClusterRole ("Kind name") to the
// verbs of each of its entries, as its rules write them.
func (m *manifest) roleGrants(g Gomega) map[string]map[rbacEntry][]string {
	out := map[string]map[rbacEntry][]string{}
	for role, rules := range m.allRoleRules(g) {
		entries := map[rbacEntry][]string{}
		add := func(e rbacEntry, verbs []string) {
			for _, v := range verbs {
				if !slices.Contains(entries[e], v) {
					entries[e] = append(entries[e], v)
				}
			}
		}
		for _, r := range rules {
			g.Expect(r.ResourceNames).To(BeEmpty(),
				"%s: %s limits a rule to resourceNames %v, which the RBAC table of %s cannot say; extend the table",
				m.source, role, r.ResourceNames, securityDoc)
			for _, url := range r.NonResourceURLs {
				add(rbacEntry{role: role, resource: url}, r.Verbs)
			}
			for _, grp := range r.APIGroups {
				for _, res := range r.Resources {
					add(rbacEntry{role: role, group: grp, resource: res}, r.Verbs)
				}
			}
		}
		out[role] = entries
	}
	return out
}

// compareRBAC lists every difference between the rendered roles and the
// table: a role missing from it or not shipped, an entry missing, verbs that
// differ, and a "—" row that the rules do grant (through a wildcard too).
func compareRBAC(rendered map[string]map[rbacEntry][]string, table *rbacTable) []string {
	var problems []string
	for role, entries := range rendered {
		if !table.roles[role] {
			problems = append(problems, fmt.Sprintf("%s is not in the table", role))
			continue
		}
		for e, verbs := range entries {
			documented, ok := table.verbs[e]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s: no row; the role grants %s", e, verbList(verbs)))
			case !sameVerbs(documented, verbs):
				problems = append(problems, fmt.Sprintf("%s: the table says %s; the role grants %s", e, verbList(documented), verbList(verbs)))
			}
		}
	}
	rules := map[string][]rbacv1.PolicyRule{}
	for role, entries := range rendered {
		for e, verbs := range entries {
			r := rbacv1.PolicyRule{Verbs: verbs}
			if strings.HasPrefix(e.resource, "/") {
				r.NonResourceURLs = []string{e.resource}
			} else {
				r.APIGroups, r.Resources = []string{e.group}, []string{e.resource}
			}
			rules[role] = append(rules[role], r)
		}
	}
	for role := range table.roles {
		if _, ok := rendered[role]; !ok {
			problems = append(problems, fmt.Sprintf("%s is in the table but not shipped", role))
		}
	}
	for e, documented := range table.verbs {
		entries, shipped := rendered[e.role]
		if !shipped {
			continue
		}
		if _, ok := entries[e]; ok {
			continue // compared above
		}
		var granted []string
		if !strings.HasPrefix(e.resource, "/") {
			granted = grantedVerbs(rules[e.role], e.group, e.resource)
		}
		if len(documented) > 0 || len(granted) > 0 {
			problems = append(problems, fmt.Sprintf("%s: the table says %s; the role grants %s", e, verbList(documented), verbList(granted)))
		}
	}
	slices.Sort(problems)
	return problems
}

func sameVerbs(a, b []string) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

func verbList(verbs []string) string {
	if len(verbs) == 0 {
		return "nothing"
	}
	return strings.Join(slices.Sorted(slices.Values(verbs)), ", ")
}
