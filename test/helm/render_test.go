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
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The chart lints clean (strict: warnings fail too) with its defaults and
// with every value set, as make helm-lint does with the CLI.
func TestChartLints(t *testing.T) {
	for _, tc := range valueSets(t) {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			lint := action.NewLint()
			lint.Strict = true
			lint.Namespace = releaseNamespace
			lint.KubeVersion = kubeVersion
			result := lint.Run([]string{chartDir(t)}, tc.vals)
			g.Expect(result.TotalChartsLinted).To(Equal(1))
			g.Expect(result.Errors).To(BeEmpty())
		})
	}
}

// containerArgs returns the manager container's arguments.
func containerArgs(t *testing.T, deploy *unstructured.Unstructured) []string {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 {
		t.Fatalf("want one container, got %d", len(containers))
	}
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	return args
}

// The defaults pass the manager its own defaults, with leader election on
// two replicas, and the admission policies, CRDs and RBAC are installed.
func TestRenderDefaults(t *testing.T) {
	g := NewWithT(t)
	objs, notes, err := render(t, map[string]any{})
	g.Expect(err).NotTo(HaveOccurred())

	deploy := only(t, objs, "Deployment")
	replicas, _, _ := unstructured.NestedFieldNoCopy(deploy.Object, "spec", "replicas")
	g.Expect(replicas).To(BeEquivalentTo(2))
	g.Expect(containerArgs(t, deploy)).To(Equal([]string{
		"--metrics-bind-address=:8443",
		"--health-probe-bind-address=:8081",
		"--leader-elect=true",
		"--max-concurrent-reconciles=10",
		"--kube-api-qps=500",
		"--kube-api-burst=1000",
		"--claim-lease-duration=60s",
		"--provider-timeout=30s",
		"--provider-key-retention=23h",
		"--ledger=true",
		"--ledger-retention=9600h",
		"--etcd-quota-bytes=2147483648",
		"--ledger-backend=crd",
		"--ledger-postgres-dsn-file=/etc/paymentjob-operator/ledger-postgres/dsn",
		"--ledger-postgres-ca-file=",
		"--ledger-postgres-max-conns=0",
		"--ledger-cluster-name=",
		"--ledger-postgres-skip-migration-check=false",
		"--ledger-postgres-durability=synchronous",
		"--ttl-seconds-after-finished=-1",
		"--insecure-provider-hosts=",
		"--audit-interval=5m",
		"--refund-recheck-interval=1h",
		"--refund-watch-period=720h",
		"--zap-log-level=info",
		"--events-bind-address=0",
	}))
	g.Expect(find(objs, "CustomResourceDefinition")).To(HaveLen(6))
	g.Expect(find(objs, "ValidatingAdmissionPolicy")).To(HaveLen(2), "finished-label and reconciliation-reader")
	g.Expect(find(objs, "MutatingAdmissionPolicy")).To(HaveLen(3))
	// Optional objects are off by default.
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule", "ConfigMap", "NetworkPolicy", "PodDisruptionBudget", "Ingress"} {
		g.Expect(find(objs, kind)).To(BeEmpty(), kind)
	}
	// NOTES.txt tells the next step: the labelled Secret, then a PaymentProvider.
	g.Expect(notes).To(ContainSubstring("payments.idempotency.dev/credentials=true"))
	g.Expect(notes).To(ContainSubstring("kind: PaymentProvider"))
}

