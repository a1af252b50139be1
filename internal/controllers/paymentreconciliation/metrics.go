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

package paymentreconciliation

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The findings of the latest run of each PaymentProvider, and the runs.
var (
	findings = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "paymentjob_reconciliation_findings",
		Help: "Findings of the latest completed PaymentReconciliation of each provider (namespace/name), by category; every category but Matched is a discrepancy a person must look at (docs/reconciliation.md).",
	}, []string{"provider", "category"})
	runsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paymentjob_reconciliation_runs_total",
		Help: "PaymentReconciliation runs by result: balanced, discrepancies, failed.",
	}, []string{"result"})
	providerRequestsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "paymentjob_reconciliation_provider_requests_total",
		Help: "Provider requests (list pages and lookups) made by PaymentReconciliations, under their own rate budget.",
	})
)

// Collectors returns every collector this package registers in
// controller-runtime's metrics registry.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{findings, runsTotal, providerRequestsTotal}
}

func init() {
	metrics.Registry.MustRegister(Collectors()...)
}
