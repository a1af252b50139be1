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
	"fmt"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentjob"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// row is one line of the protocol: a job and its provider in a state, the
// provider's answers, and what each pass of the reconciler does.
type row struct {
	name string
	// job is the PaymentJob before the first pass.
	job      *paymentsv1alpha1.PaymentJob
	provider providerState
	// looker makes the provider a payment.Looker, answering settle.
	looker  bool
	answers []answer
	settle  answer
	// settles, when set, script the settles one by one (a settling
	// payment read again and again).
	settles []answer
	// ledger turns the outcome ledger on; nil leaves it off.
	ledger *ledgerState
	steps  []step
	// final is the job after the last pass.
	final final
}

// step is one pass: Reconcile once, after the clock moved on by after and
// other writers did before.
type step struct {
	after  time.Duration
	before func(*world)
	faults []fault
	// effects are the writes to the API server, the provider calls and
	// the ledger records of the pass, in order.
	effects []string
	requeue window
	err     bool
	// events are the reasons of the events the pass emitted.
	events []string
}

// final is the stored job after the row.
type final struct {
	phase   paymentsv1alpha1.PaymentJobPhase
	ready   string
	stalled bool
	// gone: the job was deleted, its finalizer off.
	gone bool
}

const (
	pending    = paymentsv1alpha1.PhasePending
	processing = paymentsv1alpha1.PhaseProcessing
	completed  = paymentsv1alpha1.PhaseCompleted
	failed     = paymentsv1alpha1.PhaseFailed
)

