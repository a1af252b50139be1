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

package campaign

import (
	"context"
	"fmt"
	"time"

	"pgregory.net/rapid"
)

// The world's days that take objects away: the TTL collector.

// ttlExpiry moves the clock a minute (a job's TTL, createJob) and runs one
// sweep of a manager's TTL collector (ttl.FinishedJobCollector.SweepOnce,
// as its ticker does): finished jobs
// whose spec.ttlSecondsAfterFinished has passed are deleted once the
// ledger holds their outcome; Git re-creates them (gitopsSync), and they
// must be finished from the ledger, never charged again.
func (c *campaign) ttlExpiry(t *rapid.T) {
	i := rapid.IntRange(0, len(c.w.managers)-1).Draw(t, "manager")
	c.w.clock.Step(time.Minute)
	before, err := c.w.objects(context.Background())
	if err != nil {
		t.Fatalf("%v", err)
	}
	err = c.w.managers[i].collector.SweepOnce(context.Background())
	after, lerr := c.w.objects(context.Background())
	if lerr != nil {
		t.Fatalf("%v", lerr)
	}
	t.Logf("manager %d's TTL collector sweeps a minute later: %d objects before, %d after: %v", i, len(before), len(after), err)
}

// ptrString is *p as text, or "nil".
func ptrString[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}
