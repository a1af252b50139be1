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

package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentreconciliation"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger/ledgercopy"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger/pgledger"
)

// LedgerBackend names where the outcome ledger is kept.
type LedgerBackend string

const (
	// LedgerCRD keeps the ledger in PaymentLedger pages in the cluster's
	// etcd: nothing to run besides the cluster, sized for some hundreds of
	// thousands of outcomes (docs/operations.md, "Sizing the ledger").
	LedgerCRD LedgerBackend = "crd"
	// LedgerPostgres keeps the ledger in a PostgreSQL database, which
	// several clusters may share (Options.Postgres).
	LedgerPostgres LedgerBackend = "postgres"
)

// LedgerDurability is what the PostgreSQL ledger's database must do before
// it acknowledges an outcome: once acknowledged, the job's finalizer comes
// off and its TTL may delete it, so the row is then the only record that
// the payment was made.
type LedgerDurability string

const (
	// DurabilitySynchronous is the default: it needs a synchronous standby.
	// A commit is acknowledged only once a standby holds it
	// (synchronous_standby_names set, synchronous_commit on, remote_write or
	// remote_apply), so a failover loses no acknowledged outcome. Setup
	// refuses a database without one.
	DurabilitySynchronous LedgerDurability = "synchronous"
	// DurabilityLocal accepts a commit the primary alone holds: a single
	// server (its disk is the record), or tests. On a replicated database
	// a failover can lose the outcomes acknowledged just before it, and a
	// manifest applied again is charged again at a provider that no
	// longer remembers its key.
	DurabilityLocal LedgerDurability = "local"
)

// PostgresLedger configures the PostgreSQL ledger.
type PostgresLedger struct {
	// DSN is the database's connection string, a URL
	// (postgres://user:password@host:5432/db) or libpq's keyword/value
	// form. It may hold a password: it is never logged, nor put in an
	// error or a status.
	DSN string
	// RootCAFile is a PEM file of the authorities the server's certificate
	// must chain to; the connection then uses TLS with
	// sslmode=verify-full (chain and host name checked), whatever the DSN
	// says. Empty: the DSN's sslmode decides.
	RootCAFile string
	// MaxConns bounds the pool's connections; zero is pgx's default (the
	// larger of 4 and the number of CPUs).
	MaxConns int32
	// Cluster names this cluster in the rows it records, for clusters of a
	// fleet sharing the database. It does not scope the keys: the same
	// manifest applied on two clusters is one payment (docs/reliability.md).
	Cluster string
	// SkipMigrationCheck starts even though the PaymentLedger pages hold
	// outcomes the database lacks. Without it Setup refuses: those
	// payments would be charged again if their manifests came back.
	SkipMigrationCheck bool
	// Durability is what the database must do before it acknowledges an
	// outcome (--ledger-postgres-durability); "" is DurabilitySynchronous.
	Durability LedgerDurability
}

// checkLedger refuses ledger options that could lose the record of a
// payment, or that name no ledger.
func (o Options) checkLedger() error {
	switch {
	case o.DisableLedger && o.TTLAfterFinished != nil:
		return errors.New("a TTL after finished needs the ledger: without it, deleting a finished job deletes the only record that it was paid")
	case o.LedgerBackend != LedgerCRD && o.LedgerBackend != LedgerPostgres:
		return fmt.Errorf("unknown ledger backend %q: use %q or %q", o.LedgerBackend, LedgerCRD, LedgerPostgres)
	case o.LedgerBackend == LedgerPostgres && !o.DisableLedger && o.Postgres.DSN == "":
		return errors.New("the PostgreSQL ledger needs a DSN (--ledger-postgres-dsn-file)")
	case o.Postgres.Durability != "" && o.Postgres.Durability != DurabilitySynchronous && o.Postgres.Durability != DurabilityLocal:
		return fmt.Errorf("unknown PostgreSQL ledger durability %q: use %q or %q", o.Postgres.Durability,
			DurabilitySynchronous, DurabilityLocal)
	case o.LedgerRetention < 24*time.Hour:
		return fmt.Errorf("the ledger retention (%s) must be at least 24h", o.LedgerRetention)
	}
	return nil
}

// connectTimeout bounds the first connection and the schema migration at
// start: a database that does not answer stops the start with an error.
const connectTimeout = time.Minute

// setupLedger adds the outcome ledger of opts.LedgerBackend to mgr. The
// CRD ledger tells onRewind when its pages' resourceVersions go backwards.
func setupLedger(mgr ctrl.Manager, opts Options, onRewind func(why ...any)) (engine.OutcomeLedger, error) {
	if opts.LedgerBackend != LedgerPostgres {
		l, err := engine.NewLedger(mgr, ledger.Options{Retention: opts.LedgerRetention, OnRewind: onRewind})
		if err != nil {
			return nil, fmt.Errorf("cannot set up the outcome ledger: %w", err)
		}
		if err := mgr.AddReadyzCheck("ledger", func(*http.Request) error { return l.Loaded() }); err != nil {
			return nil, fmt.Errorf("cannot add the ledger's ready check: %w", err)
		}
		return l, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	pg := opts.Postgres
	l, err := pgledger.Open(ctx, pg.DSN, pgledger.Options{
		Cluster: pg.Cluster, Retention: opts.LedgerRetention, RootCAFile: pg.RootCAFile, MaxConns: pg.MaxConns,
		RequireSynchronous: pg.Durability != DurabilityLocal,
	})
	if errors.Is(err, pgledger.ErrNotSynchronous) {
		return nil, fmt.Errorf("cannot start on the PostgreSQL outcome ledger: %w. An outcome acknowledged now could be "+
			"lost in a failover, and its payment charged again: give the database a synchronous standby "+
			"(docs/postgres-ledger.md, \"Durability\"), or, for a single server or tests, accept that with "+
			"--ledger-postgres-durability=%s", err, DurabilityLocal)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot set up the PostgreSQL outcome ledger: %w", err)
	}
	if pg.Durability == DurabilityLocal {
		mgr.GetLogger().Info("The PostgreSQL outcome ledger does not wait for a standby (--ledger-postgres-durability=local): " +
			"a failover can lose the outcomes acknowledged just before it")
	}
	if !pg.SkipMigrationCheck {
		// The pages of a cluster that ran on the CRD ledger hold payments
		// the database must know before a job is looked up in it.
		if err := ledgercopy.CheckMigrated(ctx, mgr.GetAPIReader(), l); err != nil {
			l.Close()
			return nil, fmt.Errorf("cannot start on the PostgreSQL outcome ledger: %w", err)
		}
	}
	if err := mgr.Add(l); err != nil {
		l.Close()
		return nil, fmt.Errorf("cannot add the outcome ledger to the manager: %w", err)
	}
	return l, nil
}

// reconciliationLedger is what PaymentReconciliations read of the outcome
// ledger: nil without one.
func reconciliationLedger(outcomes engine.OutcomeLedger, mgr ctrl.Manager) paymentreconciliation.Ledger {
	switch l := outcomes.(type) {
	case *ledger.Ledger:
		return paymentreconciliation.PagesLedger(l, mgr.GetAPIReader())
	case *pgledger.Ledger:
		return paymentreconciliation.PostgresLedger(l)
	}
	return nil
}
