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

package paymentrefund

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
)

// The refund calls by outcome and the replays, which the engine counts, and
// the refunds the refund watch finds failed after they succeeded, which the
// engine counts too (Reconciler.FailAfterSuccess).
var counters = func() engine.Counters {
	c := engine.NewCounters(
		"paymentjob_refunds_total", "Provider refund calls by outcome: succeeded (including replays), declined (the refund failed, or the provider refused it: beyond what is left, unknown or not refundable charge), invalid (a malformed request), key_reused, transient.",
		"paymentjob_refund_replays_total", "Refund calls that the provider answered with the saved outcome of an earlier request with the same key.")
	c.FailedAfterSuccess = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "paymentjob_refunds_failed_after_success_total",
		Help: "Completed PaymentRefunds that the provider later reported failed or canceled: the money did not go back. Each is set Failed (RefundFailedAfterSuccess) with a Warning event.",
	})
	return c
}()

// Collectors returns every collector this package registers in
// controller-runtime's metrics registry.
func Collectors() []prometheus.Collector {
	return append(counters.Collectors(), counters.FailedAfterSuccess)
}

func init() {
	metrics.Registry.MustRegister(Collectors()...)
}
