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
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// campaign is one history: the world, the model, and the actions that
// move them.
type campaign struct {
	w     *world
	m     *model
	tally *tally
	// outcomes are the finished outcomes seen so far, by object UID: an
	// outcome, once written, is final (oracle_final_test.go).
	outcomes map[types.UID]outcome
	// snapshot is etcd's last snapshot (etcdSnapshot), nil before one,
	// and snapTerminating the namespaces Terminating then.
	snapshot        []client.Object
	snapTerminating map[string]bool
	// terminating are the namespaces deleted whose jobs and refunds are
	// not all gone yet (recycleNamespace).
	terminating map[string]bool
	// recycled are the namespaces recycled so far, and reapplied the jobs
	// Git applied again in them while the ledger held their key's outcome,
	// by UID (actions_recycle_test.go).
	recycled  map[string]bool
	reapplied map[types.UID]string
	// past are the last copies of each object the books held after a
	// step, oldest first (remember): what a lagging cache may answer.
	past map[ref][]client.Object
}

// action is one thing a user or the world can do, and how often.
type action struct {
	name string
	// weight is how many of the draws pick the action, out of the sum of
	// every weight.
	weight int
	do     func(*rapid.T)
}

// The weights, out of 55. A pass of a controller (reconcile, twoManagers:
// 15) is close to a third of the steps: every other action only sets the stage, and
// with fewer passes histories end before anything reaches the provider.
// Users create jobs and refunds (7) often enough that most histories hold
// several objects sharing keys and charges. The faults that threaten
// exactly-once most, an answer lost after the provider committed and a
// crash, weigh 2 each, and a kill in the middle of a pass (1: between two
// of its writes, the window of the naive pattern, where Sieve injects its
// crashes; rarer than a crash between passes, as a pass is short); the
// others, which the protocol meets on ordinary
// days (a 409, a 429 or 5xx, a prune and re-sync), weigh 1 or 2. Time
// moves (2) so that claims expire and backoffs end within a history. A
// stale read (2) and a person's resolution (2, right or wrong) are where
// Sieve and our reviews found bugs: a step of each in most histories.
// Approving a suspended job (1) is a person's everyday act. Money moved
// behind the operator's back (actions_money_test.go: a dashboard refund, a
// charge under one of our keys by another system, a dispute opened or
// decided, a refund failed after it succeeded) weighs 1 each: rare on
// ordinary days, and each only sets the stage (it needs a charge or refund
// to act on), so one of each in about every other history is what the
// reconciliation oracle needs without taking passes from the rest. A
// person resolving a stuck refund (1, right or wrong) is rarer than a
// job's (2): refunds stall less often. A round of the refund watch (1)
// follows a refund failed after it succeeded often enough to meet it.
// The world's rarer days weigh 1 each, a step of each in every other history: the
// provider forgetting its keys (a day passes: every key older than that is
// new to it), its search lagging, the ledger's pages unavailable for a few
// requests, a manager restarting while its ledger cannot load, a provider
// pointed at the other account and back (a person's mistake, then its
// repair), and a Secret's key rotated. So does the TTL collector's sweep
// a minute on (1): one job in three carries a TTL, and a sweep a few
// times a history deletes the finished ones, which Git re-creates
// (gitopsSync 2) to be finished from the ledger. An etcd snapshot (1) and
// a restore of the last one (1) weigh what the world's other rare days
// do: a restore needs a snapshot before it and something done between the
// two to take back, so with one of each per history on average about one
// history in five restores something (a restore before any snapshot is
// skipped), and the restore, which restarts every manager and may take an
// outcome back, must not crowd out the passes that finish what it
// brought back. A namespace recycled (1) is rare in life too, and its
// worth is in what comes after it: the deletion waits for the passes that
// finish the payments in flight, and Git's re-sync (gitopsSync 2, and
// quiesce) applies its manifests again against a new PaymentProvider;
// drawn 0.7 times in a history of 40 steps, it completes in about one
// history in two and leaves steps for both.
func (c *campaign) actions() []action {
	return []action{
		{"reconcile", 12, c.reconcileOne},
		{"twoManagers", 3, c.twoManagers},
		{"createJob", 4, c.createJob},
		{"createRefund", 2, c.createRefund},
		{"raceRefunds", 1, c.raceRefunds},
		{"crash", 2, c.crash},
		{"killMidPass", 1, c.killMidPass},
		{"conflictNext", 1, c.conflictNext},
		{"lostAnswer", 2, c.lostAnswer},
		{"providerError", 1, c.providerError},
		{"gitopsPrune", 1, c.gitopsPrune},
		{"gitopsSync", 2, c.gitopsSync},
		{"advanceClock", 2, c.advanceClock},
		{"dashboardRefund", 1, c.dashboardRefund},
		{"staleRead", 2, c.staleRead},
		{"resolve", 2, c.resolve},
		{"approve", 1, c.approve},
		{"chargeOutside", 1, c.chargeOutside},
		{"dispute", 1, c.dispute},
		{"failRefund", 1, c.failRefund},
		{"resolveRefund", 1, c.resolveRefund},
		{"refundWatch", 1, c.refundWatch},
		{"forgetKeys", 1, c.forgetKeys},
		{"searchLag", 1, c.searchLag},
		{"ledgerUnavailable", 1, c.ledgerUnavailable},
		{"crashLedgerLoading", 1, c.crashLedgerLoading},
		{"pointAtOtherAccount", 1, c.pointAtOtherAccount},
		{"rotateSecret", 1, c.rotateSecret},
		{"ttlExpiry", 1, c.ttlExpiry},
		{"etcdSnapshot", 1, c.etcdSnapshot},
		{"etcdRestore", 1, c.etcdRestore},
		{"recycleNamespace", 1, c.recycleNamespace},
	}
}

