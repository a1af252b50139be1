//go:build postgres

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

package pgledger_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/idempotency-dev/paymentjob-operator/internal/ledger/pgledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/ledgertest"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/pgserver"
)

// TestContract runs the outcome ledger's contract suite against the
// PostgreSQL ledger: a database per case on one server, and a handle per
// process, each opened as the operator opens it (Open, with a pool of its
// own), in a cluster of its own.
func TestContract(t *testing.T) {
	srv := pgserver.Start(t)
	stores := 0
	ledgertest.Run(t, ledgertest.Backend{
		PruneUnit: 1,
		NewStore: func(t testing.TB, opts ledgertest.Options) ledgertest.Store {
			stores++
			dsn := srv.CreateDatabase(t, fmt.Sprintf("contract_%d", stores))
			handles := 0
			return ledgertest.Store{Open: func(ctx context.Context) (ledgertest.Ledger, error) {
				handles++
				l, err := pgledger.Open(ctx, dsn, pgledger.Options{
					Cluster: fmt.Sprintf("cluster-%d", handles), Retention: opts.Retention, Clock: opts.Clock,
				})
				if err != nil {
					return nil, err
				}
				t.Cleanup(l.Close)
				return process{l}, nil
			}}
		},
	})
}

// process is a handle on the PostgreSQL ledger, as the suite prunes it.
type process struct {
	*pgledger.Ledger
}

// Prune deletes the expired entries; the suite checks which ones.
func (p process) Prune(ctx context.Context) error {
	_, err := p.Ledger.Prune(ctx)
	return err
}
