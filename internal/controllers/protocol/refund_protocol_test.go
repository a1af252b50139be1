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
	"cmp"
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentjob"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// refundRow is one line of the refund protocol: a PaymentRefund, the
// PaymentJob it refunds and its provider in a state, the provider's
// answers, and what each pass of the refund reconciler does.
type refundRow struct {
	name   string
	refund *paymentsv1alpha1.PaymentRefund
	// job is the refunded PaymentJob; nil: it is gone.
	job      *paymentsv1alpha1.PaymentJob
	provider providerState
	// siblings are other refunds of the same job.
	siblings []*paymentsv1alpha1.PaymentRefund
	// answers are the provider's answers to Refund, books to
	// LookupRefunds, settle to SettleRefund.
	answers []answer
	books   []book
	settle  answer
	ledger  *ledgerState
	// charge is the refunded charge: chargeID unless set.
	charge string
	steps  []step
	final  final
}

// refundTable is the refund protocol, in the words of theTable; "refund"
// and "settle" are the provider's refund calls, "lookup" its list of the
// charge's refunds (a read, made before the first claim).
var refundTable = []refundRow{
	// New refunds of a Completed payment.
	{
		name:   "new refund, nothing refunded yet: finalizer, provider guarded, look, claim, refund, Completed, finished",
		refund: newRefund(), job: paidJob(), provider: providerUnguarded, answers: []answer{refunded},
		steps: []step{{
			effects: []string{"patch: +finalizer", "provider: +in-use", "lookup", "status: Processing/Claimed", "refund",
				"status: Completed/Succeeded", finish},
			events: []string{"Succeeded"},
		}, {after: time.Minute}},
		final: givenBack,
	},
	{
		name:   "new refund with the ledger on: recorded in the ledger before the finalizer comes off",
		refund: newRefund(), job: paidJob(), answers: []answer{refunded}, ledger: &ledgerState{},
		steps: []step{{effects: lookAndRefund.then("status: Completed/Succeeded", "ledger: Completed", finish),
			events: []string{"Succeeded"}}},
		final: givenBack,
	},
	{
		name:   "suspended: Pending, no look, no refund; unsuspended: refunded",
		refund: newRefund(refundSuspended), job: paidJob(), answers: []answer{refunded},
		steps: []step{pendingFirst("Suspended", noRequeue), {after: time.Hour}, {
			before: refundUnsuspended, effects: lookAgainAndRefund.then(completeAndFinish...),
			events: []string{"Succeeded"},
		}},
		final: givenBack,
	},
	{
		name:   "deleted before the claim: finalizer removed, never refunded",
		refund: newRefund(refundDeleting), job: paidJob(), answers: []answer{refunded},
		steps: []step{{effects: []string{"patch: -finalizer (deleted)"}}},
		final: final{gone: true},
	},

	// The provider's answer to the first refund.
	{
		name:   "transient: stays Processing, retried with the same key and request, the provider replays",
		refund: newRefund(), job: paidJob(), answers: []answer{transient, refundReplayed},
		steps: []step{uncertainRefund, replayedRefund},
		final: givenBack,
	},
	{
		name:   "answer lost after the provider's commit: uncertain, stays Processing, the retry gets the replay",
		refund: newRefund(), job: paidJob(), answers: []answer{answerLost, refundReplayed},
		steps: []step{uncertainRefund, replayedRefund},
		final: givenBack,
	},
	{
		name:   "provider call times out: uncertain, stays Processing, never Failed",
		refund: newRefund(), job: paidJob(), answers: []answer{timedOut},
		steps: []step{uncertainRefund},
		final: final{phase: processing, ready: "TransientError"},
	},
	refundRefusedFirst("a racing refund took the rest (RefundExceedsCharge): Failed, finished", payment.ReasonRefundExceedsCharge),
	refundRefusedFirst("charge not refundable (disputed): Failed, finished", payment.ReasonChargeNotRefundable),
	refundRefusedFirst("refund failed at the provider: Failed, finished", payment.ReasonRefundFailed),
	refundRefusedOnRetry("invalid on a retry after an uncertain attempt: UncertainRefusal stall, never Failed", invalid),
	refundRefusedOnRetry("key reused on a retry after an uncertain attempt: UncertainRefusal stall, never Failed", keyReused),
	refundDeclinedOnRetry("RefundExceedsCharge on a retry: Failed, as a decline of a charge's retry "+
		"(the provider would have replayed a refund made under the key)", payment.ReasonRefundExceedsCharge),
	refundDeclinedOnRetry("ChargeNotRefundable on a retry: Failed, as a decline of a charge's retry", payment.ReasonChargeNotRefundable),

	// What the look before the first claim finds.
	{
		name:   "a succeeded refund under the key: recorded as found, no refund call",
		refund: newRefund(), job: paidJob(), answers: []answer{refunded}, books: []book{ours(payment.StateSucceeded, "")},
		steps: []step{{effects: []string{"patch: +finalizer", "lookup", "status: Processing/Claimed", "status: Completed/Succeeded", finish},
			events: []string{"FoundAtProvider"}}},
		final: givenBack,
	},
	{
		name:   "a pending refund under the key: settled under the claim, never refunded again",
		refund: newRefund(), job: paidJob(), answers: []answer{refunded}, books: []book{ours(payment.StatePending, "")},
		settle: refunded,
		steps: []step{{effects: []string{"patch: +finalizer", "lookup", "status: Processing/Claimed", "settle",
			"status: Completed/Succeeded", finish}, events: []string{"FoundAtProvider"}}},
		final: givenBack,
	},
	{
		name:   "a pending refund under the key that then fails: Failed RefundFailed, never refunded again",
		refund: newRefund(), job: paidJob(), answers: []answer{refunded}, books: []book{ours(payment.StatePending, "")},
		settle: refused(payment.ReasonRefundFailed),
		steps: []step{{effects: []string{"patch: +finalizer", "lookup", "status: Processing/Claimed", "settle",
			"status: Failed/RefundFailed", finish}, events: []string{"RefundFailed"}}},
		final: final{phase: failed, ready: "RefundFailed", stalled: true},
	},
	{
		name:   "a refund under the key for another request: ChargeMismatch stall, no refund call",
		refund: newRefund(), job: paidJob(), answers: []answer{refunded}, books: []book{ours(payment.StateSucceeded, "sha256:0000")},
		steps: []step{{effects: []string{"patch: +finalizer", "lookup", "status: Pending/ChargeMismatch"},
			events: []string{"ChargeMismatch"}}},
		final: final{phase: pending, ready: "ChargeMismatch", stalled: true},
	},
	{
		name:   "the provider's list cannot be read: Pending LookupFailed, no refund; read again: refunded",
		refund: newRefund(), job: paidJob(), answers: []answer{refunded}, books: []book{lookupDown, untouched},
		steps: []step{{
			effects: []string{"patch: +finalizer", "lookup", "status: Pending/LookupFailed"},
			requeue: jittered(time.Second), events: []string{"LookupFailed"},
		}, {
			after: 2 * time.Second, effects: lookAgainAndRefund.then(completeAndFinish...),
			events: []string{"Succeeded"},
		}},
		final: givenBack,
	},
	{
		name:   "more than is left of the charge (1000 of 2000 refunded, 1500 asked): Failed unsent, no claim",
		refund: newRefund(refundOf(1500)), job: paidJob(), answers: []answer{refunded}, books: []book{holding(1000, nil)},
		steps: []step{{effects: []string{"patch: +finalizer", "lookup", "status: Failed/RefundExceedsCharge", finish},
			events: []string{"RefundExceedsCharge"}}},
		final: final{phase: failed, ready: "RefundExceedsCharge", stalled: true},
	},
	{
		name:   "the charge is not succeeded at the provider: Failed ChargeNotRefundable unsent, no claim",
		refund: newRefund(), job: paidJob(), answers: []answer{refunded}, books: []book{chargeIn(payment.StatePending)},
		steps: []step{{effects: []string{"patch: +finalizer", "lookup", "status: Failed/ChargeNotRefundable", finish},
			events: []string{"ChargeNotRefundable"}}},
		final: final{phase: failed, ready: "ChargeNotRefundable", stalled: true},
	},
	{
		name:   "more than the charge itself: Failed unsent, without a look",
		refund: newRefund(refundOf(2500)), job: paidJob(), answers: []answer{refunded},
		steps: []step{{effects: []string{"status: Failed/RefundExceedsCharge", "patch: +finished"},
			events: []string{"RefundExceedsCharge"}}},
		final: final{phase: failed, ready: "RefundExceedsCharge", stalled: true},
	},
	{
		name:   "a sibling refund in flight would take what this one needs: Pending RefundsInFlight, no refund",
		refund: newRefund(refundOf(1000)), job: paidJob(), siblings: []*paymentsv1alpha1.PaymentRefund{sibling(1500)},
		answers: []answer{refunded},
		steps: []step{{effects: []string{"patch: +finalizer", "lookup", "status: Pending/RefundsInFlight"},
			requeue: jittered(30 * time.Second), events: []string{"RefundsInFlight"}}},
		final: final{phase: pending, ready: "RefundsInFlight"},
	},
	{
		name:   "a sibling refund resolved as not made without the provider's word counts as spent: Pending RefundsInFlight, no refund",
		refund: newRefund(refundOf(1000)), job: paidJob(), siblings: []*paymentsv1alpha1.PaymentRefund{resolvedUnverified(1500)},
		answers: []answer{refunded},
		steps: []step{{effects: []string{"patch: +finalizer", "lookup", "status: Pending/RefundsInFlight"},
			requeue: jittered(30 * time.Second), events: []string{"RefundsInFlight"}}},
		final: final{phase: pending, ready: "RefundsInFlight"},
	},
	{
		name:   "a sibling refund in flight that leaves enough: refunded",
		refund: newRefund(refundOf(1000)), job: paidJob(), siblings: []*paymentsv1alpha1.PaymentRefund{sibling(500)},
		answers: []answer{refunded},
		steps:   []step{{effects: lookAndRefund.then(completeAndFinish...), events: []string{"Succeeded"}}},
		final:   givenBack,
	},

	// The refunded payment.
	{
		name:   "job Pending: refund Pending PaymentNotCompleted, no call; job Completed: refunded",
		refund: newRefund(), job: jobIn(pending), answers: []answer{refunded},
		steps: []step{{effects: []string{"status: Pending/PaymentNotCompleted"}, requeue: jittered(time.Second),
			events: []string{"PaymentNotCompleted"}}, {
			after: time.Second, before: jobCompleted, effects: lookAndRefund.then(completeAndFinish...),
			events: []string{"Succeeded"},
		}},
		final: givenBack,
	},
	stoppedUnsent("job Processing: refund Pending PaymentNotCompleted, no call", jobIn(processing), "PaymentNotCompleted",
		jittered(time.Second)),
	{
		name:   "job settling (a bank debit the provider has not settled): refund Pending AwaitingSettlement, no call; job settled: refunded",
		refund: newRefund(), job: settlingJob(), answers: []answer{refunded},
		steps: []step{{effects: []string{"status: Pending/AwaitingSettlement"}, requeue: jittered(time.Second),
			events: []string{"AwaitingSettlement"}}, {
			after: time.Second, before: jobCompleted, effects: lookAndRefund.then(completeAndFinish...),
			events: []string{"Succeeded"},
		}},
		final: givenBack,
	},
	{
		name:   "job Failed: refund Failed PaymentFailed, no call",
		refund: newRefund(), job: jobIn(failed), answers: []answer{refunded},
		steps: []step{{effects: []string{"status: Failed/PaymentFailed", "patch: +finished"},
			events: []string{"PaymentFailed"}}},
		final: final{phase: failed, ready: "PaymentFailed", stalled: true},
	},
	stoppedUnsent("job gone, ledger off: Pending PaymentNotFound, no call", nil, "PaymentNotFound", jittered(time.Second)),
	{
		name:   "job gone, the ledger records that it failed: refund Failed PaymentFailed, no call",
		refund: newRefund(), answers: []answer{refunded}, ledger: &ledgerState{entries: []ledger.Entry{failedLedgerEntry()}},
		steps: []step{{effects: []string{"status: Failed/PaymentFailed", "patch: +finished"}, events: []string{"PaymentFailed"}}},
		final: final{phase: failed, ready: "PaymentFailed", stalled: true},
	},
	{
		name:   "job gone, the ledger holds no payment under its key: Pending PaymentNotFound, no call",
		refund: newRefund(), answers: []answer{refunded}, ledger: &ledgerState{},
		steps: []step{{effects: []string{"status: Pending/PaymentNotFound"}, requeue: jittered(time.Second), events: []string{"PaymentNotFound"}}},
		final: final{phase: pending, ready: "PaymentNotFound"},
	},
	{
		name:   "job gone, the ledger does not answer: Pending LedgerUnavailable, no call; it answers: refunded once",
		refund: newRefund(), answers: []answer{refunded}, charge: ledgerChargeID,
		ledger: &ledgerState{entries: []ledger.Entry{ledgerEntry("")}, findErr: errors.New("database unavailable")},
		steps: []step{
			{effects: []string{"status: Pending/LedgerUnavailable"}, requeue: jittered(time.Second), events: []string{"LedgerUnavailable"}},
			{after: time.Second, requeue: jittered(time.Second)},
			// Prepare reads the charge's amount once (the finalizer keeps
			// what it recorded), then Observe reads its refunds.
			{after: time.Second, before: ledgerBack, effects: []string{"lookup", "patch: +finalizer", "lookup",
				"status: Processing/Claimed", "refund", "status: Completed/Succeeded", "ledger: Completed", finish},
				events: []string{"Succeeded"}},
		},
		final: givenBack,
	},
	{
		name:   "job gone, the ledger holds its charge: the amount read at the provider, refunded once",
		refund: newRefund(), answers: []answer{refunded}, charge: ledgerChargeID,
		ledger: &ledgerState{entries: []ledger.Entry{ledgerEntry("")}},
		steps: []step{{effects: []string{"lookup", "patch: +finalizer", "lookup", "status: Processing/Claimed", "refund",
			"status: Completed/Succeeded", "ledger: Completed", finish},
			events: []string{"Succeeded"}}},
		final: givenBack,
	},
	stoppedUnsent("job charged at another endpoint than the provider reaches: ProviderChanged stall, no call",
		chargedAt("https://payments.example.com/old/charges"), "ProviderChanged", noRequeue),
	stoppedUnsent("paymentJobRef names another key than the job's: PaymentMismatch stall, no call",
		paidJob(), "PaymentMismatch", noRequeue, jobKeyed("billing/invoice-41")),

	// Whose charge it is.
	{
		name:   "the provider holds the charge under another payment's key (named by a resolution): ChargeUnverified stall, no refund",
		refund: newRefund(), job: paidJob(), answers: []answer{refunded}, books: []book{heldUnder("billing/someone-else")},
		steps: []step{{effects: []string{"patch: +finalizer", "lookup", "status: Pending/ChargeUnverified"},
			requeue: jittered(30 * time.Second), events: []string{"ChargeUnverified"}}},
		final: final{phase: pending, ready: "ChargeUnverified", stalled: true},
	},
	{
		name:   "the provider holds the charge under no key (made by hand): ChargeUnverified stall, no refund",
		refund: newRefund(), job: paidJob(), answers: []answer{refunded}, books: []book{heldUnder("")},
		steps: []step{{effects: []string{"patch: +finalizer", "lookup", "status: Pending/ChargeUnverified"},
			requeue: jittered(30 * time.Second), events: []string{"ChargeUnverified"}}},
		final: final{phase: pending, ready: "ChargeUnverified", stalled: true},
	},
	{
		name: "the provider holds no charge with the job's id (a resolution it could not check): ChargeNotFound stall, " +
			"no refund; once it holds the charge: refunded",
		refund: newRefund(), job: paidJob(), answers: []answer{refunded}, books: []book{chargeMissing, untouched},
		steps: []step{{effects: []string{"patch: +finalizer", "lookup", "status: Pending/ChargeNotFound"},
			requeue: jittered(30 * time.Second), events: []string{"ChargeNotFound"}}, {
			after: 31 * time.Second, effects: lookAgainAndRefund.then(completeAndFinish...), events: []string{"Succeeded"},
		}},
		final: givenBack,
	},
	stoppedUnsent("the job was created after the refund, which names no key: PaymentCreatedAfterRefund stall, no call",
		paidJobCreatedAfterTheRefund(), "PaymentCreatedAfterRefund", noRequeue),
	{
		name:   "the job was created seconds after the refund (applied together), which names no key: refunded",
		refund: newRefund(), job: newJob(completedEarlier, finished, createdWithTheRefund), answers: []answer{refunded},
		steps: []step{{effects: lookAndRefund.then(completeAndFinish...), events: []string{"Succeeded"}}},
		final: givenBack,
	},
	{
		name:   "the job was created after the refund, re-created from a payment the ledger recorded before it: refunded",
		refund: newRefund(), job: paidJobCreatedAfterTheRefund(), answers: []answer{refunded},
		ledger: &ledgerState{entries: []ledger.Entry{func() ledger.Entry { e := ledgerEntry(""); e.Charge = chargeID; return e }()}},
		steps:  []step{{effects: lookAndRefund.then("status: Completed/Succeeded", "ledger: Completed", finish), events: []string{"Succeeded"}}},
		final:  givenBack,
	},
	{
		name:   "the job was created after the refund, which names its key: refunded",
		refund: newRefund(jobKeyed(payment.EffectiveKey(jobName, ""))), job: paidJobCreatedAfterTheRefund(), answers: []answer{refunded},
		steps: []step{{effects: lookAndRefund.then(completeAndFinish...), events: []string{"Succeeded"}}},
		final: givenBack,
	},

	// The refund's provider.
	{
		name:   "provider not found: Pending ProviderNotFound, no call",
		refund: newRefund(), job: paidJob(), provider: providerMissing, answers: []answer{refunded},
		steps: []step{{effects: []string{"status: Pending/ProviderNotFound"}, requeue: jittered(time.Second),
			events: []string{"ProviderNotFound"}}},
		final: final{phase: pending, ready: "ProviderNotFound"},
	},
	{
		name:   "provider that cannot refund (http without refundURL): RefundsUnsupported stall, no call",
		refund: newRefund(), job: paidJob(), provider: providerWithoutRefunds, answers: []answer{refunded},
		steps: []step{{effects: []string{"status: Pending/RefundsUnsupported"}, events: []string{"RefundsUnsupported"}}},
		final: final{phase: pending, ready: "RefundsUnsupported", stalled: true},
	},

	// Processing refunds: claims and takeovers.
	{
		name:   "another holder's unexpired claim: waited out; expired: taken over, same key and request, replayed",
		refund: newRefund(), job: paidJob(), answers: []answer{transient, refundReplayed},
		steps: []step{uncertainRefund, {after: 2 * time.Second, before: claimHandedTo(other), requeue: exactly(58 * time.Second)}, {
			after: 58 * time.Second, effects: effects{"status: Processing/ClaimTakenOver", "refund"}.then(completeAndFinish...),
			events: []string{"ClaimTakenOver", "Replayed"},
		}},
		final: givenBack,
	},

	// The outcome ledger.
	{
		name:   "the ledger holds the refund's own key (refund re-created): finished from the ledger, no call",
		refund: newRefund(), job: paidJob(), answers: []answer{refunded},
		ledger: &ledgerState{entries: []ledger.Entry{refundLedgerEntry("")}},
		steps: []step{{effects: []string{"status: Completed/FoundInLedger", "patch: +finished"},
			events: []string{"FoundInLedger"}}},
		final: final{phase: completed, ready: "FoundInLedger"},
	},
	{
		name:   "re-created refund whose job is gone and unfindable by name, the ledger holds its own entry: finished from it, no call",
		refund: newRefund(), answers: []answer{refunded},
		ledger: &ledgerState{entries: []ledger.Entry{refundLedgerEntryOf(chargeID)}},
		steps: []step{{effects: []string{"status: Completed/FoundInLedger", "patch: +finished"},
			events: []string{"FoundInLedger"}}},
		final: final{phase: completed, ready: "FoundInLedger"},
	},
	{
		name:   "re-created refund of another amount under a key the ledger holds: ChargeMismatch stall, never finished from it",
		refund: newRefund(refundOf(500)), answers: []answer{refunded},
		ledger: &ledgerState{entries: []ledger.Entry{refundLedgerEntryOf(chargeID)}},
		steps:  []step{{effects: []string{"status: Pending/ChargeMismatch"}, events: []string{"ChargeMismatch"}}},
		final:  final{phase: pending, ready: "ChargeMismatch", stalled: true},
	},
	{
		name:   "the ledger holds the refund's key for another request: ChargeMismatch stall, no call",
		refund: newRefund(), job: paidJob(), answers: []answer{refunded},
		ledger: &ledgerState{entries: []ledger.Entry{refundLedgerEntry("sha256:0000")}},
		steps:  []step{{effects: []string{"status: Pending/ChargeMismatch"}, events: []string{"ChargeMismatch"}}},
		final:  final{phase: pending, ready: "ChargeMismatch", stalled: true},
	},

	// A person's resolution of an uncertain refund.
	{
		name:   "stalled refund resolved as charged: verified by reading the refund, Completed as resolved, no refund call",
		refund: newRefund(refundBackoffLimit(0)), job: paidJob(), answers: []answer{transient}, settle: refunded,
		steps: []step{exhaustedRefund, {
			after: time.Minute, before: resolvedAs("charged=re_1"),
			effects: []string{"settle", "status: Completed/Resolved", finish}, events: []string{"Resolved"},
		}},
		final: final{phase: completed, ready: "Resolved"},
	},
	{
		name:   "stalled refund resolved as not charged: verified by the provider's list (no search lag), Failed as resolved",
		refund: newRefund(refundBackoffLimit(0)), job: paidJob(), answers: []answer{transient},
		steps: []step{exhaustedRefund, {
			after: time.Second, before: resolvedAs("not-charged"),
			effects: []string{"lookup", "status: Failed/Resolved", finish}, events: []string{"Resolved"},
		}},
		final: final{phase: failed, ready: "Resolved", stalled: true},
	},
	{
		name: "not-charged after a restart while the provider is not Ready (no list can be read): not resolved " +
			"(ResolutionWaiting), never Failed, no call; Ready again: checked on the list, Failed as resolved",
		refund: newRefund(stalledByAnotherManager, resolvedBy("not-charged")), job: paidJob(), provider: providerNotReady,
		answers: []answer{refunded},
		steps: []step{{
			effects: []string{"status: Processing/ResolutionWaiting"}, requeue: jittered(time.Second),
			events: []string{"ResolutionWaiting"},
		}, {
			after: time.Second, before: providerBackToReady,
			effects: []string{"lookup", "status: Failed/Resolved", finish}, events: []string{"Resolved"},
		}},
		final: final{phase: failed, ready: "Resolved", stalled: true},
	},
	{
		name:   "not-charged while the provider lists a refund under the key: refused, stays stalled, no refund call",
		refund: newRefund(refundBackoffLimit(0)), job: paidJob(), answers: []answer{transient},
		books: []book{untouched, ours(payment.StateSucceeded, "")},
		steps: []step{exhaustedRefund, {
			after: time.Minute, before: resolvedAs("not-charged"),
			effects: []string{"lookup"}, requeue: between(4*time.Minute, 5*time.Minute), events: []string{"ResolutionRefused"},
		}},
		final: final{phase: processing, ready: "RetriesExhausted", stalled: true},
	},
}

