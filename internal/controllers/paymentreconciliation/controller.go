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

package paymentreconciliation

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/books"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
)

// +kubebuilder:rbac:groups=payments.idempotency.dev,resources=paymentreconciliations,verbs=get;list;watch
// +kubebuilder:rbac:groups=payments.idempotency.dev,resources=paymentreconciliations/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=payments.idempotency.dev,resources=paymentreconciliationreports,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=payments.idempotency.dev,resources=paymentrefunds,verbs=get;list;watch
// +kubebuilder:rbac:groups=payments.idempotency.dev,resources=paymentproviders,verbs=get;list;watch

// Reasons of a PaymentReconciliation's conditions and events.
const (
	// ReasonBalanced: the report lists no discrepancy.
	ReasonBalanced = "Balanced"
	// ReasonDiscrepanciesFound: the report lists discrepancies.
	ReasonDiscrepanciesFound = "DiscrepanciesFound"
	// ReasonRunning: the run reads both sides.
	ReasonRunning = "Running"
	// ReasonWaitingForWindow: the window has not ended yet (less the
	// settle margin); the run starts when it has.
	ReasonWaitingForWindow = "WaitingForWindow"
	// ReasonProviderUnavailable: the provider did not answer; retried.
	ReasonProviderUnavailable = "ProviderUnavailable"
	// ReasonClusterUnavailable: the API server or the ledger did not
	// answer; retried.
	ReasonClusterUnavailable = "ClusterUnavailable"
)

const (
	// DefaultSettleMargin is how long before now a window without spec.to
	// ends, and how long after spec.to a run waits: payments whose outcome
	// the cluster has not recorded yet, in the last minutes, are no
	// finding.
	DefaultSettleMargin = 5 * time.Minute
	// DefaultRequestsPerSecond is a run's provider budget without
	// spec.requestsPerSecond: a quarter of Stripe's live read limit.
	DefaultRequestsPerSecond = 25
	// runTimeout bounds one attempt of a run.
	runTimeout = time.Hour
	// retryAfter is when a run that could not start or finish is tried
	// again.
	retryAfter = 30 * time.Second
)

// Reconciler runs PaymentReconciliations.
type Reconciler struct {
	Client client.Client
	// Reader reads the PaymentJobs and PaymentRefunds from the API server:
	// the cache leaves finished ones out.
	Reader client.Reader
	// Providers resolves the PaymentProvider's adapter and account.
	Providers *providercache.ProviderCache
	// Ledger is the outcome ledger; nil when the manager runs without one.
	Ledger   Ledger
	Recorder events.EventRecorder
	Clock    clock.Clock
	// SettleMargin: see DefaultSettleMargin; zero waits for nothing.
	SettleMargin time.Duration
	// SliceObjects is about the most charges a run compares at a time;
	// DefaultSliceObjects when zero.
	SliceObjects int
	// Namespaces are the namespaces the manager watches; empty for all. A
	// manager runs only the reconciliations of providers in them.
	Namespaces []string
}

// Reconcile runs one PaymentReconciliation to its end. A write that lost a
// race with another attempt of the run (another manager, without leader
// election) is a quiet requeue: the next pass reads what the other wrote.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := r.reconcile(ctx, req)
	if apierrors.IsConflict(err) {
		log.FromContext(ctx).V(1).Info("Requeuing after a conflict with another attempt of the run", "error", err.Error())
		return ctrl.Result{RequeueAfter: jitter(conflictRequeue)}, nil
	}
	return res, err
}

// conflictRequeue is the wait before a run whose write lost a race with
// another attempt is looked at again (with jitter): the engine's wait
// after a conflict.
const conflictRequeue = 100 * time.Millisecond

// jitter adds up to 20% to d, as the engine's Jitter does (this package
// never imports the engine), so that attempts that conflicted together do
// not come back together.
func jitter(d time.Duration) time.Duration {
	return d + rand.N(d/5+1)
}

