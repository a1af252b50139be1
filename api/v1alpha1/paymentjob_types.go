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

// Finalizer is set on every PaymentJob before it is claimed, so that a job with
// a charge in flight cannot disappear before its outcome is recorded. It is
// removed as soon as the job has a final outcome.
const Finalizer = "payments.idempotency.dev/outcome-guard"

// LabelFinished is set to "true" on a Completed or Failed PaymentJob in the
// same write that removes the Finalizer. The manager's cache leaves such jobs
// out, so its memory grows with active jobs, not with history. The label is
// the operator's: a job created with it would never be seen, and so never
// charged; the ValidatingAdmissionPolicy in config/policy refuses it on any
// job that is not Completed or Failed.
const LabelFinished = "payments.idempotency.dev/finished"

// AnnotationResolve lets a person resolve a Processing job that is Stalled on
// an uncertain outcome: "charged=<charge id>" (the provider holds the
// charge) or "not-charged". The operator checks the value against the
// provider where it can, never charges, and records who resolved it, when
// and how in status.resolution, an event and the ledger. On any other job
// it is refused with an event.
const AnnotationResolve = "payments.idempotency.dev/resolve"

// AnnotationResolvedBy is set by the MutatingAdmissionPolicy in
// config/policy to the user who set AnnotationResolve, as the API server
// authenticated them. Without the policy the operator names the field
// manager that wrote the annotation instead.
const AnnotationResolvedBy = "payments.idempotency.dev/resolved-by"

// PaymentJobPhase is the coarse state of a PaymentJob in the exactly-once protocol.
// +kubebuilder:validation:Enum=Pending;Processing;Completed;Failed
type PaymentJobPhase string

const (
	// PhasePending means the job waits before its claim: suspended, past its
	// deadline, or its provider is not ready. No money has moved.
	PhasePending PaymentJobPhase = "Pending"
	// PhaseProcessing means a claim was written and the charge may be in
	// flight or may already have happened at the provider.
	PhaseProcessing PaymentJobPhase = "Processing"
	// PhaseCompleted means the provider confirmed the charge. Terminal.
	PhaseCompleted PaymentJobPhase = "Completed"
	// PhaseFailed means the provider definitively did not charge. Terminal.
	PhaseFailed PaymentJobPhase = "Failed"
)

// Condition types, following the kstatus conventions so that kubectl wait,
// Flux and Argo CD understand PaymentJob and PaymentProvider health.
const (
	// ConditionReady is True when a PaymentJob is Completed, or when a
	// PaymentProvider can be used.
	ConditionReady = "Ready"
	// ConditionReconciling is True while the operator works towards the
	// desired state (a PaymentJob that is Pending or Processing).
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when progress needs attention: a terminal
	// failure, or a charge whose retries are exhausted.
	ConditionStalled = "Stalled"
	// ConditionMovedOutsideOperator is True on a Completed PaymentJob
	// whose provider reports money moved outside the operator since (a
	// refund made in the dashboard), read at the provider when a signed
	// provider event named the payment; a PaymentReconciliation reports
	// it too. kstatus does not read it: the job's outcome stands.
	ConditionMovedOutsideOperator = "MovedOutsideOperator"
)

