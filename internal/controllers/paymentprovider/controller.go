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
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
)

// DefaultSecretPollInterval is how often a PaymentProvider's Secret is
// checked again, besides the watch of labelled Secrets that brings every
// change at once.
const DefaultSecretPollInterval = 5 * time.Minute

// EndpointPolicy is the manager's egress policy (egress.Policy): which
// provider URLs may be called at all.
type EndpointPolicy interface {
	// CheckURL refuses a URL whose scheme or literal address is not allowed.
	CheckURL(field, raw string) error
	// CheckHost refuses a host whose addresses are not allowed. It is
	// advisory, for the Ready condition: the dialer decides again on every
	// connection.
	CheckHost(ctx context.Context, host string) error
}

// Reconciler reports whether a PaymentProvider can be used:
// Ready is True when the credentials it references exist, are labelled for
// the operator and are not empty, its URLs are allowed by the egress policy
// and its adapter could be built. It keeps the ProviderCache up to date, and
// keeps ProviderFinalizer on the provider while Processing jobs use it.
type Reconciler struct {
	// Kinds are the kinds of payments that use providers (PaymentJob,
	// PaymentRefund): a provider keeps its finalizer while an unfinished
	// object of one of them uses it.
	Kinds []engine.AnyKind
	// Client reads PaymentProviders and PaymentJobs from the cache and
	// writes providers and their status.
	Client client.Client
	// SecretReader reads the Secrets labelled LabelCredentials=true: the
	// manager's cached client, whose cache holds no other Secret.
	SecretReader client.Reader
	// APIReader lists jobs uncached before the finalizer comes off.
	APIReader client.Reader
	// Adapters is the cache the PaymentJob reconciler resolves providers from.
	Adapters *providercache.ProviderCache
	// Egress checks the provider's URLs; nil checks nothing here (the
	// adapters' dialer still enforces its own policy).
	Egress EndpointPolicy
	// Recorder emits events about the provider.
	Recorder events.EventRecorder
	// SecretPollInterval is how often the Secret is checked again.
	SecretPollInterval time.Duration
}

// +kubebuilder:rbac:groups=payments.idempotency.dev,resources=paymentproviders,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=payments.idempotency.dev,resources=paymentproviders/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=payments.idempotency.dev,resources=paymentproviders/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=list;watch

// Reconcile checks the provider's credentials and endpoint, sets its Ready
// condition and its finalizer.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var pp paymentsv1alpha1.PaymentProvider
	if err := r.Client.Get(ctx, req.NamespacedName, &pp); err != nil {
		if apierrors.IsNotFound(err) {
			r.Adapters.Retire(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if err := r.guard(ctx, &pp); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: engine.Jitter(100 * time.Millisecond)}, nil
		}
		return ctrl.Result{}, err
	}
	if !pp.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(&pp, paymentsv1alpha1.ProviderFinalizer) {
		// Released, or never used: gone in a moment.
		return ctrl.Result{}, nil
	}
	// A provider being deleted is still checked: its Processing jobs go on
	// through it while it works (its deletion moved its generation), and
	// through the adapter kept for it once its Secret is gone.

	ready, err := r.checkCredentials(ctx, &pp)
	if err != nil {
		// The requeue with the workqueue's backoff retries the read.
		r.Recorder.Eventf(&pp, nil, corev1.EventTypeWarning, paymentsv1alpha1.ReasonSecretReadFailed, "ReadSecret", "%s", err.Error())
		return ctrl.Result{}, err
	}
	if ready.Status != metav1.ConditionTrue {
		// New jobs wait; the Processing ones keep the last good adapter.
		r.Adapters.Retire(req.NamespacedName)
	}
	ready.Type = paymentsv1alpha1.ConditionReady
	ready.ObservedGeneration = pp.Generation

	before := pp.Status.DeepCopy()
	meta.SetStatusCondition(&pp.Status.Conditions, ready)
	pp.Status.ObservedGeneration = pp.Generation
	if !equality.Semantic.DeepEqual(before, &pp.Status) {
		if err := r.Client.Status().Update(ctx, &pp); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{RequeueAfter: engine.Jitter(100 * time.Millisecond)}, nil
			}
			return ctrl.Result{}, fmt.Errorf("cannot update payment provider status: %w", err)
		}
	}
	return ctrl.Result{RequeueAfter: engine.Jitter(r.SecretPollInterval)}, nil
}

