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
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/sandboxproc"
)

const (
	// reasonFoundInLedger is the event and Ready reason of a job whose
	// outcome the manager took from its ledger instead of calling the
	// provider.
	reasonFoundInLedger = "FoundInLedger"
	// ledgerJobs is the jobs of a tenant, 7 a namespace; job-0013 has a
	// card that is declined, so the ledger holds a Failed outcome too.
	ledgerJobs = 21
)

// TestLedgerOutlivesTenant charges a tenant's jobs, then deletes the tenant
// entirely (jobs, PaymentProvider, Secret, events, namespace), makes the
// sandbox forget every idempotency key and turns its lookup off, and
// re-syncs everything from the same manifests with a PaymentProvider whose
// lookup policy is Never: a provider without lookup. Only the manager's
// ledger remembers the payments now, and it must finish every job from it
// with zero provider calls: the CRD ledger (PaymentLedger pages, the
// default) on the suite's control plane, and the PostgreSQL ledger on a
// control plane of its own (on the suite's, its managers would first copy
// to the database the outcomes of every job the suite finished there). The
// control run does the same with --ledger=false and must charge again,
// which proves that the first runs can fail.
func TestLedgerOutlivesTenant(t *testing.T) {
	t.Run("ledger", func(t *testing.T) { testLedgerOutlivesTenant(t, sharedCluster(), "ledger", nil) })
	t.Run("ledger-postgres", func(t *testing.T) {
		db := startLedgerDatabase(t)
		c := startCluster(t, filepath.Join(suite.artifacts, "ledger-postgres", "control-plane"))
		testLedgerOutlivesTenant(t, c, "ledger-postgres", db)
	})
	t.Run("control-without-ledger", testWithoutLedgerChargesAgain)
}

// testLedgerOutlivesTenant re-syncs the deleted tenant twice: once while the
// manager that charged it runs (its own appends must be found), and once
// more with a new manager process started after the manifests are back (the
// ledger must come from the API server, or the database, not from memory).
// The tenant lives on c, and its managers keep the ledger in db, or in
// PaymentLedger pages when db is nil.
func testLedgerOutlivesTenant(t *testing.T, c *cluster, name string, db *ledgerDatabase) {
	g := NewWithT(t)
	o := ledgerManager(true, db)
	s, m, first := chargeTenant(t, c, name, o)

	// Re-synced while the manager that charged the tenant runs.
	before := s.deleteTenantAndForget()
	s.recreateTenant()
	after := s.expectFromLedger(first, before)
	s.expectLedgerHolds(first, db)
	t.Logf("%s: tenant re-synced under %s: %d jobs finished from the ledger, %d create requests, %d searches",
		name, m.Name, len(first), after.Requests-before.Requests, after.Searches-before.Searches)

	// Deleted and re-synced again, this time before a new manager starts.
	before = s.deleteTenantAndForget()
	m.Stop(10 * time.Second)
	s.recreateTenant()
	m = s.startManager(o)
	after = s.expectFromLedger(first, before)
	s.expectLedgerHolds(first, db)
	t.Logf("%s: tenant re-synced before %s started: %d jobs finished from the ledger, %d create requests, %d searches",
		name, m.Name, len(first), after.Requests-before.Requests, after.Searches-before.Searches)

	// The whole proof of the suite, with the sandbox's search back on: one
	// charge per Completed job, the one each job records.
	g.Expect(s.sandbox.SetLookup(context.Background(), true)).To(Succeed())
	s.verify()
}

// testWithoutLedgerChargesAgain is the control: the same tenant re-synced
// with --ledger=false is charged a second time for every good card.
func testWithoutLedgerChargesAgain(t *testing.T) {
	g := NewWithT(t)
	s, _, first := chargeTenant(t, sharedCluster(), "ledger-off", ledgerManager(false, nil))
	before := s.deleteTenantAndForget()
	s.recreateTenant()
	live := s.waitAllTerminal()
	after, err := s.sandbox.Stats(context.Background())
	g.Expect(err).NotTo(HaveOccurred())

	completed := 0
	for key, old := range first {
		j := live[key]
		g.Expect(j.Status.Phase).To(Equal(old.Status.Phase), "%s: %s", key, describe(&j))
		if c := meta.FindStatusCondition(j.Status.Conditions, paymentsv1alpha1.ConditionReady); c != nil {
			g.Expect(c.Reason).NotTo(Equal(reasonFoundInLedger), "%s: the ledger is off", key)
		}
		if old.Status.Phase == paymentsv1alpha1.PhaseCompleted {
			completed++
			g.Expect(j.Status.ProviderResponse.ID).NotTo(Equal(old.Status.ProviderResponse.ID), "%s was charged again", key)
			g.Expect(after.ChargesByKey[key]).To(Equal(2), "charges of %s", key)
		}
	}
	g.Expect(after.Charges-before.Charges).To(BeEquivalentTo(completed), "charges after the re-sync without the ledger")
	g.Expect(after.Requests-before.Requests).To(BeEquivalentTo(len(first)), "one create request a job")
	t.Logf("ledger-off: without the ledger the re-synced tenant was charged %d more times for %d jobs: the test of the ledger can fail",
		after.Charges-before.Charges, len(first))
}

