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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LabelCredentials marks a Secret that PaymentProviders may use: the
// operator reads only Secrets labelled with it set to "true", through a
// cache that the API server fills with those Secrets alone, so a
// PaymentProvider can never turn another Secret of its namespace into a
// bearer token sent elsewhere.
const LabelCredentials = "payments.idempotency.dev/credentials"

// ProviderFinalizer is set on a PaymentProvider while unfinished jobs
// reference it, so that the provider (and the adapter the operator keeps
// for it) cannot disappear while a charge may be in flight. Once the
// provider is being deleted, only its Processing jobs hold it: jobs that
// were not claimed are never charged through a provider being deleted.
const ProviderFinalizer = "payments.idempotency.dev/in-use"

// SecretKeyReference selects one key of a Secret in the namespace of the
// PaymentProvider. Secrets are never read from another namespace, and only
// when labelled with LabelCredentials: "true".
type SecretKeyReference struct {
	// name of the Secret. It must carry the label
	// payments.idempotency.dev/credentials: "true".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// key in the Secret's data whose value is the credential.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`
}

// StripeProvider charges through Stripe PaymentIntents.
type StripeProvider struct {
	// apiBase overrides the Stripe API URL, for the bundled sandbox or
	// stripe-mock. Defaults to https://api.stripe.com.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	APIBase string `json:"apiBase,omitempty"`

	// secretKeyRef selects the Stripe secret key (sk_...).
	// +required
	SecretKeyRef SecretKeyReference `json:"secretKeyRef"`
}

// HTTPProvider charges through a payment service that implements the
// operator's HTTP contract: a JSON POST with an Idempotency-Key header.
type HTTPProvider struct {
	// url that receives the charge requests.
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	URL string `json:"url"`

	// secretKeyRef selects an optional bearer token sent in the
	// Authorization header.
	// +optional
	SecretKeyRef *SecretKeyReference `json:"secretKeyRef,omitempty"`

	// lookupURL is the service's optional lookup endpoint (see the HTTP
	// contract in docs/providers.md): GET with the keys in the query, it
	// answers every charge held under them. Without it the operator cannot
	// find a charge whose key the service forgot, so the service must keep
	// its keys as long as manifests can come back (from Git, a backup, a
	// rebuilt cluster), and it names no account, so only the url identifies
	// where a payment was sent.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	LookupURL string `json:"lookupURL,omitempty"`

	// refundURL is the service's optional refund endpoint (see "Refunds" in
	// the HTTP contract, docs/providers.md): POST, one refund of a charge
	// per idempotency key. PaymentRefunds through this provider need it and
	// lookupURL, which must then list a charge's refunds; without them a
	// PaymentRefund waits (Pending, RefundsUnsupported) and sends nothing.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	RefundURL string `json:"refundURL,omitempty"`

	// listURL is the service's optional list endpoint (see "The list
	// endpoint" in the HTTP contract, docs/providers.md): GET, the charges
	// or refunds created in a time window, a page at a time. A
	// PaymentReconciliation needs it to find money moved under keys the
	// cluster does not know; without it a reconciliation looks up the
	// cluster's own keys only, and its report says so.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	ListURL string `json:"listURL,omitempty"`
}

// LookupPolicy says when a job's key is looked up at the provider.
// +kubebuilder:validation:Enum=BeforeFirstCharge;Never
type LookupPolicy string

const (
	// LookupBeforeFirstCharge looks every job's key up before its first
	// charge, and records a charge found instead of making another.
	LookupBeforeFirstCharge LookupPolicy = "BeforeFirstCharge"
	// LookupNever never looks a key up before the first charge.
	LookupNever LookupPolicy = "Never"
)

// ProviderLookup configures the lookups of a provider that can find charges
// by their idempotency key (Stripe; an HTTP service with a lookupURL).
type ProviderLookup struct {
	// policy is BeforeFirstCharge (the default): before a job's first
	// charge its key is looked up, and a charge found is recorded instead of
	// making another one. This is what keeps a manifest that comes back after
	// the provider forgot its key (Stripe: 24 hours), from Git, a backup or a
	// rebuilt cluster, from being charged again.
	// Never turns that off and loses exactly that protection: a job created
	// again after the provider forgot its key is charged again. Jobs
	// Processing for longer than the provider's key memory are still looked
	// up before they are retried, whatever the policy.
	// +optional
	// +kubebuilder:default=BeforeFirstCharge
	Policy LookupPolicy `json:"policy,omitempty"`

	// requestsPerSecond limits the lookup requests, apart from the charge
	// requests of spec.requestsPerSecond; one request looks up to 10 keys
	// up. Defaults to 20, Stripe's search limit in live mode.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	RequestsPerSecond *int32 `json:"requestsPerSecond,omitempty"`

	// searchLagSeconds is how long a charge may take to show in the
	// provider's lookup after it was made. A Stalled job is resolved as
	// not-charged (the resolve annotation) only once its last attempt is
	// older than this and the lookup finds nothing that succeeded or may
	// still succeed; until then the resolution waits, and the job makes no
	// new attempt. Defaults to 900 (15 minutes) for Stripe, whose search
	// usually lags by under a minute but by up to an hour during incidents,
	// and to 60 for an HTTP service, whose lookup must be read-after-write.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	SearchLagSeconds *int32 `json:"searchLagSeconds,omitempty"`
}

