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
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idempotency-dev/paymentjob-operator/internal/testing/childproc"
)

const (
	// readyWait bounds how long a starting server may take to accept
	// connections; a cold start on a loaded 2-core runner takes a second.
	readyWait = 60 * time.Second
	// stopGrace is how long a fast shutdown may take before SIGKILL.
	stopGrace = 15 * time.Second
	// goneWait bounds the wait for the server's processes to end after
	// SIGKILL.
	goneWait = 15 * time.Second
	// startAttempts: a free port may be taken between finding it and the
	// server binding it; Start tries another one.
	startAttempts = 3
	// debianPackage is what provides the binaries on the project's machines.
	debianPackage = "postgresql-15"
)

// Server is a PostgreSQL server run by a test. Its methods are meant for the
// test's goroutine; DSN may be called from any.
type Server struct {
	bin  string
	dir  string
	data string
	sock string
	log  string
	port int
	// owner is who the server runs as: the user postgres when the test
	// runs as root, nil (the test's own user) otherwise.
	owner *syscall.Credential

	cmd  *exec.Cmd
	done chan struct{}
}

// Start initialises a database cluster in a temporary folder, starts a
// server on it on a free port of 127.0.0.1 and waits until it accepts
// connections. The server is stopped and the folder removed when the test
// ends; a server that cannot be started fails the test, with the end of the
// server's log.
//
// The folder is made under $PGSERVER_TMPDIR, else under /dev/shm when that
// is a folder this process can write to (a tmpfs on Linux), else under the
// temporary folder. A cluster is a thousand files, and on some CI runners
// making a file on disk costs a millisecond: on a tmpfs the PostgreSQL
// suites run three times faster. Kill, Restart and Stop behave the same on
// both; only a crash of the machine would tell them apart.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartIn(t, "")
}

// StartIn is Start with the server's folder made under parent ("": Start's
// choice). The bench keeps its ten-million-row table on disk, as a
// deployment does, and out of memory.
func StartIn(t testing.TB, parent string) *Server {
	t.Helper()
	s := newServer(t, parent)
	if err := s.newCluster(); err != nil {
		t.Fatalf("%v", err)
	}
	s.startOnFreePort(t)
	return s
}

// newServer makes a server's folder under parent (see StartIn), removed
// when the test ends, with no database cluster in it yet.
func newServer(t testing.TB, parent string) *Server {
	t.Helper()
	bin, err := findBin()
	if err != nil {
		t.Fatalf("PostgreSQL server binaries not found: %v. Install Debian's package %s (apt-get install %s), "+
			"or set PG_BIN to the folder that holds initdb and postgres", err, debianPackage, debianPackage)
	}
	owner, err := serverOwner()
	if err != nil {
		t.Fatalf("cannot run PostgreSQL: %v", err)
	}
	dir, err := makeDir(parent)
	if err != nil {
		t.Fatalf("cannot make the server's folder: %v", err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("cannot remove the PostgreSQL folder: %v", err)
		}
	})
	s := &Server{
		bin:   bin,
		dir:   dir,
		data:  filepath.Join(dir, "data"),
		sock:  filepath.Join(dir, "sock"),
		log:   filepath.Join(dir, "postgres.log"),
		owner: owner,
	}
	if err := s.prepare(); err != nil {
		t.Fatalf("cannot prepare the PostgreSQL folder: %v", err)
	}
	return s
}

// startOnFreePort starts the server on its cluster on a free port of
// 127.0.0.1, and stops it when the test ends.
func (s *Server) startOnFreePort(t testing.TB) {
	t.Helper()
	var err error
	for attempt := 1; ; attempt++ {
		if s.port, err = freePort(); err != nil {
			t.Fatalf("%v", err)
		}
		err = s.start()
		if err == nil {
			break
		}
		if attempt == startAttempts || !strings.Contains(childproc.Tail(s.log, 20), "could not bind") {
			t.Fatalf("%v", err)
		}
	}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("%v", err)
		}
	})
}

// makeDir makes the server's folder under parent, or where Start says when
// parent is "".
func makeDir(parent string) (string, error) {
	if parent != "" {
		return os.MkdirTemp(parent, "pgserver-")
	}
	if env := os.Getenv("PGSERVER_TMPDIR"); env != "" {
		return os.MkdirTemp(env, "pgserver-")
	}
	if dir, err := os.MkdirTemp("/dev/shm", "pgserver-"); err == nil {
		return dir, nil
	}
	return os.MkdirTemp("", "pgserver-")
}

// maintenanceDB is the database initdb makes, which the harness's own
// statements use.
const maintenanceDB = "postgres"

// DSN is the URL of a database on the server, as the user postgres.
func (s *Server) DSN(database string) string {
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", s.Addr(), database)
}

