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

package campaign

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// The model: what the campaign knows the world should be. It holds every
// manifest a user ever applied (GitOps keeps them after a prune), and from
// them which requests may have moved money under which key; the oracle
// (oracle_test.go) compares it with the three books.

// ref names an object of the cluster.
type ref struct {
	kind string
	key  types.NamespacedName
}

func (r ref) String() string { return r.kind + " " + r.key.String() }

// objects are the payment objects the API server holds, in a stable order.
func (w *world) objects(ctx context.Context) ([]ref, error) {
	var jobs paymentsv1alpha1.PaymentJobList
	if err := w.store.List(ctx, &jobs); err != nil {
		return nil, fmt.Errorf("cannot list jobs: %w", err)
	}
	var refunds paymentsv1alpha1.PaymentRefundList
	if err := w.store.List(ctx, &refunds); err != nil {
		return nil, fmt.Errorf("cannot list refunds: %w", err)
	}
	refs := make([]ref, 0, len(jobs.Items)+len(refunds.Items))
	for i := range jobs.Items {
		refs = append(refs, ref{kindJob, client.ObjectKeyFromObject(&jobs.Items[i])})
	}
	for i := range refunds.Items {
		refs = append(refs, ref{kindRefund, client.ObjectKeyFromObject(&refunds.Items[i])})
	}
	slices.SortFunc(refs, func(a, b ref) int {
		if a.kind != b.kind {
			if a.kind < b.kind {
				return -1
			}
			return 1
		}
		if a.key.String() < b.key.String() {
			return -1
		}
		if a.key.String() > b.key.String() {
			return 1
		}
		return 0
	})
	return refs, nil
}

// newObject is an empty object of kind.
func (w *world) newObject(kind string) client.Object {
	if kind == kindRefund {
		return &paymentsv1alpha1.PaymentRefund{}
	}
	return &paymentsv1alpha1.PaymentJob{}
}
