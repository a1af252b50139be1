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

package providercache

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/httpprovider"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/stripe"
)

// providerKind is one kind of PaymentProvider: the spec field that selects
// it, where its credential is, which URLs its adapter calls and how the
// adapter is built. A new kind of provider is a row of providerKinds (and
// its adapter a package under internal/payment).
type providerKind struct {
	// field is the spec field that selects the kind.
	field string
	// set reports whether spec selects this kind.
	set func(spec paymentsv1alpha1.PaymentProviderSpec) bool
	// secretRef is the Secret key the credential is read from; nil when
	// the provider needs none.
	secretRef func(spec paymentsv1alpha1.PaymentProviderSpec) *paymentsv1alpha1.SecretKeyReference
	// urls lists the URLs the adapter calls; the first is the endpoint
	// recorded in a job's status.provider.
	urls func(spec paymentsv1alpha1.PaymentProviderSpec) []ProviderURL
	// accountsOnly says the provider names the account behind its
	// credentials, which then identifies it whatever its endpoint.
	accountsOnly bool
	// mode names the books the credential reaches ("live" or "test"),
	// part of the provider's identity; nil when the kind cannot tell.
	mode func(credential string) string
	// build makes the adapter, calling out through httpClient.
	build func(spec paymentsv1alpha1.PaymentProviderSpec, credential string, httpClient *http.Client) (payment.Provider, error)
}

// ProviderURL is one URL of a provider's spec and the field it is in.
type ProviderURL struct{ Field, URL string }

// providerKinds are the kinds of PaymentProvider the operator can charge
// through; the CRD allows exactly one of their fields.
var providerKinds = []providerKind{
	{
		field: "spec.stripe",
		set:   func(spec paymentsv1alpha1.PaymentProviderSpec) bool { return spec.Stripe != nil },
		secretRef: func(spec paymentsv1alpha1.PaymentProviderSpec) *paymentsv1alpha1.SecretKeyReference {
			return &spec.Stripe.SecretKeyRef
		},
		urls: func(spec paymentsv1alpha1.PaymentProviderSpec) []ProviderURL {
			base := stripe.DefaultAPIBase
			if spec.Stripe.APIBase != "" {
				base = strings.TrimSuffix(spec.Stripe.APIBase, "/")
			}
			return []ProviderURL{{"spec.stripe.apiBase", base}}
		},
		accountsOnly: true,
		mode:         stripe.Mode,
		build: func(spec paymentsv1alpha1.PaymentProviderSpec, credential string, httpClient *http.Client) (payment.Provider, error) {
			return stripe.New(stripe.Config{APIKey: credential, APIBase: spec.Stripe.APIBase, HTTPClient: httpClient})
		},
	},
	{
		field: "spec.http",
		set:   func(spec paymentsv1alpha1.PaymentProviderSpec) bool { return spec.HTTP != nil },
		secretRef: func(spec paymentsv1alpha1.PaymentProviderSpec) *paymentsv1alpha1.SecretKeyReference {
			return spec.HTTP.SecretKeyRef
		},
		urls: func(spec paymentsv1alpha1.PaymentProviderSpec) []ProviderURL {
			urls := []ProviderURL{{"spec.http.url", spec.HTTP.URL}}
			if spec.HTTP.LookupURL != "" {
				urls = append(urls, ProviderURL{"spec.http.lookupURL", spec.HTTP.LookupURL})
			}
			if spec.HTTP.RefundURL != "" {
				urls = append(urls, ProviderURL{"spec.http.refundURL", spec.HTTP.RefundURL})
			}
			if spec.HTTP.ListURL != "" {
				urls = append(urls, ProviderURL{"spec.http.listURL", spec.HTTP.ListURL})
			}
			return urls
		},
		build: func(spec paymentsv1alpha1.PaymentProviderSpec, credential string, httpClient *http.Client) (payment.Provider, error) {
			return httpprovider.New(httpprovider.Config{URL: spec.HTTP.URL, LookupURL: spec.HTTP.LookupURL,
				RefundURL: spec.HTTP.RefundURL, ListURL: spec.HTTP.ListURL, Token: credential, HTTPClient: httpClient})
		},
	},
}

// errNoKind says a spec sets none or several of the kinds' fields: an object
// written around the CRD's schema.
var errNoKind = errors.New("exactly one of spec.stripe or spec.http must be set")

// kindOf is the kind of provider spec selects.
func kindOf(spec paymentsv1alpha1.PaymentProviderSpec) (*providerKind, error) {
	var found *providerKind
	for i := range providerKinds {
		if providerKinds[i].set(spec) {
			if found != nil {
				return nil, errNoKind
			}
			found = &providerKinds[i]
		}
	}
	if found == nil {
		return nil, errNoKind
	}
	return found, nil
}

// CheckKind refuses a spec that sets none or several of the kinds' fields:
// an object written around the CRD's schema.
func CheckKind(spec paymentsv1alpha1.PaymentProviderSpec) error {
	_, err := kindOf(spec)
	return err
}

// ProviderURLs lists the URLs a provider's adapter calls; none for a spec
// of no kind.
func ProviderURLs(spec paymentsv1alpha1.PaymentProviderSpec) []ProviderURL {
	kind, err := kindOf(spec)
	if err != nil {
		return nil
	}
	return kind.urls(spec)
}

// endpointOf is where a provider sends its charge requests.
func endpointOf(spec paymentsv1alpha1.PaymentProviderSpec) string {
	if urls := ProviderURLs(spec); len(urls) > 0 {
		return urls[0].URL
	}
	return ""
}

// SecretRef is the Secret key a provider's credential is read from, or nil.
func SecretRef(pp *paymentsv1alpha1.PaymentProvider) *paymentsv1alpha1.SecretKeyReference {
	kind, err := kindOf(pp.Spec)
	if err != nil {
		return nil
	}
	return kind.secretRef(pp.Spec)
}

// Why a provider's credential cannot be read; the PaymentProvider
// reconciler reports the details in its Ready condition.
var (
	// ErrNoCredentials: the Secret does not exist, or lacks the label
	// LabelCredentials=true (it was not marked for the operator).
	ErrNoCredentials = errors.New("the provider's credentials are not available")
	// ErrCredentialKeyMissing: the Secret has no non-empty value at the
	// referenced key.
	ErrCredentialKeyMissing = errors.New("the provider's Secret has no non-empty value at its key")
)

// ReadCredential reads a provider's credential from its Secret through
// reader (the cache of labelled Secrets): "" for a provider that needs
// none. A Secret without the label is treated as absent, even if reader
// returned it. It is the one place a credential is read.
func ReadCredential(ctx context.Context, reader client.Reader, pp *paymentsv1alpha1.PaymentProvider) (string, error) {
	ref := SecretRef(pp)
	if ref == nil {
		return "", nil
	}
	var secret corev1.Secret
	err := reader.Get(ctx, types.NamespacedName{Namespace: pp.Namespace, Name: ref.Name}, &secret)
	switch {
	case apierrors.IsNotFound(err), err == nil && secret.Labels[paymentsv1alpha1.LabelCredentials] != "true":
		return "", ErrNoCredentials
	case err != nil:
		return "", fmt.Errorf("cannot get secret %q: %w", ref.Name, err)
	case len(secret.Data[ref.Key]) == 0:
		return "", ErrCredentialKeyMissing
	}
	return string(secret.Data[ref.Key]), nil
}
