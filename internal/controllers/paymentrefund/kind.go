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

package paymentrefund

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
	"github.com/idempotency-dev/paymentjob-operator/internal/teeth"
)

// +kubebuilder:rbac:groups=payments.idempotency.dev,resources=paymentrefunds,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=payments.idempotency.dev,resources=paymentrefunds/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=payments.idempotency.dev,resources=paymentrefunds/finalizers,verbs=update

// Kind is the PaymentRefund: money given back from a PaymentJob's charge, at
// the account that holds the charge, never more than is left.
func Kind(d Deps) engine.AnyKind { return engine.NewKind(kind{d}) }

// Deps are what the PaymentRefund kind reads besides its own objects.
type Deps struct {
	// Client reads from the manager's cache: PaymentProviders, and the
	// refunds of a PaymentJob (engine.PaymentJobRefIndex).
	Client client.Reader
	// APIReader reads a refund's PaymentJob from the API server (a finished
	// job is out of the cache); Client when nil.
	APIReader client.Reader
	// Ledger finds the charge of a PaymentJob that is gone; nil without a
	// ledger.
	Ledger engine.OutcomeLedger
}

// kind is the PaymentRefund kind.
type kind struct {
	Deps
}

// kindName is the kind, as users see it.
const kindName = "PaymentRefund"

// words word the engine's messages on a PaymentRefund.
var words = engine.Words{Action: "Refund", Noun: refund, Done: "Refunded", Doing: "refunding",
	Object: refund, Request: refund, Unmoved: "no money went back"}

// refund is the provider's object, the request and the object, as a
// refund's messages name them.
const refund = "refund"

func (kind) Describe() engine.Description[*paymentsv1alpha1.PaymentRefund] {
	return engine.Description[*paymentsv1alpha1.PaymentRefund]{
		Name:     kindName,
		New:      func() *paymentsv1alpha1.PaymentRefund { return &paymentsv1alpha1.PaymentRefund{} },
		NewList:  func() client.ObjectList { return &paymentsv1alpha1.PaymentRefundList{} },
		Words:    words,
		Counters: counters,
		// A charge's refunds are listed exactly, so a refund is only
		// resolved as not made on the provider's list.
		ExactFind: true,
	}
}

// RefundBindWindow is how long after a refund that names no
// spec.paymentJobRef.idempotencyKey its PaymentJob may be created and still
// be the payment the refund was written for: manifests applied together
// (a GitOps sync, kubectl apply -k) land within it. A job created later
// under the name is another payment (a typo that a later payment's name
// matched), never refunded by it, unless the ledger recorded that payment
// before the refund was written (the job re-created from Git).
const RefundBindWindow = 5 * time.Minute

// refundRecheck is how often a refund waiting for its payment, or for
// other refunds of the same charge in flight, looks again without an event.
const refundRecheck = 30 * time.Second

func (kind) Request(rf *paymentsv1alpha1.PaymentRefund, key string) engine.Request {
	req := refundRequest(rf)
	return engine.Request{Key: key, Fingerprint: payment.RefundHash(key, req), Amount: req.Amount, Currency: req.Currency,
		Refunds: req.Charge}
}

// PrepareFromLedger records the charge the ledger's entry of this refund's
// own key says it refunded, so that a re-created refund is compared with
// its entry (and finished from it) without looking for its PaymentJob,
// which may be long gone. An entry recorded before the ledger kept the
// refunded charge is compared after Prepare.
func (kind) PrepareFromLedger(rf *paymentsv1alpha1.PaymentRefund, e ledger.Entry) bool {
	if e.RefundedCharge == "" {
		return false
	}
	ch := &paymentsv1alpha1.RefundedCharge{ID: e.RefundedCharge, Currency: e.Currency}
	if rf.Spec.Amount == nil {
		// A refund of the whole charge sent the charge's amount.
		ch.Amount = e.Amount
	}
	rf.Status.Charge = ch
	return true
}

// refundRequest is what the refund sends: spec.amount, or the whole charge
// recorded in status.charge, never "whatever is left", so that every
// attempt sends the same request.
func refundRequest(rf *paymentsv1alpha1.PaymentRefund) payment.RefundRequest {
	req := payment.RefundRequest{Reason: string(rf.Spec.Reason), Metadata: rf.Spec.Metadata}
	if ch := rf.Status.Charge; ch != nil {
		req.Charge, req.Amount, req.Currency = ch.ID, ch.Amount, ch.Currency
	}
	if rf.Spec.Amount != nil {
		req.Amount = *rf.Spec.Amount
	}
	return req
}

