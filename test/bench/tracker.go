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
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/watch"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
)

// tracker follows the jobs, or the refunds, of a window through a watch:
// when each was first seen Completed, and when each was terminal without
// the finalizer.
type tracker struct {
	// first is the index of the first object followed, n how many.
	first int
	n     int
	// index is the i of an object's name (jobIndex, refundIndex).
	index       func(name string) (int, bool)
	completedAt []time.Time
	// terminal marks the jobs seen Completed or Failed, finished those
	// also seen without the finalizer.
	terminal  []bool
	finished  []bool
	completed int
	failed    int
	released  int
	// firstFailure describes the first Failed job.
	firstFailure string
	// allTerminal is closed when every job is Completed or Failed, and
	// allReleased when every one also lost its finalizer.
	allTerminal chan struct{}
	allReleased chan struct{}
	// exited is closed when the watch ended; err says why, if it failed.
	exited chan struct{}
	err    error
}

// newTracker follows the jobs first to first+n-1.
func newTracker(first, n int) *tracker { return newTrackerOf(jobIndex, first, n) }

// newTrackerOf follows the objects whose names index gives first to
// first+n-1.
func newTrackerOf(index func(string) (int, bool), first, n int) *tracker {
	return &tracker{
		first: first, n: n, index: index, completedAt: make([]time.Time, n), terminal: make([]bool, n), finished: make([]bool, n),
		allTerminal: make(chan struct{}), allReleased: make(chan struct{}), exited: make(chan struct{}),
	}
}

// follow consumes the watch until it is stopped. Only its goroutine touches
// the tracker's fields until exited is closed.
func (t *tracker) follow(events <-chan watch.Event, prog *progress) {
	defer close(t.exited)
	for ev := range events {
		switch ev.Type {
		case watch.Added, watch.Modified:
		case watch.Error:
			t.err = fmt.Errorf("the watch failed: %v", ev.Object)
			return
		default:
			continue
		}
		job, ok := ev.Object.(engine.Object)
		if !ok {
			continue
		}
		i, ok := t.index(job.GetName())
		i -= t.first
		if !ok || i < 0 || i >= t.n {
			continue
		}
		status := job.GetPaymentStatus()
		phase := status.Phase
		if phase != paymentsv1alpha1.PhaseCompleted && phase != paymentsv1alpha1.PhaseFailed {
			continue
		}
		if !t.terminal[i] {
			t.terminal[i] = true
			if phase == paymentsv1alpha1.PhaseCompleted {
				t.completedAt[i] = time.Now()
				t.completed++
				if prog != nil {
					prog.set(t.completed)
				}
			} else {
				t.failed++
				if t.firstFailure == "" {
					t.firstFailure = fmt.Sprintf("%s/%s: %+v", job.GetNamespace(), job.GetName(), status.Failure)
				}
			}
			if t.completed+t.failed == t.n {
				close(t.allTerminal)
			}
		}
		// Released: the finish patch removed the finalizer and set the
		// finished label in one write (the baseline makes the same patch).
		if len(job.GetFinalizers()) == 0 && job.GetLabels()[paymentsv1alpha1.LabelFinished] == "true" && !t.finished[i] {
			t.finished[i] = true
			t.released++
			if t.released == t.n {
				close(t.allReleased)
			}
		}
	}
}
