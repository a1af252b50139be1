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

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// UnfinishedSelector selects the PaymentJobs and PaymentRefunds without the
// finished label, which the engine sets when it finishes one: those the
// manager's cache holds (pkg/operator's CacheOptions), and those a
// PaymentProvider's finalizer waits for.
func UnfinishedSelector() labels.Selector {
	req, err := labels.NewRequirement(paymentsv1alpha1.LabelFinished, selection.DoesNotExist, nil)
	if err != nil {
		panic(fmt.Sprintf("invalid finished-label requirement: %v", err))
	}
	return labels.NewSelector().Add(*req)
}
