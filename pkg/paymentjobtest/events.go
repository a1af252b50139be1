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

package paymentjobtest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The operator records its events with the events.k8s.io/v1 API, after the
// status write they announce and asynchronously: an event may show a moment
// after the phase or condition it goes with. Events and WaitForEvent read
// them; a test that checks an event waits for it rather than reading once.

// Events returns the events the operator (or anyone) recorded on obj, oldest
// first. obj is found by its UID; without one (an object the test has not
// read back) it is read by its namespace and name first.
func (e *Env) Events(ctx context.Context, obj client.Object) ([]eventsv1.Event, error) {
	if obj.GetUID() == "" {
		if err := e.client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return nil, fmt.Errorf("paymentjobtest: cannot read %s to list its events: %w", client.ObjectKeyFromObject(obj), err)
		}
	}
	var list eventsv1.EventList
	if err := e.client.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil, fmt.Errorf("paymentjobtest: cannot list events: %w", err)
	}
	events := make([]eventsv1.Event, 0, len(list.Items))
	for _, ev := range list.Items {
		if ev.Regarding.UID == obj.GetUID() {
			events = append(events, ev)
		}
	}
	sort.SliceStable(events, func(i, j int) bool {
		return eventTime(events[i]).Before(eventTime(events[j]))
	})
	return events, nil
}

// WaitForEvent waits up to timeout until an event with reason is recorded
// on obj, and returns the first such event. reason is one of the Reason
// constants of the API package (paymentsv1alpha1.ReasonSucceeded, ...).
// Otherwise the error lists the events obj has. Reading events once, right
// after the status a test waited for, races the operator: this waits.
func (e *Env) WaitForEvent(ctx context.Context, obj client.Object, reason string,
	timeout time.Duration) (*eventsv1.Event, error) {
	if reason == "" {
		return nil, errors.New("paymentjobtest: cannot wait for an event without a reason")
	}
	var found *eventsv1.Event
	var seen []eventsv1.Event
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		events, err := e.Events(ctx, obj)
		if err != nil {
			lastErr = err // not created yet, or a transient error: keep waiting
			return false, nil
		}
		seen, lastErr = events, nil
		for i := range seen {
			if seen[i].Reason == reason {
				found = &seen[i]
				return true, nil
			}
		}
		return false, nil
	})
	if err == nil {
		return found, nil
	}
	if e.stopped() {
		err = fmt.Errorf("%w; the operator is not running", err)
	}
	if lastErr != nil {
		err = fmt.Errorf("%w; last: %w", err, lastErr)
	}
	return nil, fmt.Errorf("paymentjobtest: no event %s on %s within %s (%w); events: %s",
		reason, client.ObjectKeyFromObject(obj), timeout, err, describeEventList(seen))
}

// describeEvents lists the events of obj, for failures.
func (e *Env) describeEvents(obj client.Object) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	events, err := e.Events(ctx, obj)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return describeEventList(events)
}

// describeEventList is "Type Reason: note; ..." or "none".
func describeEventList(events []eventsv1.Event) string {
	if len(events) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(events))
	for _, ev := range events {
		parts = append(parts, fmt.Sprintf("%s %s: %s", ev.Type, ev.Reason, ev.Note))
	}
	return strings.Join(parts, "; ")
}

// eventTime is when ev was first recorded.
func eventTime(ev eventsv1.Event) time.Time {
	if !ev.EventTime.IsZero() {
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}