// repeatMap is the actions as t.Repeat takes them: an action of weight n
// under n keys (name, name#2, ...), since Repeat draws keys uniformly; ""
// is the oracle's safety check after every step.
func (c *campaign) repeatMap() map[string]func(*rapid.T) {
	m := map[string]func(*rapid.T){"": c.checkSafety}
	for _, a := range c.actions() {
		do := func(t *rapid.T) {
			// A namespace whose objects the last step took away is gone,
			// and created again, before anything else happens.
			c.settleNamespaces(t)
			c.tally.steps++
			c.tally.skipped++
			a.do(t)
			c.tally.skipped--
		}
		m[a.name] = do
		for i := 2; i <= a.weight; i++ {
			m[fmt.Sprintf("%s#%d", a.name, i)] = do
		}
	}
	return m
}

// Users.

// The controllers.

// reconcileOne runs one pass of a manager on one object.
func (c *campaign) reconcileOne(t *rapid.T) {
	r := c.pick(t, "")
	i := rapid.IntRange(0, len(c.w.managers)-1).Draw(t, "manager")
	res, err := c.w.reconcile(c.w.managers[i], r.kind, r.key)
	t.Logf("manager %d reconciles %s: requeue %s, err %v", i, r, res.RequeueAfter, err)
	c.failOnPanic(t, err)
}

// twoManagers runs both managers at once on the same object: two replicas
// without leader election, their passes interleaved as the Go scheduler
// has it.
func (c *campaign) twoManagers(t *rapid.T) {
	r := c.pick(t, "")
	var errs [2]error
	var wg sync.WaitGroup
	for i, m := range c.w.managers {
		wg.Go(func() { _, errs[i] = c.w.reconcile(m, r.kind, r.key) })
	}
	wg.Wait()
	t.Logf("both managers reconcile %s at once: %v, %v", r, errs[0], errs[1])
	c.failOnPanic(t, errs[0])
	c.failOnPanic(t, errs[1])
}

func (c *campaign) failOnPanic(t *rapid.T, err error) {
	if errors.Is(err, errPanic) {
		t.Fatalf("a reconcile pass panicked: %v", err)
	}
}

// The world.

