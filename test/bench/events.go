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
	"context"
	"fmt"
	"sync"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
)

// The baseline's events come from the recorder the manager uses: its
// mgr.GetEventRecorder("paymentjob-controller") is client-go's
// events.k8s.io/v1 broadcaster (k8s.io/client-go/tools/events) on an
// events client of the manager's rate limit, whose recorder sends every
// event asynchronously. The benchmark runs the same broadcaster, and counts
// what its sink sent so that a window can wait for its last events.

const (
	// reportingController is the manager's name for the reconciler of the
	// jobs in its events (pkg/operator).
	reportingController = "paymentjob-controller"
	// chargeAction is the action of the event of a charge's outcome.
	chargeAction = "Charge"
)

// eventRecorder is the manager's kind of event recorder, run by the
// benchmark.
type eventRecorder struct {
	events.EventRecorder
	broadcaster events.EventBroadcaster
	sink        *countingSink
	cancel      context.CancelFunc
}

// startEventRecorder starts a broadcaster that sends the events through a
// client of its own with a client-side limit of qps and burst.
func (c *cluster) startEventRecorder(ctx context.Context, qps float64, burst int) (*eventRecorder, error) {
	cfg := rest.CopyConfig(c.admin)
	cfg.QPS, cfg.Burst = float32(qps), burst
	cl, err := eventsv1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot create the events client: %w", err)
	}
	return newEventRecorder(ctx, &events.EventSinkImpl{Interface: cl}, c.scheme)
}

// newEventRecorder starts a broadcaster that sends the events of objects
// of scheme to sink, until stop.
func newEventRecorder(ctx context.Context, sink events.EventSink, scheme *runtime.Scheme) (*eventRecorder, error) {
	counting := newCountingSink(sink)
	b := events.NewBroadcaster(counting)
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if err := b.StartRecordingToSinkWithContext(rctx); err != nil {
		cancel()
		b.Shutdown()
		return nil, fmt.Errorf("cannot start the event recorder: %w", err)
	}
	return &eventRecorder{EventRecorder: b.NewRecorder(scheme, reportingController), broadcaster: b, sink: counting, cancel: cancel}, nil
}

// waitSent waits until n events were created, and fails if the API server
// refused one or they were not all sent within timeout.
func (r *eventRecorder) waitSent(ctx context.Context, n int, timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		created, changed, failed := r.sink.state()
		switch {
		case failed != nil:
			return fmt.Errorf("cannot create an event: %w", failed)
		case created >= n:
			return nil
		}
		select {
		case <-changed:
		case <-timer.C:
			return fmt.Errorf("%d of %d events sent within %s", created, n, timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// stop stops the broadcaster; the events not sent yet are dropped.
func (r *eventRecorder) stop() {
	r.broadcaster.Shutdown()
	r.cancel()
}

// countingSink is an events.EventSink that counts the events it created
// and keeps the first error.
type countingSink struct {
	events.EventSink

	mu      sync.Mutex
	created int
	err     error
	// changed is closed, and replaced, at every create.
	changed chan struct{}
}

func newCountingSink(s events.EventSink) *countingSink {
	return &countingSink{EventSink: s, changed: make(chan struct{})}
}

// Create creates the event and counts it.
func (s *countingSink) Create(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	out, err := s.EventSink.Create(ctx, e)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.created++
	} else if s.err == nil {
		s.err = err
	}
	close(s.changed)
	s.changed = make(chan struct{})
	return out, err
}

// state returns the events created, a channel closed at the next create
// and the first error.
func (s *countingSink) state() (created int, changed <-chan struct{}, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.created, s.changed, s.err
}
