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

// RefundReason is why money is given back, in Stripe's words.
// +kubebuilder:validation:Enum=duplicate;fraudulent;requested_by_customer
type RefundReason string

const (
	// RefundDuplicate says the charge was made twice.
	RefundDuplicate RefundReason = "duplicate"
	// RefundFraudulent says the charge was fraudulent.
	RefundFraudulent RefundReason = "fraudulent"
	// RefundRequestedByCustomer says the customer asked for the money back.
	RefundRequestedByCustomer RefundReason = "requested_by_customer"
)

// PaymentJobReference names the payment a PaymentRefund gives money back
// from: a PaymentJob in the same namespace, present or deleted.
type PaymentJobReference struct {
	// name of the PaymentJob in the same namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// idempotencyKey is the PaymentJob's spec.idempotencyKey, if it set one.
	// It is read only once the PaymentJob is gone (deleted by its TTL, or
	// by hand): the refund then finds the charge in the operator's ledger
	// under the job's key, which is this field or else name. While the job
	// exists, the job's own key is used, and a different value here stalls
	// the refund (PaymentMismatch) instead of refunding another payment.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._:/-]+$`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}

// PaymentRefundSpec is the refund to make. Every field but suspend is
// immutable: the request sent to the provider must be the same on every
// attempt.
// +kubebuilder:validation:XValidation:rule="has(self.amount) == has(oldSelf.amount)",message="amount is immutable: it cannot be added or removed",fieldPath=".amount"
// +kubebuilder:validation:XValidation:rule="has(self.reason) == has(oldSelf.reason)",message="reason is immutable: it cannot be added or removed",fieldPath=".reason"
// +kubebuilder:validation:XValidation:rule="has(self.idempotencyKey) == has(oldSelf.idempotencyKey)",message="idempotencyKey is immutable: it cannot be added or removed",fieldPath=".idempotencyKey"
// +kubebuilder:validation:XValidation:rule="has(self.metadata) == has(oldSelf.metadata)",message="metadata is immutable: it cannot be added or removed",fieldPath=".metadata"
// +kubebuilder:validation:XValidation:rule="has(self.backoffLimit) == has(oldSelf.backoffLimit)",message="backoffLimit is immutable: it cannot be added or removed",fieldPath=".backoffLimit"
// +kubebuilder:validation:XValidation:rule="has(self.activeDeadlineSeconds) == has(oldSelf.activeDeadlineSeconds)",message="activeDeadlineSeconds is immutable: it cannot be added or removed",fieldPath=".activeDeadlineSeconds"
type PaymentRefundSpec struct {
	// providerRef names the PaymentProvider, in the same namespace, that
	// makes the refund. It must reach the account that holds the charge:
	// a refund is never sent anywhere else (ProviderChanged).
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="providerRef is immutable"
	ProviderRef ProviderReference `json:"providerRef"`

	// paymentJobRef names the payment to refund.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="paymentJobRef is immutable"
	PaymentJobRef PaymentJobReference `json:"paymentJobRef"`

	// amount to refund, in the charge's minor unit. Defaults to the whole
	// charge; a refund is never more than what is left of it (the charge
	// less the refunds already made), or it fails without a provider call.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="amount is immutable"
	// +kubebuilder:validation:Minimum=1
	Amount *int64 `json:"amount,omitempty"`

	// reason is Stripe's refund reason: duplicate, fraudulent or
	// requested_by_customer.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="reason is immutable"
	Reason RefundReason `json:"reason,omitempty"`

	// idempotencyKey identifies this refund at the provider: two
	// PaymentRefunds with the same key in the same namespace are one
	// refund. Defaults to metadata.name. The key sent is
	// "<namespace>.refund/<key>", never equal to any PaymentJob's key.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="idempotencyKey is immutable"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._:/-]+$`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`

	// metadata is attached to the refund at the provider.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="metadata is immutable"
	// +kubebuilder:validation:MaxProperties=40
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) >= 1 && size(k) <= 40)",message="metadata keys must be 1 to 40 characters long"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 500)",message="metadata values must be at most 500 characters long"
	Metadata map[string]string `json:"metadata,omitempty"`

	// suspend holds the refund before it is sent: an approval gate. Setting
	// it once the refund is Processing does not stop the request in flight.
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// backoffLimit is the number of uncertain attempts after which the
	// refund reports Stalled=True; it keeps retrying with the same key.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="backoffLimit is immutable"
	// +kubebuilder:default=6
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`

	// activeDeadlineSeconds is how long after creation the refund may be
	// sent for the first time; past it, an unsent refund is never sent.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="activeDeadlineSeconds is immutable"
	// +kubebuilder:validation:Minimum=1
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// ttlSecondsAfterFinished deletes the refund this long after it is
	// Completed or Failed, once its outcome is in the ledger.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// RefundedCharge is the charge a refund gives money back from, as the
// refund found it before its first claim.
type RefundedCharge struct {
	// id of the charge at the provider (Stripe: pi_...).
	// +required
	// +kubebuilder:validation:MaxLength=255
	ID string `json:"id"`

	// idempotencyKey is the key the charge was sent under.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	IdempotencyKey string `json:"idempotencyKey,omitempty"`

	// amount of the charge, in minor units.
	// +optional
	Amount int64 `json:"amount,omitempty"`

	// currency of the charge, as the provider answered it.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Currency string `json:"currency,omitempty"`
}

// PaymentRefundStatus is the observed state of a PaymentRefund: the same
// write-ahead record as a PaymentJob's, and the charge it refunds.
type PaymentRefundStatus struct {
	PaymentStatus `json:",inline"`

	// charge is the refunded charge, recorded with the first claim.
	// +optional
	Charge *RefundedCharge `json:"charge,omitempty"`
}

// PaymentRefund gives (part of) a PaymentJob's charge back, exactly once.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=prefund,categories=payments
// +kubebuilder:selectablefield:JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Payment",type=string,JSONPath=`.spec.paymentJobRef.name`
// +kubebuilder:printcolumn:name="Amount",type=integer,JSONPath=`.spec.amount`
// +kubebuilder:printcolumn:name="Refunded",type=integer,JSONPath=`.status.providerResponse.amount`
// +kubebuilder:printcolumn:name="Currency",type=string,JSONPath=`.status.charge.currency`
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.providerRef.name`
// +kubebuilder:printcolumn:name="Refund",type=string,JSONPath=`.status.providerResponse.id`
// +kubebuilder:printcolumn:name="Attempts",type=integer,JSONPath=`.status.attempts`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PaymentRefund struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the refund to make.
	// +required
	Spec PaymentRefundSpec `json:"spec"`

	// status is the progress of the refund, written by the operator.
	// +optional
	Status PaymentRefundStatus `json:"status,omitempty"`
}

// PaymentRefundList is a list of PaymentRefunds.
// +kubebuilder:object:root=true
type PaymentRefundList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PaymentRefund `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PaymentRefund{}, &PaymentRefundList{})
}
