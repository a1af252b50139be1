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
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/operator"
)

// The database is killed (SIGKILL of the postmaster and its backends) while
// jobs are in flight: the jobs claimed before, whose charges were on their
// way, are Completed and keep their finalizer, since their outcome cannot be
// recorded; every job not claimed yet, and every job created while the
// database is down, waits Pending (LedgerUnavailable) and is charged
// nothing. Once the database is back, every job is Completed, charged once
// and recorded once.
func TestKilledDatabaseChargesNothingItWasNotAskedAbout(t *testing.T) {
	t.Parallel()
	// workers is the manager's reconcilers: when as many charges are held
	// at the sandbox, every worker waits in one, and no job moves.
	const workers = 5
	s := newScenario(t, func(o *operator.Options) {
		o.MaxConcurrentReconciles = workers
		// The held charges must not time out and be sent again.
		o.ProviderTimeout = 20 * time.Second
	})
	ctx := t.Context()
	// Every create request is a new charge: a key sent twice shows.
	s.kit.Sandbox().SetIdempotency(false)
	findErrors, recordErrors := ledgerErrors(s, "find"), ledgerErrors(s, "record")

	gate := s.kit.Sandbox().Hold()
	t.Cleanup(gate.Release)
	before := names("before", 20)
	s.createJobs(before...)
	held := make([]string, 0, workers)
	for len(held) < workers {
		select {
		case key := <-gate.Entered():
			held = append(held, key[len(s.ns)+1:])
		case <-time.After(timeout):
			t.Fatalf("only %d charges reached the sandbox within %s: %v", len(held), timeout, held)
		}
	}

	s.db.Kill(t)
	// Every worker waits in a charge, so no job moves: the jobs claimed
	// now are the only ones the ledger said were not paid before. No other
	// job may be claimed, or charged, until the database answers again.
	var claimed []string
	for name, job := range s.jobs(s) {
		if job.Status.Phase == paymentsv1alpha1.PhaseProcessing {
			claimed = append(claimed, name)
		}
	}
	s.Expect(claimed).To(ConsistOf(held), "the jobs claimed are those whose charges are held")
	during := names("during", 10)
	s.createJobs(during...)
	gate.Release()

	unclaimed := slices.DeleteFunc(slices.Concat(before, during), func(n string) bool { return slices.Contains(claimed, n) })
	s.Eventually(func(g Gomega) {
		jobs := s.jobs(g)
		for _, name := range claimed {
			job := jobs[name]
			g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted), "in flight, %s: %s", name, ready(&job))
			g.Expect(controllerutil.ContainsFinalizer(&job, paymentsv1alpha1.Finalizer)).To(BeTrue(),
				"%s finished while the database is down: its finalizer stays until its outcome is recorded", name)
			g.Expect(job.Labels).NotTo(HaveKey(paymentsv1alpha1.LabelFinished), name)
		}
		for _, name := range unclaimed {
			job := jobs[name]
			g.Expect(waitingForLedger(&job)).To(BeTrue(), "%s waits for the ledger: %s", name, ready(&job))
		}
	}, timeout, poll).Should(Succeed())
	s.Expect(s.charges(claimed)).To(Equal(each(claimed, 1)), "the jobs claimed before the kill are charged once")
	s.Expect(s.charges(unclaimed)).To(Equal(each(unclaimed, 0)), "nothing charged on a ledger that did not answer")
	s.Expect(s.kit.Sandbox().Stats().Requests).To(BeEquivalentTo(len(claimed)), "no other create request")
	jobs := s.jobs(s)
	for _, job := range []paymentsv1alpha1.PaymentJob{jobs[claimed[0]], jobs[during[0]]} {
		ev, err := s.kit.WaitForEvent(ctx, &job, paymentsv1alpha1.ReasonLedgerUnavailable, timeout)
		s.Expect(err).NotTo(HaveOccurred(), "the event of %s", job.Name)
		s.Expect(ev.Type).To(Equal(corev1.EventTypeWarning), "the event of %s", job.Name)
	}
	s.Expect(ledgerErrors(s, "find")).To(BeNumerically(">", findErrors), "lookups that got no answer are counted")
	s.Expect(ledgerErrors(s, "record")).To(BeNumerically(">", recordErrors), "records that got no answer are counted")

	s.db.Restart(t)
	all := slices.Concat(before, during)
	s.Eventually(func(g Gomega) { s.expectPaidOnce(g, all) }, 2*timeout, poll).Should(Succeed())
	s.Expect(s.kit.Sandbox().Stats().Requests).To(BeEquivalentTo(len(all)), "one create request per job")
}
