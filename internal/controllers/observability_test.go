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

package controllers_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	// Importing them registers the paymentjob_* metrics on
	// controller-runtime's registry.
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/audit"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentjob"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentreconciliation"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentrefund"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/ttl"
	"github.com/idempotency-dev/paymentjob-operator/internal/events"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
)

// These tests keep the dashboard, the alerts and the operations guide honest
// about the metrics the manager really exports. They read files only and do
// not use the API server.

// repoRoot is the repository root, relative to this package's directory,
// where go test runs.
const repoRoot = "../.."

var (
	// metricNameRE finds the metric names an expression uses: identifiers
	// with one of the prefixes this project's expressions draw from.
	metricNameRE = regexp.MustCompile(`\b((?:paymentjob|controller_runtime|workqueue)_[A-Za-z0-9_]*)`)
	// fqNameRE finds the fully-qualified name in a *prometheus.Desc's
	// String(), the one way the client library shows it.
	fqNameRE = regexp.MustCompile(`fqName: "([^"]+)"`)
	// promDurationRE is a Prometheus duration as used in for:.
	promDurationRE = regexp.MustCompile(`^([0-9]+(ms|s|m|h|d|w|y))+$`)
)

// histogramSuffixes are the series a histogram is exported as.
var histogramSuffixes = []string{"_bucket", "_sum", "_count"}

// operatorCollectors are the collectors the operator registers: those of
// every package under internal/controllers and of the ledger package they
// import. It is the one list of every metric the dashboards, the alerts and
// docs/observability.md may use.
func operatorCollectors() []prometheus.Collector {
	return slices.Concat(engine.Collectors(), paymentjob.Collectors(), paymentrefund.Collectors(), providercache.Collectors(),
		audit.Collectors(), ttl.Collectors(), ledger.Collectors(), paymentreconciliation.Collectors(), events.Collectors())
}

// operatorMetrics returns the names of the metrics the operator registers
// (operatorCollectors), and the subset that are histograms. Describing the
// collectors is deterministic, unlike gathering the registry, which omits a
// vector until a label is observed.
func operatorMetrics(t *testing.T) (names, histograms []string) {
	t.Helper()
	g := NewWithT(t)
	for _, c := range operatorCollectors() {
		described := describe(c)
		g.Expect(described).NotTo(BeEmpty(), "a collector of %T describes no metric", c)
		names = append(names, described...)
		switch c.(type) {
		case prometheus.Histogram, *prometheus.HistogramVec:
			histograms = append(histograms, described...)
		}
	}
	g.Expect(names).To(ContainElements(
		"paymentjob_charges_total", "paymentjob_reconcile_duration_seconds", "paymentjob_ledger_appends_total",
		"paymentjob_ledger_bytes", "paymentjob_ledger_entries", "paymentjob_ledger_pages", "paymentjob_etcd_quota_bytes"))
	g.Expect(names).To(HaveLen(len(slices.Compact(slices.Sorted(slices.Values(names))))), "a metric is listed twice")
	for _, n := range names {
		g.Expect(n).To(HavePrefix("paymentjob_"), "a collector describes %q", n)
	}
	g.Expect(histograms).NotTo(BeEmpty())
	return names, histograms
}

// describe returns the names of the metrics c describes.
func describe(c prometheus.Collector) []string {
	descs := make(chan *prometheus.Desc)
	go func() {
		c.Describe(descs)
		close(descs)
	}()
	var names []string
	for d := range descs {
		if m := fqNameRE.FindStringSubmatch(d.String()); m != nil {
			names = append(names, m[1])
		}
	}
	return names
}

// registered reports whether a metric family of that name is registered on
// controller-runtime's registry, whether or not it has series yet: a probe
// of the same name is refused exactly when the name is taken.
func registered(name string) bool {
	probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "observability_test probe"})
	err := metrics.Registry.Register(probe)
	if err == nil {
		metrics.Registry.Unregister(probe)
		return false
	}
	var already prometheus.AlreadyRegisteredError
	return errors.As(err, &already) || strings.Contains(err.Error(), "same fully-qualified name")
}

// baseName strips a histogram series suffix, if the rest is one of bases.
func baseName(name string, bases func(string) bool) string {
	for _, s := range histogramSuffixes {
		if b, ok := strings.CutSuffix(name, s); ok && bases(b) {
			return b
		}
	}
	return name
}

