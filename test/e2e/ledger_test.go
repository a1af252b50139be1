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
	"github.com/idempotency-dev/paymentjob-operator/test/internal/sandboxproc"
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
// with zero provider calls. The control run does the same with
// --ledger=false and must charge again, which proves that the first run can
// fail.
func TestLedgerOutlivesTenant(t *testing.T) {
	t.Run("ledger", testLedgerOutlivesTenant)
	t.Run("control-without-ledger", testWithoutLedgerChargesAgain)
}

// testLedgerOutlivesTenant re-syncs the deleted tenant twice: once while the
// manager that charged it runs (its own appends must be found), and once
// more with a new manager process started after the manifests are back (the
// ledger must come from the API server, not from memory).
func testLedgerOutlivesTenant(t *testing.T) {
	g := NewWithT(t)
	s, m, first := chargeTenant(t, "ledger", true)

	// Re-synced while the manager that charged the tenant runs.
	before := s.deleteTenantAndForget()
	s.recreateTenant()
	after := s.expectFromLedger(first, before)
	s.expectLedgerHolds(first)
	t.Logf("ledger: tenant re-synced under %s: %d jobs finished from the ledger, %d create requests, %d searches",
		m.Name, len(first), after.Requests-before.Requests, after.Searches-before.Searches)

	// Deleted and re-synced again, this time before a new manager starts.
	before = s.deleteTenantAndForget()
	m.Stop(10 * time.Second)
	s.recreateTenant()
	m = s.startLedgerManager(true)
	after = s.expectFromLedger(first, before)
	s.expectLedgerHolds(first)
	t.Logf("ledger: tenant re-synced before %s started: %d jobs finished from the ledger, %d create requests, %d searches",
		m.Name, len(first), after.Requests-before.Requests, after.Searches-before.Searches)

	// The whole proof of the suite, with the sandbox's search back on: one
	// charge per Completed job, the one each job records.
	g.Expect(s.sandbox.SetLookup(context.Background(), true)).To(Succeed())
	s.verify()
}

// testWithoutLedgerChargesAgain is the control: the same tenant re-synced
// with --ledger=false is charged a second time for every good card.
func testWithoutLedgerChargesAgain(t *testing.T) {
	g := NewWithT(t)
	s, _, first := chargeTenant(t, "ledger-off", false)
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
// namespaces and a manager with the ledger on or off, and charges
// ledgerJobs jobs; it returns the jobs as they ended, by key.
func chargeTenant(t *testing.T, name string, ledger bool) (*scenario, *manager, map[string]paymentsv1alpha1.PaymentJob) {
	t.Helper()
	g := NewWithT(t)
	s := newScenario(t, name)
	jobs := s.planJobs(ledgerJobs, nil)
	m := s.startLedgerManager(ledger)
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
// deleting its namespaces would (see deleteNamespace), then makes the
// sandbox forget every idempotency key and turns its search and lookups off.
// It returns the sandbox's counters from then on.
func (s *scenario) deleteTenantAndForget() sandboxproc.Stats {
	s.t.Helper()
	g := NewWithT(s.t)
	for _, ns := range s.namespaces {
		s.deleteNamespace(ns)
	}
	forgotten, err := s.sandbox.ForgetKeys(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.sandbox.SetLookup(context.Background(), false)).To(Succeed())
	st, err := s.sandbox.Stats(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	s.t.Logf("scenario %s: tenant deleted; the sandbox forgot %d keys and its lookup is off", s.name, forgotten)
	return st
}

// deleteNamespace deletes a namespace and waits until it is gone: the
// control plane's kube-controller-manager deletes everything in it (the
// jobs and the PaymentProvider as their finalizers allow, the Secret and
// the events at once) and then the namespace, as in a real cluster.
func (s *scenario) deleteNamespace(ns string) {
	s.t.Helper()
	g := NewWithT(s.t)
	ctx := context.Background()
	k8s := s.cluster.k8s
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	g.Expect(k8s.Delete(ctx, namespace)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(namespace), namespace)
		if apierrors.IsNotFound(err) {
			return
		}
		g.Expect(err).NotTo(HaveOccurred())
		var left []string
		for _, l := range []client.ObjectList{&paymentsv1alpha1.PaymentJobList{}, &paymentsv1alpha1.PaymentProviderList{}} {
			g.Expect(k8s.List(ctx, l, client.InNamespace(ns))).To(Succeed())
			left = append(left, fmt.Sprintf("%d %T", meta.LenList(l), l))
		}
		g.Expect(err).To(HaveOccurred(), "namespace %s is still there (%s)", ns, strings.Join(left, ", "))
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

// expectFromLedger waits until every re-created job ends, and checks that
// each ended as it first did, from the ledger: the same charge, Ready's
// reason FoundInLedger, a FoundInLedger event, and no request of any kind at
// the sandbox since before. It returns the sandbox's counters.
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
		for key, j := range live {
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

// expectLedgerHolds checks the PaymentLedger pages: each of the jobs'
// keys exactly once, with its charge and outcome.
func (s *scenario) expectLedgerHolds(first map[string]paymentsv1alpha1.PaymentJob) {
	s.t.Helper()
	g := NewWithT(s.t)
	var pages paymentsv1alpha1.PaymentLedgerList
	g.Expect(s.cluster.k8s.List(context.Background(), &pages)).To(Succeed())
	entries := map[string][]paymentsv1alpha1.LedgerEntry{}
	for _, p := range pages.Items {
		for _, e := range p.Entries {
			if _, ok := first[e.Key]; ok {
				entries[e.Key] = append(entries[e.Key], e)
			}
		}
	}
	for key, j := range first {
		g.Expect(entries[key]).To(HaveLen(1), "ledger entries of %s in %d pages", key, len(pages.Items))
		e := entries[key]
		g.Expect(string(e[0].Outcome)).To(Equal(string(j.Status.Phase)), "ledger outcome of %s", key)
		if j.Status.Phase == paymentsv1alpha1.PhaseCompleted {
			g.Expect(e[0].Charge).To(Equal(j.Status.ProviderResponse.ID), "ledger charge of %s", key)
		}
	}
}

// startLedgerManager is startManager's manager with --ledger set.
func (s *scenario) startLedgerManager(ledger bool) *manager {
	s.t.Helper()
	return s.startManager(managerOptions{args: []string{fmt.Sprintf("--ledger=%t", ledger)}})
}
