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

package pgledger

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Migrations: the SQL files of migrations/, named <version>_<what>.sql and
// embedded in the binary, are applied in version order, each in a
// transaction of its own that also adds its version to
// paymentjob_schema_migrations. Processes that start together serialise
// on a session advisory lock, so each migration runs once.
//
// No migration library (goose, golang-migrate): the ledger's schema is a
// table and an index, two statements, and a list of the versions applied;
// this file does that in a few dozen lines, where a library brings its
// dependency tree into the manager, its own table and file conventions, and
// down-migrations that nobody may run on a payment history.

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLockKey is the advisory lock the migrations hold: "paymentj" in
// ASCII, a 64-bit key no other application is likely to take.
const migrationLockKey int64 = 0x7061796d656e746a

// migration is one SQL file of migrations/.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations reads the embedded migrations, in version order.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries { // ReadDir sorts by name: 0001_ before 0002_
		prefix, _, ok := strings.Cut(e.Name(), "_")
		version, err := strconv.Atoi(prefix)
		if !ok || err != nil || version <= 0 {
			return nil, fmt.Errorf("migration %s is not named <version>_<what>.sql", e.Name())
		}
		if len(ms) > 0 && ms[len(ms)-1].version == version {
			return nil, fmt.Errorf("migrations %s and %s have the same version", ms[len(ms)-1].name, e.Name())
		}
		sql, err := migrationFiles.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: version, name: e.Name(), sql: string(sql)})
	}
	return ms, nil
}

// Migrate applies the migrations the database lacks. A database that has
// them all is only read (a read-only server is fine then); otherwise the
// migrations run under the advisory lock, so that any number of processes
// may call Migrate at once. It is bounded by ctx only: a migration may take
// long on a large table. A read-only ledger (Options.ReadOnly) returns
// ErrReadOnly.
func (l *Ledger) Migrate(ctx context.Context) error {
	if l.opts.ReadOnly {
		return ErrReadOnly
	}
	ms, err := migrations()
	if err != nil {
		return err
	}
	conn, err := l.pool.Acquire(ctx)
	if err != nil {
		return wrapErr("migrate the outcome ledger", err)
	}
	// The session is this function's: ending it releases the advisory
	// lock whatever happens, and no pooled connection keeps it.
	session := conn.Hijack()
	defer func() { _ = session.Close(context.Background()) }()
	if pending, err := pendingMigrations(ctx, session, ms); err != nil || len(pending) == 0 {
		return wrapMigrate(err)
	}
	if _, err := session.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLockKey); err != nil {
		return wrapMigrate(err)
	}
	if _, err := session.Exec(ctx, `CREATE TABLE IF NOT EXISTS paymentjob_schema_migrations (
		version int PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return wrapMigrate(err)
	}
	// Another process may have migrated while this one waited.
	pending, err := pendingMigrations(ctx, session, ms)
	if err != nil {
		return wrapMigrate(err)
	}
	for _, m := range pending {
		err := pgx.BeginFunc(ctx, session, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO paymentjob_schema_migrations (version) VALUES ($1)", m.version)
			return err
		})
		if err != nil {
			return wrapErr("apply ledger migration "+m.name, err)
		}
	}
	_, err = session.Exec(ctx, "SELECT pg_advisory_unlock($1)", migrationLockKey)
	return wrapMigrate(err)
}

// CheckSchema returns nil when the database holds every migration of this
// binary, and otherwise an error wrapping ErrSchema that names the versions
// it lacks; it writes nothing (a read-only server, a read-only role are
// fine). A database that cannot be reached is an error wrapping
// ErrUnavailable. It is bounded by Options.Timeout.
func (l *Ledger) CheckSchema(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	var pending []migration
	err = l.do(ctx, func(ctx context.Context) error {
		conn, err := l.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer conn.Release()
		pending, err = pendingMigrations(ctx, conn.Conn(), ms)
		return err
	})
	if err != nil {
		return wrapErr("check the outcome ledger's schema", err)
	}
	if len(pending) > 0 {
		names := make([]string, len(pending))
		for i, m := range pending {
			names[i] = m.name
		}
		return fmt.Errorf("%w: it lacks %s; the operator applies them when it starts with this ledger",
			ErrSchema, strings.Join(names, ", "))
	}
	return nil
}

func wrapMigrate(err error) error {
	if err == nil {
		return nil
	}
	return wrapErr("migrate the outcome ledger", err)
}

// pendingMigrations returns the migrations whose version the database has
// not recorded, all of them when it has no table of versions yet.
func pendingMigrations(ctx context.Context, conn *pgx.Conn, ms []migration) ([]migration, error) {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('paymentjob_schema_migrations') IS NOT NULL").Scan(&exists); err != nil {
		return nil, err
	}
	if !exists {
		return ms, nil
	}
	rows, err := conn.Query(ctx, "SELECT version FROM paymentjob_schema_migrations")
	if err != nil {
		return nil, err
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, err
	}
	var pending []migration
	for _, m := range ms {
		if !slices.Contains(applied, int32(m.version)) {
			pending = append(pending, m)
		}
	}
	return pending, nil
}
