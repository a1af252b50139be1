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
// restricted security posture, the metrics endpoint, and least-privilege RBAC.
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
	podSecurityEnforceLabel  = "pod-security.kubernetes.io/enforce"
	aggregateToEditLabel     = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToAdminLabel    = "rbac.authorization.k8s.io/aggregate-to-admin"

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
// ServiceMonitor and NetworkPolicy, the way uncommenting them would, to prove
// that they render, land in the operator's namespace and select the manager.
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
				{group, "paymentproviders", []string{"get", "list", "watch"}},
				{group, "paymentproviders/status", []string{"update", "patch"}},
				{"", "secrets", []string{"get"}},
				{"", "events", []string{"create", "patch"}},
				{"events.k8s.io", "events", []string{"create", "patch"}},
			} {
				for _, verb := range need.verbs {
					g.Expect(grants(rules, need.group, need.resource, verb)).To(BeTrue(),
						"%s: ClusterRole %s is missing %s on %s (group %q); run `make manifests`",
						m.source, managerRoleName, verb, need.resource, need.group)
				}
			}
		}},
		{"manager ClusterRole reads Secrets with get only", func(g Gomega, m *manifest) {
			rules := m.clusterRoleRules(g, managerRoleName)
			for _, verb := range append([]string{"list", "watch"}, writeVerbs...) {
				g.Expect(grants(rules, "", "secrets", verb)).To(BeFalse(),
					"%s: ClusterRole %s grants %s on secrets; the manager only gets Secrets one at a time", m.source, managerRoleName, verb)
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
		{"no ClusterRole or Role grants list or watch on secrets", func(g Gomega, m *manifest) {
			for name, rules := range m.allRoleRules(g) {
				for _, verb := range []string{"list", "watch"} {
					g.Expect(grants(rules, "", "secrets", verb)).To(BeFalse(), "%s: %s grants %s on secrets", m.source, name, verb)
				}
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
	}
}

// repoRoot is the module root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatalf("cannot resolve the repository root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "config", "default", "kustomization.yaml")); err != nil {
		t.Fatalf("%s does not look like the repository root (no config/default/kustomization.yaml): %v", root, err)
	}
	return root
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
