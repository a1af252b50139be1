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

package ttl

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// ttlDeletionsTotal counts the collector's deletions.
var ttlDeletionsTotal = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "paymentjob_ttl_deletions_total",
	Help: "Finished jobs deleted after ttlSecondsAfterFinished, their outcome kept in the ledger.",
})

// Collectors returns every collector this package registers in
// controller-runtime's metrics registry.
func Collectors() []prometheus.Collector { return []prometheus.Collector{ttlDeletionsTotal} }

func init() {
	metrics.Registry.MustRegister(Collectors()...)
}