func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pr := &paymentsv1alpha1.PaymentReconciliation{}
	if err := r.Client.Get(ctx, req.NamespacedName, pr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if pr.Status.Phase == paymentsv1alpha1.ReconciliationCompleted || pr.Status.Phase == paymentsv1alpha1.ReconciliationFailed {
		return ctrl.Result{}, nil
	}
	now := r.Clock.Now()
	if pr.Status.Window == nil {
		from, to := windowOf(pr.Spec, now, r.SettleMargin)
		pr.Status.Window = &paymentsv1alpha1.ReconciliationWindow{From: metav1.NewTime(from), To: metav1.NewTime(to)}
	}
	from, to := pr.Status.Window.From.Time, pr.Status.Window.To.Time
	if wait := to.Add(r.SettleMargin).Sub(now); wait > 0 {
		msg := fmt.Sprintf("The window ends at %s; the run starts %s after it, when the provider's books for it are settled", to.UTC().Format(time.RFC3339), r.SettleMargin)
		return ctrl.Result{RequeueAfter: wait}, r.progress(ctx, pr, paymentsv1alpha1.ReconciliationPending, ReasonWaitingForWindow, msg, false)
	}

	pp := &paymentsv1alpha1.PaymentProvider{}
	ref := pr.Spec.ProviderRef
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, pp); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		msg := fmt.Sprintf("PaymentProvider %s/%s (spec.providerRef) does not exist; the run starts when it does", ref.Namespace, ref.Name)
		return ctrl.Result{RequeueAfter: retryAfter}, r.progress(ctx, pr, paymentsv1alpha1.ReconciliationPending, paymentsv1alpha1.ReasonProviderNotFound, msg, true)
	}
	resolved, err := r.Providers.Resolve(ctx, pp)
	var account paymentsv1alpha1.ProviderIdentity
	if err == nil {
		account, err = resolved.IdentityWithin(ctx, 30*time.Second)
	}
	if err != nil {
		msg := payment.CleanMessage(fmt.Sprintf("PaymentProvider %s/%s cannot be used yet: %v; retried", ref.Namespace, ref.Name, err), 1024)
		return ctrl.Result{RequeueAfter: retryAfter}, r.progress(ctx, pr, paymentsv1alpha1.ReconciliationPending, paymentsv1alpha1.ReasonProviderNotReady, msg, false)
	}
	if pr.Status.StartedAt == nil {
		pr.Status.StartedAt = &metav1.Time{Time: now}
		pr.Status.Provider = &account
		if err := r.progress(ctx, pr, paymentsv1alpha1.ReconciliationRunning, ReasonRunning,
			"Reading the cluster's records and the provider's books", false); err != nil {
			return ctrl.Result{}, err
		}
	}

	runCtx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	res, requests, err := r.run(runCtx, pr, resolved.Provider, scope{account: account, accountsOnly: resolved.AccountsOnly(),
		from: from, to: to, namespaces: pr.Spec.Namespaces})
	pr.Status.ProviderRequests += requests
	if err != nil {
		phase, reason, again := unfinished(err)
		if !again {
			log.FromContext(ctx).Info("The reconciliation run failed", "error", err.Error())
			msg := payment.CleanMessage("The provider refused to list the window, for good: "+err.Error(), 1024)
			return ctrl.Result{}, r.progress(ctx, pr, phase, reason, msg, true)
		}
		log.FromContext(ctx).Info("The reconciliation run did not finish; retried", "error", err.Error())
		return ctrl.Result{RequeueAfter: retryAfter}, r.progress(ctx, pr, phase, reason, unfinishedMessage(err), false)
	}
	return ctrl.Result{}, r.complete(ctx, pr, res)
}

// ReasonProviderRefused says the provider refused a request of the run for
// good (an invalid request); the run is Failed and Stalled.
const ReasonProviderRefused = "ProviderRefused"

// unfinished says what a run that ended with err is: Failed for good when
// the provider refused one of its requests definitively (retrying cannot
// help), Running and tried again otherwise (an unreachable or rate-limiting
// provider, credentials being rotated, an API server or ledger that does
// not answer).
func unfinished(err error) (phase paymentsv1alpha1.ReconciliationPhase, reason string, again bool) {
	var pe providerError
	if !errors.As(err, &pe) {
		return paymentsv1alpha1.ReconciliationRunning, ReasonClusterUnavailable, true
	}
	if _, refused := payment.IsRefusal(err); refused {
		return paymentsv1alpha1.ReconciliationFailed, ReasonProviderRefused, false
	}
	return paymentsv1alpha1.ReconciliationRunning, ReasonProviderUnavailable, true
}

// unfinishedMessage is the status message of a run that did not finish
// with err and is tried again. A ledger's error is left out: a database's
// names its user, database, host and port; the log has it.
func unfinishedMessage(err error) string {
	if errors.As(err, &ledgerError{}) {
		return "The run did not finish: the operator's ledger is unavailable; retried from the start (it only reads); " +
			"an administrator finds the cause in the manager's log"
	}
	return payment.CleanMessage("The run did not finish: "+err.Error()+"; retried from the start (it only reads)", 1024)
}

