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
// stops, without a call, whatever could pay twice. A Kind (paymentjob.Kind,
// paymentrefund.Kind) supplies what differs: the terms, key and request of
// its objects, the provider calls, the look at the provider before the
// first call, and the checks before the first claim.
//
// The rooms: reconcile.go is the state machine (Reconcile, admit, resume,
// finishTerminal, setup and watches); claim.go the side effect (claim, call,
// record); writes.go every API write, its rule stated at the top; status.go
// what a claim and an outcome set; guards.go what stops an object before it
// could pay twice; provider.go how an object reaches its PaymentProvider;
// ledger.go the outcome ledger in the protocol; resolve.go a person's
// resolution; lookup.go the lookup before a first call; backoff.go,
// conditions.go, defaults.go, metrics.go, cache.go, readiness.go,
// indexes.go, written.go and memory.go one thing each.
//
// The engine never imports a kind, the PaymentProvider reconciler, the
// audit or the TTL collector: they import it (its Scheduler and
// AttributionPolicy are what the collector and the audit implement).
package engine