// grafanaDashboard is the part of a dashboard JSON the test checks.
type grafanaDashboard struct {
	UID           string         `json:"uid"`
	Title         string         `json:"title"`
	SchemaVersion int            `json:"schemaVersion"`
	Panels        []grafanaPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query string `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type grafanaDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type grafanaPanel struct {
	ID         int                `json:"id"`
	Type       string             `json:"type"`
	Title      string             `json:"title"`
	Datasource *grafanaDatasource `json:"datasource"`
	Targets    []struct {
		Expr       string             `json:"expr"`
		RefID      string             `json:"refId"`
		Datasource *grafanaDatasource `json:"datasource"`
	} `json:"targets"`
	// Panels are the panels of a collapsed row.
	Panels []grafanaPanel `json:"panels"`
}

// prometheusRule is a PrometheusRule with the fields alerts.yaml may use; it
// is read strictly, so a misspelt field fails the test.
type prometheusRule struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert"`
				Record      string            `json:"record"`
				Expr        string            `json:"expr"`
				For         string            `json:"for"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// readRepoFile reads the file at the path, given in parts, under the
// repository root.
func readRepoFile(t *testing.T, path ...string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(append([]string{repoRoot}, path...)...))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return raw
}

// decodeRepoFile decodes the file at the path, given in parts, under the
// repository root into a T.
func decodeRepoFile[T any](t *testing.T, decode func([]byte, any) error, path ...string) T {
	t.Helper()
	var v T
	NewWithT(t).Expect(decode(readRepoFile(t, path...), &v)).To(Succeed(), "%s is not a %T", filepath.Join(path...), v)
	return v
}

func readDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	return decodeRepoFile[grafanaDashboard](t, json.Unmarshal, "config", "grafana", "paymentjob-dashboard.json")
}

// readAlerts reads alerts.yaml strictly, so that a misspelt field fails.
func readAlerts(t *testing.T) prometheusRule {
	t.Helper()
	strict := func(raw []byte, v any) error { return yaml.UnmarshalStrict(raw, v) }
	return decodeRepoFile[prometheusRule](t, strict, "config", "prometheus", "alerts.yaml")
}

// alertNames lists the alerts of alerts.yaml.
func alertNames(r prometheusRule) []string {
	var names []string
	for _, grp := range r.Spec.Groups {
		for _, rule := range grp.Rules {
			if rule.Alert != "" {
				names = append(names, rule.Alert)
			}
		}
	}
	return names
}

func flattenPanels(panels []grafanaPanel) []grafanaPanel {
	out := make([]grafanaPanel, 0, len(panels))
	for _, p := range panels {
		out = append(out, p)
		out = append(out, flattenPanels(p.Panels)...)
	}
	return out
}

func TestDashboardAndAlertsUseRealMetrics(t *testing.T) {
	g := NewWithT(t)
	names, histograms := operatorMetrics(t)

	// The collectors' list agrees with what the packages registered: every
	// metric listed is registered, and every one registered is listed.
	for _, n := range names {
		g.Expect(registered(n)).To(BeTrue(), "%s is listed by operatorCollectors() but not registered", n)
	}
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "paymentjob_") {
			g.Expect(names).To(ContainElement(f.GetName()), "registered but not listed by operatorCollectors()")
		}
	}

	isOperatorMetric := func(n string) bool { return slices.Contains(names, n) }
	isHistogram := func(n string) bool { return slices.Contains(histograms, n) }
	// exprs maps each expression to where it comes from, for the messages.
	type expression struct{ where, expr string }
	var exprs []expression

	// The dashboard.
	d := readDashboard(t)
	g.Expect(d.UID).To(Equal("paymentjob-operator"))
	g.Expect(d.Title).To(Equal("PaymentJob operator"))
	g.Expect(d.SchemaVersion).To(Equal(39))

	var dsVars []string
	for _, v := range d.Templating.List {
		if v.Type == "datasource" {
			g.Expect(v.Query).To(Equal("prometheus"), "datasource variable %q", v.Name)
			dsVars = append(dsVars, v.Name)
		}
	}
	g.Expect(dsVars).To(Equal([]string{"datasource"}), "the dashboard needs one Prometheus datasource variable")

	panels := flattenPanels(d.Panels)
	var titles []string
	ids := map[int]string{}
	for _, p := range panels {
		if p.Type == "row" {
			continue
		}
		titles = append(titles, p.Title)
		g.Expect(ids).NotTo(HaveKey(p.ID), "panel %q reuses id %d of %q", p.Title, p.ID, ids[p.ID])
		ids[p.ID] = p.Title
		g.Expect(p.Datasource).NotTo(BeNil(), "panel %q has no datasource", p.Title)
		g.Expect(*p.Datasource).To(Equal(grafanaDatasource{Type: "prometheus", UID: "${datasource}"}),
			"panel %q must use the datasource variable", p.Title)
		g.Expect(p.Targets).NotTo(BeEmpty(), "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			if tg.Datasource != nil {
				g.Expect(tg.Datasource.UID).To(Equal("${datasource}"), "a query of panel %q", p.Title)
			}
			exprs = append(exprs, expression{"panel " + p.Title + " " + tg.RefID, tg.Expr})
		}
	}
	g.Expect(titles).To(ConsistOf(
		"Charges/s by outcome",
		"Replays/s",
		"Claim conflicts/s",
		"Terminal skips/s",
		"Reconcile latency p50/p99 by phase",
		"Workqueue depth",
		"Reconcile errors/s",
		"Reconciliation findings by category",
	))

	// The alerts.
	r := readAlerts(t)
	g.Expect(r.APIVersion).To(Equal("monitoring.coreos.com/v1"))
	g.Expect(r.Kind).To(Equal("PrometheusRule"))
	g.Expect(r.Metadata.Name).NotTo(BeEmpty())
	g.Expect(alertNames(r)).To(ConsistOf(
		"PaymentJobTransientErrorsHigh",
		"PaymentJobReplaysSpike",
		"PaymentJobClaimConflictsHigh",
		"PaymentJobDeclineRatioHigh",
		"PaymentJobReconcileErrors",
		"PaymentJobAdmissionPoliciesMissing",
		"PaymentJobFinishedLabelWithoutOutcome",
		"PaymentJobStuckBehindDeletedProvider", "PaymentRefundFailedAfterSuccess",
		"PaymentSettlementOverdue",
		"PaymentReconciliationDiscrepancies",
		"PaymentJobLedgerUnavailable",
		"PaymentJobLedgerConflict",
		// A warning and a critical alert of one name.
		"PaymentJobLedgerNearEtcdQuota", "PaymentJobLedgerNearEtcdQuota",
	))
	for _, grp := range r.Spec.Groups {
		for _, rule := range grp.Rules {
			if rule.Alert == "" {
				continue
			}
			g.Expect(promDurationRE.MatchString(rule.For)).To(BeTrue(), "alert %s: for %q", rule.Alert, rule.For)
			g.Expect(rule.Labels["severity"]).To(BeElementOf("critical", "warning", "info"), "alert %s: severity", rule.Alert)
			g.Expect(strings.TrimSpace(rule.Annotations["summary"])).NotTo(BeEmpty(), "alert %s: summary", rule.Alert)
			g.Expect(strings.TrimSpace(rule.Annotations["description"])).NotTo(BeEmpty(), "alert %s: description", rule.Alert)
			exprs = append(exprs, expression{"alert " + rule.Alert, rule.Expr})
			// Every replica exports the operator's gauges, the standby
			// too (at 0, or the same pages of the ledger): an alert takes
			// their max(), never their sum.
			for _, n := range metricNameRE.FindAllString(rule.Expr, -1) {
				if !isOperatorMetric(n) || strings.HasSuffix(n, "_total") || isHistogram(baseName(n, isHistogram)) {
					continue
				}
				uses := regexp.MustCompile(`\b`+n+`\b`).FindAllStringIndex(rule.Expr, -1)
				inMax := regexp.MustCompile(`\bmax\(\s*`+n+`\b`).FindAllStringIndex(rule.Expr, -1)
				g.Expect(inMax).To(HaveLen(len(uses)), "alert %s: the gauge %s outside max()", rule.Alert, n)
			}
		}
	}

	// Every expression queries at least one metric, and only real ones.
	for _, e := range exprs {
		g.Expect(strings.TrimSpace(e.expr)).NotTo(BeEmpty(), "%s has an empty expression", e.where)
		used := metricNameRE.FindAllString(e.expr, -1)
		g.Expect(used).NotTo(BeEmpty(), "%s queries no metric of the operator: %s", e.where, e.expr)
		for _, n := range used {
			if strings.HasPrefix(n, "paymentjob_") {
				g.Expect(isOperatorMetric(baseName(n, isHistogram))).To(BeTrue(),
					"%s uses %s, which no collector of the operator describes", e.where, n)
				continue
			}
			// controller-runtime's own metrics are registered on the same
			// registry when the controller package is imported.
			g.Expect(registered(baseName(n, registered))).To(BeTrue(),
				"%s uses %s, which controller-runtime does not register", e.where, n)
		}
	}
}

func TestOperationsDocMentionsEveryMetric(t *testing.T) {
	g := NewWithT(t)
	names, _ := operatorMetrics(t)
	doc := string(readRepoFile(t, "docs", "operations.md"))
	for _, n := range names {
		g.Expect(doc).To(ContainSubstring(n), "docs/operations.md does not mention the metric %s", n)
	}
	for _, a := range alertNames(readAlerts(t)) {
		g.Expect(doc).To(ContainSubstring(a), "docs/operations.md does not explain the alert %s", a)
	}
}
