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

package protocol_test

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentjob"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentrefund"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// What the refund table adds to the world (harness_test.go): a
// PaymentRefund of the world's PaymentJob, a provider that also refunds
// (payment.Refunder) and answers what it holds on the charge from a
// script, and the refund's own invariants.

// The names of the refund world.
const (
	refundName = "refund-1"
	refundUID  = "refund-uid"
	// siblingName is another refund of the same PaymentJob.
	siblingName = "refund-0"
	// chargeID is the job's charge (chargeOutcome); the ledger's record of
	// the job (ledgerEntry) names pi_0.
	chargeID       = "pi_1"
	ledgerChargeID = "pi_0"
)

// refundKey is where the reconciler finds the refund.
var refundKey = types.NamespacedName{Namespace: namespace, Name: refundName}

// newRefund is the PaymentRefund of the world, of the whole charge of the
// world's job, changed by opts in order.
func newRefund(opts ...func(*paymentsv1alpha1.PaymentRefund)) *paymentsv1alpha1.PaymentRefund {
	rf := &paymentsv1alpha1.PaymentRefund{
		ObjectMeta: metav1.ObjectMeta{Name: refundName, Namespace: namespace, UID: refundUID, Generation: 1,
			CreationTimestamp: metav1.NewTime(start.Add(-time.Minute))},
		Spec: paymentsv1alpha1.PaymentRefundSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: providerName},
			PaymentJobRef: paymentsv1alpha1.PaymentJobReference{Name: jobName},
			Reason:        paymentsv1alpha1.RefundRequestedByCustomer, Metadata: map[string]string{"row": "any"},
			BackoffLimit: ptr.To[int32](6)},
	}
	for _, o := range opts {
		o(rf)
	}
	return rf
}

// Options of newRefund.

func refundOf(amount int64) func(*paymentsv1alpha1.PaymentRefund) {
	return func(rf *paymentsv1alpha1.PaymentRefund) { rf.Spec.Amount = ptr.To(amount) }
}

func refundSuspended(rf *paymentsv1alpha1.PaymentRefund) { rf.Spec.Suspend = ptr.To(true) }

func refundBackoffLimit(n int32) func(*paymentsv1alpha1.PaymentRefund) {
	return func(rf *paymentsv1alpha1.PaymentRefund) { rf.Spec.BackoffLimit = ptr.To(n) }
}

// refundDeleting is a deletion the finalizer holds up.
func refundDeleting(rf *paymentsv1alpha1.PaymentRefund) {
	controllerutil.AddFinalizer(rf, paymentsv1alpha1.Finalizer)
	rf.DeletionTimestamp = ptr.To(metav1.NewTime(start.Add(-time.Second)))
}

// jobKeyed names the refunded job's key (spec.paymentJobRef.idempotencyKey).
func jobKeyed(key string) func(*paymentsv1alpha1.PaymentRefund) {
	return func(rf *paymentsv1alpha1.PaymentRefund) { rf.Spec.PaymentJobRef.IdempotencyKey = key }
}

// sibling is another refund of the world's job, of amount, Processing
// since its claim (what the refund kind reads of it): money may move.
func sibling(amount int64) *paymentsv1alpha1.PaymentRefund {
	rf := newRefund(refundOf(amount))
	rf.Name, rf.UID = siblingName, "sibling-uid"
	rf.Status.Phase = processing
	rf.Status.IdempotencyKey = payment.RefundKey("", namespace, siblingName)
	rf.Status.Charge = &paymentsv1alpha1.RefundedCharge{ID: chargeID, Amount: amount, Currency: currency}
	return rf
}

// paidJob is the world's PaymentJob, Completed by its charge pi_1 of 2000
// usd at the world's provider, and finished.
func paidJob() *paymentsv1alpha1.PaymentJob { return newJob(completedEarlier, finished) }

// jobIn is the world's PaymentJob in phase.
func jobIn(phase paymentsv1alpha1.PaymentJobPhase) *paymentsv1alpha1.PaymentJob {
	return newJob(withFinalizer, func(j *paymentsv1alpha1.PaymentJob) { j.Status.Phase = phase })
}

