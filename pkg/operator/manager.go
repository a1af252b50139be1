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

package operator

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
)

// The manager's own settings, which no reconciler reads: what its cache
// holds, how fast its client may go, the Lease its replicas elect a leader
// with. cmd/main.go and pkg/paymentjobtest build their managers with them.

// Client-side limits of the manager's requests to the API server, the
// defaults of --kube-api-qps and --kube-api-burst. A job costs four writes
// and no reads (reads come from the cache), so these allow well over a
// hundred jobs per second; the API server's Priority and Fairness, not the
// client, is what protects a shared control plane. See docs/operations.md.
const (
	DefaultKubeAPIQPS   = 500
	DefaultKubeAPIBurst = 1000
)

// LeaderElectionID names the Lease the managers elect their leader with
// (cmd/main.go). Managers of two versions must share it: during a rolling
// upgrade the new one then waits for the old one's lease instead of both
// working at once (which claims make safe, but costly in conflicts).
const LeaderElectionID = "paymentjob-operator.payments.idempotency.dev"

// CacheOptions are the cache settings the operator needs from its
// manager. Finished PaymentJobs and PaymentRefunds (the finished label,
// payments.idempotency.dev/finished) are filtered out by the API server,
// so the cache, and the manager's memory, grow with active ones only,
// however much history the cluster keeps; managedFields, which the
// operator never reads, are dropped from every cached object. Secrets are
// cached only when labelled payments.idempotency.dev/credentials=true: the
// API server never sends the manager any other Secret, and a provider that
// names one finds nothing. namespaces, if any, restrict the cache to them.
func CacheOptions(namespaces ...string) cache.Options {
	opts := cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&paymentsv1alpha1.PaymentJob{}:    {Label: engine.UnfinishedSelector()},
			&paymentsv1alpha1.PaymentRefund{}: {Label: engine.UnfinishedSelector()},
			&corev1.Secret{}:                  {Label: credentials()},
		},
		// Writes of cached copies keep the server's managedFields: nil
		// means unchanged.
		DefaultTransform: cache.TransformStripManagedFields(),
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}

// credentials selects the Secrets marked for the operator.
func credentials() labels.Selector {
	return labels.SelectorFromSet(labels.Set{paymentsv1alpha1.LabelCredentials: "true"})
}