// theTable is the protocol. Effects name API writes as "status: <phase>/<Ready
// reason>" (a status update), "patch: +finalizer", "patch: -finalizer
// +finished" (the job's metadata), "provider: +in-use" (the provider's
// finalizer); provider calls as "charge" and "settle"; ledger records as
// "ledger: <outcome>". A write the API server refused ends in (conflict) or
// (error); one that removed the last finalizer of a deleted job ends in
// (deleted). The runs of effects, passes and rows that recur have names;
// they are defined below the table.
var theTable = []row{
	// New and Pending jobs: nothing has been sent yet.
	{
		name: "new job, charge succeeds: finalizer, claim, charge, Completed, finished",
		job:  newJob(), provider: providerUnguarded, answers: []answer{succeeded},
		steps: []step{{
			effects: []string{"patch: +finalizer", "provider: +in-use", "status: Processing/Claimed", "charge",
				"status: Completed/Succeeded", finish},
			events: []string{"Succeeded"},
		}, {
			// Its watch event: a finished job is left alone.
			after: time.Minute,
		}},
		final: paid,
	},
	{
		name: "new job whose key the provider already charged (manifest re-applied): Completed as replayed",
		job:  newJob(), answers: []answer{replayed},
		steps: []step{{effects: claimAndCharge.then(completeAndFinish...), events: []string{"Replayed"}}},
		final: paid,
	},
	{
		name: "suspended: Pending, written once; unsuspended: charged",
		job:  newJob(suspended), answers: []answer{succeeded},
		steps: []step{pendingFirst("Suspended", noRequeue), {after: time.Hour}, {
			before: unsuspended, effects: chargeAgain.then(completeAndFinish...), events: []string{"Succeeded"},
		}},
		final: paid,
	},
	{
		name:  "suspended with a deadline: requeued at the deadline",
		job:   newJob(suspended, deadline(300)),
		steps: []step{pendingFirst("Suspended", exactly(4*time.Minute))},
		final: final{phase: pending, ready: "Suspended"},
	},
	{
		name: "deadline passed before the claim: Pending, stalled, never charged",
		job:  newJob(deadline(30)), answers: []answer{succeeded},
		steps: []step{pendingFirst("DeadlineExceeded", noRequeue)},
		final: final{phase: pending, ready: "DeadlineExceeded", stalled: true},
	},
	{
		name: "provider not found: Pending with a requeue; provider created: charged",
		job:  newJob(), provider: providerMissing, answers: []answer{succeeded},
		steps: []step{pendingFirst("ProviderNotFound", jittered(time.Second)), {
			after: time.Second, before: providerCreated,
			effects: chargeAgain.then(completeAndFinish...), events: []string{"Succeeded"},
		}},
		final: paid,
	},
	{
		name: "provider not Ready: Pending with a requeue, written once",
		job:  newJob(), provider: providerNotReady, answers: []answer{succeeded},
		steps: []step{pendingFirst("ProviderNotReady", jittered(time.Second)),
			{after: time.Second, requeue: jittered(time.Second)}},
		final: final{phase: pending, ready: "ProviderNotReady"},
	},
	{
		name: "provider being deleted, job not claimed: Pending, never charged through it",
		job:  newJob(), provider: providerDeleting, answers: []answer{succeeded},
		steps: []step{pendingFirst("ProviderDeleted", jittered(time.Second))},
		final: final{phase: pending, ready: "ProviderDeleted"},
	},

	// The provider's answer to a first claim.
	refusedFirst("declined: Failed, finished", declined, "CardDeclined"),
	refusedFirst("invalid request: Failed, finished", invalid, "InvalidRequest"),
	refusedFirst("key reused with other parameters on the first attempt: Failed (this request charged nothing)",
		keyReused, "IdempotencyKeyReused"),
	{
		name: "transient: stays Processing, waits out the backoff, retries with the same key and gets the replay",
		job:  newJob(), answers: []answer{transient, replayed},
		steps: []step{transientFirst, {
			// The watch event of its own write: the (jittered) backoff is
			// not over.
			after: 500 * time.Millisecond, requeue: between(500*time.Millisecond, 700*time.Millisecond),
		}, replayedRetry(700 * time.Millisecond)},
		final: paid,
	},
	{
		name: "provider call times out (context deadline): uncertain, stays Processing",
		job:  newJob(), answers: []answer{timedOut},
		steps: []step{transientFirst},
		final: final{phase: processing, ready: "TransientError"},
	},
	{
		name: "transient after backoffLimit: Stalled RetriesExhausted, retried at the longest interval, never Failed",
		job:  newJob(backoffLimit(1)), answers: []answer{transient, transient, replayed},
		steps: []step{transientFirst, {
			after: 2 * time.Second, effects: chargeAgain.then("status: Processing/RetriesExhausted"),
			requeue: jittered(5 * time.Minute), events: []string{"Claimed", "RetriesExhausted"},
		}, {
			// The watch event of its own write: the longest interval holds.
			after: time.Second, requeue: between(5*time.Minute-time.Second, 6*time.Minute),
		}, replayedRetry(6 * time.Minute)},
		final: paid,
	},
	refusedOnRetry("invalid on a retry (an earlier attempt had no answer): UncertainRefusal stall, never Failed",
		transient, invalid),
	refusedOnRetry("key reused on a retry: UncertainRefusal stall, never Failed", timedOut, keyReused),
	{
		name: "declined on a retry: Failed (the provider would have replayed a charge made under the key)",
		job:  newJob(), answers: []answer{transient, declined},
		steps: []step{transientFirst, {
			after: 2 * time.Second, effects: chargeAgain.then("status: Failed/CardDeclined", finish),
			events: []string{"Claimed", "CardDeclined"},
		}},
		final: final{phase: failed, ready: "CardDeclined", stalled: true},
	},
	{
		name: "429 with Retry-After 30s: not retried before 30s, even when its own write's watch event comes first",
		job:  newJob(), answers: []answer{retryAfter(30 * time.Second), replayed},
		steps: []step{{
			effects: claimAndCharge.then("status: Processing/TransientError"),
			requeue: jittered(30 * time.Second), events: []string{"TransientError"},
		}, {after: 2 * time.Second, requeue: between(28*time.Second, 36*time.Second)}},
		final: final{phase: processing, ready: "TransientError"},
	},

	// Processing jobs: claims, takeovers, conflicts.
	{
		name: "another holder's unexpired claim: no write, requeue until it expires; then taken over, same key, replayed",
		job:  newJob(claimed(other, 10*time.Second)), answers: []answer{replayed},
		steps: []step{{requeue: exactly(50 * time.Second)}, takenOverReplayed(50 * time.Second)},
		final: paid,
	},
	{
		name: "another holder's expired claim: ClaimTakenOver, charged with the same key, replayed",
		job:  newJob(claimed(other, 2*time.Minute)), answers: []answer{replayed},
		steps: []step{takenOverReplayed(0)},
		final: paid,
	},
	{
		name: "claim write conflict: no charge, quiet requeue, no error",
		job:  newJob(), answers: []answer{succeeded},
		steps: []step{claimConflict(nil)},
		final: final{},
	},
	{
		name: "claim race lost to another replica: no charge; then its claim is waited out",
		job:  newJob(), answers: []answer{succeeded},
		steps: []step{claimConflict(claimedBy(other, paymentsv1alpha1.ReasonClaimed)), waitOutClaim},
		final: final{phase: processing, ready: "Claimed"},
	},
	{
		name: "claim write fails (500): error, no charge",
		job:  newJob(), answers: []answer{succeeded},
		steps: []step{{
			faults:  []fault{{on: "status: Processing/Claimed", err: serverError}},
			effects: []string{"patch: +finalizer", "status: Processing/Claimed (error)"}, err: true,
		}},
		final: final{},
	},
	{
		name: "outcome write conflict, claim still ours (a label added meanwhile): written again on a fresh copy",
		job:  newJob(), answers: []answer{succeeded},
		steps: []step{{
			faults:  []fault{{on: "status: Completed/Succeeded", err: conflict, meanwhile: labelledByGitOps}},
			effects: claimAndCharge.then("status: Completed/Succeeded (conflict)", "status: Completed/Succeeded", finish),
			events:  []string{"Succeeded"},
		}},
		final: paid,
	},
	{
		name: "outcome write conflict, claim taken over during the call: no outcome written, quiet requeue",
		job:  newJob(), answers: []answer{succeeded},
		steps: []step{claimTakenOverBefore("status: Completed/Succeeded"), waitOutClaim},
		final: final{phase: processing, ready: "ClaimTakenOver"},
	},
	{
		name: "refusal write conflict, claim taken over during the call: not Failed, quiet requeue",
		job:  newJob(), answers: []answer{declined},
		steps: []step{claimTakenOverBefore("status: Failed/CardDeclined")},
		final: final{phase: processing, ready: "ClaimTakenOver"},
	},
	{
		name: "outcome write fails (500): error; the next pass claims again and gets the replay",
		job:  newJob(), answers: []answer{succeeded, replayed},
		steps: []step{{
			faults:  []fault{{on: "status: Completed/Succeeded", err: serverError}},
			effects: claimAndCharge.then("status: Completed/Succeeded (error)"), err: true,
		}, replayedRetry(2 * time.Second)},
		final: paid,
	},
	{
		name: "transient, and its progress write conflicts: still requeued, no error",
		job:  newJob(), answers: []answer{transient},
		steps: []step{{
			faults:  []fault{{on: "status: Processing/TransientError", err: conflict}},
			effects: claimAndCharge.then("status: Processing/TransientError (conflict)"),
			requeue: jittered(time.Second), events: []string{"TransientError"},
		}},
		final: final{phase: processing, ready: "Claimed"},
	},

	// Terminal and deleted jobs.
	{
		name: "Completed, finalizer left by a crash: only the finishing write, no provider call",
		job:  newJob(completedEarlier), answers: []answer{succeeded},
		steps: []step{{effects: []string{finish}}},
		final: paid,
	},
	{
		name: "Completed and finished: nothing at all",
		job:  newJob(completedEarlier, finished), answers: []answer{succeeded},
		steps: []step{{}},
		final: paid,
	},
	{
		name: "Completed, spec edited since: observedGeneration caught up, then finished, no provider call",
		job:  newJob(completedEarlier, specEdited), answers: []answer{succeeded},
		steps: []step{{effects: completeAndFinish}},
		final: paid,
	},
	{
		name: "deleted before the claim: finalizer removed, never charged",
		job:  newJob(deleting), answers: []answer{succeeded},
		steps: []step{{effects: []string{"patch: -finalizer (deleted)"}}, {after: time.Second}},
		final: final{gone: true},
	},
	{
		name: "deleted while Processing: the charge is resolved first (same key), then the finalizer comes off",
		job:  newJob(claimed(other, 2*time.Minute), deleting), answers: []answer{replayed},
		steps: []step{{
			effects: takeOverAndCharge.then("status: Completed/Succeeded", finish+" (deleted)"),
			events:  []string{"ClaimTakenOver", "Replayed"},
		}},
		final: final{gone: true},
	},

	// Guards: whenever a charge could pay twice, stop without a provider call.
	stoppedBy("request changed after the first claim (requestHash differs): RequestChanged stall, no charge",
		newJob(claimed(me, 2*time.Minute), requestHash("sha256:0000")), "RequestChanged"),
	stoppedBy("status key is not the derived key: KeyMismatch stall, no charge",
		newJob(claimed(other, 2*time.Minute), statusKey("billing/invoice-41")), "KeyMismatch"),
	stoppedBy("provider object replaced while Processing: ProviderChanged stall, no charge",
		newJob(claimed(other, 2*time.Minute), sentToUID("old-uid")), "ProviderChanged"),
	{
		name: "provider deleted while Processing, adapter kept: finished through it with the same key",
		job:  newJob(), answers: []answer{transient, replayed},
		steps: []step{transientFirst, {
			after: 2 * time.Second, before: providerGone,
			effects: chargeAgain.then(completeAndFinish...), events: []string{"Claimed", "Replayed"},
		}},
		final: paid,
	},
	{
		name: "provider gone while Processing, no adapter kept (restarted): ProviderDeleted stall, never Failed",
		job:  newJob(claimed(other, 2*time.Minute)), provider: providerMissing, answers: []answer{succeeded},
		steps: []step{{
			effects: []string{"status: Processing/ProviderDeleted"},
			requeue: jittered(5 * time.Minute), events: []string{"ProviderDeleted"},
		}},
		final: final{phase: processing, ready: "ProviderDeleted", stalled: true},
	},
	{
		name: "charge not final at the provider, provider can read it: settled, never charged again",
		job:  newJob(claimed(other, 2*time.Minute), chargePending("pi_1")), looker: true,
		answers: []answer{succeeded}, settle: succeeded,
		steps: []step{{
			effects: effects{"status: Processing/ClaimTakenOver", "settle"}.then(completeAndFinish...),
			events:  []string{"ClaimTakenOver", "FoundAtProvider"},
		}},
		final: paid,
	},
	{
		name: "charge not final at the provider, provider cannot read it: TransientError, never charged around",
		job:  newJob(claimed(other, 2*time.Minute), chargePending("pi_1")), answers: []answer{succeeded},
		steps: []step{{
			effects: []string{"status: Processing/ClaimTakenOver", "status: Processing/TransientError"},
			requeue: jittered(2 * time.Second), events: []string{"ClaimTakenOver", "TransientError"},
		}},
		final: final{phase: processing, ready: "TransientError"},
	},

	// A person's resolution of an uncertain payment.
	{
		name: "stalled job resolved as charged: Completed as resolved, no provider call",
		job:  newJob(backoffLimit(0)), answers: []answer{transient},
		steps: []step{{
			effects: claimAndCharge.then("status: Processing/RetriesExhausted"),
			requeue: jittered(5 * time.Minute), events: []string{"RetriesExhausted"},
		}, {
			after: time.Minute, before: resolvedAs("charged=pi_1"),
			effects: []string{"status: Completed/Resolved", finish}, events: []string{"Resolved"},
		}},
		final: final{phase: completed, ready: "Resolved"},
	},
	{
		name: "resolution of a job that is not stalled: refused, the retry goes on with the same key",
		job:  newJob(), answers: []answer{transient, replayed},
		steps: []step{transientFirst, {
			after: 2 * time.Second, before: resolvedAs("not-charged"),
			effects: chargeAgain.then(completeAndFinish...), events: []string{"ResolutionRefused", "Claimed", "Replayed"},
		}},
		final: paid,
	},

	{
		name: "not-charged right after the last attempt: waits out the provider's search lag, no attempt meanwhile, then Failed as resolved",
		job:  newJob(backoffLimit(0)), answers: []answer{transient},
		steps: []step{{
			effects: claimAndCharge.then("status: Processing/RetriesExhausted"),
			requeue: jittered(5 * time.Minute), events: []string{"RetriesExhausted"},
		}, {
			after: time.Second, before: resolvedAs("not-charged"),
			requeue: exactly(59 * time.Second), events: []string{"ResolutionWaiting"},
		}, {
			after: 59 * time.Second, effects: []string{"status: Failed/Resolved", finish}, events: []string{"Resolved"},
		}},
		final: final{phase: failed, ready: "Resolved", stalled: true},
	},
	{
		name: "resolution refused while the job was not stalled: honoured once it stalls",
		job:  newJob(backoffLimit(1)), answers: []answer{transient},
		steps: []step{transientFirst, {
			after: 2 * time.Second, before: resolvedAs("charged=pi_1"),
			effects: chargeAgain.then("status: Processing/RetriesExhausted"),
			requeue: jittered(5 * time.Minute), events: []string{"ResolutionRefused", "Claimed", "RetriesExhausted"},
		}, {
			after: time.Minute, effects: []string{"status: Completed/Resolved", finish}, events: []string{"Resolved"},
		}},
		final: final{phase: completed, ready: "Resolved"},
	},

	// The outcome ledger.
	{
		name: "ledger holds the job's outcome (job re-created): finished from the ledger, no provider call",
		job:  newJob(), answers: []answer{succeeded},
		ledger: &ledgerState{entries: []ledger.Entry{ledgerEntry("")}},
		steps: []step{{
			effects: []string{"status: Completed/FoundInLedger", "patch: +finished"}, events: []string{"FoundInLedger"},
		}},
		final: final{phase: completed, ready: "FoundInLedger"},
	},
	{
		name: "ledger holds the key for another request: ChargeMismatch stall, no provider call",
		job:  newJob(), answers: []answer{succeeded},
		ledger: &ledgerState{entries: []ledger.Entry{ledgerEntry("sha256:0000")}},
		steps:  []step{{effects: []string{"status: Pending/ChargeMismatch"}, events: []string{"ChargeMismatch"}}},
		final:  final{phase: pending, ready: "ChargeMismatch", stalled: true},
	},
	{
		name: "ledger holds the job's outcome made at another endpoint: ProviderChanged stall, no provider call",
		job:  newJob(), answers: []answer{succeeded},
		ledger: &ledgerState{entries: []ledger.Entry{movedLedgerEntry()}},
		steps:  []step{{effects: []string{"status: Pending/ProviderChanged"}, events: []string{"ProviderChanged"}}},
		final:  final{phase: pending, ready: "ProviderChanged", stalled: true},
	},
	{
		name: "Processing again after an etcd restore, its outcome in a ledger outside etcd: finished from the ledger, never sent again",
		job:  newJob(claimed(other, 2*time.Minute)), answers: []answer{succeeded},
		ledger: &ledgerState{entries: []ledger.Entry{ledgerEntry("")}, outside: true},
		steps: []step{{
			effects: []string{"status: Completed/FoundInLedger", finish}, events: []string{"FoundInLedger"},
		}},
		final: final{phase: completed, ready: "FoundInLedger"},
	},
	{
		name: "Processing again after an etcd restore, the ledger outside etcd holds the key for another request: ChargeMismatch stall, not sent",
		job:  newJob(claimed(other, 2*time.Minute)), answers: []answer{succeeded},
		ledger: &ledgerState{entries: []ledger.Entry{ledgerEntry("sha256:0000")}, outside: true},
		steps:  []step{{effects: []string{"status: Processing/ChargeMismatch"}, events: []string{"ChargeMismatch"}}},
		final:  final{phase: processing, ready: "ChargeMismatch", stalled: true},
	},
	{
		name: "Processing again, the ledger outside etcd does not answer: nothing sent until it does",
		job:  newJob(claimed(other, 2*time.Minute)), answers: []answer{succeeded},
		ledger: &ledgerState{findErr: errors.New("database unavailable"), outside: true},
		steps: []step{{effects: []string{"status: Processing/LedgerUnavailable"}, requeue: jittered(time.Second),
			events: []string{"LedgerUnavailable"}}},
		final: final{phase: processing, ready: "LedgerUnavailable"},
	},
	{
		name: "Processing again, the ledger in etcd (restored with the job) is not asked: same key sent again, the provider replays",
		job:  newJob(claimed(other, 2*time.Minute)), answers: []answer{replayed},
		ledger: &ledgerState{entries: []ledger.Entry{ledgerEntry("")}},
		steps: []step{{effects: []string{"status: Processing/ClaimTakenOver", "charge", "status: Completed/Succeeded", "ledger: Completed", finish},
			events: []string{"ClaimTakenOver", "Replayed"}}},
		final: paid,
	},
	{
		name: "ledger has no entry: charged, recorded in the ledger before the finalizer comes off",
		job:  newJob(), answers: []answer{succeeded}, ledger: &ledgerState{},
		steps: []step{{
			effects: claimAndCharge.then("status: Completed/Succeeded", "ledger: Completed", finish),
			events:  []string{"Succeeded"},
		}},
		final: paid,
	},
	{
		name: "declined with the ledger on: Failed recorded before the finalizer comes off",
		job:  newJob(), answers: []answer{declined}, ledger: &ledgerState{},
		steps: []step{{
			effects: claimAndCharge.then("status: Failed/CardDeclined", "ledger: Failed", finish),
			events:  []string{"CardDeclined"},
		}},
		final: final{phase: failed, ready: "CardDeclined", stalled: true},
	},
	{
		name: "ledger record fails: error, the finalizer stays; the next pass records, then finishes, no provider call",
		job:  newJob(), answers: []answer{succeeded},
		ledger: &ledgerState{recordErrs: []error{errors.New("etcd timeout")}},
		steps: []step{{
			effects: claimAndCharge.then("status: Completed/Succeeded", "ledger: Completed (error)"),
			err:     true, events: []string{"Succeeded", "LedgerUnavailable"},
		}, {after: time.Second, effects: []string{"ledger: Completed", finish}}},
		final: paid,
	},
	{
		name: "ledger holds another outcome under the key (another job's, recorded first): Completed stays, " +
			"Stalled LedgerConflict announced once, the finalizer stays",
		job: newJob(), answers: []answer{succeeded},
		ledger: &ledgerState{recordedMeanwhile: refusedLedgerEntry()},
		steps: []step{{
			effects: claimAndCharge.then("status: Completed/Succeeded", "ledger: Completed (error)", "status: Completed/Succeeded"),
			events:  []string{"Succeeded", "LedgerConflict"},
		}, {after: time.Minute, effects: []string{"ledger: Completed (error)"}}},
		final: final{phase: completed, ready: "Succeeded", stalled: true},
	},
	{
		name: "ledger cannot be read: Pending LedgerUnavailable, nothing charged, asked again with backoff",
		job:  newJob(), answers: []answer{succeeded},
		ledger: &ledgerState{findErr: errors.New("database unavailable")},
		steps: []step{
			{effects: []string{"status: Pending/LedgerUnavailable"}, requeue: jittered(time.Second), events: []string{"LedgerUnavailable"}},
			{after: time.Second, requeue: jittered(time.Second)},
		},
		final: final{phase: pending, ready: "LedgerUnavailable"},
	},
	{
		name: "ledger answers again: the job waiting for it is looked up, then charged",
		job:  newJob(), answers: []answer{succeeded},
		ledger: &ledgerState{findErr: errors.New("database unavailable")},
		steps: []step{
			{effects: []string{"status: Pending/LedgerUnavailable"}, requeue: jittered(time.Second), events: []string{"LedgerUnavailable"}},
			{after: time.Second, before: ledgerBack, effects: claimAndCharge.then("status: Completed/Succeeded", "ledger: Completed", finish),
				events: []string{"Succeeded"}},
		},
		final: paid,
	},
}

