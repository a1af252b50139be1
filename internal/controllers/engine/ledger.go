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
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
	"github.com/idempotency-dev/paymentjob-operator/internal/teeth"
)

// The outcome ledger in the protocol: an object that was never claimed is looked
// up in it before anything else (a hit finishes the object with no provider
// call), and a final outcome is recorded in it before the finalizer comes
// off, so the object cannot be deleted before its record is durable.

// +kubebuilder:rbac:groups=payments.idempotency.dev,resources=paymentledgers,verbs=get;list;watch;create;update;delete

// NewLedger returns the outcome ledger of a manager, added to it: it writes
// through the manager's client, reads pages from the API server (never
// caching their entries) and watches the pages' metadata. opts are the
// ledger's options (its retention; OnRewind, told when the pages'
// resourceVersions go backwards).
func NewLedger(mgr ctrl.Manager, opts ledger.Options) (*ledger.Ledger, error) {
	l := ledger.New(mgr.GetClient(), mgr.GetAPIReader(), opts)
	if err := l.WatchPages(context.Background(), mgr.GetCache()); err != nil {
		return nil, err
	}
	if err := mgr.Add(l); err != nil {
		return nil, fmt.Errorf("cannot add the outcome ledger to the manager: %w", err)
	}
	return l, nil
}

// OutcomeLedger is the durable record of finished payments: the CRD ledger
// (*ledger.Ledger, PaymentLedger pages in etcd) or the PostgreSQL ledger
// (*pgledger.Ledger). An error means the ledger did not answer: nothing is
// charged on its strength, and nothing it was to hold is deleted.
type OutcomeLedger interface {
	// Find returns the outcome recorded under an idempotency key.
	Find(ctx context.Context, key string) (ledger.Entry, bool, error)
	// Has reports whether a key is recorded, as cheaply as the backend
	// can: the CRD ledger answers from its index, with no API request.
	Has(ctx context.Context, key string) (bool, error)
	// Record stores an outcome, unless one is recorded under its key.
	// Record stores an outcome unless one is recorded under its key. It
	// returns nil once the key holds this outcome (ledger.Entry.SameOutcome:
	// stored now, or before), and a *ledger.ConflictError holding the
	// entry kept when the key holds another one.
	Record(ctx context.Context, e ledger.Entry) error
}

// FromLedger reports whether the object was finished from the ledger rather
// than by a provider answer in its own lifetime.
func FromLedger(obj Object) bool {
	c := meta.FindStatusCondition(obj.GetPaymentStatus().Conditions, paymentsv1alpha1.ConditionReady)
	return c != nil && c.Reason == paymentsv1alpha1.ReasonFoundInLedger
}

// recordFromLedger finishes an object whose key the ledger holds, with the
// recorded outcome and no provider call, as made at t (where the ledger
// says it was made, checked by the caller).
func (r *Reconciler) recordFromLedger(ctx context.Context, obj Object, t *Target, c Request, e ledger.Entry) error {
	when := e.At.UTC().Format(time.RFC3339)
	// The payment finished when the ledger says, not now: a reconciliation
	// window places it there (an object finished from the ledger has no
	// provider creation time of its own).
	finished := metav1.NewTime(e.At)
	if e.At.IsZero() {
		finished = metav1.NewTime(r.Clock.Now())
	}
	obj.GetPaymentStatus().IdempotencyKey = c.Key
	obj.GetPaymentStatus().RequestHash = c.Fingerprint
	obj.GetPaymentStatus().Claim = nil
	provider := t.ID
	obj.GetPaymentStatus().Provider = &provider
	obj.GetPaymentStatus().CompletedAt = &finished
	by := ""
	if e.ResolvedBy != "" {
		by = fmt.Sprintf(", as resolved by %s", e.ResolvedBy)
	}
	var msg, eventType string
	if e.Outcome == paymentsv1alpha1.LedgerCompleted {
		obj.GetPaymentStatus().Phase = paymentsv1alpha1.PhaseCompleted
		obj.GetPaymentStatus().ProviderResponse = &paymentsv1alpha1.ProviderResponse{
			ID: e.Charge, Status: "succeeded", Amount: c.Amount, Currency: c.Currency, Replayed: true,
		}
		obj.GetPaymentStatus().Failure = nil
		msg = fmt.Sprintf("%s %d %s as %s on %s%s: found in the operator's ledger, with no provider call; no money moved again",
			r.Kind.Words().Done, c.Amount, c.Currency, e.Charge, when, by)
		eventType = corev1.EventTypeNormal
	} else {
		reason := e.Reason
		if !payment.ValidReason(reason) {
			reason = paymentsv1alpha1.ReasonPaymentRefused
		}
		obj.GetPaymentStatus().Phase = paymentsv1alpha1.PhaseFailed
		msg = fmt.Sprintf("Not %s: the operator's ledger records that this payment failed on %s (%s)%s; no provider call",
			strings.ToLower(r.Kind.Words().Done), when, reason, by)
		obj.GetPaymentStatus().Failure = &paymentsv1alpha1.Failure{Reason: reason, Message: msg}
		eventType = corev1.EventTypeWarning
	}
	SetConditions(obj, Progress{Reason: paymentsv1alpha1.ReasonFoundInLedger, Message: msg})
	if err := r.writeFound(ctx, obj, "the outcome found in the ledger"); err != nil {
		return err
	}
	ledgerHitsTotal.WithLabelValues(r.Kind.Name()).Inc()
	r.Recorder.Eventf(obj, nil, eventType, paymentsv1alpha1.ReasonFoundInLedger, r.Kind.Words().Action, "%s", msg)
	log.FromContext(ctx).Info("Found the outcome in the ledger; not calling the provider", "charge", e.Charge, "outcome", e.Outcome)
	return r.finish(ctx, obj)
}

