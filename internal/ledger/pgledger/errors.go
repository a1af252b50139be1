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
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrUnavailable is wrapped by every error that means the database did not
// answer: no connection could be made or one was lost, a timeout, a
// read-only server (SQLSTATE 25006), a server shutting down or starting up.
// Nothing may be charged on the strength of such an answer; the caller
// waits and asks again.
var ErrUnavailable = errors.New("the outcome ledger's database did not answer")

// ErrClosed is returned by a Ledger after Close.
var ErrClosed = errors.New("the outcome ledger is closed")

// ErrReadOnly is returned by Record and Prune of a ledger opened with
// Options.ReadOnly.
var ErrReadOnly = errors.New("the outcome ledger was opened read-only")

// ErrSchema is wrapped by the error of CheckSchema (and so of a read-only
// New or Open) when the database lacks the ledger's tables or some of its
// migrations: the operator has not run against it yet, or is older than
// the reader.
var ErrSchema = errors.New("the outcome ledger's schema is missing or older than this program's")

// wrapErr says what could not be done, and wraps ErrUnavailable too when err
// means the database did not answer.
func wrapErr(what string, err error) error {
	if unavailable(err) {
		return fmt.Errorf("cannot %s: %w: %w", what, ErrUnavailable, err)
	}
	return fmt.Errorf("cannot %s: %w", what, err)
}

// unavailableStates are the SQLSTATEs, or their classes (two characters),
// of a server that cannot answer now, as opposed to one that refused the
// statement.
var unavailableStates = []string{
	"08",    // connection exception
	"53",    // insufficient resources: too many connections, disk full, out of memory
	"58",    // system error: an I/O error
	"25006", // read_only_sql_transaction: a standby, or a primary made read-only
	"57P01", // admin_shutdown: the server is shutting down
	"57P02", // crash_shutdown
	"57P03", // cannot_connect_now: starting up or shutting down
	"57014", // query_canceled: statement_timeout
}

// unavailable reports whether err means the database did not answer. A
// caller's own cancellation is not the database's fault; its deadline is a
// timeout like any other.
func unavailable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		for _, s := range unavailableStates {
			if strings.HasPrefix(pgErr.Code, s) {
				return true
			}
		}
		return false
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) ||
		errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNREFUSED) ||
		pgconn.SafeToRetry(err)
}

// lostConnection reports whether err came from a connection that was open
// and turned out dead (the server restarted, failed over, or ended the
// session): another connection of the pool may answer, and every statement
// of the ledger may be sent again. A new connection that cannot be made is
// not one: the server is down.
func lostConnection(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02"
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return false
	}
	return unavailable(err)
}
