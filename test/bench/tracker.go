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
)

// tracker follows the jobs of a window through a watch: when each was first
// seen Completed, and when each was terminal without the finalizer.
type tracker struct {
	// first is the index of the first job followed, n how many.
	first       int
	n           int
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

func newTracker(first, n int) *tracker {
	return &tracker{
		first: first, n: n, completedAt: make([]time.Time, n), terminal: make([]bool, n), finished: make([]bool, n),
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
			t.err = fmt.Errorf("the watch of the jobs failed: %v", ev.Object)
			return
		default:
			continue
		}
		job, ok := ev.Object.(*paymentsv1alpha1.PaymentJob)
		if !ok {
			continue
		}
		i, ok := jobIndex(job.Name)
		i -= t.first
		if !ok || i < 0 || i >= t.n {
			continue
		}
		phase := job.Status.Phase
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
					t.firstFailure = fmt.Sprintf("%s/%s: %+v", job.Namespace, job.Name, job.Status.Failure)
				}
			}
			if t.completed+t.failed == t.n {
				close(t.allTerminal)
			}
		}
		// Released: the finish patch removed the finalizer and set the
		// finished label in one write (the baseline makes the same patch).
		if len(job.Finalizers) == 0 && job.Labels[paymentsv1alpha1.LabelFinished] == "true" && !t.finished[i] {
			t.finished[i] = true
			t.released++
			if t.released == t.n {
				close(t.allReleased)
			}
		}
	}
}