// The words of the table. Each stands for the literal effects, requeue
// windows, events and final state it is made of, and for nothing else.

// finish is the finishing write: the job's finalizer off, the finished
// label on.
const finish = "patch: -finalizer +finished"

// effects is a run of effects, in order.
type effects []string

// then is e followed by more.
func (e effects) then(more ...string) effects { return append(slices.Clip(e), more...) }

var (
	// claimAndCharge is a new job's first pass up to the provider's
	// answer: the finalizer, the claim, the charge.
	claimAndCharge = effects{"patch: +finalizer", "status: Processing/Claimed", "charge"}
	// chargeAgain is a later pass of the same holder: a fresh claim, the
	// charge.
	chargeAgain = effects{"status: Processing/Claimed", "charge"}
	// takeOverAndCharge is another holder's expired claim taken over, and
	// the charge under it.
	takeOverAndCharge = effects{"status: Processing/ClaimTakenOver", "charge"}
	// completeAndFinish is the outcome of a successful charge written,
	// then the finishing write.
	completeAndFinish = effects{"status: Completed/Succeeded", finish}

	// noRequeue is a pass that sets no RequeueAfter.
	noRequeue = window{}
	// afterConflict is the quiet requeue after a write conflict.
	afterConflict = jittered(100 * time.Millisecond)

	// paid is a job Completed by its charge: Ready reason Succeeded.
	paid = final{phase: completed, ready: "Succeeded"}
)

