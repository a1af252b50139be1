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
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// Outcomes of a provider call, the label of paymentjob_charges_total.
const (
	outcomeSucceeded = "succeeded"
	outcomeDeclined  = "declined"
	outcomeInvalid   = "invalid"
	outcomeKeyReused = "key_reused"
	outcomeTransient = "transient"
)

// refusalOutcome is the outcome label of a definitive refusal.
func refusalOutcome(r *payment.Refusal) string {
	switch {
	case errors.Is(r, payment.ErrDeclined):
		return outcomeDeclined
	case errors.Is(r, payment.ErrKeyReused):
		return outcomeKeyReused
	default:
		return outcomeInvalid
	}
}

// Results of a key's lookup, the label of paymentjob_lookup_keys_total.
const (
	lookupFound  = "found"
	lookupNone   = "none"
	lookupFailed = "failed"
)

// newCounter, newCounterVec and newGauge make the collectors below from
// their name and help (and label).
func newCounter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

func newCounterVec(name, label, help string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{label})
}

func newGauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

// The charge: provider calls by outcome, replays, and the writes around the claim.
var (
	chargesTotal        = newCounterVec("paymentjob_charges_total", "outcome", "Provider charge calls by outcome: succeeded (including replays), declined, invalid, key_reused, transient.")
	replaysTotal        = newCounter("paymentjob_replays_total", "Charge calls that the provider answered with the saved outcome of an earlier request with the same key.")
	claimConflictsTotal = newCounter("paymentjob_claim_conflicts_total", "Claim writes refused with a resourceVersion conflict (stale cache or another replica); each was requeued and charged nothing.")
	writeConflictsTotal = newCounter("paymentjob_write_conflicts_total", "Writes of any kind (claims, finalizers, outcomes, progress) refused with a resourceVersion conflict; each was requeued.")
	claimLostTotal      = newCounter("paymentjob_claim_lost_total", "Outcomes not written because another process took the claim over during the provider call; the new holder replays the outcome.")
)

// The refund: the same for refund calls, and refunds the provider failed
// after it reported them succeeded.
var (
	refundsTotal                   = newCounterVec("paymentjob_refunds_total", "outcome", "Provider refund calls by outcome: succeeded (including replays), declined (the refund failed, or the provider refused it: beyond what is left, unknown or not refundable charge), invalid (a malformed request), key_reused, transient.")
	refundReplaysTotal             = newCounter("paymentjob_refund_replays_total", "Refund calls that the provider answered with the saved outcome of an earlier request with the same key.")
	refundsFailedAfterSuccessTotal = newCounter("paymentjob_refunds_failed_after_success_total", "Completed PaymentRefunds that the provider later reported failed or canceled: the money did not go back. Each is set Failed (RefundFailedAfterSuccess) with a Warning event.")
)

// callMetrics are the provider-call counters of kind k.
func callMetrics(k Kind) (*prometheus.CounterVec, prometheus.Counter) {
	if _, ok := k.(refundKind); ok {
		return refundsTotal, refundReplaysTotal
	}
	return chargesTotal, replaysTotal
}

// Lookups of a key at the provider before a charge.
var (
	lookupRequestsTotal = newCounter("paymentjob_lookup_requests_total", "Lookup requests sent to providers; one request looks up to 10 keys up.")
	lookupKeysTotal     = newCounterVec("paymentjob_lookup_keys_total", "result", "Keys looked up at providers by result: found (the provider holds a charge under it), none, failed.")
)

// Jobs held back: stalls, stale cache copies, finished jobs, deleted providers, rate limits.
var (
	stalledTotal         = newCounterVec("paymentjob_stalled_total", "reason", "Jobs stopped without a charge because charging could pay twice, by reason: ProviderChanged, ChargeMismatch, KeyMismatch, RequestChanged, UncertainRefusal.")
	staleSkipsTotal      = newCounter("paymentjob_stale_cache_skips_total", "Reconciles skipped because the cached job was older than this process's own last write of it.")
	skippedTerminalTotal = newCounter("paymentjob_skipped_terminal_total", "Reconciles of Completed or Failed jobs that returned without a provider call.")
	strandedJobsGauge    = newGauge("paymentjob_jobs_waiting_for_deleted_provider", "Processing jobs whose PaymentProvider was deleted (or is being deleted) while this process holds no adapter for it; each is Stalled (ProviderDeleted) until a person resolves it.")
	rateLimitedTotal     = newCounter("paymentjob_rate_limited_total", "Charges put off to wait for a token of their provider's client-side rate limit.")
)

// The outcome ledger, resolutions by hand and the collector of finished jobs.
var (
	ledgerHitsTotal   = newCounter("paymentjob_ledger_hits_total", "Jobs finished from the outcome ledger, with no provider call (re-created jobs whose payment was already made or refused).")
	resolutionsTotal  = newCounterVec("paymentjob_resolutions_total", "result", "Resolve annotations by result: charged, not_charged, refused.")
	ttlDeletionsTotal = newCounter("paymentjob_ttl_deletions_total", "Finished jobs deleted after ttlSecondsAfterFinished, their outcome kept in the ledger.")
)

// The audit of the admission policies and of the finished labels.
var (
	admissionPoliciesMissing    = newGauge("paymentjob_admission_policies_missing", "Admission policies of config/policy that the last audit found missing or not enforced (no binding, a validating binding without Deny, type-checking warnings). Unchanged when the audit could not list them.")
	finishedLabelWithoutOutcome = newGauge("paymentjob_finished_label_without_outcome", "PaymentJobs that the last audit found with the finished label but neither Completed nor Failed: out of the operator's cache, they are never charged. Unchanged when the audit could not list them.")
	auditErrorsTotal            = newCounterVec("paymentjob_audit_errors_total", "check", "Audit checks that could not be completed (an API error, RBAC refused), by check: admission_policies, finished_label. The check's gauge keeps its last value.")
)

// How long a reconcile takes.
var (
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "paymentjob_reconcile_duration_seconds", Help: "Duration of PaymentJob reconciles, by the phase the job was in when the reconcile started.",
		Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}, []string{"phase"})
)

// phaseLabel is the phase label of paymentjob_reconcile_duration_seconds.
func phaseLabel(p paymentsv1alpha1.PaymentJobPhase) string {
	if p == "" {
		return "New"
	}
	return string(p)
}

// Collectors returns every collector this package registers in
// controller-runtime's metrics registry: the names the dashboards, the
// alerts and docs/observability.md may use.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{chargesTotal, replaysTotal, refundsTotal, refundReplaysTotal, refundsFailedAfterSuccessTotal, claimConflictsTotal, writeConflictsTotal, claimLostTotal,
		lookupRequestsTotal, lookupKeysTotal, stalledTotal,
		skippedTerminalTotal, staleSkipsTotal, reconcileDuration, ledgerHitsTotal, resolutionsTotal, ttlDeletionsTotal,
		strandedJobsGauge, rateLimitedTotal, admissionPoliciesMissing, finishedLabelWithoutOutcome, auditErrorsTotal}
}

func init() {
	metrics.Registry.MustRegister(Collectors()...)
	// Both series exist from the start, so that increase() sees the first error.
	auditErrorsTotal.WithLabelValues(auditCheckAdmissionPolicies)
	auditErrorsTotal.WithLabelValues(auditCheckFinishedLabel)
}
