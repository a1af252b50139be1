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
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idempotency-dev/paymentjob-operator/internal/testing/childproc"
)

// Settings changed on a running server, each waited for until a new
// session sees it.

// EnableTLS has the server accept TLS connections with the PEM certificate
// and key given (plain connections stay accepted, as sslmode=disable
// clients need). It returns once a reload made them take effect.
func (s *Server) EnableTLS(t testing.TB, certPEM, keyPEM []byte) {
	t.Helper()
	for name, data := range map[string][]byte{"server.crt": certPEM, "server.key": keyPEM} {
		path := filepath.Join(s.data, name)
		// The server refuses a key others may read.
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatalf("cannot write %s: %v", name, err)
		}
		if s.owner != nil {
			if err := os.Chown(path, int(s.owner.Uid), int(s.owner.Gid)); err != nil {
				t.Fatalf("cannot give %s to the server's user: %v", name, err)
			}
		}
	}
	s.exec(t, "ALTER SYSTEM SET ssl = on")
	s.exec(t, "SELECT pg_reload_conf()")
	deadline := time.Now().Add(readyWait)
	for {
		var got string
		err := s.query(func(ctx context.Context, conn *pgx.Conn) error {
			return conn.QueryRow(ctx, "SHOW ssl").Scan(&got)
		})
		if err == nil && got == "on" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ssl is %q, not on, after a reload (%v); last lines of %s:\n%s", got, err, s.log, childproc.Tail(s.log, 20))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// SetReadOnly makes every new transaction read-only (on) or not (off), as a
// standby or a primary whose disk filled up answers: writes fail with
// SQLSTATE 25006. It returns once a new session sees the setting; a session
// that was idle through the change sees it at its next statement.
func (s *Server) SetReadOnly(t testing.TB, on bool) {
	t.Helper()
	value := "off"
	if on {
		value = "on"
	}
	s.exec(t, "ALTER SYSTEM SET default_transaction_read_only = "+value)
	s.exec(t, "SELECT pg_reload_conf()")
	deadline := time.Now().Add(readyWait)
	for {
		var got string
		err := s.query(func(ctx context.Context, conn *pgx.Conn) error {
			return conn.QueryRow(ctx, "SHOW default_transaction_read_only").Scan(&got)
		})
		if err == nil && got == value {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("default_transaction_read_only is %q, not %q, after a reload (%v)", got, value, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
