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

package helm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// installerPrefix is the name prefix config/default gives every object; the
// chart's release, named releaseName, gives its objects the same one.
const installerPrefix = "paymentjob-operator"

// installer returns the objects of dist/install.yaml (make build-installer).
func installer(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(mustEnv(t, "INSTALLER"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeObjects(b)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// repoFile decodes one object from a file of the repository.
func repoFile(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", path))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &u.Object); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return u
}

// objectKey names an object by kind and base name. The chart names each
// admission policy binding "<policy>-binding" (config/helm says why);
// install.yaml names it as its policy.
func objectKey(o *unstructured.Unstructured, prefix string) string {
	name := baseName(o.GetName(), prefix)
	if strings.HasSuffix(o.GetKind(), "AdmissionPolicyBinding") {
		name = strings.TrimSuffix(name, "-binding")
	}
	return o.GetKind() + "/" + name
}

// byKey indexes objects by objectKey.
func byKey(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	m := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		m[objectKey(o, installerPrefix)] = o
	}
	return m
}

// chartWithHelpers renders the chart as install.yaml is rendered: the
// defaults, with the admin, editor and viewer roles that config/rbac installs.
func chartWithHelpers(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	return mustRender(t, map[string]any{"rbac": map[string]any{"helpers": map[string]any{"enabled": true}}})
}

// The chart installs the objects of dist/install.yaml, no fewer and no more,
// except the Namespace: Helm installs into the release's namespace. This is
// what caught the plugin writing a policy and its binding to one file.
func TestChartInstallsTheInstallersObjects(t *testing.T) {
	g := NewWithT(t)
	want := byKey(installer(t))
	for key := range want {
		if strings.HasPrefix(key, "Namespace/") {
			delete(want, key)
		}
	}
	got := byKey(chartWithHelpers(t))
	g.Expect(keys(got)).To(ConsistOf(keys(want)))
}

func keys(m map[string]*unstructured.Unstructured) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// field returns a nested field, or nil.
func field(o *unstructured.Unstructured, path ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
	return v
}

// The RBAC of the chart is that of dist/install.yaml: the same rules in
// every role, and bindings of the same roles to the same subjects.
func TestChartRBACEqualsInstaller(t *testing.T) {
	want := byKey(installer(t))
	got := byKey(chartWithHelpers(t))
	checked := 0
	for key, w := range want {
		kind := w.GetKind()
		switch kind {
		case "ClusterRole", "Role":
			t.Run(key, func(t *testing.T) {
				g := NewWithT(t)
				g.Expect(got).To(HaveKey(key))
				g.Expect(field(got[key], "rules")).To(Equal(field(w, "rules")))
			})
		case "ClusterRoleBinding", "RoleBinding":
			t.Run(key, func(t *testing.T) {
				g := NewWithT(t)
				g.Expect(got).To(HaveKey(key))
				g.Expect(bindingOf(got[key], releaseName)).To(Equal(bindingOf(w, installerPrefix)))
			})
		default:
			continue
		}
		checked++
	}
	NewWithT(t).Expect(checked).To(BeNumerically(">=", 13), "roles and bindings compared")
}

// bindingOf is a role binding with the installer's prefix taken out of its
// names: its role's kind and base name, and its subjects'.
func bindingOf(o *unstructured.Unstructured, prefix string) []string {
	ref := o.Object["roleRef"].(map[string]any)
	subjects, _ := o.Object["subjects"].([]any)
	out := make([]string, 0, 1+len(subjects))
	out = append(out, ref["kind"].(string)+"/"+baseName(ref["name"].(string), prefix))
	for _, s := range subjects {
		s := s.(map[string]any)
		out = append(out, s["kind"].(string)+"/"+baseName(s["name"].(string), prefix))
	}
	return out
}

// The manager's pod has the security settings of dist/install.yaml (the
// restricted Pod Security Standard), the same service account, probes and
// volumes, and at least the same arguments.
func TestChartSecurityEqualsInstaller(t *testing.T) {
	g := NewWithT(t)
	w := only(t, installer(t), "Deployment")
	c := only(t, chartWithHelpers(t), "Deployment")

	podSpec := func(o *unstructured.Unstructured, f ...string) any {
		return field(o, append([]string{"spec", "template", "spec"}, f...)...)
	}
	container := func(o *unstructured.Unstructured) map[string]any {
		return podSpec(o, "containers").([]any)[0].(map[string]any)
	}
	g.Expect(podSpec(c, "securityContext")).To(Equal(podSpec(w, "securityContext")))
	g.Expect(container(c)["securityContext"]).To(Equal(container(w)["securityContext"]))
	for _, f := range []string{"hostNetwork", "hostPID", "hostIPC", "automountServiceAccountToken"} {
		g.Expect(podSpec(c, f)).To(sameAs(podSpec(w, f)), f)
	}
	g.Expect(baseName(podSpec(c, "serviceAccountName").(string), releaseName)).
		To(Equal(baseName(podSpec(w, "serviceAccountName").(string), installerPrefix)))
	for _, f := range []string{"livenessProbe", "readinessProbe", "resources", "ports", "command"} {
		g.Expect(container(c)[f]).To(sameAs(container(w)[f]), f)
	}
	g.Expect(field(c, "spec", "replicas")).To(BeEquivalentTo(field(w, "spec", "replicas")))
	g.Expect(normalizeArgs(containerArgs(t, c))).To(ContainElements(normalizeArgs(containerArgs(t, w))))
}

// sameAs matches what equals want, or nothing when want is absent.
func sameAs(want any) types.GomegaMatcher {
	if want == nil {
		return BeNil()
	}
	return Equal(want)
}

// normalizeArgs writes boolean flags as --flag=true.
func normalizeArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if !strings.Contains(a, "=") {
			a += "=true"
		}
		out[i] = a
	}
	return out
}