// ProviderSettlement configures how payments that settle later (bank
// debits) are waited for.
type ProviderSettlement struct {
	// deadlineSeconds is how long a payment may stay accepted and not
	// settled before it is reported Stalled (SettlementOverdue). Defaults
	// to the time its payment method documents: SEPA Direct Debit 14
	// business days (20 days), ACH Direct Debit 4 business days (7 days),
	// Bacs Direct Debit 3 business days (7 days), any other 20 days. The
	// operator goes on reading a payment past its deadline.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=7776000
	DeadlineSeconds *int32 `json:"deadlineSeconds,omitempty"`
}

// ProviderEvents configures the signed events the provider sends to the
// operator's events endpoint (off unless the manager serves it, see
// docs/security.md). An event only wakes the payments it names; the
// operator reads the provider before it writes any outcome.
type ProviderEvents struct {
	// secretRef selects the endpoint's signing secret (Stripe: whsec_...;
	// the HTTP contract: the shared HMAC key). The Secret must carry the
	// label payments.idempotency.dev/credentials: "true".
	// +required
	SecretRef SecretKeyReference `json:"secretRef"`
}

// PaymentProviderSpec configures one payment provider account. Exactly one of
// stripe and http is set.
// +kubebuilder:validation:XValidation:rule="has(self.stripe) != has(self.http)",message="exactly one of spec.stripe or spec.http must be set"
type PaymentProviderSpec struct {
	// stripe configures a Stripe account.
	// +optional
	Stripe *StripeProvider `json:"stripe,omitempty"`

	// http configures a payment service reached over the operator's HTTP
	// contract.
	// +optional
	HTTP *HTTPProvider `json:"http,omitempty"`

	// requestsPerSecond limits the requests sent to the provider, shared by
	// all the PaymentJobs that use it. Unlimited when unset.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	RequestsPerSecond *int32 `json:"requestsPerSecond,omitempty"`

	// burst is the number of requests that may be sent at once above
	// requestsPerSecond. Defaults to requestsPerSecond.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	Burst *int32 `json:"burst,omitempty"`

	// lookup configures how charges are looked up by their key before a
	// job's first charge. On by default for providers that support it.
	// +optional
	Lookup *ProviderLookup `json:"lookup,omitempty"`

	// timeoutSeconds bounds one call to the provider. Defaults to the
	// manager's --provider-timeout, and is always kept shorter than the
	// claim lease.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=600
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`

	// keyScope keeps payments apart that would otherwise share idempotency
	// keys: it is prepended to every key sent through this provider and
	// recorded in the outcome ledger ("<keyScope>:<namespace>/<key>").
	// Set it where namespace names are recycled for new tenants (a new
	// tenant's manifests never read an old tenant's outcomes) or where
	// clusters share one provider account with the same namespace names.
	// A new scope is a new key space: a manifest applied again under
	// another scope is a new payment, and so is the way to charge at a new
	// provider account jobs whose outcome the ledger holds for another
	// (ProviderChanged). It applies to jobs claimed after it is set; a job
	// already claimed keeps the key it was claimed with.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	KeyScope string `json:"keyScope,omitempty"`

	// settlement configures the wait for payments that settle later (bank
	// debits).
	// +optional
	Settlement *ProviderSettlement `json:"settlement,omitempty"`

	// events turns on signed provider events for this provider: the
	// endpoint POST /events/<namespace>/<name> of the manager's events
	// server accepts events signed with this secret.
	// +optional
	Events *ProviderEvents `json:"events,omitempty"`
}

// PaymentProviderStatus is the observed state of a PaymentProvider.
type PaymentProviderStatus struct {
	// observedGeneration is the generation of the spec that the status
	// describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions holds Ready: False with a reason when the provider cannot
	// be used, for example because its Secret is missing.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PaymentProvider is a payment provider account that PaymentJobs in the same
// namespace charge through.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=payments
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PaymentProvider struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec configures the provider.
	// +required
	Spec PaymentProviderSpec `json:"spec"`

	// status reports whether the provider can be used.
	// +optional
	Status PaymentProviderStatus `json:"status,omitempty"`
}

// PaymentProviderList is a list of PaymentProviders.
// +kubebuilder:object:root=true
type PaymentProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PaymentProvider `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PaymentProvider{}, &PaymentProviderList{})
}
