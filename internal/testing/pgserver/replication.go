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

package pgserver

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idempotency-dev/paymentjob-operator/internal/testing/childproc"
)

// Streaming replication between two servers of a test, as a replicated
// database (CloudNativePG's) runs it: a standby made from a base backup of
// the primary, streaming its WAL, which the test can make synchronous and
// promote after the primary is killed.

// StartStandby makes a standby of s: a base backup of s (pg_basebackup -R,
// which also writes the standby's primary_conninfo), started in a folder
// of its own on a free port of 127.0.0.1, streaming s's WAL. It returns
// once the standby accepts connections (read-only, as a hot standby) and
// s counts it among its standbys. The databases s holds now are copied;
// those made later arrive by replication. Settings s was given with ALTER
// SYSTEM before are copied too: set synchronous_standby_names after.
func (s *Server) StartStandby(t testing.TB) *Server {
	t.Helper()
	standby := newServer(t, filepath.Dir(s.dir))
	out := filepath.Join(standby.dir, "basebackup.log")
	f, err := os.Create(out)
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer f.Close()
	cmd := standby.command("pg_basebackup", "-D", standby.data, "-h", "127.0.0.1", "-p", strconv.Itoa(s.port),
		"-U", superuser, "-R", "-X", "stream", "-c", "fast", "--no-sync")
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Run(); err != nil {
		t.Fatalf("pg_basebackup failed (%v); last lines of %s:\n%s", err, out, childproc.Tail(out, 20))
	}
	standby.startOnFreePort(t)
	s.waitFor(t, "the standby streaming", "SELECT count(*) > 0 FROM pg_stat_replication WHERE state = 'streaming'")
	return standby
}

// SetSynchronousStandbyNames sets synchronous_standby_names on s (a
// primary) and reloads its configuration. With names set ("*": any
// standby), it returns once a standby is synchronous (pg_stat_replication's
// sync_state sync or quorum): from then on a commit is acknowledged only
// after a standby has flushed it. With "", commits wait for no standby.
func (s *Server) SetSynchronousStandbyNames(t testing.TB, names string) {
	t.Helper()
	s.exec(t, "ALTER SYSTEM SET synchronous_standby_names = "+quoteLiteral(names))
	s.exec(t, "SELECT pg_reload_conf()")
	s.waitFor(t, "synchronous_standby_names = "+quoteLiteral(names),
		"SELECT current_setting('synchronous_standby_names') = "+quoteLiteral(names))
	if names != "" {
		s.waitFor(t, "a synchronous standby",
			"SELECT count(*) > 0 FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')")
	}
}

// Promote makes s (a standby) a primary, as a failover does, and returns
// once it takes writes.
func (s *Server) Promote(t testing.TB) {
	t.Helper()
	s.exec(t, "SELECT pg_promote(true, 60)")
	s.waitFor(t, "the promotion", "SELECT NOT pg_is_in_recovery()")
}

// waitFor runs query (one boolean) in the database postgres until it says
// true, for at most readyWait; what names it for the failure.
func (s *Server) waitFor(t testing.TB, what, query string) {
	t.Helper()
	deadline := time.Now().Add(readyWait)
	for {
		var ok bool
		err := s.query(func(ctx context.Context, conn *pgx.Conn) error { return conn.QueryRow(ctx, query).Scan(&ok) })
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s (%v); last lines of %s:\n%s", what, readyWait, err, s.log, childproc.Tail(s.log, 20))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// quoteLiteral is s as an SQL string literal.
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