// Every value reaches the objects it configures.
func TestRenderEveryValue(t *testing.T) {
	g := NewWithT(t)
	objs := mustRender(t, everyValue(t))

	deploy := only(t, objs, "Deployment")
	g.Expect(deploy.GetName()).To(Equal("payments-operator-controller-manager"))
	replicas, _, _ := unstructured.NestedFieldNoCopy(deploy.Object, "spec", "replicas")
	g.Expect(replicas).To(BeEquivalentTo(3))
	g.Expect(containerArgs(t, deploy)).To(ContainElements(
		"--metrics-bind-address=:8444",
		"--health-probe-bind-address=:9091",
		"--max-concurrent-reconciles=25",
		"--kube-api-qps=150",
		"--kube-api-burst=300",
		"--claim-lease-duration=2m",
		"--provider-timeout=45s",
		"--provider-key-retention=20h",
		"--ledger-retention=720h",
		"--etcd-quota-bytes=8589934592",
		"--ledger-backend=crd",
		"--ledger-postgres-dsn-file=/etc/ledger/dsn",
		"--ledger-postgres-ca-file=/etc/ledger/ca.crt",
		"--ledger-postgres-max-conns=8",
		"--ledger-cluster-name=eu-west-1",
		"--ledger-postgres-skip-migration-check=true",
		"--ledger-postgres-durability=local",
		"--ttl-seconds-after-finished=86400",
		"--insecure-provider-hosts=payment-service.payments.svc,10.20.30.40",
		"--audit-interval=10m",
		"--refund-recheck-interval=30m",
		"--refund-watch-period=240h",
		"--zap-log-level=debug",
		"--events-bind-address=:9445",
		"--zap-encoder=console",
	))
	pod, _, _ := unstructured.NestedMap(deploy.Object, "spec", "template", "spec")
	g.Expect(pod).To(HaveKeyWithValue("priorityClassName", "system-cluster-critical"))
	g.Expect(pod).To(HaveKey("affinity"))
	g.Expect(pod).To(HaveKey("topologySpreadConstraints"))
	g.Expect(pod).To(HaveKeyWithValue("serviceAccountName", "payments-operator-controller-manager"))
	container := pod["containers"].([]any)[0].(map[string]any)
	g.Expect(container).To(HaveKeyWithValue("image", "registry.example.com/platform/paymentjob-operator:v0.1.0"))
	g.Expect(container).To(HaveKeyWithValue("imagePullPolicy", "Always"))

	g.Expect(pod["imagePullSecrets"]).To(ConsistOf(HaveKeyWithValue("name", "registry-credentials")))
	g.Expect(pod["nodeSelector"]).To(HaveKeyWithValue("kubernetes.io/os", "linux"))
	g.Expect(pod["tolerations"]).To(ConsistOf(HaveKeyWithValue("key", "dedicated")))
	g.Expect(pod["terminationGracePeriodSeconds"]).To(BeEquivalentTo(45))
	g.Expect(pod["securityContext"]).To(HaveKeyWithValue("runAsUser", BeEquivalentTo(65532)))
	g.Expect(pod["volumes"]).To(ConsistOf(HaveKeyWithValue("name", "tmp")))
	g.Expect(container["volumeMounts"]).To(ConsistOf(HaveKeyWithValue("mountPath", "/tmp")))
	g.Expect(container["securityContext"]).To(HaveKeyWithValue("runAsUser", BeEquivalentTo(65532)))
	g.Expect(container["resources"]).To(HaveKeyWithValue("limits", HaveKeyWithValue("memory", "1Gi")))
	g.Expect(container["env"]).To(ContainElements(
		HaveKeyWithValue("name", "POD_NAME"),
		And(HaveKeyWithValue("name", "GOMEMLIMIT"), HaveKeyWithValue("value", "400MiB")),
		And(HaveKeyWithValue("name", "GOMAXPROCS"), HaveKeyWithValue("value", "2"))))
	g.Expect(field(deploy, "spec", "strategy", "rollingUpdate", "maxUnavailable")).To(BeEquivalentTo(0))
	g.Expect(deploy.GetLabels()).To(HaveKeyWithValue("team", "platform"))
	g.Expect(deploy.GetAnnotations()).To(HaveKeyWithValue("owner", "platform-team"))
	g.Expect(field(deploy, "spec", "template", "metadata", "labels")).To(HaveKeyWithValue("team", "platform"))
	g.Expect(field(deploy, "spec", "template", "metadata", "annotations")).To(HaveKeyWithValue("example.com/scrape", "false"))
	pdb := only(t, objs, "PodDisruptionBudget")
	g.Expect(field(pdb, "spec", "maxUnavailable")).To(BeEquivalentTo(1))
	g.Expect(field(pdb, "spec", "selector", "matchLabels")).To(Equal(field(deploy, "spec", "selector", "matchLabels")))
	sa := only(t, objs, "ServiceAccount")
	g.Expect(sa.GetLabels()).To(HaveKeyWithValue("team", "platform"))
	g.Expect(sa.GetAnnotations()).To(HaveKeyWithValue("example.com/role", "payments"))

	g.Expect(find(objs, "ClusterRole")).To(HaveLen(14), "manager, metrics auth, metrics reader and the eleven helper roles")
	var readers *unstructured.Unstructured
	for _, b := range find(objs, "ClusterRoleBinding") {
		if b.GetName() == "payments-operator-metrics-readers" {
			readers = b
		}
	}
	g.Expect(readers).NotTo(BeNil(), "metrics.readers are bound to the metrics reader role")
	g.Expect(field(readers, "roleRef", "name")).To(Equal("payments-operator-metrics-reader"))
	g.Expect(readers.Object["subjects"]).To(ConsistOf(
		And(HaveKeyWithValue("kind", "ServiceAccount"), HaveKeyWithValue("namespace", "monitoring")),
		And(HaveKeyWithValue("kind", "Group"), HaveKeyWithValue("name", "metrics-scrapers"))))
	monitor := only(t, objs, "ServiceMonitor")
	g.Expect(monitor.GetLabels()).To(HaveKeyWithValue("release", "kube-prometheus-stack"))
	g.Expect(monitor.GetAnnotations()).To(HaveKeyWithValue("example.com/owner", "platform"))
	rule := only(t, objs, "PrometheusRule")
	g.Expect(rule.GetLabels()).To(HaveKeyWithValue("release", "kube-prometheus-stack"))
	dashboard := only(t, objs, "ConfigMap")
	g.Expect(dashboard.GetLabels()).To(HaveKeyWithValue("grafana_dashboard", "1"))
	g.Expect(dashboard.GetAnnotations()).To(HaveKeyWithValue("grafana_folder", "Payments"))

	policies := map[string]*unstructured.Unstructured{}
	for _, p := range find(objs, "NetworkPolicy") {
		policies[baseName(p.GetName(), "payments-operator")] = p
	}
	g.Expect(policies).To(HaveKey("allow-metrics-traffic"))
	g.Expect(policies).To(HaveKey("allow-provider-egress"))
	egress, _, _ := unstructured.NestedSlice(policies["allow-provider-egress"].Object, "spec", "egress")
	g.Expect(egress).To(HaveLen(4), "DNS, API server, providers and the extra rule")
	g.Expect(egress[1]).To(HaveKeyWithValue("to", ConsistOf(HaveKeyWithValue("ipBlock", HaveKeyWithValue("cidr", "172.18.0.2/32")))))

	// The events endpoint: its Service, the Ingress of its path alone, and
	// ingress to its port from events.from.
	var events *unstructured.Unstructured
	for _, s := range find(objs, "Service") {
		if s.GetName() == "payments-operator-events" {
			events = s
		}
	}
	g.Expect(events).NotTo(BeNil(), "the events Service")
	g.Expect(field(events, "spec", "ports")).To(ConsistOf(And(HaveKeyWithValue("port", BeEquivalentTo(9445)), HaveKeyWithValue("targetPort", BeEquivalentTo(9445)))))
	g.Expect(field(events, "spec", "selector")).To(Equal(field(deploy, "spec", "selector", "matchLabels")))
	ingress := only(t, objs, "Ingress")
	g.Expect(ingress.GetAnnotations()).To(HaveKeyWithValue("cert-manager.io/cluster-issuer", "letsencrypt"))
	g.Expect(field(ingress, "spec", "ingressClassName")).To(Equal("nginx"))
	g.Expect(field(ingress, "spec", "tls")).To(ConsistOf(And(HaveKeyWithValue("secretName", "payments-events-tls"),
		HaveKeyWithValue("hosts", ConsistOf("payments-events.example.com")))))
	rules := field(ingress, "spec", "rules").([]any)
	g.Expect(rules).To(HaveLen(1))
	g.Expect(rules[0]).To(HaveKeyWithValue("host", "payments-events.example.com"))
	paths, _, _ := unstructured.NestedSlice(rules[0].(map[string]any), "http", "paths")
	g.Expect(paths).To(ConsistOf(And(HaveKeyWithValue("path", "/events/"), HaveKeyWithValue("pathType", "Prefix"),
		HaveKeyWithValue("backend", HaveKeyWithValue("service", And(HaveKeyWithValue("name", "payments-operator-events"),
			HaveKeyWithValue("port", HaveKeyWithValue("number", BeEquivalentTo(9445)))))))), "only the events path")
	g.Expect(policies).To(HaveKey("allow-events-traffic"))
	g.Expect(field(policies["allow-events-traffic"], "spec", "ingress")).To(ConsistOf(And(
		HaveKeyWithValue("ports", ConsistOf(HaveKeyWithValue("port", BeEquivalentTo(9445)))),
		HaveKeyWithValue("from", ConsistOf(HaveKeyWithValue("namespaceSelector", Not(BeNil())))))))
}

