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

package providercache

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Results of a key's lookup, the label of paymentjob_lookup_keys_total.
const (
	lookupFound  = "found"
	lookupNone   = "none"
	lookupFailed = "failed"
)

// Lookups of a key at the provider before a charge.
var (
	lookupRequestsTotal = prometheus.NewCounter(prometheus.CounterOpts{Name: "paymentjob_lookup_requests_total",
		Help: "Lookup requests sent to providers; one request looks up to 10 keys up."})
	lookupKeysTotal = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "paymentjob_lookup_keys_total",
		Help: "Keys looked up at providers by result: found (the provider holds a charge under it), none, failed."}, []string{"result"})
)

// Collectors returns every collector this package registers in
// controller-runtime's metrics registry.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{lookupRequestsTotal, lookupKeysTotal}
}

func init() {
	metrics.Registry.MustRegister(Collectors()...)
}
