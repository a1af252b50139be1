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

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// Wake brings back, at once, the objects of this kind that a verified
// event of provider names (by the key they sent, or the provider's id of
// their payment): only in the provider's namespace, and only the ones that
// pay through it. An event is a hint, never an outcome: a woken settling
// object reads its payment at the provider (within the provider's rate
// limit) before it writes anything, so a forged, replayed, reordered or
// lost event cannot move money or change a record. It returns how many
// objects it woke; wake-ups of one object coalesce in the controller's
// queue.
func (r *Reconciler) Wake(ctx context.Context, provider types.NamespacedName, ev payment.Event) int {
	var refs []string
	if ev.Key != "" {
		refs = append(refs, "key:"+ev.Key)
	}
	if ev.ObjectID != "" {
		refs = append(refs, "id:"+ev.ObjectID)
	}
	seen := map[types.NamespacedName]bool{}
	for _, ref := range refs {
		list := r.Kind.NewList()
		if err := r.Client.List(ctx, list, client.InNamespace(provider.Namespace), client.MatchingFields{PaymentRefIndex: ref}); err != nil {
			log.FromContext(ctx).Error(err, "Cannot list the objects a provider event names", "event", ev.ID)
			continue
		}
		_ = meta.EachListItem(list, func(item runtime.Object) error {
			obj, ok := item.(Object)
			if !ok || r.terms(obj).Provider != provider.Name || Terminal(obj.GetPaymentStatus().Phase) {
				return nil
			}
			key := client.ObjectKeyFromObject(obj)
			if seen[key] {
				return nil
			}
			seen[key] = true
			if settling(obj) {
				r.woken.set(obj, true)
			}
			select {
			case r.wakeups <- event.GenericEvent{Object: obj}:
			default:
				// Full: the object's own requeue brings it back.
			}
			return nil
		})
	}
	return len(seen)
}
