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
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
)

// How an object reaches its PaymentProvider. An object that has not been claimed
// needs a provider that exists, is Ready and is not being deleted, and makes
// sure the provider carries ProviderFinalizer before its first claim. A
// Processing object may have charged already: when its provider is gone, being
// deleted or no longer Ready (its Secret deleted with the namespace), it
// goes on with the adapter this process kept for the provider it was first
// sent to, and stalls with paymentsv1alpha1.ReasonProviderDeleted when there is none.

// Target is the provider an object is sent through, resolved for one pass.
type Target struct {
	providercache.Resolved
	// ID is where the provider sends keys: what a claim records in
	// status.provider.
	ID paymentsv1alpha1.ProviderIdentity
	// Timeout bounds one provider call.
	Timeout time.Duration
	// PaymentProvider is the object; nil for a kept adapter whose object is
	// gone.
	PaymentProvider *paymentsv1alpha1.PaymentProvider

	// asker is the object LookupBatched asks for (set by connect).
	asker asker
}

// ProviderResolver turns a ready PaymentProvider into the payment.Provider
// that charges through it and the rate limit it shares.
// providercache.ProviderCache is the one the manager uses.
type ProviderResolver interface {
	// Resolve returns the adapter of a ready provider.
	Resolve(ctx context.Context, provider *paymentsv1alpha1.PaymentProvider) (providercache.Resolved, error)
	// Kept returns the adapter last used for the provider with uid, after
	// the provider or its credentials are gone, for the objects that were
	// Processing through it.
	Kept(uid types.UID) (providercache.Resolved, bool)
}

// ResolveProvider finds the object's PaymentProvider. It returns why the object
// must wait when the provider is missing or not ready; for a Processing
// object, the adapter kept for its provider comes before waiting.
func (r *Reconciler) ResolveProvider(ctx context.Context, obj Object) (*Target, *Progress, error) {
	processing := obj.GetPaymentStatus().Phase == paymentsv1alpha1.PhaseProcessing
	name := r.terms(obj).Provider
	var pp paymentsv1alpha1.PaymentProvider
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}, &pp); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("cannot get PaymentProvider %q: %w", name, err)
		}
		if processing {
			return r.keptProvider(obj, "was deleted")
		}
		return nil, &Progress{Reason: paymentsv1alpha1.ReasonProviderNotFound,
			Message: fmt.Sprintf("PaymentProvider %q not found in namespace %q", name, obj.GetNamespace())}, nil
	}
	deleting := !pp.DeletionTimestamp.IsZero()
	if deleting && !processing {
		return nil, &Progress{Reason: paymentsv1alpha1.ReasonProviderDeleted, Message: fmt.Sprintf(
			"PaymentProvider %q is being deleted; a %s that was not claimed is never %s through it", name,
			r.Kind.Words().Object, r.Kind.Words().done())}, nil
	}
	t, waiting := r.usableProvider(ctx, &pp)
	if waiting == nil || !processing {
		return t, waiting, nil
	}
	// The provider, or its Secret, is going or gone: the adapter this
	// process used for it finishes what it started.
	if obj.GetPaymentStatus().Provider != nil && obj.GetPaymentStatus().Provider.UID == string(pp.UID) {
		if t, ok := r.kept(obj); ok {
			return t, nil, nil
		}
	}
	if deleting {
		return r.keptProvider(obj, "is being deleted")
	}
	return nil, waiting, nil
}

