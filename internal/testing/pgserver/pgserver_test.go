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

package pgserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	. "github.com/onsi/gomega"
)

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("cannot connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func TestStartCreateDatabaseAndConnect(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := Start(t)

	dsn := srv.CreateDatabase(t, "ledger-a")
	g.Expect(dsn).To(Equal(fmt.Sprintf("postgres://postgres@127.0.0.1:%d/ledger-a?sslmode=disable", srv.port)))
	conn := connect(t, dsn)
	var db, encoding, user string
	g.Expect(conn.QueryRow(ctx, "SELECT current_database(), pg_encoding_to_char(encoding), current_user "+
		"FROM pg_database WHERE datname = current_database()").Scan(&db, &encoding, &user)).To(Succeed())
	g.Expect([]string{db, encoding, user}).To(Equal([]string{"ledger-a", "UTF8", "postgres"}))

	var fsync, listen string
	g.Expect(conn.QueryRow(ctx, "SELECT current_setting('fsync'), current_setting('listen_addresses')").Scan(&fsync, &listen)).To(Succeed())
	g.Expect(fsync).To(Equal("off"))
	g.Expect(listen).To(Equal("127.0.0.1"))
}

func TestKillAndRestartKeepCommittedData(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := Start(t)
	dsn := srv.CreateDatabase(t, "kept")
	conn := connect(t, dsn)
	_, err := conn.Exec(ctx, "CREATE TABLE t (k text PRIMARY KEY); INSERT INTO t VALUES ('committed')")
	g.Expect(err).NotTo(HaveOccurred())
	processes := serverProcesses(srv)
	g.Expect(len(processes)).To(BeNumerically(">", 2), "the postmaster, the backend of conn and the server's workers")

	srv.Kill(t)
	g.Expect(alive(processes)).To(BeEmpty(), "no backend outlives the postmaster")
	_, err = conn.Exec(ctx, "SELECT 1")
	g.Expect(err).To(HaveOccurred(), "the old connection is gone")
	_, err = pgx.Connect(ctx, dsn)
	g.Expect(err).To(HaveOccurred(), "nothing listens")

	port := srv.port
	srv.Restart(t)
	g.Expect(srv.port).To(Equal(port))
	var k string
	g.Expect(connect(t, dsn).QueryRow(ctx, "SELECT k FROM t").Scan(&k)).To(Succeed())
	g.Expect(k).To(Equal("committed"))

	// A stopped server starts again too.
	srv.Stop(t)
	srv.Restart(t)
	g.Expect(connect(t, dsn).QueryRow(ctx, "SELECT k FROM t").Scan(&k)).To(Succeed())
}

func TestSetReadOnlyRefusesWritesUntilOff(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := Start(t)
	dsn := srv.CreateDatabase(t, "ro")
	idle := connect(t, dsn)
	_, err := idle.Exec(ctx, "CREATE TABLE t (k text PRIMARY KEY)")
	g.Expect(err).NotTo(HaveOccurred())

	srv.SetReadOnly(t, true)
	_, err = connect(t, dsn).Exec(ctx, "INSERT INTO t VALUES ('new session')")
	g.Expect(sqlState(err)).To(Equal("25006"), "a new session cannot write: %v", err)
	// A session that was idle through the reload sees it at its next
	// statement, as a pooled connection of the ledger would.
	_, err = idle.Exec(ctx, "INSERT INTO t VALUES ('idle session')")
	g.Expect(sqlState(err)).To(Equal("25006"), "an idle session cannot write: %v", err)
	var n int
	g.Expect(idle.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n)).To(Succeed(), "reads still work")

	srv.SetReadOnly(t, false)
	_, err = connect(t, dsn).Exec(ctx, "INSERT INTO t VALUES ('writable again')")
	g.Expect(err).NotTo(HaveOccurred())
}

func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// serverProcesses is the postmaster and the processes it started.
func serverProcesses(srv *Server) []int {
	return append(children(srv.cmd.Process.Pid), srv.cmd.Process.Pid)
}

func TestCleanupLeavesNothingBehind(t *testing.T) {
	g := NewWithT(t)
	var processes []int
	var dir string
	t.Run("server", func(t *testing.T) {
		srv := Start(t)
		connect(t, srv.DSN("postgres")) // a backend, ended by the cleanup too
		processes, dir = serverProcesses(srv), srv.dir
	})
	g.Expect(len(processes)).To(BeNumerically(">", 2))
	g.Expect(alive(processes)).To(BeEmpty())
	_, err := os.Stat(dir)
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "the folder %s is removed", dir)

	segments := func() []string {
		found, err := filepath.Glob("/dev/shm/PostgreSQL.*")
		g.Expect(err).NotTo(HaveOccurred())
		return found
	}
	before := segments()
	t.Run("killed and restarted server", func(t *testing.T) {
		srv := Start(t)
		srv.Kill(t)
		srv.Restart(t)
		connect(t, srv.DSN("postgres"))
		processes = serverProcesses(srv)
	})
	g.Expect(alive(processes)).To(BeEmpty())
	t.Run("killed server", func(t *testing.T) {
		srv := Start(t)
		connect(t, srv.DSN("postgres"))
		srv.Kill(t)
	})
	// A killed postmaster cannot remove its dynamic shared memory: it is
	// in the server's folder, not in /dev/shm, where it would stay.
	g.Expect(segments()).To(ConsistOf(before), "shared memory segments left in /dev/shm")
}

// fatalTB records the failure of a helper that was expected to fail.
type fatalTB struct {
	*testing.T
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestMissingBinariesFailAndNameThePackage(t *testing.T) {
	g := NewWithT(t)
	t.Setenv("PG_BIN", t.TempDir())
	tb := &fatalTB{T: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Start(tb)
		tb.msg = "Start returned"
	}()
	<-done
	g.Expect(tb.msg).To(ContainSubstring("PostgreSQL server binaries not found"))
	g.Expect(tb.msg).To(ContainSubstring("apt-get install postgresql-15"))
	g.Expect(tb.msg).To(ContainSubstring("PG_BIN="))
}

func TestFindBinPrefersTheHighestVersion(t *testing.T) {
	g := NewWithT(t)
	dirs := []string{"/usr/lib/postgresql/9.6/bin", "/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/13/bin"}
	sortByVersion(dirs)
	g.Expect(dirs).To(Equal([]string{"/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/13/bin", "/usr/lib/postgresql/9.6/bin"}))
}
