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
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/sandboxproc"
)

// reasonFoundAtProvider is the event reason of a job whose charge the
// manager found at the provider by its key instead of charging.
const reasonFoundAtProvider = "FoundAtProvider"

// testRebuildFromGit charges jobs on a cluster of its own, then loses the
// cluster and the provider's memory of the keys: the manager and the control
// plane stop, a fresh control plane (new etcd data) takes their place, the
// sandbox forgets every idempotency key as Stripe does after 24 hours, and
// the same manifests are applied again, as a GitOps tool rebuilding the
// cluster from Git would. A new manager must find every charge at the
// provider by its key and record it: no create request at all, every job
// Completed with its first charge, replayed. The suite's control plane is
// not touched.
func testRebuildFromGit(t *testing.T) {
	const n = rebuildJobs
	g := NewWithT(t)
	ctx := context.Background()
	s, first, before := rebuildFromGit(t, "rebuild-from-git", managerOptions{})
	m := s.startManager(managerOptions{})
	r := s.verify()

	after, err := s.sandbox.Stats(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	var ms metrics
	g.Eventually(func() (err error) {
		ms, err = m.scrape()
		return err
	}, 30*time.Second, 500*time.Millisecond).Should(Succeed())
	found := ms.sum(metricLookupKeys, map[string]string{"result": "found"})
	t.Logf("rebuild-from-git: after the rebuild, %d create requests and %d charges; %s looked %d keys up in %.0f requests and found %.0f",
		after.Requests-before.Requests, after.Charges-before.Charges, m.Name, n, ms.sum(metricLookupRequests, nil), found)
	g.Expect(after.Requests).To(Equal(before.Requests), "create requests after the rebuild")
	g.Expect(after.Charges).To(Equal(before.Charges), "charges after the rebuild")
	g.Expect(after.ChargesByKey).To(HaveLen(n))
	for key, c := range after.ChargesByKey {
		g.Expect(c).To(Equal(1), "charges of %s", key)
	}
	g.Expect(found).To(BeEquivalentTo(n), "keys found by the manager's lookups")
	for _, p := range s.jobs {
		j := r.live[p.key()]
		g.Expect(j.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted), "%s: %s", p.key(), describe(&j))
		g.Expect(j.Status.ProviderResponse.ID).To(Equal(first[p.key()].Status.ProviderResponse.ID), "%s must record its first charge", p.key())
		g.Expect(j.Status.ProviderResponse.Replayed).To(BeTrue(), "%s", p.key())
	}
	// Each job tells its user why nothing was charged.
	g.Eventually(func(g Gomega) {
		found := map[string]bool{}
		for _, ns := range s.namespaces {
			var l eventsv1.EventList
			g.Expect(s.cluster.k8s.List(ctx, &l, client.InNamespace(ns))).To(Succeed())
			for _, e := range l.Items {
				if e.Reason == reasonFoundAtProvider {
					found[ns+"/"+e.Regarding.Name] = true
				}
			}
		}
		g.Expect(found).To(HaveLen(n), "jobs with a %s event", reasonFoundAtProvider)
	}, 30*time.Second, 500*time.Millisecond).Should(Succeed())
}

// rebuildJobs is the jobs a rebuilt cluster charges, all with good cards:
// every manifest stands for money that moved.
const rebuildJobs = 30

// rebuildFromGit charges rebuildJobs jobs on a cluster of its own, under a
// manager started with o, and then loses the cluster: the manager and the
// control plane stop, and the sandbox forgets every idempotency key. It
// rebuilds the cluster from Git on a fresh control plane (new etcd data,
// under the scenario's folder): the same namespaces, Secret,
// PaymentProvider and job manifests, and no manager yet. It returns the
// scenario, now on the new cluster, the jobs as they first ended by key, and
// the sandbox's counters after the loss.
func rebuildFromGit(t *testing.T, name string, o managerOptions) (*scenario, map[string]paymentsv1alpha1.PaymentJob, sandboxproc.Stats) {
	t.Helper()
	g := NewWithT(t)
	dir := filepath.Join(suite.artifacts, name)
	lost := startCluster(t, filepath.Join(dir, "control-plane-1"))
	s := newScenarioOn(t, lost, name)
	jobs := s.planJobs(rebuildJobs, func(_ int, j *plannedJob) { j.declined = false })
	m := s.startManager(o)
	s.createJobs(jobs)
	r := s.verify()
	g.Expect(r.completed).To(Equal(rebuildJobs))
	first := map[string]paymentsv1alpha1.PaymentJob{}
	for _, p := range jobs {
		j := r.live[p.key()]
		g.Expect(j.Status.ProviderResponse.Replayed).To(BeFalse(), "%s: the first run must charge", p.key())
		first[p.key()] = j
	}

	// The cluster is lost, etcd's data with it; the provider forgets the keys.
	m.Stop(10 * time.Second)
	g.Expect(lost.cp.stop()).To(Succeed())
	forgotten, err := s.sandbox.ForgetKeys(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(forgotten).To(Equal(rebuildJobs), "keys forgotten by the sandbox")
	before, err := s.sandbox.Stats(context.Background())
	g.Expect(err).NotTo(HaveOccurred())

	// Rebuilt from Git: the same namespaces, Secret, PaymentProvider and
	// job manifests on a fresh control plane.
	s.moveTo(startCluster(t, filepath.Join(dir, "control-plane-2")))
	s.createJobs(jobs)
	return s, first, before
}

// moveTo points the scenario at another cluster and creates its
// namespaces, Secrets and PaymentProvider there; the jobs are the caller's
// to create.
func (s *scenario) moveTo(c *cluster) {
	s.t.Helper()
	s.cluster = c
	s.setUpNamespaces()
	s.dumpOnFailure()
}
