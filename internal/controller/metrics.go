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

var (
	ledgerHitsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "paymentjob_ledger_hits_total",
		Help: "Jobs finished from the outcome ledger, with no provider call (re-created jobs whose payment was already made or refused).",
	})
	resolutionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paymentjob_resolutions_total",
		Help: "Resolve annotations by result: charged, not_charged, refused.",
	}, []string{"result"})
	ttlDeletionsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "paymentjob_ttl_deletions_total",
		Help: "Finished jobs deleted after ttlSecondsAfterFinished, their outcome kept in the ledger.",
	})
	chargesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paymentjob_charges_total",
		Help: "Provider charge calls by outcome: succeeded (including replays), declined, invalid, key_reused, transient.",
	}, []string{"outcome"})
	replaysTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "paymentjob_replays_total",
		Help: "Charge calls that the provider answered with the saved outcome of an earlier request with the same key.",
	})
	claimConflictsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "paymentjob_claim_conflicts_total",
		Help: "Claim writes refused with a resourceVersion conflict (stale cache or another replica); each was requeued and charged nothing.",
	})
	writeConflictsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "paymentjob_write_conflicts_total",
		Help: "Writes of any kind (claims, finalizers, outcomes, progress) refused with a resourceVersion conflict; each was requeued.",
	})
	claimLostTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "paymentjob_claim_lost_total",
		Help: "Outcomes not written because another process took the claim over during the provider call; the new holder replays the outcome.",
	})
	lookupRequestsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "paymentjob_lookup_requests_total",
		Help: "Lookup requests sent to providers; one request looks up to 10 keys up.",
	})
	lookupKeysTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paymentjob_lookup_keys_total",
		Help: "Keys looked up at providers by result: found (the provider holds a charge under it), none, failed.",
	}, []string{"result"})
	stalledTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paymentjob_stalled_total",
		Help: "Jobs stopped without a charge because charging could pay twice, by reason: ProviderChanged, ChargeMismatch, KeyMismatch, RequestChanged, UncertainRefusal.",
	}, []string{"reason"})
	staleSkipsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "paymentjob_stale_cache_skips_total",
		Help: "Reconciles skipped because the cached job was older than this process's own last write of it.",
	})
	skippedTerminalTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "paymentjob_skipped_terminal_total",
		Help: "Reconciles of Completed or Failed jobs that returned without a provider call.",
	})
	strandedJobsGauge = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "paymentjob_jobs_waiting_for_deleted_provider",
		Help: "Processing jobs whose PaymentProvider was deleted (or is being deleted) while this process holds no adapter for it; each is Stalled (ProviderDeleted) until a person resolves it.",
	})
	rateLimitedTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "paymentjob_rate_limited_total",
		Help: "Charges put off to wait for a token of their provider's client-side rate limit.",
	})
	admissionPoliciesMissing = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "paymentjob_admission_policies_missing",
		Help: "Admission policies of config/policy that the last audit found missing or not enforced (no binding, a validating binding without Deny, type-checking warnings). Unchanged when the audit could not list them.",
	})
	finishedLabelWithoutOutcome = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "paymentjob_finished_label_without_outcome",
		Help: "PaymentJobs that the last audit found with the finished label but neither Completed nor Failed: out of the operator's cache, they are never charged. Unchanged when the audit could not list them.",
	})
	auditErrorsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paymentjob_audit_errors_total",
		Help: "Audit checks that could not be completed (an API error, RBAC refused), by check: admission_policies, finished_label. The check's gauge keeps its last value.",
	}, []string{"check"})
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "paymentjob_reconcile_duration_seconds",
		Help:    "Duration of PaymentJob reconciles, by the phase the job was in when the reconcile started.",
		Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"phase"})
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
	return []prometheus.Collector{chargesTotal, replaysTotal, claimConflictsTotal, writeConflictsTotal, claimLostTotal,
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