// A wrong value is refused at install with the value's path, by
// values.schema.json, and values that contradict each other are refused by
// the templates, naming them, rather than left to a crash-looping manager.
func TestChartRefusesWrongValues(t *testing.T) {
	tests := []struct {
		name string
		vals map[string]any
		want []string
	}{
		{"concurrency below one", map[string]any{"operator": map[string]any{"maxConcurrentReconciles": 0}},
			[]string{"/operator/maxConcurrentReconciles", "minimum"}},
		{"duration without unit", map[string]any{"operator": map[string]any{"claimLeaseDuration": "60"}},
			[]string{"/operator/claimLeaseDuration"}},
		{"ttl below -1", map[string]any{"operator": map[string]any{"ttlSecondsAfterFinished": -5}},
			[]string{"/operator/ttlSecondsAfterFinished"}},
		{"unknown log level", map[string]any{"operator": map[string]any{"logLevel": "verbose"}},
			[]string{"/operator/logLevel"}},
		{"host with a scheme", map[string]any{"operator": map[string]any{"insecureProviderHosts": []any{"http://pay.svc"}}},
			[]string{"/operator/insecureProviderHosts/0"}},
		{"a misspelt value", map[string]any{"operator": map[string]any{"claimLease": "90s"}},
			[]string{"/operator", "claimLease"}},
		{"CRDs deleted with the release", map[string]any{"crd": map[string]any{"keep": false}},
			[]string{"/crd/keep"}},
		{"cert-manager", map[string]any{"certManager": map[string]any{"enabled": true}},
			[]string{"/certManager/enabled"}},
		{"webhooks", map[string]any{"webhook": map[string]any{"enabled": true}},
			[]string{"/webhook/enabled"}},
		{"namespaced RBAC", map[string]any{"rbac": map[string]any{"namespaced": true}},
			[]string{"/rbac/namespaced"}},
		{"privilege escalation", map[string]any{"manager": map[string]any{"securityContext": map[string]any{"allowPrivilegeEscalation": true}}},
			[]string{"/manager/securityContext/allowPrivilegeEscalation"}},
		{"capabilities kept", map[string]any{"manager": map[string]any{"securityContext": map[string]any{"capabilities": map[string]any{"drop": []any{"NET_RAW"}}}}},
			[]string{"/manager/securityContext/capabilities/drop"}},
		{"root allowed", map[string]any{"manager": map[string]any{"podSecurityContext": map[string]any{"runAsNonRoot": false}}},
			[]string{"/manager/podSecurityContext/runAsNonRoot"}},
		{"unconfined seccomp", map[string]any{"manager": map[string]any{"podSecurityContext": map[string]any{"seccompProfile": map[string]any{"type": "Unconfined"}}}},
			[]string{"/manager/podSecurityContext/seccompProfile/type"}},
		{"zero audit interval", map[string]any{"operator": map[string]any{"auditInterval": "0s"}},
			[]string{"/operator/auditInterval"}},
		{"zero refund recheck interval", map[string]any{"operator": map[string]any{"refunds": map[string]any{"recheckInterval": "0s"}}},
			[]string{"/operator/refunds/recheckInterval"}},
		{"host with a port", map[string]any{"operator": map[string]any{"insecureProviderHosts": []any{"pay.svc:8080"}}},
			[]string{"/operator/insecureProviderHosts/0"}},
		{"unconfined seccomp on the container", map[string]any{"manager": map[string]any{"securityContext": map[string]any{
			"seccompProfile": map[string]any{"type": "Unconfined"}}}},
			[]string{"/manager/securityContext/seccompProfile/type"}},
		{"unmasked proc", map[string]any{"manager": map[string]any{"securityContext": map[string]any{"procMount": "Unmasked"}}},
			[]string{"/manager/securityContext", "procMount"}},
		{"host path volume", map[string]any{"manager": map[string]any{"extraVolumes": []any{
			map[string]any{"name": "host", "hostPath": map[string]any{"path": "/"}}}}},
			[]string{"/manager/extraVolumes/0", "hostPath"}},
		{"scraper without namespace", map[string]any{"metrics": map[string]any{"readers": []any{
			map[string]any{"kind": "ServiceAccount", "name": "prometheus"}}}},
			[]string{"/metrics/readers/0", "namespace"}},
		{"own arguments without the operator's", map[string]any{"manager": map[string]any{"args": []any{"--zap-encoder=console"}}},
			[]string{"manager.args lacks --leader-elect="}},
		{"ServiceMonitor without metrics", map[string]any{"prometheus": map[string]any{"enabled": true}, "metrics": map[string]any{"enabled": false}},
			[]string{"prometheus.enabled needs metrics.enabled"}},
		{"lease not longer than the provider timeout", map[string]any{"operator": map[string]any{"claimLeaseDuration": "30s", "providerTimeout": "1m"}},
			[]string{"operator.claimLeaseDuration (30s) must be longer than operator.providerTimeout (1m)"}},
		{"zero provider timeout", map[string]any{"operator": map[string]any{"providerTimeout": "0s"}},
			[]string{"/operator/providerTimeout"}},
		{"short ledger retention", map[string]any{"operator": map[string]any{"ledger": map[string]any{"enabled": true, "retention": "23h"}}},
			[]string{"operator.ledger.retention must be at least 24h"}},
		{"negative etcd quota", map[string]any{"operator": map[string]any{"ledger": map[string]any{"etcdQuotaBytes": -1}}},
			[]string{"/operator/ledger/etcdQuotaBytes", "minimum"}},
		{"etcd quota as a quantity", map[string]any{"operator": map[string]any{"ledger": map[string]any{"etcdQuotaBytes": "8Gi"}}},
			[]string{"/operator/ledger/etcdQuotaBytes"}},
		{"unknown ledger backend", map[string]any{"operator": map[string]any{"ledger": map[string]any{"backend": "mysql"}}},
			[]string{"/operator/ledger/backend"}},
		{"PostgreSQL ledger without its Secret mounted", map[string]any{"operator": map[string]any{"ledger": map[string]any{"backend": "postgres"}}},
			[]string{"operator.ledger.postgres.dsnFile (/etc/paymentjob-operator/ledger-postgres/dsn) is under none of manager.extraVolumeMounts"}},
		{"PostgreSQL ledger with its CA outside the mounts", map[string]any{
			"operator": map[string]any{"ledger": map[string]any{"backend": "postgres", "postgres": map[string]any{"caFile": "/etc/ca/ca.crt"}}},
			"manager":  map[string]any{"extraVolumeMounts": []any{map[string]any{"name": "ledger-postgres", "mountPath": "/etc/paymentjob-operator/ledger-postgres"}}}},
			[]string{"operator.ledger.postgres.caFile (/etc/ca/ca.crt) is under none of manager.extraVolumeMounts"}},
		{"TTL without the ledger", map[string]any{"operator": map[string]any{"ledger": map[string]any{"enabled": false, "retention": "24h"}, "ttlSecondsAfterFinished": 60}},
			[]string{"operator.ttlSecondsAfterFinished needs operator.ledger.enabled"}},
		{"events Ingress without events", map[string]any{"events": map[string]any{"ingress": map[string]any{"enabled": true, "host": "e.example.com"}}},
			[]string{"events.ingress.enabled needs events.enabled"}},
		{"events Ingress without a host", map[string]any{"events": map[string]any{"enabled": true, "ingress": map[string]any{"enabled": true}}},
			[]string{"events.ingress.enabled needs events.ingress.host"}},
		{"events on the metrics port", map[string]any{"events": map[string]any{"enabled": true, "port": 8443}},
			[]string{"events.port (8443) must differ"}},
		{"events port out of range", map[string]any{"events": map[string]any{"enabled": true, "port": 70000}},
			[]string{"/events/port"}},
		{"replicas without leader election", map[string]any{"manager": map[string]any{"leaderElection": map[string]any{"enabled": false}}},
			[]string{"manager.replicas is 2", "manager.leaderElection.enabled"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, _, err := render(t, tt.vals)
			g.Expect(err).To(HaveOccurred())
			for _, w := range tt.want {
				g.Expect(err.Error()).To(ContainSubstring(w))
			}
		})
	}
}

