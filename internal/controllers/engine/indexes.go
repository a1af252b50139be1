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
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
)

// The cache indexes the reconcilers list by, and the mapping of an object to
// the objects that name it.

const (
	// ProviderRefIndex indexes PaymentJobs and PaymentRefunds by the
	// PaymentProvider they use.
	ProviderRefIndex = ".spec.providerRef.name"
	// PaymentJobRefIndex indexes PaymentRefunds by the PaymentJob they
	// refund.
	PaymentJobRefIndex = ".spec.paymentJobRef.name"
	// SecretRefIndex indexes PaymentProviders by the Secret they reference.
	SecretRefIndex = ".spec.secretKeyRef.name"
	// PaymentRefIndex indexes PaymentJobs and PaymentRefunds by what a
	// provider event names them by (PaymentRefValues): the key they sent
	// and the provider's id of their payment.
	PaymentRefIndex = ".status.paymentRef"
)

// PaymentRefValues are the values obj is indexed under in PaymentRefIndex:
// "key:" and its status.idempotencyKey, "id:" and its
// status.providerResponse.id, each when set.
func PaymentRefValues(obj Object) []string {
	st := obj.GetPaymentStatus()
	var out []string
	if st.IdempotencyKey != "" {
		out = append(out, "key:"+st.IdempotencyKey)
	}
	if st.ProviderResponse != nil && st.ProviderResponse.ID != "" {
		out = append(out, "id:"+st.ProviderResponse.ID)
	}
	return out
}

// FieldIndex is one cache index the reconcilers list by.
type FieldIndex struct {
	// Object is the kind of object indexed.
	Object client.Object
	// Field is the index's name, used with client.MatchingFields.
	Field string
	// Extract returns the values an object is indexed under.
	Extract client.IndexerFunc
}

// FieldIndexes are the cache indexes the reconcilers list by: objects and
// refunds by the provider they use, refunds by the object they refund,
// providers by the Secret they reference. IndexFields registers them with a
// manager; a test's fake client takes them with WithIndex.
func FieldIndexes() []FieldIndex {
	return []FieldIndex{
		{Object: &paymentsv1alpha1.PaymentJob{}, Field: ProviderRefIndex, Extract: func(o client.Object) []string {
			return []string{o.(*paymentsv1alpha1.PaymentJob).Spec.ProviderRef.Name}
		}},
		{Object: &paymentsv1alpha1.PaymentRefund{}, Field: ProviderRefIndex, Extract: func(o client.Object) []string {
			return []string{o.(*paymentsv1alpha1.PaymentRefund).Spec.ProviderRef.Name}
		}},
		{Object: &paymentsv1alpha1.PaymentRefund{}, Field: PaymentJobRefIndex, Extract: func(o client.Object) []string {
			return []string{o.(*paymentsv1alpha1.PaymentRefund).Spec.PaymentJobRef.Name}
		}},
		{Object: &paymentsv1alpha1.PaymentJob{}, Field: PaymentRefIndex, Extract: func(o client.Object) []string {
			return PaymentRefValues(o.(Object))
		}},
		{Object: &paymentsv1alpha1.PaymentRefund{}, Field: PaymentRefIndex, Extract: func(o client.Object) []string {
			return PaymentRefValues(o.(Object))
		}},
		{Object: &paymentsv1alpha1.PaymentProvider{}, Field: SecretRefIndex, Extract: func(o client.Object) []string {
			if ref := providercache.SecretRef(o.(*paymentsv1alpha1.PaymentProvider)); ref != nil {
				return []string{ref.Name}
			}
			return nil
		}},
	}
}

// IndexFields registers FieldIndexes with the manager's cache. Call it once
// per manager, before setting up the reconcilers.
func IndexFields(mgr ctrl.Manager) error {
	for _, ix := range FieldIndexes() {
		if err := mgr.GetFieldIndexer().IndexField(context.Background(), ix.Object, ix.Field, ix.Extract); err != nil {
			return fmt.Errorf("cannot index %T by %s: %w", ix.Object, ix.Field, err)
		}
	}
	return nil
}

// UsersOf maps o to the objects of list's kind in its namespace whose field
// index names it (objects by their provider, providers by their Secret), those
// keep accepts (nil keeps all). A failed List is logged and maps to nothing;
// the objects' own requeues bring them back.
func UsersOf(ctx context.Context, c client.Reader, list client.ObjectList, index string, o client.Object,
	keep func(client.Object) bool) []reconcile.Request {
	if err := c.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{index: o.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "Cannot list the objects that use this one", "object", klog.KObj(o), "index", index)
		return nil
	}
	var reqs []reconcile.Request
	_ = meta.EachListItem(list, func(item runtime.Object) error {
		if obj, ok := item.(client.Object); ok && (keep == nil || keep(obj)) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		}
		return nil
	})
	return reqs
}