// providerError marks an error of the provider's side.
type providerError struct{ error }

func (e providerError) Unwrap() error { return e.error }

// complete records a finished run: the report's pages, as a new attempt's,
// then the status that names the attempt, the event and the metrics. The
// status write carries the resourceVersion read at the start of the pass:
// when another attempt completed the run first, it fails, this attempt's
// pages are deleted, and the other's report stands. Once the status names
// it, the pages of every other attempt are deleted (readers ignore them
// anyway: a report is the pages of the attempt its status names).
func (r *Reconciler) complete(ctx context.Context, pr *paymentsv1alpha1.PaymentReconciliation, res result) error {
	report := res.report
	attempt := newAttempt()
	mine := func(a string) bool { return a == attempt }
	where, err := writeReport(ctx, r.Client, pr, attempt, report)
	if err != nil {
		if err := deletePages(ctx, r.Client, r.Reader, pr.Name, mine); err != nil {
			log.FromContext(ctx).Info("Leaving the pages of a failed attempt; readers ignore them", "attempt", attempt, "error", err.Error())
		}
		return err
	}
	summary := &paymentsv1alpha1.ReconciliationSummary{Categories: map[string]int64{}, Charges: res.charges, Refunds: res.refunds,
		Settling: int64(len(res.settling))}
	for _, cat := range books.Categories {
		n := int64(res.counts[cat])
		summary.Categories[string(cat)] = n
		if cat.Discrepancy() {
			summary.Discrepancies += n
		} else {
			summary.Matched += n
		}
	}
	now := metav1.NewTime(r.Clock.Now())
	pr.Status.Summary, pr.Status.Report, pr.Status.Listed = summary, where, report.Listed
	pr.Status.CompleteUpTo, pr.Status.CompletedAt = &pr.Status.Window.To, &now
	reason, eventType, result := ReasonBalanced, corev1.EventTypeNormal, "balanced"
	msg := fmt.Sprintf("The books balance: %d payments and refunds matched, no discrepancy", summary.Matched)
	if summary.Discrepancies > 0 {
		reason, eventType, result = ReasonDiscrepanciesFound, corev1.EventTypeWarning, "discrepancies"
		msg = fmt.Sprintf("%s, %d matched: %s", plural(summary.Discrepancies, "discrepancy", "discrepancies"), summary.Matched, describeCounts(res.counts))
	}
	if !report.Listed {
		msg += "; the provider has no list, so only the cluster's keys were looked up: money moved under keys the cluster does not know cannot have been found"
	}
	msg += fmt.Sprintf(". Report: %s in %s, sha256 %s", plural(where.Rows, "row", "rows"), plural(int64(where.Pages), "page", "pages"), where.SHA256)
	pr.Status.Phase = paymentsv1alpha1.ReconciliationCompleted
	pr.Status.ObservedGeneration = pr.Generation
	set := func(t string, status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&pr.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason,
			Message: msg, ObservedGeneration: pr.Generation})
	}
	set(paymentsv1alpha1.ConditionReady, metav1.ConditionTrue, reason, msg)
	set(paymentsv1alpha1.ConditionReconciling, metav1.ConditionFalse, reason, "The run is over")
	set(paymentsv1alpha1.ConditionStalled, metav1.ConditionFalse, reason, "The run is over")
	if err := r.Client.Status().Update(ctx, pr); err != nil {
		if err := deletePages(ctx, r.Client, r.Reader, pr.Name, mine); err != nil {
			log.FromContext(ctx).Info("Leaving the pages of an attempt that did not complete the run; readers ignore them",
				"attempt", attempt, "error", err.Error())
		}
		return fmt.Errorf("cannot record the reconciliation's result: %w", err)
	}
	if err := deletePages(ctx, r.Client, r.Reader, pr.Name, func(a string) bool { return a != attempt }); err != nil {
		log.FromContext(ctx).Info("Leaving the pages of other attempts; readers ignore them", "error", err.Error())
	}
	runsTotal.WithLabelValues(result).Inc()
	provider := pr.Spec.ProviderRef.Namespace + "/" + pr.Spec.ProviderRef.Name
	for _, cat := range books.Categories {
		findings.WithLabelValues(provider, string(cat)).Set(float64(res.counts[cat]))
	}
	r.Recorder.Eventf(pr, nil, eventType, reason, "Reconcile", "%s", msg)
	log.FromContext(ctx).Info("Reconciled", "matched", summary.Matched, "discrepancies", summary.Discrepancies,
		"listed", report.Listed, "providerRequests", pr.Status.ProviderRequests)
	return nil
}