// recordAndFinish records the object's final outcome in the ledger, then
// finishes the object (finalizer off, finished label), but only once the
// ledger holds this object's outcome: an object whose key the ledger holds with
// another outcome keeps its finalizer, Stalled (LedgerConflict).
func (r *Reconciler) recordAndFinish(ctx context.Context, obj Object) error {
	if err := r.flushStatus(ctx, obj); err != nil {
		return err
	}
	recorded, err := r.recordInLedger(ctx, obj)
	if err != nil || !recorded {
		return err
	}
	return r.finish(ctx, obj)
}

// recordInLedger stores the object's final outcome in the ledger. It is called
// before the finalizer is removed, and again by any later pass that finds the
// finalizer still there. The ledger keeps the first outcome of a key:
// recorded is false when it holds another one, and the object is then stalled
// (stallOnLedgerConflict) instead of finished.
func (r *Reconciler) recordInLedger(ctx context.Context, obj Object) (recorded bool, err error) {
	if r.Ledger == nil || FromLedger(obj) || !controllerutil.ContainsFinalizer(obj, paymentsv1alpha1.Finalizer) {
		return true, nil
	}
	err = r.Ledger.Record(ctx, LedgerEntry(obj, r.requestOf(obj), r.Clock.Now()))
	var conflict *ledger.ConflictError
	switch {
	case err == nil:
		r.conflicts.set(client.ObjectKeyFromObject(obj), false, ledgerConflictsGauge.WithLabelValues(r.Kind.Name()))
		return true, nil
	case errors.As(err, &conflict):
		return false, r.stallOnLedgerConflict(ctx, obj, conflict.Held)
	}
	if ctx.Err() == nil {
		ledgerErrorsTotal.WithLabelValues(r.Kind.Name(), "record").Inc()
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, paymentsv1alpha1.ReasonLedgerUnavailable, r.Kind.Words().Action, "%s",
			"The outcome is not in the operator's ledger yet: "+LedgerUnavailableMessage+
				". The finalizer stays until it is recorded; retried by itself; "+LedgerCauseInLog)
	}
	return false, fmt.Errorf("cannot record the outcome in the ledger: %w", err)
}