// usableProvider returns the adapter of a Ready provider, or why it cannot
// be used.
func (r *Reconciler) usableProvider(ctx context.Context, pp *paymentsv1alpha1.PaymentProvider) (*Target, *Progress) {
	ready := meta.FindStatusCondition(pp.Status.Conditions, paymentsv1alpha1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != pp.Generation {
		why := "its status is not up to date yet"
		if ready != nil && ready.ObservedGeneration == pp.Generation {
			why = fmt.Sprintf("%s: %s", ready.Reason, ready.Message)
		}
		return nil, &Progress{Reason: paymentsv1alpha1.ReasonProviderNotReady,
			Message: fmt.Sprintf("PaymentProvider %q is not ready: %s", pp.Name, why)}
	}
	resolved, err := r.Providers.Resolve(ctx, pp)
	if err != nil {
		return nil, &Progress{Reason: paymentsv1alpha1.ReasonProviderNotReady,
			Message: fmt.Sprintf("PaymentProvider %q cannot be used: %v", pp.Name, err)}
	}
	t, waiting := r.newTarget(ctx, pp.Name, resolved)
	if t != nil {
		t.PaymentProvider = pp
	}
	return t, waiting
}

// newTarget bounds the provider's calls and asks for its identity.
func (r *Reconciler) newTarget(ctx context.Context, name string, resolved providercache.Resolved) (*Target, *Progress) {
	timeout := r.ProviderTimeout
	if resolved.SpecTimeout() > 0 {
		timeout = resolved.SpecTimeout()
	}
	// A call must end before the claim can be taken over.
	if limit := r.ClaimLease * 9 / 10; timeout > limit {
		timeout = limit
	}
	// Asked once per provider configuration, then remembered.
	id, err := resolved.IdentityWithin(ctx, timeout)
	if err != nil {
		return nil, &Progress{Reason: paymentsv1alpha1.ReasonProviderNotReady, Message: payment.CleanMessage(
			fmt.Sprintf("PaymentProvider %q cannot be used yet: %v", name, err), MaxMessageLength)}
	}
	return &Target{Resolved: resolved, ID: id, Timeout: timeout}, nil
}

// kept is the adapter this process kept for the provider a Processing object
// was first sent to.
func (r *Reconciler) kept(obj Object) (*Target, bool) {
	if obj.GetPaymentStatus().Provider == nil {
		return nil, false
	}
	resolved, ok := r.Providers.Kept(types.UID(obj.GetPaymentStatus().Provider.UID))
	if !ok {
		return nil, false
	}
	t, waiting := r.newTarget(context.Background(), r.terms(obj).Provider, resolved)
	return t, waiting == nil
}

// keptProvider finishes a Processing object whose PaymentProvider is gone or
// going with the adapter kept for it, or stalls it: without the adapter,
// nothing can tell whether the charge happened.
func (r *Reconciler) keptProvider(obj Object, what string) (*Target, *Progress, error) {
	if t, ok := r.kept(obj); ok {
		return t, nil, nil
	}
	return nil, &Progress{Reason: paymentsv1alpha1.ReasonProviderDeleted, Stalled: true, Message: payment.CleanMessage(fmt.Sprintf(
		"PaymentProvider %q %s while this payment was in flight, and this process holds no adapter for it "+
			"(the operator restarted since): the payment may have happened under idempotency key %q. "+
			"Check the %s at the provider and set the annotation %s to charged=<%s id> or not-charged",
		r.terms(obj).Provider, what, obj.GetPaymentStatus().IdempotencyKey, r.Kind.Words().Noun, paymentsv1alpha1.AnnotationResolve, r.Kind.Words().Noun), MaxMessageLength)}, nil
}

// providerWithdrawn says why the provider a first claim was made for may
// no longer be charged through: deleted, being deleted, or replaced. It
// reads the cache right after the claim write: the provider reconciler
// removes the finalizer of a provider being deleted only after an uncached
// list of objects that came after this cache saw the deletion, so either that
// list saw the claim (and the finalizer stays until the object is done) or
// this read sees the deletion. Across processes, the other's cache may
// lag; run one active manager (leader election).
func (r *Reconciler) providerWithdrawn(ctx context.Context, t *Target) string {
	if t.PaymentProvider == nil {
		return ""
	}
	var pp paymentsv1alpha1.PaymentProvider
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(t.PaymentProvider), &pp)
	switch {
	case apierrors.IsNotFound(err):
		return "was deleted"
	case err != nil:
		// Not known to be withdrawn; the finalizer guards it.
		return ""
	case !pp.DeletionTimestamp.IsZero():
		return "is being deleted"
	case pp.UID != t.PaymentProvider.UID:
		return "was deleted and created again"
	}
	return ""
}

// waitingFor maps a PaymentProvider to the unfinished objects of the kind
// that use it.
func (r *Reconciler) waitingFor(ctx context.Context, o client.Object) []reconcile.Request {
	return UsersOf(ctx, r.Client, r.Kind.NewList(), ProviderRefIndex, o, Unfinished)
}

// forget drops what this process remembers of an object that is gone (deleted,
// or finished and so out of the cache).
func (r *Reconciler) forget(key types.NamespacedName) {
	r.written.forget(key)
	r.stranded.set(key, false, strandedJobsGauge.WithLabelValues(r.Kind.Name()))
	r.conflicts.set(key, false, ledgerConflictsGauge.WithLabelValues(r.Kind.Name()))
	r.rateWaits.forget(key)
	r.retries.forget(key)
	r.settleReads.forget(key)
	r.woken.forget(key)
	r.settlingObjects.set(key, false, settlingGauge.WithLabelValues(r.Kind.Name()))
}
