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

package engine

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// CacheOptions are the manager's cache settings. Finished PaymentJobs (the
// LabelFinished label) are filtered out by the API server, so the cache, and
// the manager's memory, grow with active objects only, however much history the
// cluster keeps; managedFields, which the operator never reads, are dropped
// from every cached object. Secrets are cached only when labelled
// LabelCredentials=true: the API server never sends the manager any other
// Secret, and a provider that names one finds nothing. namespaces, if any,
// restrict the cache to them.
func CacheOptions(namespaces ...string) cache.Options {
	opts := cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&paymentsv1alpha1.PaymentJob{}:    {Label: UnfinishedSelector()},
			&paymentsv1alpha1.PaymentRefund{}: {Label: UnfinishedSelector()},
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

// UnfinishedSelector selects the PaymentJobs and PaymentRefunds without the
// finished label: those the cache holds.
func UnfinishedSelector() labels.Selector {
	req, err := labels.NewRequirement(paymentsv1alpha1.LabelFinished, selection.DoesNotExist, nil)
	if err != nil {
		panic(fmt.Sprintf("invalid finished-label requirement: %v", err))
	}
	return labels.NewSelector().Add(*req)
}

// credentials selects the Secrets marked for the operator.
func credentials() labels.Selector {
	return labels.SelectorFromSet(labels.Set{paymentsv1alpha1.LabelCredentials: "true"})
}
