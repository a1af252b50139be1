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
// PaymentProviders of two namespaces, the jobs and refunds, and the CRD
// ledger's pages; the sandbox engine (pkg/sandbox) as the provider, through
// its in-process payment.Provider; a fake clock that the sandbox and the
// reconcilers share; and two managers, each the real engine.Reconciler of
// both kinds (paymentjob.Kind, paymentrefund.Kind) wired as cmd/main.go
// wires them, with its own claim holder, provider cache and ledger index
// (ledger.New, started and loaded as the manager starts it). Every
// manager's client goes through interceptor.Funcs, where the API server's
// faults are injected. The providers never look a key up before a first
// charge (lookup policy Never): that look is batched on the wall clock,
// which a history on a fake clock cannot wait for.
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
// manifest; a crash (a new manager: every in-memory state lost); a 409 on
// the next write; an answer lost after the provider committed; a 429 or a
// 500 before it committed; a stale read (the next read of an object
// answers an older copy, as a lagging informer); a person's resolution,
// right or wrong (charged= the key's charge, another charge, one that does
// not exist; not-charged); a dashboard refund at the provider; the clock
// moving. rapid's t.Repeat draws action names uniformly, so an action of
// weight n is listed n times (name, name#2, ...).
//
// # The oracle
//
// oracle_test.go reads the three books whole (the sandbox's charges and
// refunds, the API server's objects, the ledger's entries) after every
// step and checks the safety invariants: at most one charge per key (one
// account), each for an amount a manifest sending that key asked; at most
// one refund per key, and the refunds of a charge never beyond it; every
// Completed job's charge at the provider under its own key and amount,
// every Completed refund's refund under its own key, charge and amount;
// nothing Failed that moved money of its own; every ledger key recorded
// once, and the ledger's outcome of every finished object whose key is its
// own equal to the object's (oracle.go). At the end of a history every fault is off,
// Git converges, and time moves five minutes before each round of passes
// over every object until three rounds change nothing (a Stalled object's
// retries at the longest backoff are no change); then every object must be
// Completed, Failed, or Stalled with a reason, or a refund waiting for a
// Stalled job.
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
package campaign
