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

// Package ledgertest is the contract of the outcome ledger
// (engine.OutcomeLedger) as a test suite, as paymenttest is for providers:
// the CRD ledger and the PostgreSQL ledger both run Run, each on stores of
// its own, and a deliberately broken ledger must fail it. Check runs the
// same cases and returns their verdicts, so that a test can assert which
// cases a ledger breaks.
//
// Every case makes a new, empty store and opens handles on it, each as one
// manager process holds the ledger: two handles are two processes (two
// replicas, or two clusters sharing a database).
package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
)

// Names of the cases, as Run names its subtests and Check its results.
const (
	// CaseFirstOutcomeWins: a second Record of a key, from the same process
	// or another, stores nothing; both find the first outcome. Two
	// outcomes of a key handed to one process at once store one of them,
	// whole, which stays. Each Record says what the key holds (as
	// CaseConflictReported).
	CaseFirstOutcomeWins = "FirstOutcomeWins"
	// CaseConflictReported: a Record of another outcome (another charge,
	// fingerprint, provider account or outcome) under a held key returns a
	// *ledger.ConflictError holding the entry kept, whose message names no
	// charge; a Record of the outcome the key holds (another time or
	// reason: recorded again after a crash) returns nil.
	CaseConflictReported = "ConflictWithTheHeldOutcomeIsReported"
	// CaseMissingKey: Find of a key never recorded is (zero, false, nil)
	// and Has is false, also for keys that differ from a recorded one by a
	// character, a namespace, a key scope or the refund marker.
	CaseMissingKey = "MissingKeyIsNotFound"
	// CaseEveryField: every field of an Entry comes back as recorded (a
	// refund's RefundedCharge too, as CaseRefunds shows), At
	// to the second (the CRD ledger keeps seconds, PostgreSQL microseconds),
	// from the process that recorded it and from one started afterwards.
	CaseEveryField = "EveryFieldRoundTrips"
	// CaseDurable: once Record returns, a process started afterwards finds
	// the entry, and one already running finds it within Visibility.
	CaseDurable = "RecordIsDurableOnceItReturns"
	// CaseTwoProcesses: two processes record the same TwoProcessKeys keys at
	// once, each with an outcome of its own; every key holds one of the two
	// outcomes, whole, both processes (and a third) find the same one, and
	// it stays when both record again.
	CaseTwoProcesses = "TwoProcessesAgreeOnTheFirstOutcome"
	// CaseRefunds: a PaymentRefund's entry and its PaymentJob's, keyed as
	// the engine keys them, are two entries: neither is found under the
	// other's key, and neither replaces the other.
	CaseRefunds = "RefundAndChargeAreSeparateEntries"
	// CaseRetention: Prune deletes the entries older than the retention
	// and keeps the others, exactly as old as the retention included, as
	// the process that pruned, a process started afterwards and (within
	// Visibility) one running during the prune find. Time is a fake clock.
	CaseRetention = "RetentionDeletesOnlyExpiredEntries"
)

// CaseTimeout bounds each case, its store and its handles included.
const CaseTimeout = 30 * time.Second

// Visibility is how long a running process may take to see what another
// process recorded or pruned: the CRD ledger learns of other processes'
// pages through a watch.
const Visibility = 10 * time.Second

// TwoProcessKeys is how many keys both processes record in CaseTwoProcesses.
const TwoProcessKeys = 200

// Ledger is a handle on a store, as one process holds it: the interface the
// engine uses, and the retention the backend runs by itself.
type Ledger interface {
	engine.OutcomeLedger
	// Prune deletes what the retention of the store's Options expires at
	// the time of its Clock, as the backend's own retention loop does.
	Prune(ctx context.Context) error
}

// Options are what a case asks of a new store.
type Options struct {
	// Retention is how long entries are kept at least; the backend's
	// default when zero.
	Retention time.Duration
	// Clock is the time source of the retention; the real clock when nil.
	Clock clock.PassiveClock
}