// The words of the refund table, beyond theTable's.

var (
	// lookAndRefund is a new refund's first pass up to the provider's
	// answer: the finalizer, the look at the charge's refunds, the claim,
	// the refund.
	lookAndRefund = effects{"patch: +finalizer", "lookup", "status: Processing/Claimed", "refund"}
	// refundAgain is a later pass of the same holder: a fresh claim, the
	// refund with the same key and request.
	refundAgain = effects{"status: Processing/Claimed", "refund"}
	// lookAgainAndRefund is a later pass of a refund that was never
	// claimed: the look, the claim, the refund.
	lookAgainAndRefund = effects{"lookup", "status: Processing/Claimed", "refund"}
	// givenBack is a refund Completed by the provider's answer.
	givenBack = paid

	// uncertainRefund is a new refund's first pass without an answer:
	// still Processing, requeued after the backoff's first interval.
	uncertainRefund = step{effects: lookAndRefund.then("status: Processing/TransientError"),
		requeue: jittered(time.Second), events: []string{"TransientError"}}
	// replayedRefund is the retry 2s later: claimed again, refunded with
	// the same key, the provider replays; Completed, finished.
	replayedRefund = step{after: 2 * time.Second, effects: refundAgain.then(completeAndFinish...),
		events: []string{"Claimed", "Replayed"}}
	// exhaustedRefund is the first pass of a refund with backoffLimit 0
	// without an answer: stalled, retried at the longest interval.
	exhaustedRefund = step{effects: lookAndRefund.then("status: Processing/RetriesExhausted"),
		requeue: jittered(5 * time.Minute), events: []string{"RetriesExhausted"}}
)