// LedgerEntry is the ledger's record of a finished object that sends c; now
// dates it when the object has no completion time. It is keyed as a
// re-created object looks it up: by the key and request its namespace and
// spec derive (the status says the same, unless someone else wrote it).
func LedgerEntry(obj Object, c Request, now time.Time) ledger.Entry {
	e := ledger.Entry{
		Key:            c.Key,
		Fingerprint:    c.Fingerprint,
		Amount:         c.Amount,
		Currency:       c.Currency,
		RefundedCharge: c.Refunds,
		Outcome:        paymentsv1alpha1.LedgerCompleted,
		At:             now,
	}
	if obj.GetPaymentStatus().CompletedAt != nil {
		e.At = obj.GetPaymentStatus().CompletedAt.Time
	}
	if p := obj.GetPaymentStatus().Provider; p != nil {
		e.Provider = *p
	}
	if resp := obj.GetPaymentStatus().ProviderResponse; resp != nil {
		e.Charge = resp.ID
	}
	if obj.GetPaymentStatus().Phase == paymentsv1alpha1.PhaseFailed {
		e.Outcome = paymentsv1alpha1.LedgerFailed
		if f := obj.GetPaymentStatus().Failure; f != nil {
			e.Reason = f.Reason
		}
	}
	if res := obj.GetPaymentStatus().Resolution; res != nil {
		e.Reason = paymentsv1alpha1.ReasonResolved
		e.ResolvedBy = res.By
		if e.ResolvedBy == "" {
			e.ResolvedBy = unknownResolver
		}
	}
	return e
}

// finishFromLedger finishes an object that was never claimed here but may have
// been paid before this object existed (a manifest re-created from Git, a
// TTL-deleted object coming back). The ledger is asked first, before any
// deadline or suspension, under the key the object's PaymentProvider scopes
// (an object whose provider does not exist yet waits for it, and is asked
// then), and answers from memory unless it holds the key. A hit counts only
// for the same request made where the provider charges now: another
// request under the key stalls (ChargeMismatch), and a payment made at
// another account, mode or endpoint stalls too (ProviderChanged): it is
// neither this account's payment nor to be charged silently. An object
// finished from it needs no finalizer: nothing is in flight. done reports
// that the pass ends here (finished, stalled, waiting for the provider, or
// the ledger failed).
//
// It runs before the kind's Prepare (prepared false): a kind whose request
// needs what Prepare records (LedgerPreparer) takes it from the entry, so
// that a re-created refund is finished from its own entry even when the
// payment it refunds can no longer be found; when the entry holds too
// little, searched.unprepared asks the caller to prepare the object and
// call again (prepared true).
func (r *Reconciler) finishFromLedger(ctx context.Context, obj Object, prepared bool) (res ctrl.Result, done bool, searched ledgerSearch, err error) {
	if r.Ledger == nil || obj.GetPaymentStatus().IdempotencyKey != "" {
		return ctrl.Result{}, false, ledgerSearch{skipped: true}, nil
	}
	var pp paymentsv1alpha1.PaymentProvider
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: r.terms(obj).Provider}, &pp); err != nil {
		// Not found: the scope of the object's keys is not known yet; the
		// object waits for its provider (admit), and comes back with it.
		return ctrl.Result{}, !apierrors.IsNotFound(err), ledgerSearch{}, client.IgnoreNotFound(err)
	}
	c := r.Kind.Request(obj, r.Kind.Key(obj, pp.Spec.KeyScope))
	searched = ledgerSearch{done: true, scope: pp.Spec.KeyScope}
	e, found, err := r.Ledger.Find(ctx, c.Key)
	if err != nil && teeth.On(teeth.LedgerErrorAsNotFound) {
		err = nil
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return ctrl.Result{}, true, searched, err
	case err != nil:
		return r.waitForLedger(ctx, obj, err)
	case !found:
		return ctrl.Result{}, false, searched, nil
	}
	if !prepared {
		if done, implemented := r.Kind.prepareFromLedger(obj, e); implemented && !done {
			searched.unprepared = true
			return ctrl.Result{}, false, searched, nil
		} else if implemented {
			c = r.Kind.Request(obj, c.Key)
		}
	}
	if e.Fingerprint != c.Fingerprint {
		logChargeMismatch(ctx, "ledger", e.Charge, 0, "")
		return ctrl.Result{}, true, searched, r.stall(ctx, obj, Progress{Reason: paymentsv1alpha1.ReasonChargeMismatch, Message: fmt.Sprintf("%s: "+
			"the operator's ledger records a payment under this idempotency key for another request; the operator's log "+
			"names it (ChargeMismatch). Delete this %s, or use another idempotency key", r.Kind.Words().not(), r.Kind.Words().Object)})
	}
	// Where was it made? Only the provider can say where this object would
	// be charged now.
	t, waiting, err := r.ResolveProvider(ctx, obj)
	switch {
	case err != nil:
		return ctrl.Result{}, true, searched, err
	case waiting != nil:
		return ctrl.Result{RequeueAfter: r.pendingRecheck(obj, waiting.Reason, 0)}, true, searched, r.setPending(ctx, obj, *waiting)
	}
	if t.ID.KeyScope != pp.Spec.KeyScope {
		// The provider's key scope changed between the two reads: look
		// again under the new one.
		return ctrl.Result{RequeueAfter: Jitter(conflictRequeue)}, true, searched, nil
	}
	if same, why := providercache.SameBooks(e.Provider, t.ID, t.AccountsOnly()); !same {
		return ctrl.Result{}, true, searched, r.stall(ctx, obj, Progress{Reason: paymentsv1alpha1.ReasonProviderChanged, Message: payment.CleanMessage(fmt.Sprintf(
			"%s: the operator's ledger records this payment as made at %s, and PaymentProvider %q now reaches %s: %s. "+
				"Point the provider back at the account that holds it, or, to %s it at the new account, set spec.keyScope "+
				"on the PaymentProvider (a new key space: every %s claimed through it is a new payment there)",
			r.Kind.Words().not(), providercache.DescribeBooks(e.Provider), r.terms(obj).Provider, providercache.DescribeBooks(t.ID), why, strings.ToLower(r.Kind.Words().Action), r.Kind.Words().Object), MaxMessageLength)})
	}
	return ctrl.Result{}, true, searched, r.recordFromLedger(ctx, obj, t, c, e)
}