func (kind) Terms(rf *paymentsv1alpha1.PaymentRefund) engine.Terms {
	s := rf.Spec
	return engine.SpecTerms(rf, s.ProviderRef, s.IdempotencyKey, s.Suspend, s.BackoffLimit, s.ActiveDeadlineSeconds, s.TTLSecondsAfterFinished)
}

func (k kind) Key(rf *paymentsv1alpha1.PaymentRefund, scope string) string {
	return payment.RefundKey(scope, rf.Namespace, k.Terms(rf).Key)
}

// Prepare finds the charge the refund gives money back from: the
// PaymentJob's, read from the API server (a finished job is out of the
// cache), or, once the job is gone, the ledger's entry under the job's key
// and the provider's own record of the charge. It waits while the job is
// not Completed, fails a refund of a job that failed or of more than was
// charged, and stalls one whose charge was made at another account than
// the refund's provider reaches.
func (k kind) Prepare(ctx context.Context, rf *paymentsv1alpha1.PaymentRefund, provider engine.ProviderFunc) (engine.Result, error) {
	ref := rf.Spec.PaymentJobRef
	ch, books, decided, err := k.findCharge(ctx, rf)
	if err != nil || ch == nil {
		return decided, err
	}
	t, waiting, err := provider(ctx)
	if err != nil || waiting != nil {
		return waitFor(waiting), err
	}
	name := rf.Spec.ProviderRef.Name
	if _, ok := t.Provider.(payment.Refunder); !ok || !refundsConfigured(t) {
		return engine.Wait(engine.Progress{Reason: paymentsv1alpha1.ReasonRefundsUnsupported, Stalled: true, Message: fmt.Sprintf(
			"PaymentProvider %q cannot refund: an http provider needs spec.http.refundURL and spec.http.lookupURL", name)}, 0), nil
	}
	if books != nil {
		if same, why := providercache.SameBooks(*books, t.ID, t.AccountsOnly()); !same {
			return engine.Wait(engine.Progress{Reason: paymentsv1alpha1.ReasonProviderChanged, Stalled: true, Message: payment.CleanMessage(fmt.Sprintf(
				"Not refunding: the charge of PaymentJob %q is at %s, and PaymentProvider %q reaches %s: %s. A refund is only "+
					"sent to the account that holds the charge", ref.Name, providercache.DescribeBooks(*books), name, providercache.DescribeBooks(t.ID), why),
				engine.MaxMessageLength)}, 0), nil
		}
	}
	if ch.Amount == 0 {
		// The ledger names the charge, not its amount: the provider does.
		book, err := lookupBook(ctx, t, ch.ID, true)
		if stall := chargeNotHeld(rf, name, ch.ID, err); stall != nil {
			return waitFor(stall), nil
		}
		if err != nil {
			return engine.Wait(engine.Progress{Reason: paymentsv1alpha1.ReasonLookupFailed, Message: payment.CleanMessage(fmt.Sprintf(
				"Cannot read charge %s at the provider, so not refunding yet: %v", ch.ID, err), engine.MaxMessageLength)}, 0), nil
		}
		ch.Amount, ch.Currency = book.Charge.Amount, book.Charge.Currency
	}
	rf.Status.Charge = ch
	if req := refundRequest(rf); req.Amount > ch.Amount {
		return engine.Refuse(&payment.Refusal{Class: payment.ErrInvalid, Reason: payment.ReasonRefundExceedsCharge, Message: fmt.Sprintf(
			"spec.amount %d is more than charge %s of PaymentJob %q (%d %s)", req.Amount, ch.ID, ref.Name, ch.Amount, ch.Currency)}), nil
	}
	return engine.Proceed(), nil
}

// waitFor is the Result that waits for p, or proceeds when p is nil.
func waitFor(p *engine.Progress) engine.Result {
	if p == nil {
		return engine.Proceed()
	}
	return engine.Wait(*p, 0)
}

// refundsConfigured reports whether t's PaymentProvider has what refunds
// need: for an http provider, a refund and a lookup endpoint.
func refundsConfigured(t *engine.Target) bool {
	pp := t.PaymentProvider
	return pp == nil || pp.Spec.HTTP == nil || (pp.Spec.HTTP.RefundURL != "" && pp.Spec.HTTP.LookupURL != "")
}

