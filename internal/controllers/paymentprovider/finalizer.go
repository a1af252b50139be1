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

package paymentprovider

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
)

// A PaymentProvider carries ProviderFinalizer while unfinished jobs use it:
// deleting the provider (alone, or with its namespace) then waits until its
// Processing jobs have finished with the adapter kept for them; jobs that
// were not claimed never block it, they wait (ProviderDeleted) and are never
// charged through it. This reconciler adds the finalizer for the jobs it
// sees in the cache, and removes it only after an uncached list: a job that
// is about to be claimed is unfinished too, so the finalizer cannot come
// off under its claim. The PaymentJob reconciler also adds it before a
// job's first claim, in case the cache has not shown the job here yet.

// guard adds or removes the provider's finalizer after the jobs that use it.
func (r *Reconciler) guard(ctx context.Context, pp *paymentsv1alpha1.PaymentProvider) error {
	has := controllerutil.ContainsFinalizer(pp, paymentsv1alpha1.ProviderFinalizer)
	deleting := !pp.DeletionTimestamp.IsZero()
	// Being deleted, only the jobs that may have charged hold it.
	holds := func(j engine.Object) bool {
		return !deleting || j.GetPaymentStatus().Phase == paymentsv1alpha1.PhaseProcessing
	}
	inUse, err := jobsUsing(ctx, r.Client, pp, r.Kinds, holds, false, client.MatchingFields{engine.ProviderRefIndex: pp.Name}, client.UnsafeDisableDeepCopy)
	if err != nil {
		return err
	}
	switch {
	case inUse > 0 && !has && !deleting:
		return r.patchFinalizer(ctx, pp, controllerutil.AddFinalizer)
	case inUse == 0 && has:
		// The cache may not have seen a job or a claim yet: ask the API server.
		inUse, err = jobsUsing(ctx, r.APIReader, pp, r.Kinds, holds, true, client.MatchingLabelsSelector{Selector: engine.UnfinishedSelector()})
		if err != nil || inUse > 0 {
			return err
		}
		log.FromContext(ctx).V(1).Info("Releasing payment provider: no job it holds uses it", "deleting", deleting)
		return r.patchFinalizer(ctx, pp, controllerutil.RemoveFinalizer)
	}
	return nil
}

func (r *Reconciler) patchFinalizer(ctx context.Context, pp *paymentsv1alpha1.PaymentProvider,
	change func(client.Object, string) bool) error {
	patch := client.MergeFromWithOptions(pp.DeepCopy(), client.MergeFromWithOptimisticLock{})
	change(pp, paymentsv1alpha1.ProviderFinalizer)
	if err := r.Client.Patch(ctx, pp, patch); err != nil {
		return fmt.Errorf("cannot update the finalizer of payment provider %q: %w", pp.Name, err)
	}
	return nil
}

// jobsUsing counts the unfinished payments (jobs and refunds) in the
// provider's namespace that reference it and that hold reports, read with
// reader: the cache, or the API server in pages.
func jobsUsing(ctx context.Context, reader client.Reader, pp *paymentsv1alpha1.PaymentProvider, kinds []engine.AnyKind,
	hold func(engine.Object) bool, paged bool, opts ...client.ListOption) (int, error) {
	n := 0
	for _, k := range kinds {
		c, err := kindUsing(ctx, reader, pp, k, hold, paged, opts...)
		if err != nil {
			return 0, err
		}
		n += c
	}
	return n, nil
}

// kindUsing is jobsUsing for one kind.
func kindUsing(ctx context.Context, reader client.Reader, pp *paymentsv1alpha1.PaymentProvider, k engine.AnyKind,
	hold func(engine.Object) bool, paged bool, opts ...client.ListOption) (int, error) {
	opts = append(opts, client.InNamespace(pp.Namespace))
	if paged {
		opts = append(opts, client.Limit(500))
	}
	n := 0
	for {
		list := k.NewList()
		if err := reader.List(ctx, list, opts...); err != nil {
			return 0, fmt.Errorf("cannot list the %ss of provider %q: %w", k.Name(), pp.Name, err)
		}
		_ = meta.EachListItem(list, func(item runtime.Object) error {
			if obj, ok := item.(engine.Object); ok && k.Terms(obj).Provider == pp.Name &&
				!engine.Terminal(obj.GetPaymentStatus().Phase) && hold(obj) {
				n++
			}
			return nil
		})
		cont := list.GetContinue()
		if !paged || cont == "" {
			return n, nil
		}
		opts = append(opts, client.Continue(cont))
	}
}

// usageSettle is how long the provider controller lets the events of the
// payments that use a provider settle before it counts them again: a batch
// of thousands of jobs costs one count a second per provider instead of one
// per event, each listing every unfinished payment of the provider. The
// finalizer is never late for a claim, since the engine adds it before a
// payment's first claim itself.
const usageSettle = time.Second

// enqueueProviderOf enqueues the PaymentProvider an object of kind k uses,
// usageSettle after the event; events meanwhile add nothing (the queue keeps
// one entry per provider).
func enqueueProviderOf(k engine.AnyKind) handler.EventHandler {
	add := func(o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range providerOf(k)(context.Background(), o) {
			q.AddAfter(req, usageSettle)
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.ObjectNew, q)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
	}
}

// providerOf maps an object of kind k to the PaymentProvider it uses.
func providerOf(k engine.AnyKind) handler.MapFunc {
	return func(_ context.Context, o client.Object) []reconcile.Request {
		obj, ok := o.(engine.Object)
		if !ok {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: k.Terms(obj).Provider}}}
	}
}

// usageChanged passes the job events that can change whether a provider
// is in use: a job created or gone, and a job changing phase.
func usageChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			old, ok1 := e.ObjectOld.(engine.Object)
			cur, ok2 := e.ObjectNew.(engine.Object)
			return ok1 && ok2 && old.GetPaymentStatus().Phase != cur.GetPaymentStatus().Phase
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
