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

package pgledger

import (
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// Two managers without leader election, as two replicas whose leases
// overlap or an operator installed twice, share one database and charge at
// one sandbox: every job is charged once, every outcome is in the ledger
// once, with the charge the job's status names, whichever replica recorded
// it.
func TestTwoManagersOnOneDatabaseRecordEveryOutcomeOnce(t *testing.T) {
	t.Parallel()
	s := newScenario(t, nil)
	// The second manager's own sandbox stays idle: the namespace's
	// PaymentProvider sends both to the first one's.
	s.startOperator("replica-b", nil)
	// Every create request is a new charge: a key sent twice shows.
	s.kit.Sandbox().SetIdempotency(false)
	claims := watchClaims(t, s.ns)

	jobs := names("invoice", 50)
	s.createJobs(jobs...)
	s.Eventually(func(g Gomega) { s.expectPaidOnce(g, jobs) }, 2*timeout, poll).Should(Succeed())
	s.Expect(s.kit.Sandbox().Stats().Requests).To(BeEquivalentTo(len(jobs)), "one create request per job")
	s.Expect(claims.holders()).To(ConsistOf(HavePrefix("replica-a/"), HavePrefix("replica-b/")),
		"both managers claimed jobs")
}

// claimLog collects the claim holders seen on the jobs of a namespace.
type claimLog struct {
	mu   sync.Mutex
	seen map[string]bool
}

// watchClaims watches the PaymentJobs of ns until the test ends and notes
// the holder of every claim written.
func watchClaims(t *testing.T, ns string) *claimLog {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: k8sClient.Scheme()})
	if err != nil {
		t.Fatalf("cannot create a client: %v", err)
	}
	w, err := c.Watch(t.Context(), &paymentsv1alpha1.PaymentJobList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatalf("cannot watch the jobs: %v", err)
	}
	t.Cleanup(w.Stop)
	l := &claimLog{seen: map[string]bool{}}
	go func() {
		for ev := range w.ResultChan() {
			job, ok := ev.Object.(*paymentsv1alpha1.PaymentJob)
			if !ok || ev.Type == watch.Deleted || job.Status.Claim == nil {
				continue
			}
			l.mu.Lock()
			l.seen[job.Status.Claim.Holder] = true
			l.mu.Unlock()
		}
	}()
	return l
}

// holders returns the processes seen holding a claim.
func (l *claimLog) holders() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.seen))
	for h := range l.seen {
		out = append(out, h)
	}
	return out
}
