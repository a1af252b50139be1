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

package ledger

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	appendsTotal = counter("paymentjob_ledger_appends_total",
		"Writes that appended outcomes to the ledger; one write carries every outcome waiting for it.")
	appendConflictsTotal = counter("paymentjob_ledger_append_conflicts_total",
		"Ledger appends retried because another process wrote the page first.")
	pageRereadsTotal = counter("paymentjob_ledger_page_rereads_total",
		"Ledger pages read again because another process wrote them.")
	prunedPagesTotal = counter("paymentjob_ledger_pruned_pages_total",
		"Ledger pages deleted by the retention.")
	indexRebuildsTotal = counter("paymentjob_ledger_index_rebuilds_total",
		"Ledger indexes rebuilt from a fresh list of the pages because resourceVersions went backwards (an etcd restored from a snapshot).")
)

// counter is a counter of the ledger, not registered yet.
func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

// Collectors returns every collector this package registers in
// controller-runtime's metrics registry.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{appendsTotal, appendConflictsTotal, pageRereadsTotal, prunedPagesTotal, indexRebuildsTotal}
}

func init() {
	metrics.Registry.MustRegister(Collectors()...)
}