// refundRefusedFirst is a new refund whose first refund the provider
// refuses for good with reason: Failed with it, finished.
func refundRefusedFirst(name, reason string) refundRow {
	return refundRow{name: name, refund: newRefund(), job: paidJob(), answers: []answer{refused(reason)},
		steps: []step{{effects: lookAndRefund.then("status: Failed/"+reason, finish), events: []string{reason}}},
		final: final{phase: failed, ready: reason, stalled: true}}
}

// refundRefusedOnRetry is a new refund whose first refund gets no answer
// and whose retry the provider refuses with a: the first may have given
// the money back, so an UncertainRefusal stall, never Failed.
func refundRefusedOnRetry(name string, a answer) refundRow {
	return refundRow{name: name, refund: newRefund(), job: paidJob(), answers: []answer{transient, a},
		steps: []step{uncertainRefund, {after: 2 * time.Second,
			effects: refundAgain.then("status: Processing/UncertainRefusal"),
			requeue: jittered(5 * time.Minute), events: []string{"Claimed", "UncertainRefusal"}}},
		final: final{phase: processing, ready: "UncertainRefusal", stalled: true}}
}

// refundDeclinedOnRetry is a new refund whose first refund gets no answer
// and whose retry the provider declines with reason: the provider would
// have replayed a refund the first attempt made under the key, so nothing
// went back; Failed with reason, as a charge declined on a retry.
func refundDeclinedOnRetry(name, reason string) refundRow {
	return refundRow{name: name, refund: newRefund(), job: paidJob(), answers: []answer{transient, refused(reason)},
		steps: []step{uncertainRefund, {after: 2 * time.Second,
			effects: refundAgain.then("status: Failed/"+reason, finish),
			events:  []string{"Claimed", reason}}},
		final: final{phase: failed, ready: reason, stalled: true}}
}