// Store is one store of a backend, new and empty for one case.
type Store struct {
	// Open returns a new handle on the store, as another process holds it:
	// its own client or connections and its own index. It returns once the
	// handle answers. The handle stays open until the case's test ends.
	// Required.
	Open func(ctx context.Context) (Ledger, error)
}

// Backend is one implementation of the outcome ledger, as the suite makes
// its stores.
type Backend struct {
	// NewStore makes a new, empty store whose handles keep entries as opts
	// says. What it starts, the handles included, ends when t's test ends;
	// a store that cannot be made fails t. Required.
	NewStore func(t testing.TB, opts Options) Store
	// PruneUnit is how many entries the retention deletes together: the
	// CRD ledger's page size (a whole page goes once its newest entry
	// expires), 1 for a ledger that deletes entry by entry. CaseRetention
	// records whole units of expired entries, then whole units of kept
	// ones, so that each unit is expired or kept throughout. Required.
	PruneUnit int
}

// Result is the verdict of one case.
type Result struct {
	// Case is the case's name, one of the Case constants.
	Case string
	// Err says how the ledger broke the case; nil when it kept it.
	Err error
}

// testCase is one clause of the contract.
type testCase struct {
	name  string
	check func(ctx context.Context, s suite) error
}

// cases are the contract, in the order they run.
var cases = []testCase{
	{CaseFirstOutcomeWins, checkFirstOutcomeWins},
	{CaseConflictReported, checkConflictReported},
	{CaseMissingKey, checkMissingKey},
	{CaseEveryField, checkEveryField},
	{CaseDurable, checkDurable},
	{CaseTwoProcesses, checkTwoProcesses},
	{CaseRefunds, checkRefunds},
	{CaseRetention, checkRetention},
}

// Cases returns the names of the cases, in the order they run.
func Cases() []string {
	names := make([]string, len(cases))
	for i, c := range cases {
		names[i] = c.name
	}
	return names
}

// Run checks b against every case, each in a subtest named after it.
func Run(t *testing.T, b Backend) {
	t.Helper()
	if err := b.validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.run(t, b); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Check checks b against every case and returns one Result per case, in
// the order of Cases. Each case runs in a subtest of t, which ends its
// store; a case that b breaks does not fail it, a store that cannot be made
// does. An incomplete backend fails every case.
func Check(t *testing.T, b Backend) []Result {
	t.Helper()
	results := make([]Result, 0, len(cases))
	invalid := b.validate()
	for _, c := range cases {
		if invalid != nil {
			results = append(results, Result{Case: c.name, Err: invalid})
			continue
		}
		res := Result{Case: c.name, Err: errors.New("the case ended its test before it had a verdict (see the test's log)")}
		t.Run(c.name, func(t *testing.T) { res.Err = c.run(t, b) })
		results = append(results, res)
	}
	return results
}

// validate returns an error naming the first field b lacks.
func (b Backend) validate() error {
	switch {
	case b.NewStore == nil:
		return errors.New("cannot run the ledger contract: the backend has no NewStore")
	case b.PruneUnit < 1:
		return fmt.Errorf("cannot run the ledger contract: the backend's PruneUnit is %d, want 1 or more", b.PruneUnit)
	}
	return nil
}

// run checks the case on stores of t, within CaseTimeout.
func (c testCase) run(t *testing.T, b Backend) error {
	ctx, cancel := context.WithTimeout(t.Context(), CaseTimeout)
	defer cancel()
	return c.check(ctx, suite{t: t, b: b})
}

// suite is what a case runs on: the backend, and the test its stores end
// with (for NewStore only: a case reports by its error).
type suite struct {
	t testing.TB
	b Backend
}

// store makes a new, empty store.
func (s suite) store(opts Options) Store {
	s.t.Helper()
	return s.b.NewStore(s.t, opts)
}

// open opens n handles on st, as n processes.
func open(ctx context.Context, st Store, n int) ([]Ledger, error) {
	handles := make([]Ledger, n)
	for i := range handles {
		l, err := st.Open(ctx)
		if err != nil {
			return nil, fmt.Errorf("cannot open handle %d on the store: %w", i+1, err)
		}
		handles[i] = l
	}
	return handles, nil
}
