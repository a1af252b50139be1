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
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/pgserver"
)

// The outcome ledger in PostgreSQL: a database that outlives the cluster
// whose payments it records, and that clusters of a fleet share.

// ledgerDatabase is a database on a PostgreSQL server of the test, where
// managers keep their outcome ledger (--ledger-backend=postgres).
type ledgerDatabase struct {
	// dsn reaches the database on 127.0.0.1, without a password.
	dsn string
}

// startLedgerDatabase starts a PostgreSQL server on 127.0.0.1 (pgserver),
// stopped when the test ends, after the managers started later, and creates
// the ledger's database on it. The first manager creates the table.
func startLedgerDatabase(t *testing.T) *ledgerDatabase {
	t.Helper()
	start := time.Now()
	srv := pgserver.Start(t)
	db := &ledgerDatabase{dsn: srv.CreateDatabase(t, "paymentjob_ledger")}
	t.Logf("PostgreSQL on %s up in %s", srv.Addr(), time.Since(start).Round(time.Millisecond))
	return db
}

// postgresFlags are the flags of a manager of the scenario that keeps its
// ledger in db and names its rows clusterName (the scenario's name when
// empty). The DSN goes to a file in the scenario's folder, as a Secret is
// mounted. The scenarios run such managers on control planes of their own:
// on the suite's, a manager would copy to db the outcome of every job the
// suite finished there (the TTL collector records finished jobs the ledger
// lacks), and refuse to start while the PaymentLedger pages hold outcomes
// that db does not.
func (s *scenario) postgresFlags(db *ledgerDatabase, clusterName string) []string {
	s.t.Helper()
	if clusterName == "" {
		clusterName = s.name
	}
	path := filepath.Join(s.dir, "ledger-postgres-dsn")
	NewWithT(s.t).Expect(os.WriteFile(path, []byte(db.dsn+"\n"), 0o600)).To(Succeed())
	// A single server: a local commit will do.
	return []string{"--ledger-backend=postgres", "--ledger-postgres-dsn-file=" + path, "--ledger-cluster-name=" + clusterName,
		"--ledger-postgres-durability=local"}
}

// records returns the rows of the ledger's table, paymentjob_outcomes, by
// key.
func (d *ledgerDatabase) records(g Gomega) map[string][]ledgerRecord {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, d.dsn)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = conn.Close(ctx) }()
	rows, err := conn.Query(ctx, "SELECT key, outcome, charge, cluster FROM paymentjob_outcomes")
	g.Expect(err).NotTo(HaveOccurred())
	records := map[string][]ledgerRecord{}
	var key string
	var r ledgerRecord
	_, err = pgx.ForEachRow(rows, []any{&key, &r.outcome, &r.charge, &r.cluster}, func() error {
		records[key] = append(records[key], r)
		return nil
	})
	g.Expect(err).NotTo(HaveOccurred())
	return records
}

// lookNothingUp makes the scenario's PaymentProviders look no key up
// before a first charge (spec.lookup.policy Never) and returns o with the
// manager's lookups of jobs older than the provider's key memory off
// (--provider-key-retention=0): no job of its cluster is looked up at the
// provider. It is called before the manager starts.
func (s *scenario) lookNothingUp(o managerOptions) managerOptions {
	s.t.Helper()
	g := NewWithT(s.t)
	for _, ns := range s.namespaces {
		pp := &paymentsv1alpha1.PaymentProvider{}
		g.Expect(s.cluster.k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: providerName}, pp)).To(Succeed())
		patch := client.MergeFrom(pp.DeepCopy())
		pp.Spec.Lookup = &paymentsv1alpha1.ProviderLookup{Policy: paymentsv1alpha1.LookupNever}
		g.Expect(s.cluster.k8s.Patch(context.Background(), pp, patch)).To(Succeed())
	}
	o.args = append(o.args, "--provider-key-retention=0")
	return o
}