// crash kills a manager and starts another: caches, ledger index,
// backoffs and every other memory lost.
func (c *campaign) crash(t *rapid.T) {
	i := rapid.IntRange(0, len(c.w.managers)-1).Draw(t, "manager")
	t.Logf("manager %d crashes and restarts", i)
	if err := c.w.crash(i); err != nil {
		t.Fatalf("cannot restart manager %d: %v", i, err)
	}
}

// conflictNext makes the API server answer the next write of a payment
// object with a 409.
func (c *campaign) conflictNext(t *rapid.T) {
	t.Logf("the next write of a payment object gets a 409")
	c.w.conflictNext.Store(true)
}

// lostAnswer makes the provider commit its next request and answer a 500:
// the money moved, the operator does not know it.
func (c *campaign) lostAnswer(t *rapid.T) {
	t.Logf("the provider's next answer is lost after it committed")
	c.w.sbx.FailNextAny(sandbox.FaultAfterCommit, 1)
}

// providerError makes the provider refuse its next request before it
// commits: a 429 or a 500.
func (c *campaign) providerError(t *rapid.T) {
	kind := rapid.SampledFrom([]sandbox.FaultKind{sandbox.FaultRateLimit, sandbox.FaultBeforeCommit}).Draw(t, "fault")
	t.Logf("the provider refuses its next request: %s", kind)
	c.w.sbx.FailNextAny(kind, 1)
}

// advanceClock moves time: a second (a retry), half a claim lease, past
// a claim lease, or past the longest backoff and a search lag.
func (c *campaign) advanceClock(t *rapid.T) {
	d := rapid.SampledFrom([]time.Duration{time.Second, 30 * time.Second, 2 * time.Minute, 20 * time.Minute}).Draw(t, "by")
	t.Logf("the clock moves %s", d)
	c.w.clock.Step(d)
}

// dashboardRefund refunds part of a charge at the provider directly, as
// a person does in its dashboard: money moved behind the operator's back.
func (c *campaign) dashboardRefund(t *rapid.T) {
	intents, err := c.w.intents()
	if err != nil {
		t.Fatalf("cannot list the provider's charges: %v", err)
	}
	var open []sandbox.Intent
	for _, in := range intents {
		if in.Status == sandbox.StatusSucceeded && in.Amount > c.w.sbx.Refunded(in.ID) {
			open = append(open, in)
		}
	}
	if len(open) == 0 {
		t.Skip("no charge to refund in the dashboard")
	}
	in := rapid.SampledFrom(open).Draw(t, "charge")
	amount := rapid.Int64Range(1, in.Amount-c.w.sbx.Refunded(in.ID)).Draw(t, "amount")
	c.m.dashboard++
	key := fmt.Sprintf("dashboard-%d", c.m.dashboard)
	_, _, err = c.w.sbx.CreateRefund(key, sandbox.RefundParams{PaymentIntent: in.ID, Amount: amount})
	t.Logf("a person refunds %d of %s (key %s) in the dashboard: %v", amount, in.IdempotencyKey, key, err)
}

// staleRead is a lagging informer: one manager's next cached read of an
// object answers a copy of it as it was after one of the last steps (or
// as it is now), while its writes and its reads past the cache reach the
// API server. A cache is never ahead of the API server, but it can be
// behind it by several writes, its own included (controller-runtime's
// cache learns of a write only through the watch): a Completed job read
// as the Pending one it was, and acted on.
func (c *campaign) staleRead(t *rapid.T) {
	r := c.pick(t, "")
	obj := c.w.newObject(r.kind)
	if err := c.w.store.Get(context.Background(), r.key, obj); err != nil {
		t.Fatalf("cannot read %s: %v", r, err)
	}
	i := rapid.IntRange(0, len(c.w.managers)-1).Draw(t, "manager")
	copies := append(c.pastOf(r, obj.GetUID()), obj)
	old := copies[rapid.IntRange(0, len(copies)-1).Draw(t, "version")]
	t.Logf("manager %d's next read of %s answers it as it was at resourceVersion %s (now %s)", i, r,
		old.GetResourceVersion(), obj.GetResourceVersion())
	c.w.freeze(i, old)
}
