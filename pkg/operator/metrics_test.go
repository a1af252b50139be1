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

package operator_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/idempotency-dev/paymentjob-operator/pkg/operator"
)

// TestSetupExportsTheEtcdQuotaAndTheLedgersSize: the metrics the alerts on
// the ledger's size compare, as a manager set up by the operator exports
// them: the etcd quota it was given (0 when unknown, which the alerts
// ignore), and the size of its ledger while the ledger runs; none without
// the ledger.
func TestSetupExportsTheEtcdQuotaAndTheLedgersSize(t *testing.T) {
	tests := []struct {
		name       string
		opts       operator.Options
		quota      float64
		withLedger bool
	}{
		{"default quota", operator.Options{}, 2 << 30, true},
		{"8 GiB", operator.Options{EtcdQuotaBytes: 8 << 30}, 8 << 30, true},
		{"unknown quota, no ledger", operator.Options{EtcdQuotaBytes: -1, DisableLedger: true}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			mgr, err := ctrl.NewManager(rest.CopyConfig(env.Config), ctrl.Options{
				Scheme:                 scheme,
				Metrics:                metricsserver.Options{BindAddress: "0"},
				HealthProbeBindAddress: "0",
				Cache:                  operator.CacheOptions(),
				// One manager after the other in this process.
				Controller: config.Controller{SkipNameValidation: ptr.To(true)},
			})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(operator.Setup(mgr, tt.opts)).To(Succeed())
			ctx, cancel := context.WithCancel(context.Background())
			stopped := make(chan error, 1)
			go func() { stopped <- mgr.Start(ctx) }()
			// The next case starts once this manager and its ledger stopped.
			defer func() {
				cancel()
				g.Expect(<-stopped).To(Succeed())
			}()

			g.Eventually(func(g Gomega) {
				got := gathered(g)
				g.Expect(got).To(HaveKeyWithValue("paymentjob_etcd_quota_bytes", tt.quota))
				for _, name := range []string{"paymentjob_ledger_bytes", "paymentjob_ledger_entries", "paymentjob_ledger_pages"} {
					if tt.withLedger {
						g.Expect(got).To(HaveKey(name))
					} else {
						g.Expect(got).NotTo(HaveKey(name))
					}
				}
			}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		})
	}
}

// gathered is the value of every single-series paymentjob_ metric of
// controller-runtime's registry, by name.
func gathered(g Gomega) map[string]float64 {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	values := map[string]float64{}
	for _, f := range families {
		if len(f.GetMetric()) != 1 || f.GetMetric()[0].GetGauge() == nil {
			continue
		}
		values[f.GetName()] = f.GetMetric()[0].GetGauge().GetValue()
	}
	return values
}
