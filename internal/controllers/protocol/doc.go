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

// Package protocol holds the table of the PaymentJob protocol: for each
// state of a job and each answer of its provider, the writes the reconciler
// makes and the result it returns, in the style of crossplane-runtime's
// reconciler tests. It has tests only; this file is its documentation.
//
// The table is theTable in protocol_test.go. It drives the real
// engine.Reconciler with paymentjob.Kind and the real
// providercache.ProviderCache, against controller-runtime's fake client, a
// scripted payment.Provider, an in-memory outcome ledger and a fake clock. Nothing is started: no API
// server, no process, no network listener, so the whole table runs in
// about a second. What needs an API server (CRD validation, the watch and
// the cache, several managers at once) stays in the envtest suite of
// internal/controllers.
//
// How to read a row:
//
//   - job is the PaymentJob before the first pass, built from the same
//     functions the reconciler's writes use (paymentjob.ClaimStatus,
//     paymentjob.CompletedStatus); provider is its PaymentProvider (Ready by
//     default); answers are what the provider answers to each Charge, in
//     order; ledger, when set, turns the outcome ledger on.
//   - steps are passes: each moves the fake clock on by after, lets other
//     writers act (before: another replica, a person, a GitOps tool), makes
//     the API server refuse some writes (faults), runs Reconcile once and
//     compares what it did.
//   - effects are, in order, the writes to the API server, the provider
//     calls and the ledger records of the pass. "status: Processing/Claimed"
//     is a status update to phase Processing with Ready reason Claimed: the
//     claim. "patch: +finalizer" and "patch: -finalizer +finished" are the
//     job's metadata patches; "provider: +in-use" is the provider's
//     finalizer; "charge" and "settle" are provider calls; "ledger:
//     Completed" is a ledger record. A write the API server refused ends in
//     (conflict) or (error); one that removed the last finalizer of a
//     deleted job ends in (deleted).
//   - requeue bounds the pass's RequeueAfter (none, exactly, or jittered: up
//     to 20% more); err says whether Reconcile returned an error; events
//     are the reasons of the events the pass emitted.
//   - final is the job after the last pass: phase, Ready reason, Stalled.
//   - What recurs has a name, defined after the table: runs of effects
//     (claimAndCharge, chargeAgain, completeAndFinish, with then to add
//     what follows), passes (transientFirst, pendingFirst, replayedRetry,
//     claimConflict, ...), a final state (paid) and families of rows
//     (refusedFirst, refusedOnRetry, stoppedBy). Each stands for exactly
//     the effects, events, requeue windows and final state it is made of.
//
// Every row also checks the invariants of the protocol: a provider call
// only follows a claim write of the same pass that the API server accepted;
// every charge sends the job's own idempotency key and request; a Failed
// job follows a definitive refusal only.
//
// The table runs twice: with paymentjob.Kind (TestProtocol) and with the
// example kind of example_kind_test.go (TestExampleKind), a kind written on
// the engine's seam from its package doc alone, with words and a client of
// its own. Every row holds for both: the protocol is the engine's, not the
// kind's.
//
// The refunds have a table of their own, refundTable in
// refund_protocol_test.go, read the same way: the same engine with
// paymentrefund.Kind, a PaymentRefund of a Completed PaymentJob
// (or of one that is gone, found in the ledger), and a provider that also
// refunds (payment.Refunder). Its effects add "refund" (the refund call)
// and "lookup" (the provider's list of the charge's refunds, read before
// the first claim). Its invariants: a refund call only follows an accepted
// claim write; every call sends the refund's key and request for the
// refunded charge, which the claim records in status.charge; a Failed
// refund follows the provider's definitive refusal, or, with no provider
// call and no claim at all, the refund kind's own (more than is left, a
// charge that cannot be refunded, a payment that failed).
package protocol