// chargedAt is paidJob charged at another endpoint than the provider
// reaches now.
func chargedAt(endpoint string) *paymentsv1alpha1.PaymentJob {
	job := paidJob()
	job.Status.Provider.Endpoint = endpoint
	return job
}

// providerWithoutRefunds is an http provider without a refund endpoint.
const providerWithoutRefunds = providerMissing + 1

// newRefundProvider is newProvider that can refund: an http provider with a
// refund and a lookup endpoint, unless s is providerWithoutRefunds.
func newRefundProvider(s providerState) *paymentsv1alpha1.PaymentProvider {
	if s == providerWithoutRefunds {
		return newProvider(providerReady)
	}
	pp := newProvider(s)
	if pp != nil {
		pp.Spec.HTTP.RefundURL = "https://payments.example/refunds"
		pp.Spec.HTTP.LookupURL = "https://payments.example/lookup"
	}
	return pp
}

// sentKey is the key the world's refund sends.
func sentKey() string { return payment.RefundKey("", namespace, refundName) }

// sentRequest is what rf sends to refund charge: its amount, or the whole
// charge, never what is left of it.
func sentRequest(rf *paymentsv1alpha1.PaymentRefund, charge string) payment.RefundRequest {
	req := payment.RefundRequest{Charge: charge, Amount: amount, Currency: currency,
		Reason: string(rf.Spec.Reason), Metadata: rf.Spec.Metadata}
	if rf.Spec.Amount != nil {
		req.Amount = *rf.Spec.Amount
	}
	return req
}

// The provider's answers to a refund.
var (
	refunded       answer = func() (payment.Outcome, error) { return succeededAs("re_1", false), nil }
	refundReplayed answer = func() (payment.Outcome, error) { return succeededAs("re_1", true), nil }
	// answerLost is a refund the provider made whose answer never came
	// back (the connection broke after its commit).
	answerLost answer = func() (payment.Outcome, error) {
		return payment.Outcome{}, errors.New("read tcp: connection reset by peer")
	}
)

// refused is the provider's refusal of a refund with reason, as the
// adapters answer it: a decline (Stripe's refusal codes, the HTTP
// contract's 402).
func refused(reason string) answer {
	return func() (payment.Outcome, error) {
		return payment.Outcome{}, payment.Declined(reason, "refused: "+reason)
	}
}

// book is one scripted answer of LookupRefunds for a charge.
type book func(charge string) (payment.RefundBook, error)

// holding is a book of a succeeded charge of 2000 usd, refunded already,
// with under its refunds by key.
func holding(refunded int64, under map[string][]payment.Found) book {
	return func(charge string) (payment.RefundBook, error) {
		return payment.RefundBook{Charge: payment.Found{Key: paymentjob.ChargeOf(newJob()).Key, Outcome: payment.Outcome{ID: charge,
			Status: "succeeded", Amount: amount, Currency: currency}, State: payment.StateSucceeded},
			Refunds: under, Refunded: refunded, Complete: true}, nil
	}
}

// The provider's books.
var (
	// untouched holds the charge and no refund.
	untouched = holding(0, nil)
	// lookupDown cannot be read.
	lookupDown book = func(string) (payment.RefundBook, error) {
		return payment.RefundBook{}, payment.Transient(errors.New("503 Service Unavailable"), 0)
	}
	// chargeMissing is the answer of an account that holds no such charge.
	chargeMissing book = func(charge string) (payment.RefundBook, error) {
		return payment.RefundBook{}, payment.Declined(payment.ReasonChargeNotFound, "the account holds no payment intent "+charge)
	}
)

// chargeIn is a book of a charge in state, with no refund.
func chargeIn(state payment.ChargeState) book {
	return func(charge string) (payment.RefundBook, error) {
		b, err := untouched(charge)
		b.Charge.State, b.Charge.Status = state, "processing"
		return b, err
	}
}

// ours is a book holding a refund under the world's refund key, in state,
// made for the request with fingerprint (the world's refund's when empty).
func ours(state payment.ChargeState, fingerprint string) book {
	if fingerprint == "" {
		fingerprint = payment.RefundHash(sentKey(), sentRequest(newRefund(), chargeID))
	}
	status := map[payment.ChargeState]string{payment.StateSucceeded: "succeeded", payment.StatePending: "pending"}[state]
	o := succeededAs("re_0", false)
	o.Status = status
	return holding(amount, map[string][]payment.Found{sentKey(): {{Key: sentKey(), Outcome: o, State: state, Fingerprint: fingerprint}}})
}

