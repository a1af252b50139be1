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
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// A database that answers reads and refuses writes (a standby after a
// failover, a primary whose disk filled up): jobs are looked up and charged,
// but their outcomes cannot be recorded, so they keep their finalizer, with
// a Warning event; once it takes writes again, every outcome is recorded
// and the finalizers come off.
func TestReadOnlyDatabaseKeepsFinalizersUntilRecorded(t *testing.T) {
	t.Parallel()
	s := newScenario(t, nil)
	ctx := t.Context()
	jobs := names("invoice", 3)

	s.db.SetReadOnly(t, true)
	s.createJobs(jobs...)
	s.Eventually(func(g Gomega) {
		all := s.jobs(g)
		for _, name := range jobs {
			job := all[name]
			g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted), "%s: %s", name, ready(&job))
			g.Expect(controllerutil.ContainsFinalizer(&job, paymentsv1alpha1.Finalizer)).To(BeTrue(),
				"%s keeps its finalizer while its outcome cannot be recorded", name)
			g.Expect(job.Labels).NotTo(HaveKey(paymentsv1alpha1.LabelFinished), name)
		}
	}, timeout, poll).Should(Succeed())
	for name, job := range s.jobs(s) {
		ev, err := s.kit.WaitForEvent(ctx, &job, paymentsv1alpha1.ReasonLedgerUnavailable, timeout)
		s.Expect(err).NotTo(HaveOccurred(), "the event of %s", name)
		s.Expect(ev.Type).To(Equal(corev1.EventTypeWarning), "the event of %s", name)
	}
	s.Expect(s.ledgerRows(s)).To(BeEmpty(), "nothing recorded in a read-only database")
	s.Expect(s.charges(jobs)).To(Equal(each(jobs, 1)))

	s.db.SetReadOnly(t, false)
	s.Eventually(func(g Gomega) { s.expectPaidOnce(g, jobs) }, timeout, poll).Should(Succeed())
}