// testRebuildFromGitPostgres is rebuild-from-git with the outcome ledger in
// PostgreSQL: the cluster is lost with its etcd, the database is kept, the
// sandbox forgets every key and turns its lookup off, and the manager of
// the rebuilt cluster looks nothing up (see lookNothingUp). Only
// the database remembers the payments: every job re-applied from Git must
// end as it first did, from the ledger (Ready and an event FoundInLedger),
// with its first charge and no request of any kind at the sandbox. The
// database keeps the rows of the lost cluster, one per key; the rebuilt one
// adds none.
func testRebuildFromGitPostgres(t *testing.T) {
	const lost, rebuilt = "lost", "rebuilt"
	g := NewWithT(t)
	ctx := context.Background()
	db := startLedgerDatabase(t)
	s, first, before := rebuildFromGit(t, "rebuild-from-git-postgres", managerOptions{postgres: db, clusterName: lost})
	g.Expect(s.sandbox.SetLookup(ctx, false)).To(Succeed())
	m := s.startManager(s.lookNothingUp(managerOptions{postgres: db, clusterName: rebuilt}))
	after := s.expectFromLedger(first, before)
	s.expectLedgerHolds(first, db)

	for key, rs := range db.records(g) {
		g.Expect(rs[0].cluster).To(Equal(lost), "the cluster that recorded %s", key)
	}
	var ms metrics
	g.Eventually(func() (err error) {
		ms, err = m.scrape()
		return err
	}, 30*time.Second, 500*time.Millisecond).Should(Succeed())
	g.Expect(ms.sum(metricLookupRequests, nil)).To(BeZero(), "lookup requests of %s", m.Name)
	t.Logf("rebuild-from-git-postgres: after the rebuild, %d jobs finished from the database under %s, %d create requests, %d searches, %d charges",
		len(first), m.Name, after.Requests-before.Requests, after.Searches-before.Searches, after.Charges-before.Charges)

	// The whole proof of the suite, with the sandbox's search back on.
	g.Expect(s.sandbox.SetLookup(ctx, true)).To(Succeed())
	s.verify()
}

// The jobs of TestLedgerSharedByClusters: sharedLedgerJobs applied to both
// clusters at once (job-0013's card is declined), then laterJobs applied
// to one and, once the provider forgot their keys, to the other
// (later-0007's card is declined).
const (
	sharedLedgerJobs = 30
	laterJobs        = 10
)

