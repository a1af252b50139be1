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
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger/pgledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/pgserver"
)

// tablesQuery counts the ledger's tables in the database.
const tablesQuery = `SELECT count(*) FROM pg_tables WHERE tablename LIKE 'paymentjob%'`

func TestReadOnlyChecksTheSchemaAndCreatesNothing(t *testing.T) {
	g := NewWithT(t)
	srv := pgserver.Start(t)
	dsn := srv.CreateDatabase(t, "empty")

	for _, open := range []func() (*pgledger.Ledger, error){
		func() (*pgledger.Ledger, error) {
			return pgledger.New(t.Context(), newPool(t, dsn, nil), pgledger.Options{ReadOnly: true})
		},
		func() (*pgledger.Ledger, error) {
			return pgledger.Open(t.Context(), dsn, pgledger.Options{ReadOnly: true})
		},
	} {
		l, err := open()
		g.Expect(err).To(MatchError(pgledger.ErrSchema))
		g.Expect(err.Error()).To(ContainSubstring("0001_outcomes.sql"))
		g.Expect(errors.Is(err, pgledger.ErrUnavailable)).To(BeFalse())
		g.Expect(l).To(BeNil())
	}
	g.Expect(count(t, newPool(t, dsn, nil), tablesQuery)).To(BeZero(), "a read-only ledger creates no table")
}

func TestReadOnlyRefusesAnOlderSchema(t *testing.T) {
	g := NewWithT(t)
	srv := pgserver.Start(t)
	dsn := srv.CreateDatabase(t, "ledger")
	pool := newPool(t, dsn, nil)
	newLedger(t, dsn, pgledger.Options{}, nil)
	_, err := pool.Exec(t.Context(), "DELETE FROM paymentjob_schema_migrations WHERE version = 2")
	g.Expect(err).NotTo(HaveOccurred())

	_, err = pgledger.Open(t.Context(), dsn, pgledger.Options{ReadOnly: true})
	g.Expect(err).To(MatchError(pgledger.ErrSchema))
	g.Expect(err.Error()).To(ContainSubstring("0002_amounts.sql"))
	g.Expect(err.Error()).NotTo(ContainSubstring("0001_outcomes.sql"))
}

func TestReadOnlyReadsAndWritesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := pgserver.Start(t)
	dsn := srv.CreateDatabase(t, "ledger")
	writer := newLedger(t, dsn, pgledger.Options{}, nil)
	scoped := entry("eu:ns/pay-2", paymentsv1alpha1.LedgerCompleted)
	scoped.Provider.KeyScope = "eu"
	g.Expect(writer.Record(ctx, entry("ns/pay-1", paymentsv1alpha1.LedgerCompleted))).To(Succeed())
	g.Expect(writer.Record(ctx, scoped)).To(Succeed())

	var counter statements
	r, err := pgledger.New(ctx, newPool(t, dsn, &counter), pgledger.Options{ReadOnly: true})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(r.Close)
	got, found, err := r.Find(ctx, "ns/pay-1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeTrue())
	g.Expect(got).To(Equal(entry("ns/pay-1", paymentsv1alpha1.LedgerCompleted)))
	g.Expect(r.KeyScopes(ctx)).To(Equal([]string{"eu"}))

	g.Expect(r.Record(ctx, entry("ns/pay-3", paymentsv1alpha1.LedgerCompleted))).To(MatchError(pgledger.ErrReadOnly))
	_, err = r.Prune(ctx)
	g.Expect(err).To(MatchError(pgledger.ErrReadOnly))
	g.Expect(r.Migrate(ctx)).To(MatchError(pgledger.ErrReadOnly))
	g.Expect(counter.inserts.Load() + counter.deletes.Load()).To(BeZero())
	g.Expect(writer.Has(ctx, "ns/pay-3")).To(BeFalse())
}

func TestOpenReadOnlyMakesItsSessionsReadOnly(t *testing.T) {
	g := NewWithT(t)
	srv := pgserver.Start(t)
	dsn := srv.CreateDatabase(t, "ledger")
	newLedger(t, dsn, pgledger.Options{}, nil)
	r, err := pgledger.Open(t.Context(), dsn, pgledger.Options{ReadOnly: true})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(r.Close)
	g.Expect(pgledger.SessionSetting(t.Context(), r, "default_transaction_read_only")).To(Equal("on"))
}