// plural is n and the noun for it.
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// describeCounts names the categories with findings, with their counts.
func describeCounts(counts map[books.Category]int) string {
	var out string
	for _, c := range books.Categories {
		if n := counts[c]; n > 0 && c.Discrepancy() {
			if out != "" {
				out += ", "
			}
			out += fmt.Sprintf("%s %d", c, n)
		}
	}
	return out
}

// progress records where a run is that has not finished: phase, and the
// Reconciling condition, or Stalled when a person must act.
func (r *Reconciler) progress(ctx context.Context, pr *paymentsv1alpha1.PaymentReconciliation, phase paymentsv1alpha1.ReconciliationPhase, reason, msg string, stalled bool) error {
	before := pr.Status.DeepCopy()
	pr.Status.Phase = phase
	pr.Status.ObservedGeneration = pr.Generation
	set := func(t string, status metav1.ConditionStatus, msg string) {
		meta.SetStatusCondition(&pr.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason,
			Message: msg, ObservedGeneration: pr.Generation})
	}
	set(paymentsv1alpha1.ConditionReady, metav1.ConditionFalse, msg)
	if stalled {
		set(paymentsv1alpha1.ConditionStalled, metav1.ConditionTrue, msg)
		set(paymentsv1alpha1.ConditionReconciling, metav1.ConditionFalse, msg)
	} else {
		set(paymentsv1alpha1.ConditionStalled, metav1.ConditionFalse, "Nothing needs a person")
		set(paymentsv1alpha1.ConditionReconciling, metav1.ConditionTrue, msg)
	}
	if equalStatus(before, &pr.Status) {
		return nil
	}
	if err := r.Client.Status().Update(ctx, pr); err != nil {
		return fmt.Errorf("cannot record the reconciliation's progress: %w", err)
	}
	if before.Phase != phase || stalled {
		r.Recorder.Eventf(pr, nil, eventTypeOf(stalled), reason, "Reconcile", "%s", msg)
	}
	return nil
}

func eventTypeOf(stalled bool) string {
	if stalled {
		return corev1.EventTypeWarning
	}
	return corev1.EventTypeNormal
}

// equalStatus reports whether a status write would change nothing (the
// conditions' times aside, which SetStatusCondition keeps when nothing
// else changes).
func equalStatus(a, b *paymentsv1alpha1.PaymentReconciliationStatus) bool {
	return a.Phase == b.Phase && a.StartedAt.Equal(b.StartedAt) && a.Window != nil && b.Window != nil &&
		conditionsEqual(a.Conditions, b.Conditions)
}

func conditionsEqual(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || a[i].Status != b[i].Status || a[i].Reason != b[i].Reason || a[i].Message != b[i].Message {
			return false
		}
	}
	return true
}

// windowOf resolves a spec's window for a run that starts at now.
func windowOf(spec paymentsv1alpha1.PaymentReconciliationSpec, now time.Time, margin time.Duration) (time.Time, time.Time) {
	to := now.Add(-margin)
	if spec.To != nil {
		to = spec.To.Time
	}
	from := to
	switch {
	case spec.From != nil:
		from = spec.From.Time
	case spec.LookbackSeconds != nil:
		from = to.Add(-time.Duration(*spec.LookbackSeconds) * time.Second)
	}
	return from.UTC().Truncate(time.Second), to.UTC().Truncate(time.Second)
}

// describeAccount names an account for the report.
func describeAccount(id paymentsv1alpha1.ProviderIdentity) string {
	switch {
	case id.Account != "" && id.Mode != "":
		return id.Account + " (" + id.Mode + ")"
	case id.Account != "":
		return id.Account
	}
	return id.Endpoint
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&paymentsv1alpha1.PaymentReconciliation{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			pr, ok := o.(*paymentsv1alpha1.PaymentReconciliation)
			return ok && (len(r.Namespaces) == 0 || slices.Contains(r.Namespaces, pr.Spec.ProviderRef.Namespace))
		}))).
		Named("paymentreconciliation").
		Complete(r)
}
