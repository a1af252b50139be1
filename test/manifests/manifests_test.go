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
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
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

// clusterScoped lists the kinds of the output that have no namespace; every
// other kind must land in the operator's namespace.
var clusterScoped = map[string]bool{
	"Namespace":                true,
	"CustomResourceDefinition": true,
	"ClusterRole":              true,
	"ClusterRoleBinding":       true,
	// The admission policies (config/policy).
	"ValidatingAdmissionPolicy":        true,
	"ValidatingAdmissionPolicyBinding": true,
	"MutatingAdmissionPolicy":          true,
	"MutatingAdmissionPolicyBinding":   true,
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

// TestConfigDefaultWithPostgresLedger renders config/default with the
// component config/ledger-postgres, the way uncommenting it would: the
// manager runs on the PostgreSQL ledger with its connection string from the
// Secret mounted read-only, and every check of config/default still holds.
func TestConfigDefaultWithPostgresLedger(t *testing.T) {
	root := repoRoot(t)
	dir := t.TempDir()
	rel := func(folder string) string {
		r, err := filepath.Rel(dir, filepath.Join(root, "config", folder))
		if err != nil {
			t.Fatal(err)
		}
		return filepath.ToSlash(r)
	}
	overlay := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- %s\ncomponents:\n- %s\n",
		rel("default"), rel("ledger-postgres"))
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o644); err != nil {
		t.Fatal(err)
	}
	m := render(t, dir)
	run(t, m, baseCases(), defaultOnlyCases(), []testCase{
		{"the manager reads the PostgreSQL ledger's DSN from the mounted Secret", func(g Gomega, m *manifest) {
			c := m.managerContainer(g)
			backend, _ := flagValue(c.Args, "ledger-backend", false)
			g.Expect(backend).To(Equal("postgres"))
			dsnFile, _ := flagValue(c.Args, "ledger-postgres-dsn-file", false)
			g.Expect(dsnFile).To(Equal("/etc/paymentjob-operator/ledger-postgres/dsn"))
			g.Expect(c.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "ledger-postgres",
				MountPath: "/etc/paymentjob-operator/ledger-postgres", ReadOnly: true}))
			vols := m.deployment(g).Spec.Template.Spec.Volumes
			i := slices.IndexFunc(vols, func(v corev1.Volume) bool { return v.Name == "ledger-postgres" })
			g.Expect(i).NotTo(Equal(-1))
			g.Expect(vols[i].Secret).NotTo(BeNil())
			g.Expect(vols[i].Secret.SecretName).To(Equal("paymentjob-ledger-postgres"))
			// Not optional: a manager without its DSN should not start on an empty folder.
			g.Expect(vols[i].Secret.Optional == nil || !*vols[i].Secret.Optional).To(BeTrue())
		}},
	})
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
		{"PostgreSQL ledger", "- ../ledger-postgres"},
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
// the installer rendered from it: the manager Deployment (deployment_test.go),
// the metrics endpoint, the admission policies, namespaces and CRDs (below),
// RBAC (rbac_test.go), and Secrets and the RBAC table of docs/security.md
// (security_test.go).
func baseCases() []testCase {
	cases := []testCase{
		{"GitOps tools never delete the CRDs", func(g Gomega, m *manifest) {
			crds := m.byKind("CustomResourceDefinition")
			g.Expect(crds).To(HaveLen(6), "%s: want the PaymentJob, PaymentProvider, PaymentLedger, PaymentRefund, PaymentReconciliation and PaymentReconciliationReport CRDs", m.source)
			for _, crd := range crds {
				// Deleting a CRD deletes every PaymentJob and the ledger with it.
				g.Expect(crd.GetAnnotations()).To(HaveKeyWithValue("argocd.argoproj.io/sync-options", "Delete=false,Prune=false"),
					"%s: %s", m.source, crd.GetName())
				g.Expect(crd.GetAnnotations()).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/prune", "disabled"),
					"%s: %s", m.source, crd.GetName())
			}
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
			validating := make([]string, 0, len(policies))
			for _, p := range policies {
				validating = append(validating, strings.TrimPrefix(p.GetName(), namePrefix))
			}
			g.Expect(validating).To(ConsistOf("finished-label", "reconciliation-reader"),
				"%s: want the ValidatingAdmissionPolicies of config/policy", m.source)
			g.Expect(bindings).To(HaveLen(len(policies)), "%s: want one binding per validating policy", m.source)
			denies := map[string]bool{}
			for _, u := range bindings {
				var binding admissionregistrationv1.ValidatingAdmissionPolicyBinding
				m.convert(g, u, &binding)
				g.Expect(binding.Spec.ValidationActions).To(ConsistOf(admissionregistrationv1.Deny))
				denies[binding.Spec.PolicyName] = true
			}
			for _, p := range policies {
				g.Expect(denies).To(HaveKey(p.GetName()), "%s: no binding names ValidatingAdmissionPolicy %s", m.source, p.GetName())
			}

			mutating, mutatingBindings := m.byKind("MutatingAdmissionPolicy"), m.byKind("MutatingAdmissionPolicyBinding")
			names := make([]string, 0, len(mutating))
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
		{"CRDs for the namespaced kinds PaymentJob, PaymentProvider and PaymentRefund", func(g Gomega, m *manifest) {
			for _, want := range []struct{ plural, kind string }{{"paymentjobs", "PaymentJob"}, {"paymentproviders", "PaymentProvider"}, {"paymentrefunds", "PaymentRefund"}} {
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
	}
	return slices.Concat(deploymentCases(), cases, rbacCases(), securityCases())
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

// optInCases hold when config/prometheus and config/network-policy are
// added: the ServiceMonitor (below) and the NetworkPolicies
// (networkpolicy_test.go).
func optInCases() []testCase {
	return append([]testCase{
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
	}, networkPolicyCases()...)
}