// waitForLedger keeps an object that was never claimed Pending while the
// ledger cannot say whether it was paid before: charging it on the
// strength of a ledger that did not answer could pay twice (a re-created
// object whose payment the provider no longer remembers). It is asked again
// with backoff, and the object goes on once it answers.
func (r *Reconciler) waitForLedger(ctx context.Context, obj Object, cause error) (ctrl.Result, bool, ledgerSearch, error) {
	p := LedgerUnanswered(ctx, r.Kind.Name(), cause, "asked whether this payment was made before")
	return ctrl.Result{RequeueAfter: r.pendingRecheck(obj, paymentsv1alpha1.ReasonLedgerUnavailable, 0)}, true, ledgerSearch{}, r.setPending(ctx, obj, p)
}

// What a tenant reads of a ledger that did not answer. The cause (a
// database's error names its user, database, host and port) goes to the
// manager's log only: the ledger is the operator's, not the tenant's.
const (
	// LedgerUnavailableMessage says that the ledger did not answer.
	LedgerUnavailableMessage = "the operator's ledger is unavailable"
	// LedgerCauseInLog says where the cause of an unavailable ledger is.
	LedgerCauseInLog = "an administrator finds the cause in the manager's log"
)

// LedgerUnanswered is the progress of an object that waits, unsent, because
// a Find in the ledger failed with cause (what is the question asked, for
// the message): Pending, LedgerUnavailable. It counts and logs the failure;
// the message does not hold the cause. A kind's Prepare returns it for the
// ledger reads of its own, naming itself (kind) for the count.
func LedgerUnanswered(ctx context.Context, kind string, cause error, what string) Progress {
	ledgerErrorsTotal.WithLabelValues(kind, "find").Inc()
	log.FromContext(ctx).Error(cause, "The outcome ledger did not answer; not sending until it does")
	return Progress{Reason: paymentsv1alpha1.ReasonLedgerUnavailable, Message: payment.CleanMessage("Nothing is sent yet: "+LedgerUnavailableMessage+
		" (it was to be "+what+"). Retried by itself until it answers; "+LedgerCauseInLog, MaxMessageLength)}
}

// ledgerSearch says under which key scope finishFromLedger asked the ledger
// for an object, so that the object is claimed only under that scope.
type ledgerSearch struct {
	// skipped: there is no ledger, or the object was claimed before.
	skipped bool
	// done: the ledger was asked, under scope.
	done  bool
	scope string
	// unprepared: the ledger holds the key, and the entry can only be
	// compared with the request once the kind's Prepare ran.
	unprepared bool
}

// covers reports whether the search covers a claim through t: the ledger
// was asked under the scope the claim sends.
func (s ledgerSearch) covers(t *Target) bool {
	return s.skipped || (s.done && s.scope == t.ID.KeyScope)
}