// Passes.
var (
	// transientFirst is a new job's first pass answered with a transient
	// error: still Processing, requeued after the backoff's first interval.
	transientFirst = step{effects: claimAndCharge.then("status: Processing/TransientError"),
		requeue: jittered(time.Second), events: []string{"TransientError"}}
	// waitOutClaim is a pass a second later that finds another holder's
	// fresh claim: no write, requeued when it expires.
	waitOutClaim = step{after: time.Second, requeue: exactly(59 * time.Second)}
)

// pendingFirst is a new job's first pass that stops before the claim: the
// finalizer, then Pending with reason and its event.
func pendingFirst(reason string, requeue window) step {
	return step{effects: []string{"patch: +finalizer", "status: Pending/" + reason}, requeue: requeue,
		events: []string{reason}}
}

// claimConflict is a new job's first pass whose claim write the API server
// refuses with a conflict, while another writer acts (meanwhile, when not
// nil): no charge, a quiet requeue, no error.
func claimConflict(meanwhile func(*world)) step {
	return step{faults: []fault{{on: "status: Processing/Claimed", err: conflict, meanwhile: meanwhile}},
		effects: []string{"patch: +finalizer", "status: Processing/Claimed (conflict)"}, requeue: afterConflict}
}

// claimTakenOverBefore is a new job's first pass in which another replica
// takes the claim over during the charge: the API server refuses the write
// that follows the provider's answer (write) with a conflict, and nothing
// more is written; a quiet requeue, no error.
func claimTakenOverBefore(write string) step {
	return step{faults: []fault{{on: write, err: conflict, meanwhile: claimedBy(other, paymentsv1alpha1.ReasonClaimTakenOver)}},
		effects: claimAndCharge.then(write + " (conflict)"), requeue: afterConflict}
}