// refundLedgerEntry is the ledger's record of the world's refund of the
// whole charge, made a day ago, for a request with fingerprint (the
// refund's own when empty).
func refundLedgerEntry(fingerprint string) ledger.Entry {
	if fingerprint == "" {
		fingerprint = payment.RefundHash(sentKey(), sentRequest(newRefund(), chargeID))
	}
	return ledger.Entry{Key: sentKey(), Fingerprint: fingerprint, Provider: *sentTo(), Charge: "re_0",
		Outcome: paymentsv1alpha1.LedgerCompleted, At: start.Add(-24 * time.Hour)}
}

// failedLedgerEntry is the ledger's record of the world's job, failed a
// day ago.
func failedLedgerEntry() ledger.Entry {
	e := ledgerEntry("")
	e.Outcome, e.Reason, e.Charge = paymentsv1alpha1.LedgerFailed, "CardDeclined", ""
	return e
}

// refundingProvider is fakeProvider that refunds: Refund answers from the
// script of answers, LookupRefunds from books (the last one repeats;
// untouched without any), SettleRefund from settle.
type refundingProvider struct {
	*fakeProvider
	books []book
}

var _ payment.Refunder = refundingProvider{}

// Refund answers from the script.
func (p refundingProvider) Refund(_ context.Context, key string, req payment.RefundRequest) (payment.Outcome, error) {
	return p.play(call{what: "refund", key: key, refund: req}, p.answers)
}

// LookupRefunds answers from the books.
func (p refundingProvider) LookupRefunds(_ context.Context, charge string) (payment.RefundBook, error) {
	p.mu.Lock()
	b := nth(p.books, len(p.named("lookup")), untouched)
	p.calls = append(p.calls, call{what: "lookup", refund: payment.RefundRequest{Charge: charge}})
	p.mu.Unlock()
	p.note("lookup")
	return b(charge)
}

// SettleRefund answers from the script.
func (p refundingProvider) SettleRefund(_ context.Context, key, _ string) (payment.Outcome, error) {
	return p.play(call{what: "settle", key: key}, []answer{p.settle})
}

// newRefundWorld is the world of a refund row: the refund, the job it
// refunds (unless gone), its siblings, the provider, the ledger, and the
// refund kind's reconciler, which reads the job through APIReader.
func newRefundWorld(t *testing.T, tt refundRow) *world {
	objs := []client.Object{tt.refund.DeepCopy()}
	if tt.job != nil {
		objs = append(objs, tt.job.DeepCopy())
	}
	if pp := newRefundProvider(tt.provider); pp != nil {
		objs = append(objs, pp)
	}
	for _, s := range tt.siblings {
		objs = append(objs, s.DeepCopy())
	}
	w := build(t, setup{kind: refundKind, key: refundKey, objects: objs, ledger: tt.ledger,
		answers: tt.answers, settle: tt.settle, guarded: []string{"refund"},
		adapter: func(p *fakeProvider) payment.Provider { return refundingProvider{fakeProvider: p, books: tt.books} }})
	w.r.APIReader = w.r.Client
	return w
}

// The refund table's changes of other writers.

// refundUnsuspended is a person setting spec.suspend to false.
func refundUnsuspended(w *world) {
	rf := w.subject()
	rf.(*paymentsv1alpha1.PaymentRefund).Spec.Suspend = ptr.To(false)
	must(w.store.Update(context.Background(), rf))
}

// jobCompleted is the world's job charged now (its outcome write).
func jobCompleted(w *world) {
	job := w.job()
	completedEarlier(job)
	must(w.store.Status().Update(context.Background(), job))
}

// claimHandedTo is another replica holding the refund's claim now, as
// acquired by the last claim write: holder took it over, and it expires
// when that claim does.
func claimHandedTo(holder string) func(*world) {
	return func(w *world) {
		rf := w.subject()
		rf.GetPaymentStatus().Claim.Holder = holder
		must(w.store.Status().Update(context.Background(), rf))
	}
}

