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

package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/pkg/operator"
)

// postgresFlags are the flags of the PostgreSQL ledger, shared by the
// manager and its ledger command.
type postgresFlags struct {
	dsnFile, caFile, cluster string
	durability               string
	maxConns                 int
	skipMigrationCheck       bool
}

// bindPostgresFlags defines the PostgreSQL ledger's flags on fs.
func bindPostgresFlags(fs *flag.FlagSet) *postgresFlags {
	f := &postgresFlags{}
	fs.StringVar(&f.dsnFile, "ledger-postgres-dsn-file", "",
		"With --ledger-backend=postgres: a `file` holding the database's connection string (a postgres:// URL or libpq's "+
			"keyword/value form), as mounted from a Secret. Its content is never logged.")
	fs.StringVar(&f.caFile, "ledger-postgres-ca-file", "",
		"A PEM `file` of the certificate authorities the database's certificate must chain to: the connection then uses "+
			"TLS with sslmode=verify-full (chain and host name checked), whatever the connection string says.")
	fs.IntVar(&f.maxConns, "ledger-postgres-max-conns", 0,
		"The most connections to the database this manager opens; 0 is the larger of 4 and the number of CPUs.")
	fs.StringVar(&f.cluster, "ledger-cluster-name", "",
		"The name of this cluster, stored with each outcome it records in a database that clusters of a fleet share. "+
			"It does not scope the idempotency keys: the same manifest applied on two clusters is one payment.")
	fs.StringVar(&f.durability, "ledger-postgres-durability", string(operator.DurabilitySynchronous),
		"What the database must do before it acknowledges an outcome: `synchronous` (the manager refuses to start unless "+
			"a commit waits for a synchronous standby: synchronous_standby_names set, synchronous_commit on) or local "+
			"(a single server, or tests: a failover can lose the outcomes acknowledged just before it).")
	fs.BoolVar(&f.skipMigrationCheck, "ledger-postgres-skip-migration-check", false,
		"Start on PostgreSQL even though the PaymentLedger pages hold outcomes the database lacks "+
			"(copy them first: manager ledger copy --from=crd --to=postgres).")
	return f
}

// checkLedgerFlags refuses ledger flags that contradict each other, and
// returns the PostgreSQL ledger's options when the backend is postgres.
func checkLedgerFlags(useLedger bool, defaultTTL int, retention time.Duration, backend string, pg *postgresFlags) (operator.PostgresLedger, error) {
	switch {
	case !useLedger && defaultTTL >= 0:
		return operator.PostgresLedger{}, errors.New("--ttl-seconds-after-finished needs the ledger: " +
			"without it, deleting a finished job deletes the only record that it was paid")
	case retention < 24*time.Hour:
		return operator.PostgresLedger{}, fmt.Errorf("--ledger-retention must be at least 24h, not %s", retention)
	}
	return pg.forBackend(backend)
}

// forBackend returns the PostgreSQL ledger's options when backend is
// postgres, none for the CRD ledger, and refuses any other backend.
func (f *postgresFlags) forBackend(backend string) (operator.PostgresLedger, error) {
	switch operator.LedgerBackend(backend) {
	case operator.LedgerCRD:
		return operator.PostgresLedger{}, nil
	case operator.LedgerPostgres:
		return f.options()
	}
	return operator.PostgresLedger{}, fmt.Errorf("--ledger-backend must be crd or postgres, not %q", backend)
}

// options reads the DSN file and returns the PostgreSQL ledger's options.
func (f *postgresFlags) options() (operator.PostgresLedger, error) {
	if f.dsnFile == "" {
		return operator.PostgresLedger{}, errors.New("--ledger-postgres-dsn-file is required with the PostgreSQL ledger")
	}
	if f.maxConns < 0 || f.maxConns > 1<<15 {
		return operator.PostgresLedger{}, fmt.Errorf("--ledger-postgres-max-conns must be from 0 to %d", 1<<15)
	}
	data, err := os.ReadFile(f.dsnFile)
	if err != nil {
		// The path, not the content.
		return operator.PostgresLedger{}, fmt.Errorf("cannot read --ledger-postgres-dsn-file: %w", err)
	}
	// The ledger command has no such flag: "" is the default.
	durability := operator.LedgerDurability(cmp.Or(f.durability, string(operator.DurabilitySynchronous)))
	if durability != operator.DurabilitySynchronous && durability != operator.DurabilityLocal {
		return operator.PostgresLedger{}, fmt.Errorf("--ledger-postgres-durability must be %s or %s, not %q",
			operator.DurabilitySynchronous, operator.DurabilityLocal, f.durability)
	}
	dsn := strings.TrimSpace(string(data))
	if dsn == "" {
		return operator.PostgresLedger{}, fmt.Errorf("--ledger-postgres-dsn-file %s is empty", f.dsnFile)
	}
	return operator.PostgresLedger{
		DSN: dsn, RootCAFile: f.caFile, MaxConns: int32(f.maxConns), Cluster: f.cluster,
		SkipMigrationCheck: f.skipMigrationCheck, Durability: durability,
	}, nil
}