// replayedRetry is a later pass, once the clock moved on by after: claimed
// and charged again with the same key, the provider replays the charge;
// Completed, finished.
func replayedRetry(after time.Duration) step {
	return step{after: after, effects: chargeAgain.then(completeAndFinish...),
		events: []string{"Claimed", "Replayed"}}
}

// takenOverReplayed is a pass, once the clock moved on by after, that takes
// another holder's expired claim over and charges with the same key, the
// provider replays the charge; Completed, finished.
func takenOverReplayed(after time.Duration) step {
	return step{after: after, effects: takeOverAndCharge.then(completeAndFinish...),
		events: []string{"ClaimTakenOver", "Replayed"}}
}

// Families of rows.

// refusedFirst is a new job whose first charge the provider refuses for
// good with a: Failed with reason, finished.
func refusedFirst(name string, a answer, reason string) row {
	return row{name: name, job: newJob(), answers: []answer{a},
		steps: []step{{effects: claimAndCharge.then("status: Failed/"+reason, finish), events: []string{reason}}},
		final: final{phase: failed, ready: reason, stalled: true}}
}

// refusedOnRetry is a new job whose first charge gets no answer (first)
// and whose retry the provider refuses (second): the charge may have been
// made, so an UncertainRefusal stall, never Failed.
func refusedOnRetry(name string, first, second answer) row {
	return row{name: name, job: newJob(), answers: []answer{first, second},
		steps: []step{transientFirst, {after: 2 * time.Second,
			effects: chargeAgain.then("status: Processing/UncertainRefusal"),
			requeue: jittered(5 * time.Minute), events: []string{"Claimed", "UncertainRefusal"}}},
		final: final{phase: processing, ready: "UncertainRefusal", stalled: true}}
}