// heldUnder is a book of the charge as the provider holds it under key
// (empty: no key at all), with no refund: a charge of another payment, or
// one made by hand, that a resolution may have named.
func heldUnder(key string) book {
	return func(charge string) (payment.RefundBook, error) {
		b, err := untouched(charge)
		b.Charge.Key = key
		return b, err
	}
}

// stalledByAnotherManager is a refund that another manager (since
// restarted: nothing of it is in this one's memory) claimed two minutes ago
// and stalled with its retries exhausted: its outcome is unknown.
func stalledByAnotherManager(rf *paymentsv1alpha1.PaymentRefund) {
	controllerutil.AddFinalizer(rf, paymentsv1alpha1.Finalizer)
	rf.Status.Charge = &paymentsv1alpha1.RefundedCharge{ID: chargeID, IdempotencyKey: paymentjob.ChargeOf(newJob()).Key,
		Amount: amount, Currency: currency}
	rf.Status.Provider = sentTo()
	k := paymentrefund.Kind(paymentrefund.Deps{})
	engine.ClaimStatus(rf, k.Request(rf, sentKey()), other, start.Add(-2*time.Minute), lease, paymentsv1alpha1.ReasonClaimed)
	engine.SetConditions(rf, engine.Progress{Reason: paymentsv1alpha1.ReasonRetriesExhausted, Stalled: true, Message: "no answer"})
}

// refundKind is the PaymentRefund kind reading through the world's client
// and ledger, as the manager wires it.
func refundKind(c client.Client, l engine.OutcomeLedger) engine.AnyKind {
	return paymentrefund.Kind(paymentrefund.Deps{Client: c, Ledger: l})
}

// refundLedgerEntryOf is refundLedgerEntry as the ledger records it now:
// with the charge the refund gave money back from, its amount and currency.
func refundLedgerEntryOf(charge string) ledger.Entry {
	e := refundLedgerEntry(payment.RefundHash(sentKey(), sentRequest(newRefund(), charge)))
	e.RefundedCharge, e.Amount, e.Currency = charge, amount, currency
	return e
}

// createdAfterTheRefund is a PaymentJob created longer after the world's
// refund than paymentrefund.RefundBindWindow.
func createdAfterTheRefund(j *paymentsv1alpha1.PaymentJob) {
	j.CreationTimestamp = metav1.NewTime(newRefund().CreationTimestamp.Add(paymentrefund.RefundBindWindow + time.Second))
}

// createdWithTheRefund is a PaymentJob created just after the world's
// refund, as manifests applied together are.
func createdWithTheRefund(j *paymentsv1alpha1.PaymentJob) {
	j.CreationTimestamp = metav1.NewTime(newRefund().CreationTimestamp.Add(3 * time.Second))
}

// paidJobCreatedAfterTheRefund is paidJob, created after the refund.
func paidJobCreatedAfterTheRefund() *paymentsv1alpha1.PaymentJob {
	return newJob(completedEarlier, finished, createdAfterTheRefund)
}

// resolvedBy is a refund carrying a person's resolve annotation.
func resolvedBy(value string) func(*paymentsv1alpha1.PaymentRefund) {
	return func(rf *paymentsv1alpha1.PaymentRefund) {
		rf.Annotations = map[string]string{
			paymentsv1alpha1.AnnotationResolve:    value,
			paymentsv1alpha1.AnnotationResolvedBy: "alice@example.com",
		}
	}
}

// providerBackToReady is the refund's PaymentProvider Ready again (its
// Secret restored).
func providerBackToReady(w *world) {
	ctx := context.Background()
	pp := &paymentsv1alpha1.PaymentProvider{}
	must(w.store.Get(ctx, types.NamespacedName{Namespace: namespace, Name: providerName}, pp))
	ready := newProvider(providerReady)
	pp.Status = ready.Status
	must(w.store.Status().Update(ctx, pp))
}

// resolvedUnverified is sibling(amount) Failed by a not-charged resolution
// that the provider never checked (recorded before such a resolution
// needed its list): whether its money went back is unknown.
func resolvedUnverified(amount int64) *paymentsv1alpha1.PaymentRefund {
	rf := sibling(amount)
	rf.Status.Phase = failed
	rf.Status.Resolution = &paymentsv1alpha1.Resolution{Value: "not-charged", Verified: false}
	return rf
}