// checkCredentials returns the Ready condition for the provider's endpoint
// and Secret and refreshes its adapter. It never returns or logs the
// credential itself.
func (r *Reconciler) checkCredentials(ctx context.Context, pp *paymentsv1alpha1.PaymentProvider) (metav1.Condition, error) {
	if err := providercache.CheckKind(pp.Spec); err != nil {
		// The CRD requires exactly one kind; this is an object written
		// around the schema.
		return metav1.Condition{Status: metav1.ConditionFalse, Reason: paymentsv1alpha1.ReasonInvalidConfiguration, Message: err.Error()}, nil
	}
	if refused := r.checkEndpoints(ctx, pp); refused != nil {
		return metav1.Condition{Status: metav1.ConditionFalse, Reason: paymentsv1alpha1.ReasonEndpointRefused,
			Message: payment.CleanMessage(refused.Error(), engine.MaxMessageLength)}, nil
	}
	ref := providercache.SecretRef(pp)
	if ref == nil {
		return r.refresh(pp, "", "No credentials are needed")
	}

	credential, err := providercache.ReadCredential(ctx, r.SecretReader, pp)
	switch {
	case errors.Is(err, providercache.ErrNoCredentials):
		return metav1.Condition{Status: metav1.ConditionFalse, Reason: paymentsv1alpha1.ReasonSecretNotFound, Message: fmt.Sprintf(
			"Secret %q in namespace %q is not among the Secrets the operator may use: it does not exist, or it lacks the label %s: \"true\" "+
				"(kubectl label secret %s -n %s %s=true)",
			ref.Name, pp.Namespace, paymentsv1alpha1.LabelCredentials, ref.Name, pp.Namespace, paymentsv1alpha1.LabelCredentials)}, nil
	case errors.Is(err, providercache.ErrCredentialKeyMissing):
		return metav1.Condition{Status: metav1.ConditionFalse, Reason: paymentsv1alpha1.ReasonSecretKeyMissing,
			Message: fmt.Sprintf("Secret %q has no non-empty key %q", ref.Name, ref.Key)}, nil
	case err != nil:
		return metav1.Condition{}, err
	}
	return r.refresh(pp, credential, fmt.Sprintf("Credentials found in Secret %q", ref.Name))
}

// checkEndpoints asks the egress policy about every URL of the provider. A
// host that cannot be resolved is not refused here: the dial fails, and is
// retried, when a job calls it.
func (r *Reconciler) checkEndpoints(ctx context.Context, pp *paymentsv1alpha1.PaymentProvider) error {
	if r.Egress == nil {
		return nil
	}
	for _, u := range providercache.ProviderURLs(pp.Spec) {
		if err := r.Egress.CheckURL(u.Field, u.URL); err != nil {
			return err
		}
		parsed, err := url.Parse(u.URL)
		if err != nil {
			continue
		}
		if err := r.Egress.CheckHost(ctx, parsed.Hostname()); err != nil {
			var dnsErr *net.DNSError
			if errors.As(err, &dnsErr) {
				continue
			}
			return fmt.Errorf("%s: %w", u.Field, err)
		}
	}
	return nil
}

// refresh rebuilds the provider's adapter if needed and reports whether it
// could be built.
func (r *Reconciler) refresh(pp *paymentsv1alpha1.PaymentProvider, credential string, ready string) (metav1.Condition, error) {
	if _, err := r.Adapters.Refresh(pp, credential); err != nil {
		reason := paymentsv1alpha1.ReasonInvalidConfiguration
		if errors.Is(err, providercache.ErrEndpointRefused) {
			reason = paymentsv1alpha1.ReasonEndpointRefused
		}
		return metav1.Condition{Status: metav1.ConditionFalse, Reason: reason, Message: payment.CleanMessage(err.Error(), engine.MaxMessageLength)}, nil
	}
	return metav1.Condition{Status: metav1.ConditionTrue, Reason: paymentsv1alpha1.ReasonReady, Message: ready}, nil
}

// SetupWithManager registers the reconciler; IndexFields must have run.
// Besides its PaymentProviders
// it watches the labelled Secrets they reference and the PaymentJobs that
// enter or leave Processing through them.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.SecretReader == nil || r.APIReader == nil || r.Adapters == nil || r.Recorder == nil || len(r.Kinds) == 0 {
		return errors.New("payment provider reconciler needs a client, a secret reader, an API reader, a provider cache, " +
			"an event recorder and the kinds of payments")
	}
	if r.SecretPollInterval <= 0 {
		r.SecretPollInterval = DefaultSecretPollInterval
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&paymentsv1alpha1.PaymentProvider{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.providersOfSecret)).
		Named("paymentprovider")
	for _, k := range r.Kinds {
		b = b.Watches(k.New(), enqueueProviderOf(k), builder.WithPredicates(usageChanged()))
	}
	return b.Complete(r)
}

// providersOfSecret maps a labelled Secret to the providers that use it.
func (r *Reconciler) providersOfSecret(ctx context.Context, o client.Object) []reconcile.Request {
	return engine.UsersOf(ctx, r.Client, &paymentsv1alpha1.PaymentProviderList{}, engine.SecretRefIndex, o, nil)
}
