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

package ledgertest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/clock"

	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/ledgertest"
)

// TestCheckFailsBrokenLedgers is the suite's negative control: in-memory
// ledgers that each break part of the contract must fail exactly the cases
// that check it, and between them every case fails at least once. The
// sound in-memory ledger passes every case: the failures are the flaws'.
func TestCheckFailsBrokenLedgers(t *testing.T) {
	tests := []struct {
		name       string
		flaw       flaw
		wantFailed []string
	}{
		{
			name:       "a sound ledger keeps every case",
			flaw:       sound,
			wantFailed: nil,
		},
		{
			name:       "a ledger where the last outcome wins",
			flaw:       lastOutcomeWins,
			wantFailed: []string{ledgertest.CaseFirstOutcomeWins, ledgertest.CaseConflictReported, ledgertest.CaseTwoProcesses},
		},
		{
			name:       "a ledger that says nothing when it keeps another outcome",
			flaw:       silentConflict,
			wantFailed: []string{ledgertest.CaseFirstOutcomeWins, ledgertest.CaseConflictReported, ledgertest.CaseTwoProcesses},
		},
		{
			name:       "a ledger whose conflict names the charge it keeps",
			flaw:       namesHeldCharge,
			wantFailed: []string{ledgertest.CaseFirstOutcomeWins, ledgertest.CaseConflictReported, ledgertest.CaseTwoProcesses},
		},
		{
			name: "a ledger whose second process does not see the first's writes",
			flaw: unshared,
			wantFailed: []string{
				ledgertest.CaseFirstOutcomeWins, ledgertest.CaseConflictReported, ledgertest.CaseEveryField, ledgertest.CaseDurable,
				ledgertest.CaseTwoProcesses, ledgertest.CaseRefunds, ledgertest.CaseRetention,
			},
		},
		{
			name:       "a ledger that forgets who resolved an outcome, the provider's key scope and the refunded charge",
			flaw:       lossy,
			wantFailed: []string{ledgertest.CaseEveryField, ledgertest.CaseRefunds},
		},
		{
			name:       "a ledger that keys entries by the job's key without its namespace",
			flaw:       keysByName,
			wantFailed: []string{ledgertest.CaseMissingKey, ledgertest.CaseRefunds},
		},
		{
			name:       "a ledger whose retention deletes nothing",
			flaw:       keepsEverything,
			wantFailed: []string{ledgertest.CaseRetention},
		},
	}
	failedOnce := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			results := ledgertest.Check(t, memoryBackend(tt.flaw))

			var ran, failed []string
			for _, r := range results {
				ran = append(ran, r.Case)
				if r.Err != nil {
					t.Logf("%s: %v", r.Case, r.Err)
					failed = append(failed, r.Case)
					failedOnce[r.Case] = true
				}
			}
			g.Expect(ran).To(Equal(ledgertest.Cases()))
			g.Expect(failed).To(ConsistOf(tt.wantFailed))
		})
	}
	for _, c := range ledgertest.Cases() {
		if !failedOnce[c] {
			t.Errorf("no broken ledger fails %s: the case is not shown to catch anything", c)
		}
	}
}

// TestCheckFailsAnIncompleteBackend checks that a backend without its
// stores fails every case instead of passing them.
func TestCheckFailsAnIncompleteBackend(t *testing.T) {
	g := NewWithT(t)
	results := ledgertest.Check(t, ledgertest.Backend{PruneUnit: 1})
	g.Expect(results).To(HaveLen(len(ledgertest.Cases())))
	for _, r := range results {
		g.Expect(r.Err).To(MatchError(ContainSubstring("the backend has no NewStore")), "case %s", r.Case)
	}
}

// flaw is how an in-memory ledger breaks the contract.
type flaw int

const (
	// sound keeps the contract.
	sound flaw = iota
	// lastOutcomeWins lets Record replace what a key holds.
	lastOutcomeWins
	// silentConflict keeps the first outcome but returns nil to a Record
	// of another: the caller takes the ledger's outcome for its own.
	silentConflict
	// namesHeldCharge reports a conflict with a message that names the
	// charge the key holds, which may be another tenant's.
	namesHeldCharge
	// unshared gives each handle a store of its own: a second process
	// does not see what the first recorded.
	unshared
	// lossy forgets ResolvedBy, the provider's KeyScope and
	// RefundedCharge, as a schema without those columns would.
	lossy
	// keysByName keys entries by what follows the namespace, so that
	// "shop/order-7", "shop.refund/order-7" and "eu:shop/order-7" are one.
	keysByName
	// keepsEverything prunes nothing.
	keepsEverything
)

// memoryBackend is an in-memory outcome ledger with flaw.
func memoryBackend(f flaw) ledgertest.Backend {
	return ledgertest.Backend{
		PruneUnit: 1,
		NewStore: func(_ testing.TB, opts ledgertest.Options) ledgertest.Store {
			if opts.Retention <= 0 {
				opts.Retention = ledger.DefaultRetention
			}
			if opts.Clock == nil {
				opts.Clock = clock.RealClock{}
			}
			shared := &memory{flaw: f, opts: opts, entries: map[string]ledger.Entry{}}
			return ledgertest.Store{Open: func(context.Context) (ledgertest.Ledger, error) {
				if f == unshared {
					return &memory{flaw: f, opts: opts, entries: map[string]ledger.Entry{}}, nil
				}
				return shared, nil
			}}
		},
	}
}

// memory is an in-memory outcome ledger: a map, shared by the handles on
// its store unless its flaw is unshared.
type memory struct {
	flaw flaw
	opts ledgertest.Options

	mu      sync.Mutex
	entries map[string]ledger.Entry
}

// Find returns the entry under key.
func (m *memory) Find(_ context.Context, key string) (ledger.Entry, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[m.index(key)]
	return e, ok, nil
}

// Has reports whether an entry is under key.
func (m *memory) Has(ctx context.Context, key string) (bool, error) {
	_, ok, err := m.Find(ctx, key)
	return ok, err
}

// Record stores e unless its key holds an entry (any entry, for
// lastOutcomeWins), and says what the key holds.
func (m *memory) Record(_ context.Context, e ledger.Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := m.index(e.Key)
	if held, ok := m.entries[k]; ok && m.flaw != lastOutcomeWins {
		switch err := ledger.CheckRecorded(e, held); {
		case err == nil, m.flaw == silentConflict:
			return nil
		case m.flaw == namesHeldCharge:
			return fmt.Errorf("%w (it holds %s)", err, held.Charge)
		default:
			return err
		}
	}
	if m.flaw == lossy {
		e.ResolvedBy, e.Provider.KeyScope, e.RefundedCharge = "", "", ""
	}
	m.entries[k] = e
	return nil
}

// Prune deletes the entries older than the retention (none, for
// keepsEverything).
func (m *memory) Prune(context.Context) error {
	if m.flaw == keepsEverything {
		return nil
	}
	cutoff := m.opts.Clock.Now().Add(-m.opts.Retention)
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, e := range m.entries {
		if e.At.Before(cutoff) {
			delete(m.entries, k)
		}
	}
	return nil
}

// index is the map key of an entry under key.
func (m *memory) index(key string) string {
	if m.flaw == keysByName {
		_, name, _ := strings.Cut(key, "/")
		return name
	}
	return key
}
