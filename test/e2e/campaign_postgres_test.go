//go:build e2e

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

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/gomega"
	"pgregory.net/rapid"

	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger/pgledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/pgserver"
)

// The process campaign's outcome ledger: the managers of a sub-test keep
// it in the PaymentLedger pages (crd) or in PostgreSQL (postgres), and the
// oracle reads each history's book from where they keep it, so that every
// ledger rule of campaign.Violations is checked against that backend.

// The ledger backends of the campaign's sub-tests, as CAMPAIGN_LEDGER
// (make campaign LEDGER=) names them; "both" runs them one after the
// other.
const (
	campaignCRD      = "crd"
	campaignPostgres = "postgres"
	campaignBoth     = "both"
)

// campaignShare is a backend and its share of the campaign's time.
type campaignShare struct {
	backend string
	weight  int
}

// campaignShares are the backends CAMPAIGN_LEDGER selects, both when it
// is unset. Both share the time 2:1: the CRD ledger's histories are the
// campaign's main ground (the ledger most clusters run, and the one the
// in-process model imitates); the PostgreSQL ones check the same rules
// against the other backend, and pay for a control plane and a server of
// their own first. One backend alone takes all of it.
func campaignShares(t *testing.T) []campaignShare {
	switch v := os.Getenv("CAMPAIGN_LEDGER"); v {
	case "", campaignBoth:
		return []campaignShare{{campaignCRD, 2}, {campaignPostgres, 1}}
	case campaignCRD, campaignPostgres:
		return []campaignShare{{v, 1}}
	default:
		t.Fatalf("CAMPAIGN_LEDGER=%q: use %s, %s or %s", v, campaignCRD, campaignPostgres, campaignBoth)
		return nil
	}
}

// campaignLedger is where the managers of a sub-test keep their outcome
// ledger: the cluster the sub-test runs on and, for PostgreSQL, the
// server its histories' databases are on.
type campaignLedger struct {
	backend string
	cluster *cluster
	// pg is the sub-test's PostgreSQL server; nil on the CRD ledger.
	pg *pgserver.Server
}

// newCampaignLedger is the ledger of a sub-test on backend. The CRD
// ledger's histories run on the suite's control plane. The PostgreSQL
// ledger's run on a control plane of their own, started here once under
// dir, as TestLedgerSharedByClusters and rebuild-from-git-postgres start
// theirs (startCluster): on the suite's, a PostgreSQL manager would copy
// every job the suite finished there to its database and refuse to start
// while the PaymentLedger pages hold outcomes the database lacks
// (postgresFlags). The server is stopped when the sub-test ends, after the
// managers (cleanups run last registered first).
func newCampaignLedger(t *testing.T, backend, dir string) *campaignLedger {
	if backend == campaignCRD {
		return &campaignLedger{backend: backend, cluster: sharedCluster()}
	}
	start := time.Now()
	c := startCluster(t, filepath.Join(dir, "control-plane"))
	srv := pgserver.Start(t)
	t.Logf("process campaign, ledger %s: control plane and PostgreSQL on %s up in %s", backend, srv.Addr(),
		time.Since(start).Round(time.Millisecond))
	return &campaignLedger{backend: backend, cluster: c, pg: srv}
}

// historyLedger is one history's book of the ledger, as the oracle reads
// it.
type historyLedger struct {
	backend string
	// namespaces are the history's: its keys on the CRD ledger, which
	// the whole suite shares, are "<ns>/<key>" and "<ns>.refund/<name>".
	namespaces []string
	cluster    *cluster
	// On PostgreSQL: the server, the history's database and its
	// read-only reader once the managers have made the table.
	pg     *pgserver.Server
	dbName string
	db     *ledgerDatabase
	reader *pgledger.Ledger
}

// history is the book of history n, whose objects are in namespaces. On
// PostgreSQL each history has a database of its own: the table's primary
// key is the idempotency key alone (the cluster name, --ledger-cluster-name,
// only says who recorded a row and scopes nothing), so a cluster name per
// history in one database would give no history a clean ledger. In a
// fresh database the whole table is the history's book, read without a
// filter (a row that belongs to no object of the history is there for the
// oracle to see), and the two replicas migrate the empty database at once,
// as a new installation's do.
func (l *campaignLedger) history(t *testing.T, n int, namespaces []string) *historyLedger {
	h := &historyLedger{backend: l.backend, namespaces: namespaces, cluster: l.cluster, pg: l.pg}
	if l.pg != nil {
		h.dbName = fmt.Sprintf("campaign_%d", n)
		h.db = &ledgerDatabase{dsn: l.pg.CreateDatabase(t, h.dbName)}
	}
	return h
}

// String names the book in the history's log: never the DSN.
func (h *historyLedger) String() string {
	if h.db == nil {
		return "ledger crd (the suite's PaymentLedger pages)"
	}
	return fmt.Sprintf("ledger postgres (database %s on %s)", h.dbName, h.pg.Addr())
}

// managerOptions are o with the flags of the history's ledger.
func (h *historyLedger) managerOptions(o managerOptions) managerOptions {
	o.postgres = h.db
	return o
}

// ready waits, on PostgreSQL, until a manager has migrated the history's
// database (each does before it starts its controllers), and opens the
// oracle's reader of it: read-only, it fails with ErrSchema until then.
// A manager that exits meanwhile fails the history with its log.
func (h *historyLedger) ready(rt *rapid.T, managers []*manager) {
	if h.db == nil {
		return
	}
	g := NewGomega(func(message string, _ ...int) { rt.Fatalf("the ledger's database: %s", message) })
	g.Eventually(func() error {
		for _, m := range managers {
			if m.Exited() {
				StopTrying(fmt.Sprintf("manager %s exited: %v\n%s", m.Name, m.ExitError(), m.ReadLog())).Now()
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		reader, err := pgledger.Open(ctx, h.db.dsn, pgledger.Options{ReadOnly: true, MaxConns: 2})
		if err != nil {
			return err
		}
		h.reader = reader
		return nil
	}, time.Minute, 200*time.Millisecond).Should(Succeed(), "no manager made the ledger's table in %s", h.dbName)
}

// read is the history's entries: on the CRD ledger those of its
// namespaces' keys in the pages the suite shares; on PostgreSQL every row
// of its database, through pgledger's own reader (Scan, as the ledger's
// copy and verification read it), as internal/ledger entries.
func (h *historyLedger) read(ctx context.Context) ([]ledger.Entry, error) {
	var entries []ledger.Entry
	if h.db == nil {
		err := ledger.ReadAll(ctx, h.cluster.k8s, func(e ledger.Entry) error {
			for _, ns := range h.namespaces {
				if strings.HasPrefix(e.Key, ns+"/") || strings.HasPrefix(e.Key, ns+".") {
					entries = append(entries, e)
				}
			}
			return nil
		})
		return entries, err
	}
	if h.reader == nil {
		return nil, errors.New("the ledger's database has no reader yet")
	}
	err := h.reader.Scan(ctx, func(e ledger.Entry) error {
		entries = append(entries, e)
		return nil
	})
	return entries, err
}

// close closes the reader and drops the history's database once its
// managers are stopped: a long campaign makes a database per history.
func (h *historyLedger) close(t *testing.T) {
	if h.db == nil {
		return
	}
	if h.reader != nil {
		h.reader.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, h.pg.DSN("postgres"))
	if err != nil {
		t.Logf("cannot drop the database %s: %v", h.dbName, err)
		return
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, "DROP DATABASE "+pgx.Identifier{h.dbName}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Logf("cannot drop the database %s: %v", h.dbName, err)
	}
}