// stoppedBy is a claimed job a guard stops: one status write, Processing
// with reason, and its event; stalled, no provider call.
func stoppedBy(name string, job *paymentsv1alpha1.PaymentJob, reason string) row {
	return row{name: name, job: job, answers: []answer{succeeded},
		steps: []step{{effects: []string{"status: Processing/" + reason}, events: []string{reason}}},
		final: final{phase: processing, ready: reason, stalled: true}}
}

func TestProtocol(t *testing.T) {
	for _, tt := range theTable {
		t.Run(tt.name, func(t *testing.T) {
			run(t, NewWithT(t), tt)
		})
	}
}

// run plays a row's steps and checks each pass, the protocol's invariants
// and the final job.
func run(t *testing.T, g Gomega, tt row) {
	runWith(t, g, tt, newWorld(t, tt))
}

// runWith is run in the world w, made for tt.
func runWith(t *testing.T, g Gomega, tt row, w *world) {
	playSteps(t, g, w, tt.steps)
	checkInvariants(g, w, tt)
	checkFinal(g, w, tt.final)
}

// playSteps runs steps in w and checks each pass: its effects, events, error
// and requeue, and that its guarded provider calls followed a claim.
func playSteps(t *testing.T, g Gomega, w *world, steps []step) {
	for i, s := range steps {
		w.clock.Step(s.after)
		if s.before != nil {
			s.before(w)
		}
		guarded := w.guarded
		if w.settling() {
			// Reads of a payment the provider accepted and has not
			// settled move no money: they need no claim.
			guarded = slices.DeleteFunc(slices.Clone(guarded), func(c string) bool { return c == "settle" })
		}
		p := w.reconcile(t, s.faults)
		at := fmt.Sprintf("step %d", i+1)
		g.Expect(p.effects).To(list(s.effects), at+": effects")
		g.Expect(p.events).To(list(s.events), at+": event reasons")
		if s.err {
			g.Expect(p.err).To(HaveOccurred(), at+": error")
		} else {
			g.Expect(p.err).NotTo(HaveOccurred(), at+": error")
		}
		g.Expect(p.result.RequeueAfter).To(within(s.requeue), at+": RequeueAfter")
		g.Expect(chargesUnderClaim(p.effects, guarded)).To(Succeed(), at)
	}
}