// ProviderReference names a PaymentProvider in the namespace of the PaymentJob.
type ProviderReference struct {
	// name of the PaymentProvider in the same namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// PaymentJobSpec is the payment to make. Every field but suspend is immutable:
// the request sent to the provider must be the same on every attempt.
// +kubebuilder:validation:XValidation:rule="has(self.idempotencyKey) == has(oldSelf.idempotencyKey)",message="idempotencyKey is immutable: it cannot be added or removed",fieldPath=".idempotencyKey"
// +kubebuilder:validation:XValidation:rule="has(self.customer) == has(oldSelf.customer)",message="customer is immutable: it cannot be added or removed",fieldPath=".customer"
// +kubebuilder:validation:XValidation:rule="has(self.paymentMethod) == has(oldSelf.paymentMethod)",message="paymentMethod is immutable: it cannot be added or removed",fieldPath=".paymentMethod"
// +kubebuilder:validation:XValidation:rule="has(self.description) == has(oldSelf.description)",message="description is immutable: it cannot be added or removed",fieldPath=".description"
// +kubebuilder:validation:XValidation:rule="has(self.metadata) == has(oldSelf.metadata)",message="metadata is immutable: it cannot be added or removed",fieldPath=".metadata"
// +kubebuilder:validation:XValidation:rule="has(self.backoffLimit) == has(oldSelf.backoffLimit)",message="backoffLimit is immutable: it cannot be added or removed",fieldPath=".backoffLimit"
// +kubebuilder:validation:XValidation:rule="has(self.activeDeadlineSeconds) == has(oldSelf.activeDeadlineSeconds)",message="activeDeadlineSeconds is immutable: it cannot be added or removed",fieldPath=".activeDeadlineSeconds"
type PaymentJobSpec struct {
	// providerRef names the PaymentProvider, in the same namespace, that
	// makes the charge.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="providerRef is immutable"
	ProviderRef ProviderReference `json:"providerRef"`

	// amount to charge, in the currency's minor unit (cents for usd, yen
	// for jpy). Must be greater than zero.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="amount is immutable"
	// +kubebuilder:validation:Minimum=1
	Amount int64 `json:"amount"`

	// currency is the three-letter ISO 4217 code, in lower case (usd, eur).
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="currency is immutable"
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=3
	// +kubebuilder:validation:Pattern=`^[a-z]{3}$`
	Currency string `json:"currency"`

	// idempotencyKey identifies this payment at the provider: two PaymentJobs
	// with the same key in the same namespace are one payment. Defaults to
	// metadata.name. The key sent to the provider is "<namespace>/<key>".
	// Set it to a business identifier (an invoice number) so that a job
	// deleted and re-created under another name is still charged once.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="idempotencyKey is immutable"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._:/-]+$`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`

	// customer is the provider's customer identifier (for Stripe, cus_...).
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="customer is immutable"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Customer string `json:"customer,omitempty"`

	// paymentMethod is the provider's payment method identifier (for Stripe,
	// pm_...). Card numbers never belong here.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="paymentMethod is immutable"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	PaymentMethod string `json:"paymentMethod,omitempty"`

	// description of the payment, shown by the provider.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="description is immutable"
	// +kubebuilder:validation:MaxLength=1000
	Description string `json:"description,omitempty"`

	// metadata is attached to the payment at the provider: at most 40
	// entries, keys of 1 to 40 characters, values of at most 500 characters.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="metadata is immutable"
	// +kubebuilder:validation:MaxProperties=40
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) >= 1 && size(k) <= 40)",message="metadata keys must be 1 to 40 characters long"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 500)",message="metadata values must be at most 500 characters long"
	Metadata map[string]string `json:"metadata,omitempty"`

	// suspend keeps a job that has not been claimed yet in Pending. It is the
	// only mutable field. Once a job is Processing the charge may already be
	// at the provider, so suspend no longer stops it.
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// backoffLimit is the number of retries after transient provider errors
	// before the job reports Stalled=True. A stalled job keeps retrying at
	// the longest interval: its outcome is uncertain, so it is never Failed.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="backoffLimit is immutable"
	// +kubebuilder:default=6
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`

	// activeDeadlineSeconds bounds how long, from creation, a job may wait
	// before it is claimed. A job past its deadline is never charged. It does
	// not stop a job that is already Processing.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="activeDeadlineSeconds is immutable"
	// +kubebuilder:validation:Minimum=1
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// ttlSecondsAfterFinished deletes the job this many seconds after it is
	// Completed or Failed, like batch/v1 Job. The outcome stays in the
	// operator's ledger, so a job re-created with the same key (from Git,
	// for example) is finished from the ledger and never charged again; such
	// a re-created job is kept, so a GitOps tool does not re-create it over
	// and over. Unset uses the manager's --ttl-seconds-after-finished
	// (by default, never deleted). It may be changed at any time.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// Claim records which manager process owns the charge of a PaymentJob, and
// until when. It is written with the resourceVersion it was decided on, so two
// processes can never both hold it. Its times have microsecond precision, like
// a coordination Lease, so a lease of a few seconds is not cut short by
// rounding to the second.
type Claim struct {
	// holder identifies the claiming process: pod name and a per-process id.
	// +required
	Holder string `json:"holder"`

	// acquiredAt is when the claim was written.
	// +required
	AcquiredAt metav1.MicroTime `json:"acquiredAt"`

	// expiresAt is when another process may take the claim over, with the
	// same idempotency key.
	// +required
	ExpiresAt metav1.MicroTime `json:"expiresAt"`
}

// ProviderResponse is what the provider answered for the charge.
type ProviderResponse struct {
	// id of the charge at the provider (for Stripe, the PaymentIntent pi_...).
	// +optional
	ID string `json:"id,omitempty"`

	// status reported by the provider, such as succeeded.
	// +optional
	Status string `json:"status,omitempty"`

	// amount charged, in minor units.
	// +optional
	Amount int64 `json:"amount,omitempty"`

	// currency charged.
	// +optional
	Currency string `json:"currency,omitempty"`

	// created is when the provider created the charge.
	// +optional
	Created *metav1.Time `json:"created,omitempty"`

	// replayed is true when the provider answered with the saved outcome of
	// an earlier request with the same idempotency key instead of charging.
	// +optional
	Replayed bool `json:"replayed,omitempty"`
}

// Failure says why the provider definitively refused the payment.
type Failure struct {
	// reason is a condition-reason code, such as CardDeclined or InvalidRequest.
	// +required
	Reason string `json:"reason"`

	// message is a human-readable explanation from the provider.
	// +optional
	Message string `json:"message,omitempty"`
}

// PaymentJobStatus is the observed state of a PaymentJob. It is the operator's
// write-ahead record: the claim is written before the provider is called.
type PaymentJobStatus struct {
	PaymentStatus `json:",inline"`
}

// PaymentStatus is the state of the exactly-once protocol, shared by every
// kind that moves money (PaymentJob, PaymentRefund): the write-ahead claim,
// the key and request sent, where they were sent, and the outcome.
type PaymentStatus struct {
	// phase is Pending, Processing, Completed or Failed.
	// +optional
	Phase PaymentJobPhase `json:"phase,omitempty"`

	// idempotencyKey is the exact key sent to the provider.
	// +optional
	IdempotencyKey string `json:"idempotencyKey,omitempty"`

	// requestHash is the fingerprint of the request sent to the provider.
	// +optional
	RequestHash string `json:"requestHash,omitempty"`

	// attempts counts the claims taken so far.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`

	// claim is the current owner of the charge, while Processing.
	// +optional
	Claim *Claim `json:"claim,omitempty"`

	// provider identifies where the idempotency key was first sent: the
	// PaymentProvider object and the account behind it. A later attempt
	// that would reach another never charges.
	// +optional
	Provider *ProviderIdentity `json:"provider,omitempty"`

	// providerResponse is the provider's answer once the charge succeeded.
	// +optional
	ProviderResponse *ProviderResponse `json:"providerResponse,omitempty"`

	// failure says why the payment failed; set only when Failed.
	// +optional
	Failure *Failure `json:"failure,omitempty"`

	// settlement is set while the provider holds the payment accepted but
	// not settled (a bank debit), and kept once it settles.
	// +optional
	Settlement *Settlement `json:"settlement,omitempty"`

	// startedAt is when the job was first claimed.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// completedAt is when the job reached Completed or Failed.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`

	// resolution records how a person resolved an uncertain outcome with
	// the payments.idempotency.dev/resolve annotation.
	// +optional
	Resolution *Resolution `json:"resolution,omitempty"`

	// observedGeneration is the generation of the spec that the status
	// describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions are Ready, Reconciling and Stalled, in the kstatus sense.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Resolution is a person's answer to an uncertain payment.
