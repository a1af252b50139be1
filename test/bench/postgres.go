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
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idempotency-dev/paymentjob-operator/internal/testing/pgserver"
)

// The PostgreSQL server of phase 8: internal/testing/pgserver, the server
// the PostgreSQL suites run, started from a program through
// pgserver.Program; pg_stat_statements, to count the ledger's statements at the
// server; and the rows of a large outcome table.

// pgDatabase is the database of the manager's ledger.
const pgDatabase = "paymentjob_ledger"

// pgServer is phase 8's PostgreSQL server and the ledger's database on it.
type pgServer struct {
	tb  *pgserver.Program
	srv *pgserver.Server
	// dsnFile holds the ledger database's DSN, for the manager's
	// --ledger-postgres-dsn-file.
	dsnFile string
	dsn     string
	// statements says whether pg_stat_statements is loaded: without it the
	// statements are not counted.
	statements bool
	// durabilityFlag: the manager has --ledger-postgres-durability (an
	// older one has not, and accepts a single server).
	durabilityFlag bool
}

// startPostgres starts a server in a temporary folder on 127.0.0.1, with
// pg_stat_statements loaded when the server has it (a restart, as
// shared_preload_libraries needs), creates the ledger's database and
// writes its DSN to a file in dir.
func startPostgres(ctx context.Context, dir string) (p *pgServer, err error) {
	p = &pgServer{tb: &pgserver.Program{}}
	defer func() {
		if err != nil {
			err = errors.Join(err, p.stop())
		}
	}()
	if err := p.tb.Do(func() { p.srv = pgserver.StartIn(p.tb, os.TempDir()) }); err != nil {
		return nil, fmt.Errorf("cannot start PostgreSQL (-pg=false skips phase 8): %w", err)
	}
	var available bool
	err = p.admin(ctx, func(conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `SELECT count(*) > 0 FROM pg_available_extensions WHERE name = 'pg_stat_statements'`).Scan(&available)
	})
	if err != nil {
		return nil, err
	}
	if available {
		err = p.admin(ctx, func(conn *pgx.Conn) error {
			_, err := conn.Exec(ctx, `ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`)
			return err
		})
		if err != nil {
			return nil, err
		}
		if err := p.tb.Do(func() { p.srv.Stop(p.tb); p.srv.Restart(p.tb) }); err != nil {
			return nil, fmt.Errorf("cannot restart PostgreSQL with pg_stat_statements: %w", err)
		}
		err = p.admin(ctx, func(conn *pgx.Conn) error {
			_, err := conn.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`)
			return err
		})
		if err != nil {
			return nil, err
		}
		p.statements = true
	}
	if err := p.tb.Do(func() { p.dsn = p.srv.CreateDatabase(p.tb, pgDatabase) }); err != nil {
		return nil, err
	}
	p.dsnFile = filepath.Join(dir, "ledger-postgres-dsn")
	if err := os.WriteFile(p.dsnFile, []byte(p.dsn+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("cannot write the DSN file: %w", err)
	}
	return p, nil
}

// stop stops the server and removes its folder.
func (p *pgServer) stop() error {
	if p == nil {
		return nil
	}
	return p.tb.Close()
}

// managerArgs are the flags of a manager on the PostgreSQL ledger: a
// single server, so the manager is told that a local commit will do.
func (p *pgServer) managerArgs() []string {
	args := []string{"--ledger-backend=postgres", "--ledger-postgres-dsn-file=" + p.dsnFile}
	if p.durabilityFlag {
		args = append(args, "--ledger-postgres-durability=local")
	}
	return args
}

// pgQueryTimeout bounds the benchmark's own statements but the load.
const pgQueryTimeout = 30 * time.Second

// admin runs use on a connection to the database postgres, where the
// benchmark reads the statistics, so that its own statements are not the
// ledger database's.
func (p *pgServer) admin(ctx context.Context, use func(*pgx.Conn) error) error {
	return p.connect(ctx, p.srv.DSN("postgres"), use)
}

// connect runs use on a new connection to dsn.
func (p *pgServer) connect(ctx context.Context, dsn string, use func(*pgx.Conn) error) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("cannot connect to PostgreSQL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return use(conn)
}

// statementCount is how often the server ran one statement (one
// pg_stat_statements query id) in the ledger's database.
type statementCount struct {
	query string
	calls int64
}

// statementCounts are the ledger database's statements by query id.
type statementCounts map[int64]statementCount

// statementCounts reads pg_stat_statements for the ledger's database:
// every statement the server ran there, BEGIN and COMMIT included; the
// benchmark's own queries run in the database postgres. It is nil without
// pg_stat_statements.
func (p *pgServer) statementCounts(ctx context.Context) (statementCounts, error) {
	if !p.statements {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, pgQueryTimeout)
	defer cancel()
	c := statementCounts{}
	err := p.admin(ctx, func(conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, `SELECT s.queryid, s.calls, s.query FROM pg_stat_statements s
			JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = $1 AND s.queryid IS NOT NULL`, pgDatabase)
		if err != nil {
			return err
		}
		var (
			id    int64
			calls int64
			query string
		)
		_, err = pgx.ForEachRow(rows, []any{&id, &calls, &query}, func() error {
			// One query id may have a row per user and per nesting level.
			c[id] = statementCount{query: query, calls: c[id].calls + calls}
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cannot read pg_stat_statements: %w", err)
	}
	return c, nil
}

// minus returns the statements run since before.
func (c statementCounts) minus(before statementCounts) statementCounts {
	if c == nil {
		return nil
	}
	d := statementCounts{}
	for id, s := range c {
		if n := s.calls - before[id].calls; n != 0 {
			d[id] = statementCount{query: s.query, calls: n}
		}
	}
	return d
}

// total is every statement counted, or NaN when none could be (no
// pg_stat_statements).
func (c statementCounts) total() float64 {
	if c == nil {
		return notMeasured
	}
	var n int64
	for _, s := range c {
		n += s.calls
	}
	return float64(n)
}

// breakdown lists the statements, the most frequent first, each as its
// first words and its count, for the log of a phase.
func (c statementCounts) breakdown() string {
	if c == nil {
		return "not counted (no pg_stat_statements)"
	}
	rows := make([]statementCount, 0, len(c))
	for _, s := range c {
		rows = append(rows, s)
	}
	slices.SortFunc(rows, func(a, b statementCount) int {
		return cmp.Or(cmp.Compare(b.calls, a.calls), cmp.Compare(a.query, b.query))
	})
	parts := make([]string, 0, len(rows))
	for _, s := range rows {
		parts = append(parts, fmt.Sprintf("%q=%d", statementHead(s.query), s.calls))
	}
	if len(parts) == 0 {
		return noneCounted
	}
	return strings.Join(parts, ", ")
}

// statementHead is a statement's first 60 characters, on one line.
func statementHead(query string) string {
	q := strings.Join(strings.Fields(query), " ")
	if len(q) > 60 {
		q = q[:57] + "..."
	}
	return q
}

// loadRowsQuery fills the outcome table (internal/ledger/pgledger's
// migrations) with $1 rows shaped like real ones, as seedPage shapes the CRD
// ledger's entries: keys tenant-NNN/invoice-NNNNNNNN (250 tenants, in key
// order, as the primary key's index is built fastest), sha256 request
// fingerprints, one Stripe account and provider uid per tenant, 24-character
// pi_ charge ids, one declined payment in fifty, recorded over the 300 days
// before $2 (within the default retention: the manager prunes nothing).
const loadRowsQuery = `INSERT INTO paymentjob_outcomes (key, fingerprint, provider_uid, provider_endpoint,
	provider_account, provider_mode, provider_key_scope, charge, outcome, reason, resolved_by, at, cluster)
SELECT 'tenant-' || lpad(t::text, 3, '0') || '/invoice-' || lpad(i::text, greatest(8, length(i::text)), '0'),
	'sha256:' || md5(i::text) || md5((-i)::text),
	md5('uid' || t)::uuid::text,
	'https://api.stripe.com',
	'acct_' || left(md5('acct' || t), 16),
	'live',
	'',
	'pi_' || left(md5('pi' || i), 24),
	CASE WHEN i % 50 = 0 THEN 'Failed' ELSE 'Completed' END,
	CASE WHEN i % 50 = 0 THEN 'card_declined' ELSE '' END,
	'',
	$2::timestamptz - make_interval(days => 300) * (1 - i::float8 / $1::bigint),
	''
FROM generate_series(1::bigint, $1::bigint) AS i, LATERAL (SELECT (i - 1) * 250 / $1::bigint AS t) AS tenant`

// tableSizeQuery is what the server stores for the outcome table: rows, indexes
// and TOAST.
const tableSizeQuery = `SELECT pg_total_relation_size('paymentjob_outcomes')`

// loadRows inserts n rows into the outcome table, which the manager's
// migration made, with one statement, then vacuums and analyses it, as
// autovacuum would have long before a table reached that size. It returns
// the table's size in bytes.
func (p *pgServer) loadRows(ctx context.Context, n int) (float64, error) {
	var size int64
	err := p.connect(ctx, p.dsn, func(conn *pgx.Conn) error {
		if _, err := conn.Exec(ctx, loadRowsQuery, n, time.Now()); err != nil {
			return fmt.Errorf("cannot insert %d rows into paymentjob_outcomes: %w", n, err)
		}
		if _, err := conn.Exec(ctx, `VACUUM (ANALYZE) paymentjob_outcomes`); err != nil {
			return fmt.Errorf("cannot vacuum paymentjob_outcomes: %w", err)
		}
		return conn.QueryRow(ctx, tableSizeQuery).Scan(&size)
	})
	return float64(size), err
}

// startPostgres starts phase 8's server unless -pg=false or the manager
// has no --ledger-backend (it is older than the PostgreSQL ledger), which
// skip the phase.
func (b *bench) startPostgres(ctx context.Context, hasBackendFlag bool) error {
	switch {
	case !b.cfg.pg:
		b.rep.note("Phase 8 (the outcome ledger on PostgreSQL) was skipped: -pg=false.")
		return nil
	case !hasBackendFlag:
		b.rep.note("%s has no --ledger-backend: phase 8 (the outcome ledger on PostgreSQL) was skipped.", b.cfg.managerBin)
		return nil
	}
	step("starting PostgreSQL for phase 8")
	started := time.Now()
	p, err := startPostgres(ctx, b.dir)
	if err != nil {
		return err
	}
	b.pg = p
	step("PostgreSQL up in %s at %s (statements counted: %t)", time.Since(started).Round(time.Millisecond), p.srv.Addr(), p.statements)
	if !p.statements {
		b.rep.note("PostgreSQL has no pg_stat_statements: the ledger database's statements were not counted.")
	}
	return nil
}