// TestLedgerSharedByClusters runs two clusters at once, a fleet synced
// from one repository: two control planes of the test's own, "east" and
// "west", each with a manager that keeps its ledger in the same PostgreSQL
// database under its own --ledger-cluster-name, both charging through one
// sandbox account. The idempotency key is <namespace>/<name> on both
// clusters, and the request the same, so the same manifest is one payment
// on both.
//
// First the same manifests (the same namespaces, the same specs) are
// applied to both at the same time: the sandbox charges each key at most
// once, each job of both clusters ends with that one charge (by its own
// charge, the provider's replay, a lookup or the ledger, whichever came
// first: this asserts the money, not the path), and the database holds one
// row per key, recorded by one of the two clusters. Then more manifests
// are applied to east only and charged, the sandbox forgets their keys and
// turns its lookup off, and they are applied to west, whose manager looks
// nothing up: only the shared database remembers them, and west must finish
// each from it with no request at the sandbox.
func TestLedgerSharedByClusters(t *testing.T) {
	const name = "two-clusters"
	g := NewWithT(t)
	ctx := context.Background()
	db := startLedgerDatabase(t)
	dir := filepath.Join(suite.artifacts, name)
	g.Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	sb := startSandbox(t, dir)
	t.Logf("%s: sandbox at %s, logs in %s", name, sb.URL, dir)
	clusters := startClusters(t, filepath.Join(dir, "control-plane-east"), filepath.Join(dir, "control-plane-west"))
	east := newScenarioWith(t, clusters[0], name, filepath.Join(dir, "east"), sb)
	west := newScenarioWith(t, clusters[1], name, filepath.Join(dir, "west"), sb)
	fleet := map[string]*scenario{"east": east, "west": west}

	created := make([]func(), 0, len(fleet))
	for cluster, s := range fleet {
		jobs := s.planJobs(sharedLedgerJobs, nil)
		o := managerOptions{postgres: db, clusterName: cluster}
		if s == west {
			// A provider without lookup: only the ledger remembers
			// what the provider forgot.
			o = s.lookNothingUp(o)
		}
		s.startManager(o)
		created = append(created, s.createJobsAsync(jobs, 0))
	}
	for _, wait := range created {
		wait()
	}

	// The money: every key charged once at most at the one sandbox, and
	// every job of each cluster ended with the sandbox's one charge for its
	// key (or declined, never charged).
	results := map[string]result{}
	for cluster, s := range fleet {
		results[cluster] = s.verify()
	}
	stats, err := sb.Stats(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stats.Charges).To(BeEquivalentTo(sharedLedgerJobs-1), "charges at the sandbox for %d manifests applied to two clusters", sharedLedgerJobs)
	for key, n := range stats.ChargesByKey {
		g.Expect(n).To(Equal(1), "charges of %s", key)
	}

	// The ledger: one row per key, as the job ended on both clusters.
	records := db.records(g)
	g.Expect(records).To(HaveLen(sharedLedgerJobs), "rows in the database")
	recordedBy := map[string]int{}
	for _, p := range east.jobs {
		key := p.key()
		g.Expect(records[key]).To(HaveLen(1), "rows of %s", key)
		row := records[key][0]
		recordedBy[row.cluster]++
		g.Expect(fleet).To(HaveKey(row.cluster), "the cluster that recorded %s", key)
		for cluster, r := range results {
			j := r.live[key]
			g.Expect(row.outcome).To(Equal(string(j.Status.Phase)), "%s on %s: %s", key, cluster, describe(&j))
			if j.Status.Phase == paymentsv1alpha1.PhaseCompleted {
				g.Expect(row.charge).To(Equal(j.Status.ProviderResponse.ID), "%s on %s", key, cluster)
			}
		}
	}
	for cluster, r := range results {
		charged, replayed, fromLedger := 0, 0, 0
		for _, j := range r.live {
			ready := meta.FindStatusCondition(j.Status.Conditions, paymentsv1alpha1.ConditionReady)
			switch {
			case ready != nil && ready.Reason == reasonFoundInLedger:
				fromLedger++
			case j.Status.ProviderResponse != nil && j.Status.ProviderResponse.Replayed:
				replayed++
			case j.Status.ProviderResponse != nil:
				charged++
			}
		}
		t.Logf("%s: applied to both at once, %s charged %d jobs, had %d replayed or found at the provider and %d from the database, and recorded %d rows",
			name, cluster, charged, replayed, fromLedger, recordedBy[cluster])
	}

	// Applied to east, and later to west, after the provider forgot.
	later := func(i int, j *plannedJob) {
		j.name = fmt.Sprintf("later-%04d", i)
		j.declined = i == 7
	}
	jobs := east.planJobs(laterJobs, later)
	west.planJobs(laterJobs, later)
	east.createJobs(jobs)
	live := east.waitAllTerminal()
	first := map[string]paymentsv1alpha1.PaymentJob{}
	for _, p := range jobs {
		first[p.key()] = live[p.key()]
	}
	forgotten, err := sb.ForgetKeys(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(forgotten).To(BeNumerically(">=", laterJobs), "keys forgotten by the sandbox")
	g.Expect(sb.SetLookup(ctx, false)).To(Succeed())
	before, err := sb.Stats(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	west.createJobs(jobs)
	west.expectFromLedger(first, before)
	g.Expect(db.records(g)).To(HaveLen(sharedLedgerJobs+laterJobs), "rows in the database")
	t.Logf("%s: %d jobs charged on east finished on west from the database, with no request at the sandbox", name, laterJobs)

	// The whole proof of the suite on both clusters, the sandbox's search
	// back on.
	g.Expect(sb.SetLookup(ctx, true)).To(Succeed())
	for _, s := range fleet {
		s.verify()
	}
}
