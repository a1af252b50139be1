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
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// InformersSynced is a readiness check that passes once the cache holds
// every PaymentJob and PaymentProvider it watches: a manager that reports
// ready has seen the objects it is responsible for.
func InformersSynced(c cache.Cache) healthz.Checker {
	return func(req *http.Request) error {
		for _, obj := range []client.Object{&paymentsv1alpha1.PaymentJob{}, &paymentsv1alpha1.PaymentProvider{}} {
			informer, err := c.GetInformer(req.Context(), obj, cache.BlockUntilSynced(false))
			if err != nil {
				return fmt.Errorf("no informer for %T: %w", obj, err)
			}
			if !informer.HasSynced() {
				return fmt.Errorf("the %T cache has not synced yet", obj)
			}
		}
		return nil
	}
}
