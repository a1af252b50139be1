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

// Package engine is the exactly-once payment protocol, once, for every kind
// of payment: its Reconciler claims an object on the resourceVersion it was
// decided on, calls the provider only after that claim was written, records
// the outcome (and in the outcome ledger) before the object's finalizer
// comes off, retries uncertain outcomes with the same idempotency key, and
// stops, without a call, whatever could pay twice.
//
// # Writing a kind
//
// A kind (paymentjob, paymentrefund) supplies what differs, on
// crossplane-runtime's model of a managed resource and its external client.
// It implements Kind[O] for its objects O (an API type whose status embeds
// PaymentStatus):
//
//   - Describe: its Name, New and NewList, the Words of every message the
//     engine writes on its objects ("Not refunding", "this refund", the
//     event action Refund), the Counters of its provider calls, and
//     ExactFind when its provider lists its payments exactly;
//   - Terms: the spec fields every kind has (SpecTerms reads them);
//   - Key and Request: the idempotency key under a provider's key scope, and
//     what is sent under it, the same on every attempt;
//   - Connect: a Client for one object at the provider the engine resolved
//     for this pass (Target), with four calls: Observe (the look before the
//     first claim: Target.LookupBatched for a provider that searches by key),
//     Send, Find and Settle (ErrCannotFind where the provider cannot look).
//
// Optional, with defaults that do nothing: Preparer (checks before the first
// claim that read more than the object, such as a refund's PaymentJob; what
// Prepare records in the status is written by the claim, so it runs once per
// admission), LedgerPreparer (the same, from the object's own ledger entry)
// and Watcher (watches beyond the object and its PaymentProvider). Prepare
// and Observe answer with one Result: Proceed, Wait (with a reason) or
// Refuse (with a reason); the engine writes it. A kind gets what it reads
// (a cache reader, the ledger) when it is built, never the Reconciler, and
// writes nothing: NewKind makes the AnyKind a Reconciler runs.
// paymentjob is the smallest kind and the one to read with this doc; the
// protocol package's example kind was written from them alone and passes
// every row of the protocol table.
//
// # Where things are
//
// reconcile.go is the state machine (Reconcile, admit, resume,
// finishTerminal, setup and watches); kind.go and anykind.go the seam;
// claim.go the side effect (claim, call, record); writes.go every API write,
// its rule stated at the top: the claim and the outcome guarded by the
// resourceVersion, every other status change of a pass written once at its
// end (pass.go holds it meanwhile); status.go what a claim and an outcome
// set; guards.go what stops an object before it could pay twice; provider.go
// how an object reaches its PaymentProvider; ledger.go the outcome ledger in
// the protocol; resolve.go a person's resolution; lookup.go the lookup
// before a first call; backoff.go, cache.go, conditions.go, defaults.go, metrics.go,
// readiness.go, indexes.go, written.go and memory.go one thing each.
//
// The engine never imports a kind, the PaymentProvider reconciler, the
// audit or the TTL collector: they import it (its Scheduler and
// AttributionPolicy are what the collector and the audit implement).
package engine
