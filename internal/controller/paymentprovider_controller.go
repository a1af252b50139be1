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

package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// DefaultSecretPollInterval is how often a PaymentProvider's Secret is
// checked again. Secrets are read one at a time with get, never listed or
// watched, so the manager needs no cluster-wide access to Secrets.
const DefaultSecretPollInterval = 30 * time.Second

// PaymentProviderReconciler reports whether a PaymentProvider can be used:
// Ready is True when the credentials it references exist and are not empty
// and its adapter could be built. It keeps the ProviderCache up to date.
type PaymentProviderReconciler struct {
	// Client reads PaymentProviders from the cache and writes their status.
	Client client.Client
	// SecretReader reads Secrets from the API server, uncached.
	SecretReader client.Reader
	// Adapters is the cache the PaymentJob reconciler resolves providers from.
	Adapters *ProviderCache
	// SecretPollInterval is how often the Secret is checked again.
	SecretPollInterval time.Duration
}

// +kubebuilder:rbac:groups=payments.idempotency.dev,resources=paymentproviders,verbs=get;list;watch
// +kubebuilder:rbac:groups=payments.idempotency.dev,resources=paymentproviders/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// Reconcile checks the provider's credentials and sets its Ready condition.
func (r *PaymentProviderReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var pp paymentsv1alpha1.PaymentProvider
	if err := r.Client.Get(ctx, req.NamespacedName, &pp); err != nil {
		if apierrors.IsNotFound(err) {
			r.Adapters.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	ready, err := r.checkCredentials(ctx, &pp)
	if err != nil {
		return ctrl.Result{}, err
	}
	ready.Type = paymentsv1alpha1.ConditionReady
	ready.ObservedGeneration = pp.Generation

	before := pp.Status.DeepCopy()
	meta.SetStatusCondition(&pp.Status.Conditions, ready)
	pp.Status.ObservedGeneration = pp.Generation
	if !equality.Semantic.DeepEqual(before, &pp.Status) {
		if err := r.Client.Status().Update(ctx, &pp); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{RequeueAfter: jitter(100 * time.Millisecond)}, nil
			}
			return ctrl.Result{}, fmt.Errorf("cannot update payment provider status: %w", err)
		}
	}
	return ctrl.Result{RequeueAfter: jitter(r.SecretPollInterval)}, nil
}

// checkCredentials returns the Ready condition for the provider's Secret and
// refreshes its adapter. It never returns or logs the credential itself.
func (r *PaymentProviderReconciler) checkCredentials(ctx context.Context, pp *paymentsv1alpha1.PaymentProvider) (metav1.Condition, error) {
	if pp.Spec.Stripe == nil && pp.Spec.HTTP == nil {
		// The CRD requires exactly one of them; this is an object written
		// around the schema.
		return metav1.Condition{Status: metav1.ConditionFalse, Reason: ReasonInvalidConfiguration,
			Message: "exactly one of spec.stripe or spec.http must be set"}, nil
	}
	ref := secretRef(pp)
	if ref == nil {
		return r.refresh(pp, nil, "No credentials are needed")
	}

	var secret corev1.Secret
	err := r.SecretReader.Get(ctx, types.NamespacedName{Namespace: pp.Namespace, Name: ref.Name}, &secret)
	switch {
	case apierrors.IsNotFound(err):
		return metav1.Condition{Status: metav1.ConditionFalse, Reason: ReasonSecretNotFound,
			Message: fmt.Sprintf("Secret %q not found in namespace %q", ref.Name, pp.Namespace)}, nil
	case err != nil:
		return metav1.Condition{}, fmt.Errorf("cannot get secret %q: %w", ref.Name, err)
	}
	if len(secret.Data[ref.Key]) == 0 {
		return metav1.Condition{Status: metav1.ConditionFalse, Reason: ReasonSecretKeyMissing,
			Message: fmt.Sprintf("Secret %q has no non-empty key %q", ref.Name, ref.Key)}, nil
	}
	return r.refresh(pp, &secret, fmt.Sprintf("Credentials found in Secret %q", ref.Name))
}

// refresh rebuilds the provider's adapter if needed and reports whether it
// could be built.
func (r *PaymentProviderReconciler) refresh(pp *paymentsv1alpha1.PaymentProvider, secret *corev1.Secret, ready string) (metav1.Condition, error) {
	if _, err := r.Adapters.Refresh(pp, secret); err != nil {
		return metav1.Condition{Status: metav1.ConditionFalse, Reason: ReasonInvalidConfiguration,
			Message: err.Error()}, nil
	}
	return metav1.Condition{Status: metav1.ConditionTrue, Reason: ReasonReady, Message: ready}, nil
}

// SetupWithManager registers the reconciler.
func (r *PaymentProviderReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.SecretReader == nil || r.Adapters == nil {
		return errors.New("payment provider reconciler needs a client, a secret reader and a provider cache")
	}
	if r.SecretPollInterval <= 0 {
		r.SecretPollInterval = DefaultSecretPollInterval
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&paymentsv1alpha1.PaymentProvider{}).
		Named("paymentprovider").
		Complete(r)
}
