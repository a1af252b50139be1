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
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/idempotency-dev/paymentjob-operator/internal/testing/pgserver"
)

// The outcome ledger of --ledger=postgres: a PostgreSQL server of Debian's
// postgresql-15, started as the suites of make test-postgres start theirs
// (internal/testing/pgserver: a folder of its own on /dev/shm, 127.0.0.1
// and a free port, run as the user postgres when this runs as root; trust
// authentication and fsync off, for trying, not for keeping data). Ctrl-C
// stops it and removes its folder and the DSN file.

// The manager's ledger backends, as its --ledger-backend names them.
const (
	ledgerCRD      = "crd"
	ledgerPostgres = "postgres"
)

// ledgerDatabase is the database of the manager's ledger.
const ledgerDatabase = "paymentjob_ledger"

// startPostgres starts the server, creates the ledger's database and
// writes its DSN to a file of the work folder, for the manager's
// --ledger-postgres-dsn-file and the plugin's KUBECTL_PAYMENTS_LEDGER_DSN_FILE.
func (e *localEnv) startPostgres() error {
	e.pgProgram = &pgserver.Program{}
	var dsn string
	err := e.pgProgram.Do(func() {
		e.pg = pgserver.Start(e.pgProgram)
		dsn = e.pg.CreateDatabase(e.pgProgram, ledgerDatabase)
	})
	if err != nil {
		return fmt.Errorf("cannot start PostgreSQL for --ledger=postgres: %w", err)
	}
	e.dsnFile = filepath.Join(e.work, "ledger-postgres-dsn")
	if err := os.WriteFile(e.dsnFile, []byte(dsn+"\n"), 0o600); err != nil {
		return fmt.Errorf("cannot write the DSN file: %w", err)
	}
	step("PostgreSQL listening on %s, database %s (DSN in %s)", e.pg.Addr(), ledgerDatabase, rel(e.root, e.dsnFile))
	return nil
}

// stopPostgres stops the server, removes its folder and the DSN file.
func (e *localEnv) stopPostgres() {
	if e.pgProgram == nil {
		return
	}
	step("Stopping PostgreSQL")
	err := e.pgProgram.Close()
	if e.dsnFile != "" {
		if rerr := os.Remove(e.dsnFile); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "localenv: %v\n", err)
	}
}

// ledgerArgs are the manager's flags of the ledger: none for the CRD
// ledger; for PostgreSQL the DSN file, and a single server's durability.
func (e *localEnv) ledgerArgs() []string {
	if e.dsnFile == "" {
		return nil
	}
	return []string{"--ledger-backend=postgres", "--ledger-postgres-dsn-file=" + e.dsnFile,
		// One server, no standby: the manager is told a local commit will do.
		"--ledger-postgres-durability=local"}
}