// lookupBook reads what the provider holds on charge, within t's timeout:
// the charge itself too when withCharge, otherwise only its refunds when
// that saves a request (payment.ListRefunds).
func lookupBook(ctx context.Context, t *engine.Target, charge string, withCharge bool) (payment.RefundBook, error) {
	refunder, ok := t.Provider.(payment.Refunder)
	if !ok {
		return payment.RefundBook{}, errors.New("the provider cannot refund")
	}
	callCtx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	if withCharge {
		return refunder.LookupRefunds(callCtx, charge)
	}
	return payment.ListRefunds(callCtx, refunder, charge)
}

// Connect opens the refund's calls at t: a refund is sent only by a
// provider that can refund (Prepare stalled the others).
func (k kind) Connect(_ context.Context, rf *paymentsv1alpha1.PaymentRefund, t *engine.Target) (engine.Client, error) {
	refunder, _ := t.Provider.(payment.Refunder)
	return refundCalls{kind: k, rf: rf, t: t, refunder: refunder, req: refundRequest(rf)}, nil
}

// Observe reads the charge's refunds at the provider (an exact list, no
// search lag): what it holds under the refund's key, and whether the amount
// still fits in what is left of the charge, counting the refunds of other
// keys at the provider and the sibling PaymentRefunds in flight.
func (c refundCalls) Observe(ctx context.Context, req engine.Request) (engine.Result, error) {
	rf := c.rf
	ch := rf.Status.Charge
	if ch == nil {
		return engine.Result{}, errors.New("the refunded charge is not known yet")
	}
	// The charge is read with its refunds: a refund is only sent for a
	// charge the provider holds under the refunded payment's own key.
	book, err := lookupBook(ctx, c.t, ch.ID, true)
	if stall := chargeNotHeld(rf, rf.Spec.ProviderRef.Name, ch.ID, err); stall != nil {
		return engine.Wait(*stall, engine.Jitter(refundRecheck)), nil
	}
	if err != nil {
		return engine.LookupFailed(err, 0), nil
	}
	mine := book.Refunds[req.Key]
	for _, f := range mine {
		if f.State != payment.StateNotCharged {
			// Made already: recorded or settled, never sent again.
			return engine.Proceed(mine...), nil
		}
	}
	if wait := unverifiedCharge(rf, book.Charge); wait != nil {
		return engine.Wait(*wait, engine.Jitter(refundRecheck)), nil
	}
	if book.Charge.State != "" && book.Charge.State != payment.StateSucceeded {
		return engine.Refuse(&payment.Refusal{Class: payment.ErrInvalid, Reason: payment.ReasonChargeNotRefundable,
			Message: fmt.Sprintf("charge %s is %s at the provider; only a succeeded charge is refunded", ch.ID, book.Charge.Status)}), nil
	}
	if teeth.On(teeth.RefundWithoutLookup) {
		book.Refunded = 0
	}
	left := ch.Amount - book.Refunded
	if req.Amount > left {
		return engine.Refuse(&payment.Refusal{Class: payment.ErrInvalid, Reason: payment.ReasonRefundExceedsCharge,
			Message: fmt.Sprintf("%d %s is more than what is left of charge %s: %d of %d (the provider holds %d in refunds)",
				req.Amount, req.Currency, ch.ID, max(left, 0), ch.Amount, book.Refunded)}), nil
	}
	inFlight, names, err := c.kind.inFlight(ctx, rf, book)
	if err != nil {
		return engine.Result{}, err
	}
	if req.Amount > left-inFlight {
		return engine.Wait(engine.Progress{Reason: paymentsv1alpha1.ReasonRefundsInFlight,
			Message: fmt.Sprintf("%d %s fits in what is left of charge %s (%d) only if the refunds in flight (%s: %d) fail; "+
				"waiting for them", req.Amount, req.Currency, ch.ID, left, names, inFlight)}, engine.Jitter(refundRecheck)), nil
	}
	return engine.Proceed(mine...), nil
}

