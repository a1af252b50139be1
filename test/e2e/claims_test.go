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
	"sync"

	"k8s.io/apimachinery/pkg/watch"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// claims follows, from a watch, who holds the claim of each of a
// scenario's Processing jobs, and who finished each job: the holder of the
// last claim it was Processing under before it turned terminal.
type claims struct {
	mu     sync.Mutex
	holder map[string]string
	// finishers are the terminal jobs' last claim holders, by key.
	finishers map[string]string
}

// trackClaims starts following the scenario's claims.
func (s *scenario) trackClaims() *claims {
	c := &claims{holder: map[string]string{}, finishers: map[string]string{}}
	s.watchJobs(func(ev watch.EventType, j *paymentsv1alpha1.PaymentJob) {
		key := j.Namespace + "/" + j.Name
		c.mu.Lock()
		defer c.mu.Unlock()
		switch {
		case ev != watch.Deleted && terminal(j):
			if _, ok := c.finishers[key]; !ok {
				c.finishers[key] = c.holder[key]
			}
			delete(c.holder, key)
		case ev != watch.Deleted && j.Status.Phase == paymentsv1alpha1.PhaseProcessing && j.Status.Claim != nil:
			c.holder[key] = j.Status.Claim.Holder
		default:
			delete(c.holder, key)
		}
	})
	return c
}

// heldBy is how many Processing jobs the manager holds the claim of.
func (c *claims) heldBy(m *manager) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, h := range c.holder {
		if m.holds(h) {
			n++
		}
	}
	return n
}

// finishedBy is how many jobs were finished under a claim of the manager.
func (c *claims) finishedBy(m *manager) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, h := range c.finishers {
		if m.holds(h) {
			n++
		}
	}
	return n
}

// finished is how many jobs were seen terminal.
func (c *claims) finished() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.finishers)
}

// finisher is the holder of the last claim of a terminal job; empty when
// it is not terminal or was never seen claimed.
func (c *claims) finisher(key string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.finishers[key]
}
