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

// LedgerOutcome is the final outcome a ledger entry records.
// +kubebuilder:validation:Enum=Completed;Failed
type LedgerOutcome string

const (
	// LedgerCompleted records a charge the provider made (or that a person
	// resolved as made).
	LedgerCompleted LedgerOutcome = "Completed"
	// LedgerFailed records a payment the provider definitively refused (or
	// that a person resolved as not made).
	LedgerFailed LedgerOutcome = "Failed"
)

// LedgerEntry is the durable record of one finished payment, kept after its
// PaymentJob, PaymentProvider, Secret and namespace are gone.
type LedgerEntry struct {
	// key is the idempotency key sent to the provider, "<namespace>/<key>"
	// (hashed when longer than 255 characters), as in a job's
	// status.idempotencyKey.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Key string `json:"key"`

	// fingerprint is the request fingerprint, as in a job's
	// status.requestHash. A job with the same key and another fingerprint
	// is not this payment.
	// +required
	// +kubebuilder:validation:MaxLength=128
	Fingerprint string `json:"fingerprint"`

	// provider is the index in providers of the account that was charged.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Provider int32 `json:"provider,omitempty"`

	// charge is the provider's id of the charge (for Stripe, pi_...).
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Charge string `json:"charge,omitempty"`

	// amount is the money the payment moves, in the currency's minor unit:
	// what a reconciliation compares with the provider's books once the job
	// is gone. Absent on entries recorded before the ledger kept it.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Amount int64 `json:"amount,omitempty"`

	// currency is the lower-case ISO 4217 code of amount.
	// +optional
	// +kubebuilder:validation:MaxLength=3
	Currency string `json:"currency,omitempty"`

	// refundedCharge is, for a refund's entry, the provider's id of the
	// charge the refund gives money back from; absent for a charge's entry
	// and on entries recorded before the ledger kept it.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	RefundedCharge string `json:"refundedCharge,omitempty"`

	// outcome is Completed or Failed.
	// +required
	Outcome LedgerOutcome `json:"outcome"`

	// reason is the failure reason of a Failed entry, or Resolved for an
	// outcome a person resolved.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason,omitempty"`

	// resolvedBy names who resolved the outcome by hand, if a person did.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	ResolvedBy string `json:"resolvedBy,omitempty"`

	// at is when the outcome was recorded in the job.
	// +required
	At metav1.Time `json:"at"`
}

// LedgerSummary describes a page at a glance, for kubectl get.
type LedgerSummary struct {
	// entries is the number of entries on the page.
	// +optional
	Entries int32 `json:"entries,omitempty"`

	// oldest is the time of the page's oldest entry.
	// +optional
	Oldest *metav1.Time `json:"oldest,omitempty"`

	// newest is the time of the page's newest entry. Retention deletes a
	// page once its newest entry is older than the retention.
	// +optional
	Newest *metav1.Time `json:"newest,omitempty"`
}

// PaymentLedger is one page of the operator's outcome ledger: the record of
// finished payments that outlives their PaymentJobs. The operator appends
// entries to the newest page with optimistic concurrency, starts a new page
// when one is full (well under 1 MiB), and deletes whole pages older than its
// retention. It is cluster-scoped, so deleting a namespace does not delete
// the record of the payments made from it. Only the operator writes it.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=pledger,categories=payments
// +kubebuilder:printcolumn:name="Entries",type=integer,JSONPath=`.summary.entries`
// +kubebuilder:printcolumn:name="Oldest",type=date,JSONPath=`.summary.oldest`
// +kubebuilder:printcolumn:name="Newest",type=date,JSONPath=`.summary.newest`
type PaymentLedger struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// summary counts the entries and gives their time span.
	// +optional
	Summary LedgerSummary `json:"summary,omitempty"`

	// providers are the provider accounts the entries refer to by index,
	// each written once per page.
	// +optional
	// +kubebuilder:validation:MaxItems=10000
	// +listType=atomic
	Providers []ProviderIdentity `json:"providers,omitempty"`

	// entries are the finished payments, oldest first.
	// +optional
	// +kubebuilder:validation:MaxItems=10000
	// +listType=atomic
	Entries []LedgerEntry `json:"entries,omitempty"`
}

// +kubebuilder:object:root=true

// PaymentLedgerList contains a list of PaymentLedger pages.
type PaymentLedgerList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PaymentLedger `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PaymentLedger{}, &PaymentLedgerList{})
}