// The CRDs and admission policies of the chart are those of dist/install.yaml,
// and the CRDs are kept when the release is uninstalled.
func TestChartCRDsAndPoliciesEqualInstaller(t *testing.T) {
	want := byKey(installer(t))
	got := byKey(chartWithHelpers(t))
	for key, w := range want {
		switch w.GetKind() {
		case "CustomResourceDefinition", "ValidatingAdmissionPolicy", "MutatingAdmissionPolicy":
			t.Run(key, func(t *testing.T) {
				g := NewWithT(t)
				g.Expect(got).To(HaveKey(key))
				g.Expect(got[key].Object["spec"]).To(Equal(w.Object["spec"]))
				g.Expect(got[key].GetLabels()).To(Equal(w.GetLabels()))
				if w.GetKind() == "CustomResourceDefinition" {
					// install.yaml's annotations (the GitOps tools' keep) and Helm's keep.
					want := map[string]string{"helm.sh/resource-policy": "keep"}
					for k, v := range w.GetAnnotations() {
						want[k] = v
					}
					g.Expect(got[key].GetAnnotations()).To(Equal(want))
				}
			})
		case "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicyBinding":
			t.Run(key, func(t *testing.T) {
				g := NewWithT(t)
				g.Expect(got).To(HaveKey(key))
				spec := got[key].Object["spec"].(map[string]any)
				wspec := w.Object["spec"].(map[string]any)
				g.Expect(baseName(spec["policyName"].(string), releaseName)).To(Equal(baseName(wspec["policyName"].(string), installerPrefix)))
				g.Expect(withoutKey(spec, "policyName")).To(Equal(withoutKey(wspec, "policyName")))
				g.Expect(got[key].GetLabels()).To(Equal(w.GetLabels()), "the audit finds policies by this label")
			})
		}
	}
}

func withoutKey(m map[string]any, key string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// The optional objects render what config/ holds: the network policies'
// rules (with the defaults), the alerting rules and the dashboard.
func TestChartOptionalObjectsEqualConfig(t *testing.T) {
	g := NewWithT(t)
	objs := mustRender(t, map[string]any{
		"networkPolicy": map[string]any{"enabled": true},
		"prometheus":    map[string]any{"enabled": true},
		"grafana":       map[string]any{"dashboard": map[string]any{"enabled": true}},
	})
	got := byKey(objs)

	for _, name := range []string{"allow-metrics-traffic", "allow-provider-egress"} {
		w := repoFile(t, "config/network-policy/"+name+".yaml")
		c := got["NetworkPolicy/"+name]
		g.Expect(c).NotTo(BeNil(), name)
		for _, f := range []string{"podSelector", "policyTypes", "ingress", "egress"} {
			g.Expect(field(c, "spec", f)).To(sameAs(field(w, "spec", f)), name+" "+f)
		}
	}

	alerts := repoFile(t, "config/prometheus/alerts.yaml")
	g.Expect(got["PrometheusRule/alerts"]).NotTo(BeNil())
	g.Expect(got["PrometheusRule/alerts"].Object["spec"]).To(Equal(alerts.Object["spec"]))

	dashboard, err := os.ReadFile(filepath.Join("..", "..", "config/grafana/paymentjob-dashboard.json"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(field(got["ConfigMap/dashboard"], "data", "paymentjob-dashboard.json")).
		To(Equal(strings.TrimRight(string(dashboard), "\n")))

	monitor := repoFile(t, "config/prometheus/monitor.yaml")
	endpoint := field(got["ServiceMonitor/controller-manager-metrics-monitor"], "spec", "endpoints").([]any)[0].(map[string]any)
	wantEndpoint := field(monitor, "spec", "endpoints").([]any)[0].(map[string]any)
	for _, f := range []string{"path", "port", "scheme", "bearerTokenFile"} {
		g.Expect(endpoint[f]).To(Equal(wantEndpoint[f]), f)
	}
}
