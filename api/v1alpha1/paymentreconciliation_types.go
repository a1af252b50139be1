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

// LabelReconciliation names, on each page of a reconciliation's report, the
// PaymentReconciliation it belongs to.
const LabelReconciliation = "payments.idempotency.dev/reconciliation"

// LabelReconciliationAttempt names, on each page of a reconciliation's
// report, the attempt of the run that wrote it. A run may be attempted more
// than once (a retry, or two managers without leader election): its report
// is the pages of the attempt that status.report.attempt names, and only
// those.
const LabelReconciliationAttempt = "payments.idempotency.dev/reconciliation-attempt"

// ReportPageLabels are the labels that select the pages of pr's report: those
// of the attempt its status names. Before the operator named attempts, a
// report was every page of its reconciliation.
func ReportPageLabels(pr *PaymentReconciliation) map[string]string {
	labels := map[string]string{LabelReconciliation: pr.Name}
	if r := pr.Status.Report; r != nil && r.Attempt != "" {
		labels[LabelReconciliationAttempt] = r.Attempt
	}
	return labels
}

// ReconciliationPhase is where a reconciliation run is.
// +kubebuilder:validation:Enum=Pending;Running;Completed;Failed
type ReconciliationPhase string

const (
	// ReconciliationPending means the run has not started (its provider is not
	// found or not ready yet).
	ReconciliationPending ReconciliationPhase = "Pending"
	// ReconciliationRunning means the run reads the cluster's records and the
	// provider's books.
	ReconciliationRunning ReconciliationPhase = "Running"
	// ReconciliationCompleted means the run compared both sides and wrote its
	// report, balanced or not (status.summary.discrepancies says which).
	ReconciliationCompleted ReconciliationPhase = "Completed"
	// ReconciliationFailed means the run could not finish (the provider refused
	// the credentials, the window is too large); nothing was compared.
	ReconciliationFailed ReconciliationPhase = "Failed"
)

// ReportScope says which findings a report lists.
// +kubebuilder:validation:Enum=Discrepancies;All
type ReportScope string

const (
	// ReportDiscrepancies lists the findings that are not Matched; the
	// matched ones are counted in the status only.
	ReportDiscrepancies ReportScope = "Discrepancies"
	// ReportAll lists every finding, matched ones included: a row per
	// payment and refund of the window.
	ReportAll ReportScope = "All"
)

