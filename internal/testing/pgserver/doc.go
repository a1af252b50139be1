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

// Package pgserver starts a real PostgreSQL server for tests, in a temporary
// folder, on 127.0.0.1, and stops it when the test ends. It is imported only
// by tests: those of the PostgreSQL ledger and of the operator on it, whose
// files carry the build tag postgres (`make test-postgres` runs them, `make
// test` does not), the e2e suite (tag e2e, `make test-e2e`), the bench
// (`make bench`) and the local environment (hack/localenv, `make run-local
// LEDGER=postgres`), which start it through Program, a testing.TB for a
// program.
//
// The server binaries come from Debian's package postgresql-15 (`apt-get
// install postgresql-15`): the folder named by $PG_BIN, else the highest
// version under /usr/lib/postgresql/*/bin, else initdb and postgres on PATH.
// Without them Start fails the test and names the package; it never skips.
// PostgreSQL refuses to run as root, so a test running as root runs the
// server as the OS user postgres, which owns the temporary folder.
//
// The server's folder is on /dev/shm (a tmpfs) when the machine has one,
// else in the temporary folder; $PGSERVER_TMPDIR chooses another, and
// StartIn another for one server. initdb runs once per machine and server
// version: its cluster is kept in the user's cache folder
// ($XDG_CACHE_HOME/paymentjob-operator/pgserver, 40 MB, as Go keeps its
// build cache) and copied for each server. Deleting that folder only costs
// the next server an initdb.
//
// The server is built for tests, not for keeping data: fsync is off (a
// killed server keeps what it wrote, a killed machine would not), trust
// authentication, small shared buffers.
//
// A test starts one, makes a database of its own and connects:
//
//	func TestSomething(t *testing.T) {
//		srv := pgserver.Start(t) // stopped and removed by t.Cleanup
//		pool, err := pgxpool.New(ctx, srv.CreateDatabase(t, "ledger"))
//		...
//		srv.Kill(t)    // SIGKILL: connections fail, nothing answers
//		srv.Restart(t) // the same folder and port: the data is back
//		srv.SetReadOnly(t, true) // new transactions fail with SQLSTATE 25006
//	}
//
// A replicated database is two servers: StartStandby makes a streaming
// standby of a primary (pg_basebackup -R, pg_basebackup and the server from
// the same package), SetSynchronousStandbyNames makes a commit wait for it,
// and Promote makes it the primary after the old one was killed.
package pgserver