// chargesUnderClaim checks that every guarded provider call of a pass came
// after a claim write of that pass that the API server accepted.
func chargesUnderClaim(effects, guarded []string) error {
	claimed := false
	for _, e := range effects {
		switch {
		case e == "status: Processing/Claimed", e == "status: Processing/ClaimTakenOver":
			claimed = true
		case slices.Contains(guarded, e) && !claimed:
			return fmt.Errorf("%s without an accepted claim write before it: %q", e, effects)
		}
	}
	return nil
}

// checkInvariants checks what holds for every row: each charge sends the
// job's key and request, and Failed follows a definitive refusal only.
func checkInvariants(g Gomega, w *world, tt row) {
	c := paymentjob.ChargeOf(tt.job)
	for i, call := range w.provider.callsNamed("charge") {
		g.Expect(call.key).To(Equal(c.Key), "charge %d: idempotency key", i+1)
		g.Expect(call.req).To(Equal(c.Request), "charge %d: request", i+1)
	}
	job := &paymentsv1alpha1.PaymentJob{}
	if err := w.store.Get(context.Background(), jobKey, job); err != nil || job.Status.Phase != failed {
		return
	}
	if readyReason(job) == paymentsv1alpha1.ReasonResolved {
		// A person's word, not a provider answer.
		return
	}
	last, answered := w.provider.lastCall()
	_, refused := payment.IsRefusal(last.err)
	g.Expect(answered && refused).To(BeTrue(),
		"Failed must follow a definitive refusal; the provider's last answer was %v", last.err)
}

