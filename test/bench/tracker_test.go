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

package main

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

func jobIn(i int, phase paymentsv1alpha1.PaymentJobPhase, finalizer bool) *paymentsv1alpha1.PaymentJob {
	j := newJob("ns", i)
	j.Status.Phase = phase
	if finalizer {
		j.Finalizers = []string{paymentsv1alpha1.Finalizer}
	} else if phase == paymentsv1alpha1.PhaseCompleted || phase == paymentsv1alpha1.PhaseFailed {
		// The finish patch: finalizer removed, finished label set.
		j.Labels = map[string]string{paymentsv1alpha1.LabelFinished: "true"}
	}
	return j
}

func TestTrackerFollowsJobsToTheEnd(t *testing.T) {
	g := NewWithT(t)
	events := make(chan watch.Event, 32)
	tr := newTracker(10, 3)
	go tr.follow(events, nil)

	send := func(typ watch.EventType, j *paymentsv1alpha1.PaymentJob) { events <- watch.Event{Type: typ, Object: j} }
	send(watch.Added, jobIn(10, "", false))
	send(watch.Modified, jobIn(10, paymentsv1alpha1.PhaseProcessing, true))
	send(watch.Modified, jobIn(10, paymentsv1alpha1.PhaseCompleted, true))
	send(watch.Modified, jobIn(10, paymentsv1alpha1.PhaseCompleted, true))  // seen twice: counted once
	send(watch.Modified, jobIn(9, paymentsv1alpha1.PhaseCompleted, false))  // not followed
	send(watch.Modified, jobIn(13, paymentsv1alpha1.PhaseCompleted, false)) // not followed
	send(watch.Modified, jobIn(11, paymentsv1alpha1.PhaseFailed, true))
	send(watch.Modified, jobIn(11, paymentsv1alpha1.PhaseFailed, false))
	send(watch.Bookmark, &paymentsv1alpha1.PaymentJob{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "7"}})
	send(watch.Modified, jobIn(12, paymentsv1alpha1.PhaseCompleted, true))
	g.Eventually(tr.allTerminal).Should(BeClosed())
	g.Consistently(tr.allReleased).ShouldNot(BeClosed(), "jobs 10 and 12 still hold the finalizer")

	send(watch.Modified, jobIn(10, paymentsv1alpha1.PhaseCompleted, false))
	unlabelled := jobIn(12, paymentsv1alpha1.PhaseCompleted, false)
	unlabelled.Labels = nil
	send(watch.Modified, unlabelled)
	g.Consistently(tr.allReleased).ShouldNot(BeClosed(), "job 12 has no finished label")
	send(watch.Modified, jobIn(12, paymentsv1alpha1.PhaseCompleted, false))
	g.Eventually(tr.allReleased).Should(BeClosed())
	close(events)
	g.Eventually(tr.exited).Should(BeClosed())
	g.Expect(tr.err).NotTo(HaveOccurred())
	g.Expect(tr.completed).To(Equal(2))
	g.Expect(tr.failed).To(Equal(1))
	g.Expect(tr.released).To(Equal(3))
	g.Expect(tr.firstFailure).To(HavePrefix("ns/job-000011"))
	g.Expect(tr.completedAt[0]).NotTo(BeZero())
	g.Expect(tr.completedAt[1]).To(BeZero(), "a Failed job has no completion time")
}

func TestTrackerStopsOnAWatchError(t *testing.T) {
	g := NewWithT(t)
	events := make(chan watch.Event, 1)
	tr := newTracker(0, 1)
	go tr.follow(events, nil)
	events <- watch.Event{Type: watch.Error, Object: &metav1.Status{Message: "too old resource version"}}
	g.Eventually(tr.exited).Should(BeClosed())
	g.Expect(tr.err).To(MatchError(ContainSubstring("too old resource version")))
}

func TestTrackerFollowsRefunds(t *testing.T) {
	g := NewWithT(t)
	events := make(chan watch.Event, 8)
	tr := newTrackerOf(refundIndex, 0, 2)
	go tr.follow(events, nil)

	refundIn := func(i int, phase paymentsv1alpha1.PaymentJobPhase, finished bool) *paymentsv1alpha1.PaymentRefund {
		r := newRefund("ns", i)
		r.Status.Phase = phase
		if finished {
			r.Labels = map[string]string{paymentsv1alpha1.LabelFinished: "true"}
		} else {
			r.Finalizers = []string{paymentsv1alpha1.Finalizer}
		}
		return r
	}
	events <- watch.Event{Type: watch.Modified, Object: jobIn(0, paymentsv1alpha1.PhaseCompleted, false)} // a job, not followed
	events <- watch.Event{Type: watch.Modified, Object: refundIn(0, paymentsv1alpha1.PhaseProcessing, false)}
	events <- watch.Event{Type: watch.Modified, Object: refundIn(0, paymentsv1alpha1.PhaseCompleted, true)}
	events <- watch.Event{Type: watch.Modified, Object: refundIn(1, paymentsv1alpha1.PhaseFailed, true)}
	g.Eventually(tr.allTerminal).Should(BeClosed())
	g.Eventually(tr.allReleased).Should(BeClosed())
	close(events)
	g.Eventually(tr.exited).Should(BeClosed())
	g.Expect(tr.completed).To(Equal(1))
	g.Expect(tr.failed).To(Equal(1))
	g.Expect(tr.firstFailure).To(HavePrefix("ns/refund-000001"))
}
