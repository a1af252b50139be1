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
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"k8s.io/utils/clock"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
)

const (
	// DefaultMaxBatch bounds the entries of one INSERT: a few hundred rows
	// of some 300 bytes are one round trip, and a statement that fails
	// fails no more callers than that.
	DefaultMaxBatch = 500
	// DefaultTimeout bounds one round trip to the database: a lookup, a
	// batch of Records, a step of Prune.
	DefaultTimeout = 10 * time.Second
	// applicationName names the ledger's sessions in pg_stat_activity,
	// unless the DSN names them.
	applicationName = "paymentjob-operator"
)

// Options configure a Ledger.
type Options struct {
	// Cluster names the cluster this ledger runs in. It is stored with each
	// entry the ledger records, so that clusters sharing a database can
	// tell who recorded what; it does not scope the keys.
	Cluster string
	// Retention is how long entries are kept at least;
	// ledger.DefaultRetention when zero.
	Retention time.Duration
	// Clock is the time source of retention; the real clock when nil.
	Clock clock.PassiveClock
	// MaxBatch bounds the entries one INSERT carries; DefaultMaxBatch
	// when zero.
	MaxBatch int
	// Timeout bounds one round trip to the database (a lookup, a batch, a
	// step of Prune); DefaultTimeout when zero. A database that does not
	// answer within it is unavailable (ErrUnavailable).
	Timeout time.Duration
	// RootCAFile, for Open, is a PEM file of the certificate authorities
	// the server's certificate must chain to. The connection then uses
	// TLS with sslmode=verify-full, whatever the DSN says: the chain and
	// the server's host name are both checked.
	RootCAFile string
	// MaxConns, for Open, bounds the pool's connections; zero keeps the
	// DSN's pool_max_conns, or pgx's default (4, or the number of CPUs
	// when larger).
	MaxConns int32
	// PruneInterval is the time between two runs of Prune under Start;
	// DefaultPruneInterval when zero.
	PruneInterval time.Duration
	// ReadOnly makes a ledger that only reads, for tools outside the
	// manager: New and Open check the schema (CheckSchema) instead of
	// migrating it, and fail with ErrSchema when it is missing or older
	// than this binary's; Record and Prune return ErrReadOnly, and Start
	// prunes nothing. Open also makes every transaction of its sessions
	// read-only (default_transaction_read_only), unless the DSN sets it.
	ReadOnly bool
	// RequireSynchronous makes New and Open refuse (ErrNotSynchronous) a
	// database that acknowledges a commit before a synchronous standby
	// holds it (CheckSynchronous): an outcome recorded there can be lost
	// in a failover. The manager sets it unless told that a single
	// server's durability will do.
	RequireSynchronous bool
}

// DefaultPruneInterval is how often Start deletes the expired entries.
const DefaultPruneInterval = time.Hour

// Ledger is the outcome ledger in a PostgreSQL database. It is safe for
// concurrent use, and any number of processes, in any number of clusters,
// may share the database.
type Ledger struct {
	pool *pgxpool.Pool
	// ownsPool: the pool was made by Open, and Close closes it.
	ownsPool bool
	opts     Options
	// attempts bounds the tries of one round trip: one more than the
	// pool's connections, each of which may turn out dead.
	attempts int

	// kick wakes the flusher; stop asks it to end, and flushed is closed
	// when it has.
	kick    chan struct{}
	stop    chan struct{}
	flushed chan struct{}

	mu sync.Mutex
	// queue is the batches waiting for the flusher, oldest first; Record
	// adds to the last one until it holds MaxBatch entries.
	queue  []*ledger.Batch
	closed bool
}