// checkFinal checks the world's object after the last pass.
func checkFinal(g Gomega, w *world, want final) {
	obj := w.kind.New()
	err := w.store.Get(context.Background(), w.key, obj)
	if want.gone {
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the %s should be gone; get: %v", w.kind.Name(), err)
		return
	}
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(obj.GetPaymentStatus().Phase).To(Equal(want.phase), "final phase")
	g.Expect(readyReason(obj)).To(Equal(want.ready), "final Ready reason")
	g.Expect(meta.IsStatusConditionTrue(obj.GetPaymentStatus().Conditions, paymentsv1alpha1.ConditionStalled)).
		To(Equal(want.stalled), "final Stalled")
}

// list matches want, where nil and empty are the same.
func list(want []string) types.GomegaMatcher {
	if len(want) == 0 {
		return BeEmpty()
	}
	return Equal(want)
}

// within matches a RequeueAfter in w; the zero window matches zero only.
func within(w window) types.GomegaMatcher {
	return And(BeNumerically(">=", w.min), BeNumerically("<=", w.max))
}

// TestFinishedFromTheLedgerKeepsTheLedgersTime: a payment finished from the
// ledger is dated when the ledger says it finished, not when it was found,
// so that a reconciliation window places it where the provider has it.
func TestFinishedFromTheLedgerKeepsTheLedgersTime(t *testing.T) {
	g := NewWithT(t)
	e := ledgerEntry("")
	w := newWorld(t, row{job: newJob(), answers: []answer{succeeded}, ledger: &ledgerState{entries: []ledger.Entry{e}}})
	playSteps(t, g, w, []step{{effects: []string{"status: Completed/FoundInLedger", "patch: +finished"},
		events: []string{"FoundInLedger"}}})
	job := w.job()
	g.Expect(job.Status.CompletedAt).NotTo(BeNil())
	g.Expect(job.Status.CompletedAt.Time).To(BeTemporally("==", e.At), "completedAt is the ledger's time, a day ago")
}
