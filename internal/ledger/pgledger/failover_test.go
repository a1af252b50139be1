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

package pgledger_test

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger/pgledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/pgserver"
)

// primaryAddress is the address a DSN names, as a service in front of a
// replicated database (CloudNativePG's <cluster>-rw) is: it forwards each
// connection to the primary of the moment. failover points it at another
// server and ends every connection to the old one, as a failover does.
type primaryAddress struct {
	ln net.Listener

	mu      sync.Mutex
	primary string
	conns   []net.Conn
}

func newPrimaryAddress(t *testing.T, primary string) *primaryAddress {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &primaryAddress{ln: ln, primary: primary}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		p.closeAll()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			server, err := net.Dial("tcp", p.primary)
			if err != nil {
				p.mu.Unlock()
				_ = client.Close()
				continue
			}
			p.conns = append(p.conns, client, server)
			p.mu.Unlock()
			wg.Go(func() { pipe(server, client) })
			wg.Go(func() { pipe(client, server) })
		}
	})
	return p
}

func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
}

func (p *primaryAddress) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// failover makes primary the new primary and cuts the old one's connections.
func (p *primaryAddress) failover(primary string) {
	p.mu.Lock()
	p.primary = primary
	p.mu.Unlock()
	p.closeAll()
}

// A failover: the address the DSN names reaches a new primary, which holds
// what the old one committed (as its standby did), and every pooled
// connection to the old primary is cut. The ledger answers from the new
// primary and records there; no lookup in between is taken for "not found".
func TestFailoverToANewPrimary(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	oldPrimary, newPrimary := pgserver.Start(t), pgserver.Start(t)
	oldDSN, newDSN := oldPrimary.CreateDatabase(t, "ledger"), newPrimary.CreateDatabase(t, "ledger")
	address := newPrimaryAddress(t, oldPrimary.Addr())
	dsn := strings.Replace(oldDSN, oldPrimary.Addr(), address.ln.Addr().String(), 1)

	l, err := pgledger.Open(ctx, dsn, pgledger.Options{MaxConns: 4})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(l.Close)
	before := entry("ns/before-failover", paymentsv1alpha1.LedgerCompleted)
	g.Expect(l.Record(ctx, before)).To(Succeed())
	// Every connection of the pool is open to the old primary.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			_, _, err := l.Find(ctx, "ns/before-failover")
			g.Expect(err).NotTo(HaveOccurred())
		})
	}
	wg.Wait()

	// The standby was in sync: it holds the schema and the row.
	standby, err := pgledger.Open(ctx, newDSN, pgledger.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	var rows []ledger.Entry
	g.Expect(l.Scan(ctx, func(e ledger.Entry) error { rows = append(rows, e); return nil })).To(Succeed())
	for _, e := range rows {
		g.Expect(standby.Record(ctx, e)).To(Succeed())
	}
	standby.Close()

	address.failover(newPrimary.Addr())
	oldPrimary.Stop(t)

	got, found, err := l.Find(ctx, before.Key)
	g.Expect(err).NotTo(HaveOccurred(), "the pool reconnects to the new primary")
	g.Expect(found).To(BeTrue())
	g.Expect(got).To(Equal(before))
	after := entry("ns/after-failover", paymentsv1alpha1.LedgerCompleted)
	g.Expect(l.Record(ctx, after)).To(Succeed())

	onNew := newPool(t, newDSN, nil)
	g.Expect(count(t, onNew, "SELECT count(*) FROM paymentjob_outcomes WHERE key = 'ns/after-failover'")).To(Equal(1),
		"recorded on the new primary")
	_, found, err = l.Find(ctx, "ns/missing")
	g.Expect(err).NotTo(HaveOccurred(), "a key the new primary lacks is an answer")
	g.Expect(found).To(BeFalse())
}

// A failover after the primary crashed: two servers in streaming
// replication, the ledger opened on the primary only once a commit waits
// for a synchronous standby (it refuses the primary before that, and a
// session that commits locally), outcomes recorded from many goroutines
// (each acknowledged when Record returned), the primary killed (SIGKILL)
// and the standby promoted: every acknowledged outcome is on the new
// primary.
func TestSynchronousStandbyKeepsEveryAcknowledgedOutcome(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	primary := pgserver.Start(t)
	dsn := primary.CreateDatabase(t, "ledger")
	standby := primary.StartStandby(t)

	_, err := pgledger.Open(ctx, dsn, pgledger.Options{RequireSynchronous: true})
	g.Expect(err).To(MatchError(pgledger.ErrNotSynchronous), "refused while the primary waits for no standby")
	g.Expect(err.Error()).To(ContainSubstring("synchronous_standby_names is empty"))

	primary.SetSynchronousStandbyNames(t, "*")
	_, err = pgledger.Open(ctx, dsn+"&synchronous_commit=local", pgledger.Options{RequireSynchronous: true})
	g.Expect(err).To(MatchError(pgledger.ErrNotSynchronous), "refused when its sessions commit locally")
	g.Expect(err.Error()).To(ContainSubstring(`synchronous_commit is "local"`))
	l, err := pgledger.Open(ctx, dsn, pgledger.Options{RequireSynchronous: true, MaxConns: 4})
	g.Expect(err).NotTo(HaveOccurred(), "accepted with a synchronous standby")
	t.Cleanup(l.Close)

	const outcomes = 200
	acknowledged := make([]bool, outcomes)
	var wg sync.WaitGroup
	for i := range outcomes {
		wg.Go(func() {
			acknowledged[i] = l.Record(ctx, entry(fmt.Sprintf("ns/acknowledged-%03d", i), paymentsv1alpha1.LedgerCompleted)) == nil
		})
	}
	wg.Wait()
	g.Expect(acknowledged).To(HaveEach(BeTrue()), "every outcome recorded")

	primary.Kill(t)
	standby.Promote(t)
	promoted, err := pgledger.Open(ctx, standby.DSN("ledger"), pgledger.Options{ReadOnly: true})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(promoted.Close)
	var missing []string
	for i := range outcomes {
		want := entry(fmt.Sprintf("ns/acknowledged-%03d", i), paymentsv1alpha1.LedgerCompleted)
		got, found, err := promoted.Find(ctx, want.Key)
		g.Expect(err).NotTo(HaveOccurred())
		if !found {
			missing = append(missing, want.Key)
			continue
		}
		g.Expect(got).To(Equal(want), "the entry of %s", want.Key)
	}
	g.Expect(missing).To(BeEmpty(), "acknowledged outcomes the promoted standby lacks")
}
