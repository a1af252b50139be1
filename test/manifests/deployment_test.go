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

// The manager Deployment and its pod: leader election, probes, resources,
// the restricted Pod Security profile of its pod, containers and namespace,
// its identity (POD_NAME) and its ServiceAccount.

import (
	"fmt"
	"slices"
	"strconv"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// deploymentCases check the manager Deployment; they are part of baseCases.
func deploymentCases() []testCase {
	return slices.Concat(managerContainerCases(), podSecurityCases())
}

// managerContainerCases check how the manager runs: its flags, probes,
// resources, identity and ServiceAccount.
func managerContainerCases() []testCase {
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
		{"namespace enforces the restricted Pod Security profile", func(g Gomega, m *manifest) {
			ns := m.get(g, "Namespace", namespace)
			g.Expect(ns.GetLabels()).To(HaveKeyWithValue(podSecurityEnforceLabel, "restricted"),
				"%s: Namespace %s is missing the label %s: restricted", m.source, namespace, podSecurityEnforceLabel)
		}},
		{"manager ServiceAccount", func(g Gomega, m *manifest) {
			m.get(g, "ServiceAccount", serviceAccountName)
			g.Expect(m.deployment(g).Spec.Template.Spec.ServiceAccountName).To(Equal(serviceAccountName),
				"%s: the manager pod must run as ServiceAccount %s", m.source, serviceAccountName)
		}},
	}
}

// podSecurityCases check the restricted Pod Security profile of the
// manager's pod, its containers and its namespace.
func podSecurityCases() []testCase {
	return []testCase{
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
	}
}