// chargeTenant starts a sandbox, a tenant of namespacesPerScenario
// namespaces on c and a manager started with o, and charges ledgerJobs
// jobs; it returns the jobs as they ended, by key.
func chargeTenant(t *testing.T, c *cluster, name string, o managerOptions) (*scenario, *manager, map[string]paymentsv1alpha1.PaymentJob) {
	t.Helper()
	g := NewWithT(t)
	s := newScenarioOn(t, c, name)
	jobs := s.planJobs(ledgerJobs, nil)
	m := s.startManager(o)
	s.createJobs(jobs)
	r := s.verify()
	g.Expect(r.completed).To(Equal(ledgerJobs-1), "every good card charged")
	first := map[string]paymentsv1alpha1.PaymentJob{}
	for _, p := range jobs {
		j := r.live[p.key()]
		if j.Status.Phase == paymentsv1alpha1.PhaseCompleted {
			g.Expect(j.Status.ProviderResponse.Replayed).To(BeFalse(), "%s: the first run must charge", p.key())
		}
		first[p.key()] = j
	}
	return s, m, first
}

// deleteTenantAndForget deletes the scenario's tenant as a whole, as
// deleting its namespaces would (see deleteNamespaces), then makes the
// sandbox forget every idempotency key and turns its search and lookups off.
// It returns the sandbox's counters from then on.
func (s *scenario) deleteTenantAndForget() sandboxproc.Stats {
	s.t.Helper()
	g := NewWithT(s.t)
	s.deleteNamespaces(s.namespaces)
	forgotten, err := s.sandbox.ForgetKeys(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.sandbox.SetLookup(context.Background(), false)).To(Succeed())
	st, err := s.sandbox.Stats(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	s.t.Logf("scenario %s: tenant deleted; the sandbox forgot %d keys and its lookup is off", s.name, forgotten)
	return st
}

// deleteNamespaces deletes the namespaces, all at once, and waits until
// they are gone: the control plane's kube-controller-manager deletes
// everything in them (the jobs and the PaymentProvider as their finalizers
// allow, the Secret and the events at once) and then the namespaces, as in
// a real cluster.
func (s *scenario) deleteNamespaces(namespaces []string) {
	s.t.Helper()
	g := NewWithT(s.t)
	ctx := context.Background()
	k8s := s.cluster.k8s
	for _, ns := range namespaces {
		g.Expect(k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		var left []string
		for _, ns := range namespaces {
			err := k8s.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
			if apierrors.IsNotFound(err) {
				continue
			}
			g.Expect(err).NotTo(HaveOccurred())
			content := make([]string, 0, 2)
			for _, l := range []client.ObjectList{&paymentsv1alpha1.PaymentJobList{}, &paymentsv1alpha1.PaymentProviderList{}} {
				g.Expect(k8s.List(ctx, l, client.InNamespace(ns))).To(Succeed())
				content = append(content, fmt.Sprintf("%d %T", meta.LenList(l), l))
			}
			left = append(left, fmt.Sprintf("%s (%s)", ns, strings.Join(content, ", ")))
		}
		g.Expect(left).To(BeEmpty(), "namespaces still there")
	}, 2*time.Minute, 250*time.Millisecond).Should(Succeed())
}

// recreateTenant creates the scenario's namespaces, Secrets and jobs again
// from the same manifests, with a PaymentProvider that never looks keys up.
func (s *scenario) recreateTenant() {
	s.t.Helper()
	g := NewWithT(s.t)
	ctx := context.Background()
	for _, ns := range s.namespaces {
		s.createNamespace(g, ns)
		g.Expect(s.cluster.k8s.Create(ctx, &paymentsv1alpha1.PaymentProvider{
			ObjectMeta: metav1.ObjectMeta{Name: providerName, Namespace: ns},
			Spec: paymentsv1alpha1.PaymentProviderSpec{
				Stripe: &paymentsv1alpha1.StripeProvider{
					APIBase:      s.sandbox.URL,
					SecretKeyRef: paymentsv1alpha1.SecretKeyReference{Name: secretName, Key: "apiKey"},
				},
				Lookup: &paymentsv1alpha1.ProviderLookup{Policy: paymentsv1alpha1.LookupNever},
			},
		})).To(Succeed())
	}
	s.createJobs(s.jobs)
}

// expectFromLedger waits until every job of the scenario ends, and checks
// that each job of first, re-created, ended as it first did, from the
// ledger: the same charge, Ready's reason FoundInLedger, a FoundInLedger
// event, and no request of any kind at the sandbox since before. It returns
// the sandbox's counters.
func (s *scenario) expectFromLedger(first map[string]paymentsv1alpha1.PaymentJob, before sandboxproc.Stats) sandboxproc.Stats {
	s.t.Helper()
	g := NewWithT(s.t)
	live := s.waitAllTerminal()
	after, err := s.sandbox.Stats(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after.Charges).To(Equal(before.Charges), "charges after the re-sync")
	g.Expect(after.Requests).To(Equal(before.Requests), "create requests after the re-sync")
	g.Expect(after.Searches).To(Equal(before.Searches), "searches after the re-sync")
	g.Expect(after.Retrieves).To(Equal(before.Retrieves), "retrieves after the re-sync")

	for key, old := range first {
		j, ok := live[key]
		g.Expect(ok).To(BeTrue(), "%s is missing", key)
		g.Expect(j.UID).NotTo(Equal(old.UID), "%s was not re-created", key)
		g.Expect(j.Status.Phase).To(Equal(old.Status.Phase), "%s: %s", key, describe(&j))
		c := meta.FindStatusCondition(j.Status.Conditions, paymentsv1alpha1.ConditionReady)
		g.Expect(c).NotTo(BeNil(), "%s has no Ready condition", key)
		g.Expect(c.Reason).To(Equal(reasonFoundInLedger), "%s: %s", key, describe(&j))
		g.Expect(j.Status.Provider).To(HaveField("Account", after.Account), "%s must name the sandbox's account", key)
		switch old.Status.Phase {
		case paymentsv1alpha1.PhaseCompleted:
			g.Expect(after.ChargesByKey[key]).To(Equal(1), "charges of %s", key)
			g.Expect(j.Status.ProviderResponse).NotTo(BeNil(), "%s is Completed without a providerResponse", key)
			g.Expect(j.Status.ProviderResponse.ID).To(Equal(old.Status.ProviderResponse.ID), "%s must record its first charge", key)
		case paymentsv1alpha1.PhaseFailed:
			g.Expect(after.ChargesByKey).NotTo(HaveKey(key))
			g.Expect(j.Status.Failure).NotTo(BeNil(), "%s is Failed without a failure", key)
			g.Expect(j.Status.Failure.Reason).To(Equal(reasonCardDeclined), "%s", key)
		}
	}

	// Each job tells its user where its outcome came from.
	ctx := context.Background()
	g.Eventually(func(g Gomega) {
		var missing []string
		for key := range first {
			j := live[key]
			var l eventsv1.EventList
			g.Expect(s.cluster.k8s.List(ctx, &l, client.InNamespace(j.Namespace))).To(Succeed())
			found := false
			for _, e := range l.Items {
				found = found || (e.Reason == reasonFoundInLedger && e.Regarding.UID == j.UID)
			}
			if !found {
				missing = append(missing, key)
			}
		}
		g.Expect(missing).To(BeEmpty(), "re-created jobs without a %s event", reasonFoundInLedger)
	}, 30*time.Second, 500*time.Millisecond).Should(Succeed())
	return after
}

// expectLedgerHolds checks the managers' ledger, the rows of db or, when db
// is nil, the PaymentLedger pages: each of the jobs' keys exactly once,
// with its charge and outcome.
func (s *scenario) expectLedgerHolds(first map[string]paymentsv1alpha1.PaymentJob, db *ledgerDatabase) {
	s.t.Helper()
	g := NewWithT(s.t)
	var records map[string][]ledgerRecord
	if db != nil {
		// The database and the cluster are the test's own: it holds these
		// jobs only.
		records = db.records(g)
		g.Expect(records).To(HaveLen(len(first)), "rows in the database")
	} else {
		records = s.pageRecords(g)
	}
	for key, j := range first {
		g.Expect(records[key]).To(HaveLen(1), "ledger entries of %s", key)
		e := records[key][0]
		g.Expect(e.outcome).To(Equal(string(j.Status.Phase)), "ledger outcome of %s", key)
		if j.Status.Phase == paymentsv1alpha1.PhaseCompleted {
			g.Expect(e.charge).To(Equal(j.Status.ProviderResponse.ID), "ledger charge of %s", key)
		}
	}
}

// ledgerRecord is an outcome as a ledger records it.
type ledgerRecord struct {
	outcome, charge string
	// cluster is the --ledger-cluster-name of the manager that recorded
	// it; the PostgreSQL ledger's only.
	cluster string
}

// pageRecords returns the entries of the PaymentLedger pages, by key.
func (s *scenario) pageRecords(g Gomega) map[string][]ledgerRecord {
	var pages paymentsv1alpha1.PaymentLedgerList
	g.Expect(s.cluster.k8s.List(context.Background(), &pages)).To(Succeed())
	records := map[string][]ledgerRecord{}
	for _, p := range pages.Items {
		for _, e := range p.Entries {
			records[e.Key] = append(records[e.Key], ledgerRecord{outcome: string(e.Outcome), charge: e.Charge})
		}
	}
	return records
}

// ledgerManager is the manager with --ledger set, keeping the ledger in db,
// or in PaymentLedger pages when db is nil.
func ledgerManager(ledger bool, db *ledgerDatabase) managerOptions {
	return managerOptions{args: []string{fmt.Sprintf("--ledger=%t", ledger)}, postgres: db}
}