type Resolution struct {
	// value is the annotation's value: "charged=<charge id>" or
	// "not-charged".
	// +required
	// +kubebuilder:validation:MaxLength=300
	Value string `json:"value"`

	// at is when the operator accepted the resolution.
	// +required
	At metav1.Time `json:"at"`

	// by is who set the annotation, as the API server authenticated them
	// (with the admission policy in config/policy), or else the field
	// manager that wrote it.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	By string `json:"by,omitempty"`

	// verified is true when the provider confirmed the resolution: it
	// holds the charge, or it holds no charge under the key. False when
	// the provider cannot be asked.
	// +optional
	Verified bool `json:"verified,omitempty"`
}

// ProviderIdentity names the provider account a payment was sent to.
type ProviderIdentity struct {
	// uid of the PaymentProvider object.
	// +required
	// +kubebuilder:validation:MaxLength=128
	UID string `json:"uid"`

	// endpoint is the Stripe API base or the HTTP service's url.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Endpoint string `json:"endpoint,omitempty"`

	// account is the provider's identifier of the account, such as Stripe's
	// acct_..., when the provider names one.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Account string `json:"account,omitempty"`

	// mode is "live" or "test" for providers whose credentials say which
	// (Stripe: sk_live_/rk_live_ or sk_test_/rk_test_): a test-mode and a
	// live-mode key of one Stripe account report the same account id, yet
	// move money in different books. Empty when the provider does not say.
	// +optional
	// +kubebuilder:validation:Enum=live;test
	Mode string `json:"mode,omitempty"`

	// keyScope is the PaymentProvider's spec.keyScope when the payment was
	// first claimed: part of every key the payment sends and records.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	KeyScope string `json:"keyScope,omitempty"`
}

// PaymentJob is one payment, made at its provider exactly once.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pj,categories=payments
// +kubebuilder:selectablefield:JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Amount",type=integer,JSONPath=`.spec.amount`
// +kubebuilder:printcolumn:name="Currency",type=string,JSONPath=`.spec.currency`
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.providerRef.name`
// +kubebuilder:printcolumn:name="Charge",type=string,JSONPath=`.status.providerResponse.id`
// +kubebuilder:printcolumn:name="Attempts",type=integer,JSONPath=`.status.attempts`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PaymentJob struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the payment to make.
	// +required
	Spec PaymentJobSpec `json:"spec"`

	// status is the progress of the payment, written by the operator.
	// +optional
	Status PaymentJobStatus `json:"status,omitempty"`
}

// PaymentJobList is a list of PaymentJobs.
// +kubebuilder:object:root=true
type PaymentJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PaymentJob `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PaymentJob{}, &PaymentJobList{})
}