// The durations the schema allows are the manager's: a claim lease of
// minutes against a timeout of seconds is compared in seconds.
func TestDurationsCompareAcrossUnits(t *testing.T) {
	g := NewWithT(t)
	objs := mustRender(t, map[string]any{"operator": map[string]any{"claimLeaseDuration": "2m", "providerTimeout": "90s"}})
	g.Expect(containerArgs(t, only(t, objs, "Deployment"))).To(ContainElements("--claim-lease-duration=2m", "--provider-timeout=90s"))

	_, _, err := render(t, map[string]any{"operator": map[string]any{"claimLeaseDuration": "1m", "providerTimeout": "60s"}})
	g.Expect(err).To(MatchError(ContainSubstring("must be longer than")))
	g.Expect(strings.Count(err.Error(), "operator.")).To(BeNumerically(">=", 2))
}

// The package make helm-package writes (the .tgz of README's Helm path)
// renders what the chart folder renders.
func TestPackagedChartRendersTheFolder(t *testing.T) {
	g := NewWithT(t)
	packaged, err := loader.Load(mustEnv(t, "CHART_PACKAGE"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(packaged.Metadata.Version).To(Equal(loadChart(t).Metadata.Version))
	for _, vals := range []map[string]any{{}, everyValue(t)} {
		fromPackage, _, err := renderChart(packaged, vals)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(fromPackage).To(Equal(mustRender(t, vals)))
	}
}

// The branches the defaults and every-value.yaml leave out: each renders,
// and does what its value says.
func TestRenderBranches(t *testing.T) {
	tests := []struct {
		name  string
		vals  map[string]any
		check func(g Gomega, objs []*unstructured.Unstructured)
	}{
		{"metrics over plain HTTP", map[string]any{"metrics": map[string]any{"secure": false, "readers": []any{
			map[string]any{"kind": "Group", "name": "scrapers"}}}, "prometheus": map[string]any{"enabled": true}},
			func(g Gomega, objs []*unstructured.Unstructured) {
				g.Expect(containerArgs(t, only(t, objs, "Deployment"))).To(ContainElement("--metrics-secure=false"))
				g.Expect(field(only(t, objs, "ServiceMonitor"), "spec", "endpoints")).To(ConsistOf(HaveKeyWithValue("scheme", "http")))
				g.Expect(find(objs, "ClusterRoleBinding")).NotTo(ContainElement(WithTransform(
					func(o *unstructured.Unstructured) string { return o.GetName() }, HaveSuffix("metrics-readers"))),
					"no reader binding without authorization")
			}},
		{"the PostgreSQL ledger, its connection string from CloudNativePG's app Secret", map[string]any{
			"operator": map[string]any{"ledger": map[string]any{"backend": "postgres", "postgres": map[string]any{
				"caFile": "/etc/paymentjob-operator/ledger-postgres/ca.crt", "maxConns": 6, "clusterName": "eu-1"}}},
			"manager": map[string]any{
				"extraVolumes": []any{map[string]any{"name": "ledger-postgres", "secret": map[string]any{"secretName": "ledger-db-app",
					"items": []any{map[string]any{"key": "uri", "path": "dsn"}, map[string]any{"key": "ca.crt", "path": "ca.crt"}}}}},
				"extraVolumeMounts": []any{map[string]any{"name": "ledger-postgres", "mountPath": "/etc/paymentjob-operator/ledger-postgres", "readOnly": true}}}},
			func(g Gomega, objs []*unstructured.Unstructured) {
				deploy := only(t, objs, "Deployment")
				g.Expect(containerArgs(t, deploy)).To(ContainElements("--ledger-backend=postgres",
					"--ledger-postgres-dsn-file=/etc/paymentjob-operator/ledger-postgres/dsn",
					"--ledger-postgres-ca-file=/etc/paymentjob-operator/ledger-postgres/ca.crt",
					"--ledger-postgres-max-conns=6", "--ledger-cluster-name=eu-1"))
				g.Expect(field(deploy, "spec", "template", "spec", "volumes")).To(ContainElement(HaveKeyWithValue("secret",
					HaveKeyWithValue("secretName", "ledger-db-app"))))
			}},
		{"no metrics", map[string]any{"metrics": map[string]any{"enabled": false}},
			func(g Gomega, objs []*unstructured.Unstructured) {
				g.Expect(containerArgs(t, only(t, objs, "Deployment"))).To(ContainElement("--metrics-bind-address=0"))
				g.Expect(find(objs, "Service")).To(BeEmpty())
			}},
		{"an existing ServiceAccount", map[string]any{"serviceAccount": map[string]any{"enabled": false, "name": "payments-operator"}},
			func(g Gomega, objs []*unstructured.Unstructured) {
				g.Expect(find(objs, "ServiceAccount")).To(BeEmpty())
				g.Expect(field(only(t, objs, "Deployment"), "spec", "template", "spec", "serviceAccountName")).To(Equal("payments-operator"))
			}},
		{"CRDs installed apart", map[string]any{"crd": map[string]any{"enabled": false}},
			func(g Gomega, objs []*unstructured.Unstructured) {
				g.Expect(find(objs, "CustomResourceDefinition")).To(BeEmpty())
				g.Expect(find(objs, "ValidatingAdmissionPolicy")).To(HaveLen(2), "the admission policies stay")
			}},
		{"metrics ingress only", map[string]any{"networkPolicy": map[string]any{"enabled": true, "egress": map[string]any{"enabled": false}}},
			func(g Gomega, objs []*unstructured.Unstructured) {
				g.Expect(find(objs, "NetworkPolicy")).To(ConsistOf(WithTransform(
					func(o *unstructured.Unstructured) string { return o.GetName() }, HaveSuffix("allow-metrics-traffic"))))
			}},
		{"one replica without leader election", map[string]any{"manager": map[string]any{"replicas": 1,
			"leaderElection": map[string]any{"enabled": false}, "podDisruptionBudget": map[string]any{"enabled": true}}},
			func(g Gomega, objs []*unstructured.Unstructured) {
				g.Expect(containerArgs(t, only(t, objs, "Deployment"))).To(ContainElement("--leader-elect=false"))
				g.Expect(find(objs, "PodDisruptionBudget")).To(BeEmpty(), "a budget for one replica would block every drain")
			}},
		{"events without an Ingress", map[string]any{"events": map[string]any{"enabled": true}, "networkPolicy": map[string]any{"enabled": true}},
			func(g Gomega, objs []*unstructured.Unstructured) {
				g.Expect(containerArgs(t, only(t, objs, "Deployment"))).To(ContainElement("--events-bind-address=:9444"))
				g.Expect(find(objs, "Service")).To(ContainElement(WithTransform(
					func(o *unstructured.Unstructured) string { return o.GetName() }, HaveSuffix("-events"))))
				g.Expect(find(objs, "Ingress")).To(BeEmpty())
				for _, p := range find(objs, "NetworkPolicy") {
					if strings.HasSuffix(p.GetName(), "allow-events-traffic") {
						g.Expect(field(p, "spec", "ingress")).To(ConsistOf(And(HaveKeyWithValue("ports", ConsistOf(HaveKeyWithValue("port", BeEquivalentTo(9444)))),
							Not(HaveKey("from")))), "every source, on the events port only")
						return
					}
				}
				g.Expect(false).To(BeTrue(), "no allow-events-traffic NetworkPolicy")
			}},
		{"no manager", map[string]any{"manager": map[string]any{"enabled": false}},
			func(g Gomega, objs []*unstructured.Unstructured) {
				g.Expect(find(objs, "Deployment")).To(BeEmpty())
				g.Expect(find(objs, "CustomResourceDefinition")).To(HaveLen(6))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(NewWithT(t), mustRender(t, tt.vals))
		})
	}
}
