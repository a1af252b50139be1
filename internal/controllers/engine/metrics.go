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
	// outcomeSettling: accepted by the provider, not settled yet (a bank
	// debit).
	outcomeSettling = "settling"
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

// newCounter and newCounterVec make a kind's Counters from their name and
// help (and label).
func newCounter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

func newCounterVec(name, label, help string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{label})
}

// The engine's metrics carry the kind of the object (kindLabel:
// PaymentJob, PaymentRefund) as their first label, so that a refund's pass
// is never counted as an object's. Their names are the ones of the release
// before the label came: a query without it sums every kind, as it did.
const kindLabel = "kind"

// newKindCounter and newKindGauge make the collectors below from their
// name, help and labels beyond the kind.
func newKindCounter(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append([]string{kindLabel}, labels...))
}

func newKindGauge(name, help string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{kindLabel})
}

// The writes around the claim.
var (
	claimConflictsTotal = newKindCounter("paymentjob_claim_conflicts_total", "Claim writes refused with a resourceVersion conflict (stale cache or another replica), by kind; each was requeued and sent nothing.")
	writeConflictsTotal = newKindCounter("paymentjob_write_conflicts_total", "Writes of any kind (claims, finalizers, outcomes, progress) refused with a resourceVersion conflict, by kind; each was requeued.")
	claimLostTotal      = newKindCounter("paymentjob_claim_lost_total", "Outcomes not written because another process took the claim over during the provider call, by kind; the new holder replays the outcome.")
)

// Objects held back: stalls, stale cache copies, finished objects, deleted providers, rate limits.
var (
	stalledTotal         = newKindCounter("paymentjob_stalled_total", "Objects stopped without a provider call because calling could move money twice, by kind and reason: ProviderChanged, ChargeMismatch, KeyMismatch, RequestChanged, UncertainRefusal, ...", "reason")
	staleSkipsTotal      = newKindCounter("paymentjob_stale_cache_skips_total", "Reconciles skipped because the cached object was older than this process's own last write of it, by kind.")
	skippedTerminalTotal = newKindCounter("paymentjob_skipped_terminal_total", "Reconciles of Completed or Failed objects that returned without a provider call, by kind.")
	ledgerConflictsGauge = newKindGauge("paymentjob_ledger_conflicts", "Finished objects whose outcome is not the one the outcome ledger holds under their key "+
		"(another object with the same key was recorded first), by kind; each is Stalled (LedgerConflict), keeps its finalizer and is never deleted by its TTL until a person settles it.")
	strandedJobsGauge = newKindGauge("paymentjob_jobs_waiting_for_deleted_provider", "Processing objects whose PaymentProvider was deleted (or is being deleted) while this process holds no adapter for it, by kind; each is Stalled (ProviderDeleted) until a person resolves it.")
	rateLimitedTotal  = newKindCounter("paymentjob_rate_limited_total", "Provider calls put off to wait for a token of their provider's client-side rate limit, by kind.")
)

// The outcome ledger and resolutions by hand.
var (
	ledgerHitsTotal   = newKindCounter("paymentjob_ledger_hits_total", "Objects finished from the outcome ledger, with no provider call (re-created objects whose payment was already made or refused), by kind.")
	resolutionsTotal  = newKindCounter("paymentjob_resolutions_total", "Resolve annotations by kind and result: charged, not_charged, refused.", "result")
	ledgerErrorsTotal = newKindCounter("paymentjob_ledger_errors_total", "Requests to the outcome ledger that got no answer, by kind and operation: "+
		"find (an object not claimed yet waits, Pending LedgerUnavailable, and nothing is sent), record (a finished object keeps its finalizer and is retried).", "operation")
)

// How long a reconcile takes.
var (
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "paymentjob_reconcile_duration_seconds", Help: "Duration of reconciles of PaymentJobs and PaymentRefunds, by kind and by the phase the object was in when the reconcile started.",
		Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}, []string{kindLabel, "phase"})
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
		strandedJobsGauge, rateLimitedTotal, ledgerErrorsTotal, ledgerConflictsGauge,
		settleReadsTotal, wakesTotal, settlingGauge}
}

// The metrics of payments that settle later.
var (
	settleReadsTotal = newKindCounter("paymentjob_settle_reads_total", "Reads of payments the provider accepted and has not settled (bank debits), by kind; each is one provider request and moves no money.")
	wakesTotal       = newKindCounter("paymentjob_event_wakes_total", "Objects woken by a verified provider event, by kind; each is read at the provider before anything is written.")
	settlingGauge    = newKindGauge("paymentjob_settling", "Objects this process last saw waiting for their provider to settle a payment it accepted (AwaitingSettlement or SettlementOverdue), by kind.")
)

func init() {
	metrics.Registry.MustRegister(Collectors()...)
}
