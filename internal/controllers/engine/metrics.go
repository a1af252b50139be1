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

package engine

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// Outcomes of a provider call, the label of a kind's call counter
// (paymentjob_charges_total, paymentjob_refunds_total).
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

// Counters are the provider-call metrics of a kind, which the engine
// counts and the kind's package registers.
type Counters struct {
	// Calls counts the provider calls by outcome: succeeded (including
	// replays), declined, invalid, key_reused, transient.
	Calls *prometheus.CounterVec
	// Replays counts the calls the provider answered with the saved outcome
	// of an earlier request with the same key.
	Replays prometheus.Counter
	// FailedAfterSuccess counts the Completed objects found failed at the
	// provider later (Reconciler.FailAfterSuccess); nil for a kind whose
	// payments never fail after success.
	FailedAfterSuccess prometheus.Counter
}

// NewCounters makes the Counters of a kind from the names and help of its
// call and replay counters.
func NewCounters(calls, callsHelp, replays, replaysHelp string) Counters {
	return Counters{Calls: newCounterVec(calls, "outcome", callsHelp), Replays: newCounter(replays, replaysHelp)}
}

// Collectors returns the counters, for the kind to register.
func (c Counters) Collectors() []prometheus.Collector {
	return []prometheus.Collector{c.Calls, c.Replays}
}

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

// The writes around the claim.
var (
	claimConflictsTotal = newCounter("paymentjob_claim_conflicts_total", "Claim writes refused with a resourceVersion conflict (stale cache or another replica); each was requeued and charged nothing.")
	writeConflictsTotal = newCounter("paymentjob_write_conflicts_total", "Writes of any kind (claims, finalizers, outcomes, progress) refused with a resourceVersion conflict; each was requeued.")
	claimLostTotal      = newCounter("paymentjob_claim_lost_total", "Outcomes not written because another process took the claim over during the provider call; the new holder replays the outcome.")
)

// Jobs held back: stalls, stale cache copies, finished jobs, deleted providers, rate limits.
var (
	stalledTotal         = newCounterVec("paymentjob_stalled_total", "reason", "Jobs stopped without a charge because charging could pay twice, by reason: ProviderChanged, ChargeMismatch, KeyMismatch, RequestChanged, UncertainRefusal.")
	staleSkipsTotal      = newCounter("paymentjob_stale_cache_skips_total", "Reconciles skipped because the cached job was older than this process's own last write of it.")
	skippedTerminalTotal = newCounter("paymentjob_skipped_terminal_total", "Reconciles of Completed or Failed jobs that returned without a provider call.")
	ledgerConflictsGauge = newGauge("paymentjob_ledger_conflicts", "Finished jobs whose outcome is not the one the outcome ledger holds under their key "+
		"(another object with the same key was recorded first); each is Stalled (LedgerConflict), keeps its finalizer and is never deleted by its TTL until a person settles it.")
	strandedJobsGauge = newGauge("paymentjob_jobs_waiting_for_deleted_provider", "Processing jobs whose PaymentProvider was deleted (or is being deleted) while this process holds no adapter for it; each is Stalled (ProviderDeleted) until a person resolves it.")
	rateLimitedTotal  = newCounter("paymentjob_rate_limited_total", "Charges put off to wait for a token of their provider's client-side rate limit.")
)

// The outcome ledger and resolutions by hand.
var (
	ledgerHitsTotal   = newCounter("paymentjob_ledger_hits_total", "Jobs finished from the outcome ledger, with no provider call (re-created jobs whose payment was already made or refused).")
	resolutionsTotal  = newCounterVec("paymentjob_resolutions_total", "result", "Resolve annotations by result: charged, not_charged, refused.")
	ledgerErrorsTotal = newCounterVec("paymentjob_ledger_errors_total", "operation", "Requests to the outcome ledger that got no answer, by operation: "+
		"find (a job not claimed yet waits, Pending LedgerUnavailable, and nothing is charged), record (a finished job keeps its finalizer and is retried).")
)

// How long a reconcile takes.
var (
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "paymentjob_reconcile_duration_seconds", Help: "Duration of PaymentJob reconciles, by the phase the job was in when the reconcile started.",
		Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}, []string{"phase"})
)

// PhaseLabel is the phase label of paymentjob_reconcile_duration_seconds,
// and how the audit names a phase: New for none.
func PhaseLabel(p paymentsv1alpha1.PaymentJobPhase) string {
	if p == "" {
		return "New"
	}
	return string(p)
}

// Collectors returns every collector this package registers in
// controller-runtime's metrics registry. With the Collectors of the kinds,
// the provider cache, the audit, the TTL collector and the ledger, they are
// the names the dashboards, the alerts and docs/observability.md may use.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{claimConflictsTotal, writeConflictsTotal, claimLostTotal, stalledTotal,
		skippedTerminalTotal, staleSkipsTotal, reconcileDuration, ledgerHitsTotal, resolutionsTotal,
		strandedJobsGauge, rateLimitedTotal, ledgerErrorsTotal, ledgerConflictsGauge}
}

func init() {
	metrics.Registry.MustRegister(Collectors()...)
}