// stoppedUnsent is a new refund of job that waits (or stalls) before any
// look or claim for reason: one status write and its event, no call.
func stoppedUnsent(name string, job *paymentsv1alpha1.PaymentJob, reason string, requeue window,
	opts ...func(*paymentsv1alpha1.PaymentRefund)) refundRow {
	return refundRow{name: name, refund: newRefund(opts...), job: job, answers: []answer{refunded},
		steps: []step{{effects: []string{"status: Pending/" + reason}, requeue: requeue, events: []string{reason}}},
		final: final{phase: pending, ready: reason, stalled: requeue == noRequeue}}
}

func TestRefundProtocol(t *testing.T) {
	for _, tt := range refundTable {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newRefundWorld(t, tt)
			playSteps(t, g, w, tt.steps)
			checkRefundInvariants(g, w, tt)
			checkFinal(g, w, tt.final)
		})
	}
}

// refusedUnsent are the reasons the refund kind fails a refund with before
// any provider call, on what it read.
var refusedUnsent = []string{payment.ReasonRefundExceedsCharge, payment.ReasonChargeNotRefundable, paymentsv1alpha1.ReasonPaymentFailed}

// checkRefundInvariants checks what holds for every refund row: each call
// sends the refund's key and request for the refunded charge, the claimed
// refund recorded that charge, and Failed follows a definitive refusal,
// the provider's or, with no call at all, the refund kind's.
func checkRefundInvariants(g Gomega, w *world, tt refundRow) {
	charge := cmp.Or(tt.charge, chargeID)
	for i, c := range w.provider.callsNamed("refund", "settle") {
		g.Expect(c.key).To(Equal(sentKey()), "%s %d: idempotency key", c.what, i+1)
		if c.what == "refund" {
			g.Expect(c.refund).To(Equal(sentRequest(tt.refund, charge)), "refund %d: request", i+1)
		}
	}
	for i, c := range w.provider.callsNamed("lookup") {
		g.Expect(c.refund.Charge).To(Equal(charge), "lookup %d: charge", i+1)
	}
	rf := w.kind.New()
	if err := w.store.Get(context.Background(), w.key, rf); apierrors.IsNotFound(err) {
		return
	}
	st := rf.GetPaymentStatus()
	if st.Attempts > 0 {
		g.Expect(rf.(*paymentsv1alpha1.PaymentRefund).Status.Charge).To(Equal(&paymentsv1alpha1.RefundedCharge{
			ID: charge, IdempotencyKey: paymentjob.ChargeOf(newJob()).Key, Amount: amount, Currency: currency,
		}), "status.charge, recorded with the claim")
	}
	if readyReason(rf) == paymentsv1alpha1.ReasonUncertainRefusal {
		c := meta.FindStatusCondition(st.Conditions, paymentsv1alpha1.ConditionReady)
		g.Expect(c.Message).To(And(ContainSubstring("may have refunded"), ContainSubstring("not failing the refund")),
			"the Ready condition of a refund stalled on an uncertain refusal")
	}
	if st.Phase != failed || readyReason(rf) == paymentsv1alpha1.ReasonResolved {
		return
	}
	sent := w.provider.callsNamed("refund", "settle")
	if len(sent) == 0 {
		g.Expect(st.Attempts).To(BeZero(), "Failed without a provider call must come before any claim")
		g.Expect(refusedUnsent).To(ContainElement(readyReason(rf)), "Failed without a provider call")
		return
	}
	last := sent[len(sent)-1]
	_, refusal := payment.IsRefusal(last.err)
	g.Expect(refusal).To(BeTrue(), "Failed must follow a definitive refusal; the provider's last answer was %v", last.err)
	// The refusal of a refund speaks of the refund, never of a charge.
	ready := meta.FindStatusCondition(st.Conditions, paymentsv1alpha1.ConditionReady)
	g.Expect(ready).NotTo(BeNil())
	g.Expect(ready.Message).To(HavePrefix("The provider refused the refund; no money went back: "), "the Ready condition of a refused refund")
}