// unverifiedCharge says why the refunded charge, as the provider holds it,
// is not shown to be the refunded payment's: it carries another key than
// the payment's, or none (a charge named by a person's resolution that the
// provider could not check, a charge made by hand). nil when it is.
func unverifiedCharge(rf *paymentsv1alpha1.PaymentRefund, held payment.Found) *engine.Progress {
	ch := rf.Status.Charge
	if ch.IdempotencyKey != "" && held.Key == ch.IdempotencyKey && (held.ID == "" || held.ID == ch.ID) {
		return nil
	}
	what := "carries no idempotency key"
	if held.Key != "" {
		what = "carries the idempotency key of another payment"
	}
	return &engine.Progress{Reason: paymentsv1alpha1.ReasonChargeUnverified, Stalled: true, Message: fmt.Sprintf(
		"Not refunding: charge %s %s at the provider, not the key of PaymentJob %q, so it is not shown to be that payment's "+
			"charge (it may have been named by a resolution the provider could not check). A refund is only sent for a charge "+
			"the provider holds under the payment's own key; it goes on by itself once the provider's record of the charge "+
			"carries that key. Check the charge at the provider", ch.ID, what, rf.Spec.PaymentJobRef.Name)}
}

// outcomeUnknown reports whether money may have gone back for a refund in
// st without the provider having said so: it is Processing (claimed), or
// it was resolved as not made on a person's word alone (recorded before
// such a resolution needed the provider's list). What is left of a charge
// counts such refunds as spent.
func outcomeUnknown(st paymentsv1alpha1.PaymentRefundStatus) bool {
	return st.Phase == paymentsv1alpha1.PhaseProcessing ||
		(st.Phase == paymentsv1alpha1.PhaseFailed && st.Resolution != nil && !st.Resolution.Verified)
}

// inFlight sums the sibling PaymentRefunds of the same PaymentJob whose
// outcome is unknown (outcomeUnknown: money may move, or may have moved)
// and that the provider does not list yet.
func (k kind) inFlight(ctx context.Context, rf *paymentsv1alpha1.PaymentRefund, book payment.RefundBook) (int64, string, error) {
	var siblings paymentsv1alpha1.PaymentRefundList
	if err := k.Client.List(ctx, &siblings, client.InNamespace(rf.Namespace),
		client.MatchingFields{engine.PaymentJobRefIndex: rf.Spec.PaymentJobRef.Name}); err != nil {
		return 0, "", fmt.Errorf("cannot list the refunds of PaymentJob %q: %w", rf.Spec.PaymentJobRef.Name, err)
	}
	var sum int64
	names := ""
	for i := range siblings.Items {
		s := &siblings.Items[i]
		st := s.Status
		if s.UID == rf.UID || !outcomeUnknown(st) || st.Charge == nil || st.Charge.ID != rf.Status.Charge.ID {
			continue
		}
		if _, listed := book.Refunds[st.IdempotencyKey]; listed {
			continue
		}
		sum += refundRequest(s).Amount
		if names != "" {
			names += ", "
		}
		names += s.Name
	}
	return sum, names, nil
}

// Watch brings a refund back when the PaymentJob it refunds changes (it
// waits for the job to be Completed).
func (k kind) Watch(b *builder.Builder) *builder.Builder {
	return b.Watches(&paymentsv1alpha1.PaymentJob{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		return engine.UsersOf(ctx, k.Client, &paymentsv1alpha1.PaymentRefundList{}, engine.PaymentJobRefIndex, o, engine.Unfinished)
	}))
}

// refundCalls are a refund's provider calls.
type refundCalls struct {
	kind     kind
	rf       *paymentsv1alpha1.PaymentRefund
	t        *engine.Target
	refunder payment.Refunder
	req      payment.RefundRequest
}

func (c refundCalls) Send(ctx context.Context, key string) (payment.Outcome, error) {
	if c.refunder == nil {
		return payment.Outcome{}, fmt.Errorf("PaymentProvider %q cannot refund", c.rf.Spec.ProviderRef.Name)
	}
	return c.refunder.Refund(ctx, key, c.req)
}

func (c refundCalls) Find(ctx context.Context, key string) ([]payment.Found, error) {
	if c.refunder == nil {
		return nil, engine.ErrCannotFind
	}
	book, err := payment.ListRefunds(ctx, c.refunder, c.req.Charge)
	return book.Refunds[key], err
}

func (c refundCalls) Settle(ctx context.Context, key, id string) (payment.Outcome, error) {
	if c.refunder == nil {
		return payment.Outcome{}, engine.ErrCannotFind
	}
	return c.refunder.SettleRefund(ctx, key, id)
}
