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

// Package campaign is the in-process campaign: a property-based state
// machine (pgregory.net/rapid) that generates histories of what users and
// the world do, runs the operator's real engine on them, and checks the
// three books after every step. Its non-test files are the model's
// manifests (model.go) and the oracle's checks (oracle.go), with a facade
// (facade.go) through which the process campaign (test/e2e, make campaign)
// applies the same manifests and checks the same invariants; the world,
// the actions and the reads of the books are tests.
//
// # The world
//
// One history has its own world (world_test.go): a controller-runtime fake
// API server (status subresources, the engine's field indexes) holding the
// PaymentProviders of two namespaces, their credentials Secrets, the jobs
// and refunds, and the CRD ledger's pages; the sandbox engine (pkg/sandbox)
// as the provider, with two accounts (two engines): a PaymentProvider's
// credential names its account, and the provider cache's Build makes the
// in-process payment.Provider of that account, as a real key reaches its
// own; a fake clock that the sandbox and the reconcilers share; and two
// managers, each the real engine.Reconciler of both kinds
// (paymentjob.Kind, paymentrefund.Kind) wired as cmd/main.go wires them,
// with its own claim holder, provider cache and ledger index (ledger.New,
// started and loaded as the manager starts it). Every manager's clients go
// through interceptor.Funcs, where the API server's faults are injected:
// its cached client (whose reads a stale cache may answer) and its
// APIReader (reads past the cache, and the ledger's page reads). Before
// every pass the manager's ledger sees the pages' watch events (what other
// managers wrote). The providers never look a key up before a first charge
// (lookup policy Never): that look is batched on the wall clock, which a
// history on a fake clock cannot wait for; so a key the provider forgot
// while no book held its outcome may be charged again by another object,
// as docs/providers.md (Key retention) says, and the oracle allows it.
// In one history in three, books' PaymentProvider sends its keys under a
// key scope (spec.keyScope), and the model's keys follow. Each manager
// has the TTL collector of finished jobs (ttl.FinishedJobCollector, no
// default TTL), swept by an action instead of its ticker. The API
// server's store can be snapshotted and restored (actions_restore_test.go):
// jobs, refunds, ledger pages, PaymentProviders and Secrets, put back
// with their UIDs, status and finalizers, every manager restarted, the
// provider keeping everything it had. A namespace can be recycled
// (actions_recycle_test.go): Terminating until the operator's finalizers
// let its objects go, then its PaymentProvider created again under a new
// UID and Git applying its manifests again. Not modelled: a ledger kept
// outside etcd (PostgreSQL) across a restore; the process campaign runs
// on PostgreSQL, without restores.
//
// # The model
//
// The model (model.go) is every manifest a user applied, kept after a
// prune as Git keeps it: for each job its namespace, name, key and amount,
// and so the key it sends and which manifests share a key (the outcome of
// a shared key is not each job's own); for each refund its job and amount.
//
// # The actions
//
// actions_test.go lists them with their weights and why: a manager's pass
// on one object; both managers at once on the same object (two replicas
// without leader election, interleaved by the Go scheduler); a user
// creating a job (two namespaces, keys shared between names, three
// amounts) or a refund (part, all, all again after others, two racing for
// the last of a charge); a prune and a GitOps re-sync from the same
// manifest; a crash (a new manager: every in-memory state lost), or a
// kill in the middle of a pass (after one to three of its writes, none of
// its requests lands, and a new manager starts); a 409 on
// the next write; an answer lost after the provider committed; a 429 or a
// 500 before it committed; a stale read (one manager's next cached read
// of an object answers it as it was after one of the last four steps that
// changed it, as a lagging informer, while its
// writes and reads past the cache reach the API server); a person's
// resolution, right or wrong (charged= the key's charge, another charge,
// one that does not exist; not-charged); a dashboard refund at the
// provider; the clock moving. actions_world_test.go adds the world's rarer
// days: a day passing and the provider forgetting its keys; its search
// lagging; the ledger's pages unavailable (a 503 or a timeout) for the
// next few reads and writes; a manager restarting while its ledger cannot
// load (ErrNotLoaded for its next operations); a PaymentProvider pointed
// at the other account and back, by its spec (secretKeyRef) or its
// Secret; a Secret's key rotated (same account); and, a minute on, a
// sweep of a manager's TTL collector (actions_restore_test.go), which
// deletes the finished jobs whose spec.ttlSecondsAfterFinished (60 s, one
// job in three) passed once the ledger holds their outcome; a snapshot
// of the API server's store and a restore to it (every manager
// restarted); a namespace recycled under its name. A Secret's change is
// seen by every manager's provider cache at once, as the PaymentProvider
// reconciler's watch refreshes it. rapid's t.Repeat draws action names
// uniformly, so an action of weight n is listed n times (name, name#2,
// ...).
//
// # The oracle
//
// oracle_test.go reads the three books whole (the sandbox's charges and
// refunds, the API server's objects, the ledger's entries) after every
// step and checks the safety invariants: at most one charge per key (one
// account), each for an amount a manifest sending that key asked (or made
// by another system behind the operator's back, as the model records); at most
// one refund per key, and the refunds of a charge never beyond it; every
// Completed job's charge at the provider under its own key and amount,
// every Completed refund's refund under its own key, charge and amount;
// nothing Failed that moved money of its own; every ledger key recorded
// once, and the ledger's outcome of every finished object whose key is its
// own equal to the object's, and of every job of a shared key that
// finished (its finalizer gone) unless it is Stalled LedgerConflict, and
// a refund the refund watch failed after it succeeded names a refund the
// provider holds failed, which the ledger keeps as Completed
// (oracle_ledger_test.go). The refunds the operator sends are not in the
// books (the sandbox refuses one beyond what is left): each manager's
// provider notes every refund request before it goes to the sandbox, and
// the first request under a key must fit in what was left of its charge
// then (oracle_refunds_test.go). At the end of a history every fault is off,
// Git converges, and time moves five minutes before each round of passes
// over every object until three rounds change nothing (a Stalled object's
// retries at the longest backoff are no change); then every object must be
// Completed, Failed, or Stalled with a reason, or a refund waiting for a
// Stalled job; every Completed object's outcome is in the ledger under
// its key; every job Git applied again in a recycled namespace while the
// ledger held its key is finished from it or stalled ProviderChanged or
// ChargeMismatch; and the reconciliation's comparison (books.Compare)
// over the quiet books, as a run over a provider that lists its objects
// reads them, must report exactly what was done behind the operator's
// back, each once (a dashboard refund of a charge of ours, a dispute of a
// recorded charge, a charge under one of our keys by another system, a
// recorded refund failed after it succeeded) and no other discrepancy:
// any other would advise moving money the books do not justify
// (oracle_reconcile_test.go). What a restore took out of the cluster's
// books and the provider still holds is the past's, not the objects Git
// applies again (oracle_refunds.go restoredPast; a key a restore took
// away is judged as a shared one; the reconciliation may report such a
// charge UnknownToCluster, which advises no money movement).
//
// # Running it
//
// TestCampaign runs 100 histories (60 under the race detector) of 40
// actions on average unless the command line says otherwise; on a failure
// rapid prints the seed and the shrunk history (each action logs what it
// did). To run longer or replay:
//
//	go test ./internal/campaign -run TestCampaign -rapid.checks=5000 -rapid.steps=100
//	go test ./internal/campaign -run TestCampaign -rapid.seed=N
//
// or, bounded by time (CAMPAIGN_DURATION), make campaign-inprocess
// DURATION=1h, and make campaign DURATION=1h for the process campaign
// (test/e2e TestProcessCampaign); SEED=N replays a seed.
//
// A history with both managers at once may not replay from its seed (the
// scheduler interleaves them anew); such a history goes to the regression
// corpus (regression_test.go) as its exact steps, replayed by
// TestRegressionCorpus, so that a fixed bug stays fixed. A product bug
// found and not fixed yet may be pinned there with its bug field (the case
// passes while the violation is still seen); the corpus holds none now.
// A mistake of the oracle found by a history is kept there too, so that
// it stays corrected.
package campaign
