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

package audit

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The audit of the admission policies and of the finished labels.
var (
	admissionPoliciesMissing    = prometheus.NewGauge(prometheus.GaugeOpts{Name: "paymentjob_admission_policies_missing", Help: "Admission policies of config/policy that the last audit found missing or not enforced (no binding, a validating binding without Deny, type-checking warnings). Unchanged when the audit could not list them."})
	finishedLabelWithoutOutcome = prometheus.NewGauge(prometheus.GaugeOpts{Name: "paymentjob_finished_label_without_outcome", Help: "PaymentJobs and PaymentRefunds that the last audit found with the finished label but neither Completed nor Failed: out of the operator's cache, they are never charged or refunded. Unchanged when the audit could not list them."})
	auditErrorsTotal            = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "paymentjob_audit_errors_total", Help: "Audit checks that could not be completed (an API error, RBAC refused), by check: admission_policies, finished_label. The check's gauge keeps its last value."}, []string{"check"})
)

// Collectors returns every collector this package registers in
// controller-runtime's metrics registry.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{admissionPoliciesMissing, finishedLabelWithoutOutcome, auditErrorsTotal}
}

func init() {
	metrics.Registry.MustRegister(Collectors()...)
	// Both series exist from the start, so that increase() sees the first error.
	auditErrorsTotal.WithLabelValues(auditCheckAdmissionPolicies)
	auditErrorsTotal.WithLabelValues(auditCheckFinishedLabel)
}