// Open connects to the database at dsn and returns its ledger, as New does.
// Close closes the connections. The DSN is kept out of every error: it may
// hold a password.
func Open(ctx context.Context, dsn string, opts Options) (*Ledger, error) {
	if opts.RootCAFile != "" {
		dsn = withParams(dsn, map[string]string{"sslmode": "verify-full", "sslrootcert": opts.RootCAFile})
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx masks passwords in its parse errors only on a best-effort
		// basis, and a URL's own parse error quotes the whole URL.
		return nil, errors.New("cannot parse the outcome ledger's DSN (its text is left out: it may hold a password)")
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = applicationName
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["default_transaction_read_only"]; opts.ReadOnly && !ok {
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, wrapErr("open the outcome ledger's connection pool", err)
	}
	l, err := newLedger(ctx, pool, true, opts)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return l, nil
}

// New returns the ledger in the database that pool reaches, once its schema
// is migrated (Migrate), or checked (CheckSchema) with Options.ReadOnly. A
// database that cannot be reached is an error
// wrapping ErrUnavailable; the caller may try again. Close does not close
// the pool.
func New(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Ledger, error) {
	return newLedger(ctx, pool, false, opts)
}

func newLedger(ctx context.Context, pool *pgxpool.Pool, ownsPool bool, opts Options) (*Ledger, error) {
	if opts.Retention <= 0 {
		opts.Retention = ledger.DefaultRetention
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.PruneInterval <= 0 {
		opts.PruneInterval = DefaultPruneInterval
	}
	l := &Ledger{
		pool:     pool,
		ownsPool: ownsPool,
		opts:     opts,
		attempts: int(pool.Config().MaxConns) + 1,
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		flushed:  make(chan struct{}),
	}
	if opts.RequireSynchronous {
		if err := CheckSynchronous(ctx, pool); err != nil {
			return nil, err
		}
	}
	prepare := l.Migrate
	if opts.ReadOnly {
		prepare = l.CheckSchema
	}
	if err := prepare(ctx); err != nil {
		return nil, err
	}
	go l.flush()
	return l, nil
}

// Close stores the entries handed to Record so far, ends the flusher and,
// for a ledger made by Open, closes the connections. Record, Find, Has and
// Prune return ErrClosed afterwards.
func (l *Ledger) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.mu.Unlock()
	close(l.stop)
	<-l.flushed
	if l.ownsPool {
		l.pool.Close()
	}
}

// isClosed reports whether Close was called.
func (l *Ledger) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// findQuery reads one entry by its primary key.
const findQuery = `SELECT fingerprint, provider_uid, provider_endpoint, provider_account, provider_mode,
	provider_key_scope, charge, outcome, reason, resolved_by, at, amount, currency, refunded_charge
FROM paymentjob_outcomes WHERE key = $1`

// Find returns the entry recorded under key: one SELECT by primary key.
func (l *Ledger) Find(ctx context.Context, key string) (ledger.Entry, bool, error) {
	if l.isClosed() {
		return ledger.Entry{}, false, ErrClosed
	}
	e := ledger.Entry{Key: key}
	var outcome string
	err := l.do(ctx, func(ctx context.Context) error {
		return l.pool.QueryRow(ctx, findQuery, key).Scan(&e.Fingerprint, &e.Provider.UID, &e.Provider.Endpoint,
			&e.Provider.Account, &e.Provider.Mode, &e.Provider.KeyScope, &e.Charge, &outcome, &e.Reason,
			&e.ResolvedBy, &e.At, &e.Amount, &e.Currency, &e.RefundedCharge)
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return ledger.Entry{}, false, nil
	case err != nil:
		return ledger.Entry{}, false, wrapErr("read the outcome ledger", err)
	}
	e.Outcome = paymentsv1alpha1.LedgerOutcome(outcome)
	e.At = e.At.UTC()
	return e, true, nil
}

// Has reports whether an entry is recorded under key.
func (l *Ledger) Has(ctx context.Context, key string) (bool, error) {
	if l.isClosed() {
		return false, ErrClosed
	}
	var found bool
	err := l.do(ctx, func(ctx context.Context) error {
		return l.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM paymentjob_outcomes WHERE key = $1)`, key).Scan(&found)
	})
	if err != nil {
		return false, wrapErr("read the outcome ledger", err)
	}
	return found, nil
}

// do runs one round trip, bounded by Options.Timeout, and runs it again
// on another connection when the one it ran on turned out dead: the pool
// holds connections to a server that restarted or failed over, and each
// failure removes one. Every statement of the ledger may be sent twice
// (reads, an insert that keeps what is there, a delete of expired rows).
// A server that is down fails the next connection, which ends the loop.
func (l *Ledger) do(ctx context.Context, op func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	var err error
	for range l.attempts {
		if err = op(ctx); err == nil || !lostConnection(err) || ctx.Err() != nil {
			break
		}
	}
	return err
}