// ProviderObjectReference names a PaymentProvider in a namespace.
type ProviderObjectReference struct {
	// namespace of the PaymentProvider.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`

	// name of the PaymentProvider.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// PaymentReconciliationSpec is one reconciliation run: a provider account and
// a time window. A run, like a Job, is never changed: create another.
// +kubebuilder:validation:XValidation:rule="has(self.from) != has(self.lookbackSeconds)",message="set exactly one of spec.from and spec.lookbackSeconds"
// +kubebuilder:validation:XValidation:rule="!has(self.to) || (has(self.from) && self.to > self.from)",message="spec.to must come after spec.from, and needs it"
type PaymentReconciliationSpec struct {
	// providerRef names the PaymentProvider whose account is reconciled:
	// every payment and refund made at that account, through any
	// PaymentProvider that reaches it, is compared.
	// +required
	ProviderRef ProviderObjectReference `json:"providerRef"`

	// from is the start of the window: objects the provider created at
	// this time or later.
	// +optional
	From *metav1.Time `json:"from,omitempty"`

	// to is the end of the window (exclusive). Unset, the window ends when
	// the run starts, less the settle margin in which the provider's books
	// may still change.
	// +optional
	To *metav1.Time `json:"to,omitempty"`

	// lookbackSeconds, instead of from, starts the window this long
	// before the run starts: what a manifest created on a schedule (a
	// CronJob) uses, so that every run covers the last day, say.
	// +optional
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=34560000
	LookbackSeconds *int64 `json:"lookbackSeconds,omitempty"`

	// namespaces limits the cluster's side to these namespaces, and the
	// provider's to the objects whose key belongs to one of them; objects
	// without a key are then left out. Unset, the whole account is
	// reconciled.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	Namespaces []string `json:"namespaces,omitempty"`

	// report says which findings the report lists: Discrepancies (the
	// default) or All.
	// +optional
	// +kubebuilder:default=Discrepancies
	Report ReportScope `json:"report,omitempty"`

	// requestsPerSecond is the run's own budget of provider requests
	// (list pages and lookups), apart from the charges' and the lookups'
	// limits, so that a reconciliation never starves the payments. Default
	// 25, a quarter of Stripe's live read limit.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	RequestsPerSecond *int32 `json:"requestsPerSecond,omitempty"`
}

// ReconciliationWindow is the window a run covered.
type ReconciliationWindow struct {
	// from is the window's start (inclusive).
	From metav1.Time `json:"from"`
	// to is the window's end (exclusive).
	To metav1.Time `json:"to"`
}

// ReconciliationSummary counts what a run found.
type ReconciliationSummary struct {
	// charges and refunds are the findings about charges and refunds.
	// +optional
	Charges int64 `json:"charges,omitempty"`
	// +optional
	Refunds int64 `json:"refunds,omitempty"`
	// matched counts the payments and refunds on which both sides agree.
	Matched int64 `json:"matched"`
	// discrepancies counts every finding that is not matched: 0 when the
	// books balance.
	Discrepancies int64 `json:"discrepancies"`
	// settling counts the provider's payments and refunds of the window
	// that the operator waits for the provider to settle (bank debits,
	// AwaitingSettlement): neither matched nor missing, and no finding;
	// a later run compares them once they settled.
	// +optional
	Settling int64 `json:"settling,omitempty"`
	// categories counts the findings by category (MissingAtProvider,
	// UnknownToCluster, Duplicate, AmountMismatch, CurrencyMismatch,
	// RefundedOutsideOperator, Disputed, CanceledOutsideOperator,
	// RefundFailedAfterSuccess, RefundOfForeignCharge, Matched); every
	// category is present.
	// +optional
	Categories map[string]int64 `json:"categories,omitempty"`
}

// ReconciliationReport says where a run's report is and how to check it.
type ReconciliationReport struct {
	// sha256 is the hex sha256 of the CSV report: the pages' csv fields
	// joined in page order.
	SHA256 string `json:"sha256"`
	// rows is the number of findings the report lists.
	// +optional
	Rows int64 `json:"rows,omitempty"`
	// pages is the number of PaymentReconciliationReport pages, labelled
	// payments.idempotency.dev/reconciliation=<name> and
	// payments.idempotency.dev/reconciliation-attempt=<attempt>, and named
	// <name>-<attempt>-NNNNN in page order.
	Pages int32 `json:"pages"`
	// attempt is the attempt of the run whose pages are the report: pages
	// of the run labelled with another attempt (one that lost a race, or
	// was cut short) are no part of it.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Attempt string `json:"attempt,omitempty"`
	// bytes is the CSV report's size.
	// +optional
	Bytes int64 `json:"bytes,omitempty"`
}

// PaymentReconciliationStatus is what the run did and found.
type PaymentReconciliationStatus struct {
	// phase is Pending, Running, Completed or Failed.
	// +optional
	Phase ReconciliationPhase `json:"phase,omitempty"`

	// window is the window the run covered, with its ends resolved.
	// +optional
	Window *ReconciliationWindow `json:"window,omitempty"`

	// completeUpTo is the time up to which the provider's data was
	// complete when it was read: objects created before it are all in the
	// comparison. It is the window's end, unless the provider could still
	// change (a window that ends in the future).
	// +optional
	CompleteUpTo *metav1.Time `json:"completeUpTo,omitempty"`

	// listed is true when the provider listed its objects of the window.
	// False means it has no list (an HTTP service without listURL): only
	// the cluster's own keys were looked up, and money moved under keys
	// the cluster does not know cannot have been found.
	// +optional
	Listed bool `json:"listed,omitempty"`

	// provider is the account reconciled.
	// +optional
	Provider *ProviderIdentity `json:"provider,omitempty"`

	// summary counts the findings.
	// +optional
	Summary *ReconciliationSummary `json:"summary,omitempty"`

	// report is where the report is, with its sha256.
	// +optional
	Report *ReconciliationReport `json:"report,omitempty"`

	// providerRequests counts the provider requests the run made.
	// +optional
	ProviderRequests int64 `json:"providerRequests,omitempty"`

	// startedAt and completedAt bound the run.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`

	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready (True once the report is written, reason Balanced
	// or DiscrepanciesFound), Reconciling (True while the run works) and
	// Stalled (True when it cannot go on without a person), as kstatus
	// reads them.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PaymentReconciliation compares, for one provider account and time window,
// the cluster's record of the money it moved (PaymentJobs, PaymentRefunds
// and the outcome ledger) with the provider's books, and reports every
// payment and refund on which they disagree. It only reads: it never
// charges, refunds or changes a job. It is cluster-scoped because an
// account's books span namespaces.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=precon,categories=payments
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Matched",type=integer,JSONPath=`.status.summary.matched`
// +kubebuilder:printcolumn:name="Discrepancies",type=integer,JSONPath=`.status.summary.discrepancies`
// +kubebuilder:printcolumn:name="From",type=date,JSONPath=`.status.window.from`,priority=1
// +kubebuilder:printcolumn:name="To",type=date,JSONPath=`.status.window.to`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PaymentReconciliation struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the run: immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: a reconciliation is a run; create another"
	Spec PaymentReconciliationSpec `json:"spec"`

	// +optional
	Status PaymentReconciliationStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PaymentReconciliationList contains a list of PaymentReconciliation.
type PaymentReconciliationList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PaymentReconciliation `json:"items"`
}

// ReconciliationFinding is one row of a report, as its JSON form.
type ReconciliationFinding struct {
	// category is what the finding says (Matched, MissingAtProvider, ...).
	Category string `json:"category"`
	// kind is charge or refund.
	Kind string `json:"kind"`
	// key is the idempotency key; empty for a provider object without one.
	// +optional
	Key string `json:"key,omitempty"`
	// object is the row's own PaymentJob or PaymentRefund,
	// "<namespace>/<name>"; empty when the cluster knows nothing of the key,
	// and for RefundedOutsideOperator, whose refund is no object of the
	// cluster's (chargeObject names the job whose charge it refunded).
	// +optional
	Object string `json:"object,omitempty"`
	// inLedger says the outcome ledger holds the row's own key (for
	// RefundedOutsideOperator, whose refund carries none, it is false:
	// chargeInLedger speaks of its charge).
	// +optional
	InLedger bool `json:"inLedger,omitempty"`
	// clusterID, clusterAmount and clusterCurrency are the cluster's side.
	// +optional
	ClusterID string `json:"clusterID,omitempty"`
	// +optional
	ClusterAmount int64 `json:"clusterAmount,omitempty"`
	// +optional
	ClusterCurrency string `json:"clusterCurrency,omitempty"`
	// providerIDs, providerAmount and providerCurrency are the provider's.
	// +optional
	// +listType=atomic
	ProviderIDs []string `json:"providerIDs,omitempty"`
	// +optional
	ProviderAmount int64 `json:"providerAmount,omitempty"`
	// +optional
	ProviderCurrency string `json:"providerCurrency,omitempty"`
	// detail says what differs.
	// +optional
	Detail string `json:"detail,omitempty"`
	// action is what a person should do.
	// +optional
	Action string `json:"action,omitempty"`
	// chargeObject is the PaymentJob of the charge the row concerns,
	// "<namespace>/<name>": a charge row's own job, a refund row's job
	// whose charge it gives money back from (RefundedOutsideOperator
	// included).
	// +optional
	ChargeObject string `json:"chargeObject,omitempty"`
	// chargeInLedger says the outcome ledger holds that charge's outcome.
	// +optional
	ChargeInLedger bool `json:"chargeInLedger,omitempty"`
	// chargeID is the provider's id of that charge.
	// +optional
	ChargeID string `json:"chargeID,omitempty"`
	// chargeLeft is what is left of that charge at the provider, in minor
	// units: its amount less every refund of it that moved money
	// (succeeded or pending), those made outside the operator included;
	// absent when the provider holds no charge the row concerns.
	// +optional
	ChargeLeft *int64 `json:"chargeLeft,omitempty"`
	// objectDeleted and chargeObjectDeleted say that object or
	// chargeObject is no longer in the cluster (deleted after its TTL): it
	// is named from its ledger entry's key, which is its name unless its
	// manifest set spec.idempotencyKey, or from the PaymentRefund that
	// names the job.
	// +optional
	ObjectDeleted bool `json:"objectDeleted,omitempty"`
	// +optional
	ChargeObjectDeleted bool `json:"chargeObjectDeleted,omitempty"`
}

// PaymentReconciliationReport is one page of a reconciliation's report,
// owned by its PaymentReconciliation and deleted with it. A report is split
// into pages well under etcd's object limit; the pages' csv fields of the
// attempt the status names, joined in page order (their names' order), are
// the CSV report whose sha256 the reconciliation's status holds:
//
//	ATTEMPT=$(kubectl get precon NAME -o jsonpath='{.status.report.attempt}')
//	kubectl get paymentreconciliationreports \
//	  -l payments.idempotency.dev/reconciliation=NAME,payments.idempotency.dev/reconciliation-attempt=$ATTEMPT \
//	  -o jsonpath='{range .items[*]}{.csv}{end}' > report.csv
//
// Only the operator writes it.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=preport,categories=payments
// +kubebuilder:printcolumn:name="Reconciliation",type=string,JSONPath=`.reconciliation`
// +kubebuilder:printcolumn:name="Page",type=integer,JSONPath=`.page`
// +kubebuilder:printcolumn:name="Rows",type=integer,JSONPath=`.rows`
type PaymentReconciliationReport struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// reconciliation is the PaymentReconciliation the page belongs to.
	Reconciliation string `json:"reconciliation"`

	// page is the page's number, from 0.
	// +kubebuilder:validation:Minimum=0
	Page int32 `json:"page"`

	// rows is the number of findings on the page.
	// +optional
	Rows int32 `json:"rows,omitempty"`

	// csv is the page's part of the CSV report: page 0 starts with the
	// header line.
	// +kubebuilder:validation:MaxLength=1048576
	CSV string `json:"csv"`

	// findings are the page's rows, as JSON.
	// +optional
	// +kubebuilder:validation:MaxItems=10000
	// +listType=atomic
	Findings []ReconciliationFinding `json:"findings,omitempty"`
}

// +kubebuilder:object:root=true

// PaymentReconciliationReportList contains a list of report pages.
type PaymentReconciliationReportList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PaymentReconciliationReport `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PaymentReconciliation{}, &PaymentReconciliationList{},
		&PaymentReconciliationReport{}, &PaymentReconciliationReportList{})
}
