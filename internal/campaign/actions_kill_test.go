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
	"errors"
	"sync"

	"pgregory.net/rapid"
)

// A manager killed in the middle of a pass (kill -9 between two writes,
// where Sieve injects its crashes): its writes up to the kill landed,
// nothing of it after, and a new process starts from what the API server
// holds.

// errKilled is what a killed process's requests get: none reaches the
// API server.
var errKilled = errors.New("the manager process was killed")

// kills are the manager processes armed to die after their next writes,
// and those dead.
type kills struct {
	mu   sync.Mutex
	left map[string]int
	dead map[string]bool
}

// arm makes holder die once n more of its writes have landed.
func (k *kills) arm(holder string, n int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.left == nil {
		k.left, k.dead = map[string]int{}, map[string]bool{}
	}
	k.left[holder] = n
}

// check fails every request of a dead holder.
func (k *kills) check(holder string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.dead[holder] {
		return errKilled
	}
	return nil
}

// wrote counts a write of holder that landed (err nil), and kills holder
// when it was the last one it had; it returns err.
func (k *kills) wrote(holder string, err error) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil || k.left[holder] == 0 {
		return err
	}
	k.left[holder]--
	if k.left[holder] == 0 {
		k.dead[holder] = true
	}
	return nil
}

// killMidPass arms a manager to die after its next one to three writes
// (the claim, the outcome, the ledger's record or the finalizer's
// release: a pass writes up to four), runs its pass of an object, and
// starts a new process in its place. A write the kill cut short may have
// been preceded by a provider call: the process died after it, before it
// could write what it learned.
func (c *campaign) killMidPass(t *rapid.T) {
	r := c.pick(t, "")
	i := rapid.IntRange(0, len(c.w.managers)-1).Draw(t, "manager")
	n := rapid.IntRange(1, 3).Draw(t, "writes")
	m := c.w.managers[i]
	c.w.kills.arm(m.holder, n)
	res, err := c.w.reconcile(m, r.kind, r.key)
	t.Logf("manager %d is killed after %d more writes, in its pass of %s (requeue %s, err %v); a new process starts",
		i, n, r, res.RequeueAfter, err)
	c.failOnPanic(t, err)
	if err := c.w.crash(i); err != nil {
		t.Fatalf("cannot restart manager %d: %v", i, err)
	}
}