// CreateDatabase creates a database and returns its DSN.
func (s *Server) CreateDatabase(t testing.TB, name string) string {
	t.Helper()
	s.exec(t, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return s.DSN(name)
}

// Addr is the server's address, 127.0.0.1 and its port.
func (s *Server) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Kill ends the server as a crash does: SIGKILL to the postmaster and to
// every process it started (the backends too: a machine that dies takes
// them along, and a new postmaster refuses a folder that old backends still
// use). Clients see their connections fail. It returns once they have all
// ended.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	if err := s.kill(); err != nil {
		t.Fatalf("%v", err)
	}
}

// Restart starts a server again on the same folder and port, after Kill or
// Stop, and waits until it accepts connections: what was committed is back.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if s.running() {
		t.Fatalf("PostgreSQL is still running (pid %d): Kill or Stop it first", s.cmd.Process.Pid)
	}
	if err := s.start(); err != nil {
		t.Fatalf("%v", err)
	}
}

// Stop shuts the server down (a fast shutdown: SIGINT, which rolls back
// open transactions and disconnects every client), with SIGKILL after a
// bound. The test's cleanup does the same.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if err := s.stop(); err != nil {
		t.Fatalf("%v", err)
	}
}

// prepare makes the folders the server's user writes to.
func (s *Server) prepare() error {
	if err := os.Mkdir(s.sock, 0o700); err != nil {
		return err
	}
	if s.owner == nil {
		return nil
	}
	for _, p := range []string{s.dir, s.sock} {
		if err := os.Chown(p, int(s.owner.Uid), int(s.owner.Gid)); err != nil {
			return err
		}
	}
	return nil
}

// start starts the postmaster and waits until it accepts connections.
func (s *Server) start() error {
	logFile, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := s.command("postgres", "-D", s.data, "-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-k", s.sock,
		"-F", // fsync off: a test's data need not survive the machine
		"-c", "shared_buffers=16MB", "-c", "max_connections=50", "-c", "full_page_writes=off",
		// Dynamic shared memory in the data folder, not in /dev/shm: a
		// killed postmaster leaves its segments behind, and they go with
		// the folder.
		"-c", "dynamic_shared_memory_type=mmap")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	err = cmd.Start()
	_ = logFile.Close() // the child holds its own copy
	if err != nil {
		return fmt.Errorf("cannot start postgres: %w", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) {
		_ = cmd.Wait()
		close(done)
	}(s.done)
	if err := s.waitReady(); err != nil {
		_ = s.kill()
		return fmt.Errorf("PostgreSQL did not start on port %d: %w; last lines of %s:\n%s",
			s.port, err, s.log, childproc.Tail(s.log, 20))
	}
	return nil
}

// command is a server binary run as the server's user, in a process group
// of its own: a Ctrl-C in the terminal reaches the test, whose cleanup
// stops the server.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: s.owner}
	return cmd
}

// waitReady waits until the server accepts a connection, for at most
// readyWait, or until it exits.
func (s *Server) waitReady() error {
	deadline := time.Now().Add(readyWait)
	for {
		err := s.query(func(ctx context.Context, conn *pgx.Conn) error { return conn.Ping(ctx) })
		if err == nil {
			return nil
		}
		select {
		case <-s.done:
			return errors.New("it exited")
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no connection after %s: %w", readyWait, err)
		}
	}
}

// query runs use on a new connection to the database postgres.
func (s *Server) query(use func(context.Context, *pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN(maintenanceDB))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return use(ctx, conn)
}

// exec runs one statement in the database postgres.
func (s *Server) exec(t testing.TB, sql string) {
	t.Helper()
	err := s.query(func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, sql)
		return err
	})
	if err != nil {
		t.Fatalf("cannot run %q: %v", sql, err)
	}
}

// running reports whether the postmaster has been started and not ended.
func (s *Server) running() bool {
	if s.done == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// kill ends the postmaster and its children with SIGKILL and waits until
// they are gone. The children are not in the postmaster's process group
// (each makes itself a group leader), so they are found by their parent:
// the postmaster is stopped first, so that it forks none while they are
// listed.
func (s *Server) kill() error {
	if !s.running() {
		return nil
	}
	pid := s.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	deadline := time.Now().Add(goneWait)
	for state(pid) != "T" && s.running() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	victims := children(pid)
	for _, child := range victims {
		_ = syscall.Kill(child, syscall.SIGKILL)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	<-s.done
	return waitGone(victims, goneWait)
}

// stop makes a fast shutdown, which ends the children before the
// postmaster, with kill after stopGrace.
func (s *Server) stop() error {
	if !s.running() {
		return nil
	}
	victims := children(s.cmd.Process.Pid)
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(stopGrace):
		return s.kill()
	}
	return waitGone(victims, goneWait)
}

// freePort returns a port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	addr, err := childproc.FreeLoopbackAddr()
	if err != nil {
		return 0, err
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(port)
}
