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
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"
)

// The budget of one run of TestCampaign, unless -rapid.checks and
// -rapid.steps say otherwise: histories, and actions per history on
// average (rapid draws the length). Measured on 2 shared cores: 100
// histories take about 20 s, and 90 s under the race detector (make
// test's -race), where a run checks raceChecks histories instead (about
// 55 s).
const (
	defaultChecks = 100
	raceChecks    = 60
	defaultSteps  = 40
	// durationChecks bounds the histories of a run bounded by time.
	durationChecks = 1000000
)

// Quiescence: at the end of a history every fault is off and the clock
// moves a quietStep before each round of passes over every object; the
// world is quiet after quietRounds rounds that changed nothing, and a
// history that is not quiet after maxRounds rounds is a liveness failure.
const (
	quietStep   = 5 * time.Minute
	quietRounds = 3
	maxRounds   = 40
)

// TestCampaign runs histories of users' actions, controllers' passes and
// faults against the real engine of both kinds, and checks the three books
// after every step and once the world is quiet. On a failure rapid prints
// the seed and the shrunk history (the t.Logf lines of each action);
// -rapid.seed=N replays it.
//
// CAMPAIGN_DURATION (a Go duration, make campaign-inprocess) bounds the run
// by time instead: histories run until it has passed (up to
// durationChecks), and those drawn after it return at once, unless rapid
// is shrinking a failure.
func TestCampaign(t *testing.T) {
	checks := defaultChecks
	if raceDetector {
		checks = raceChecks
	}
	var deadline time.Time
	if v := os.Getenv("CAMPAIGN_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("CAMPAIGN_DURATION: %v", err)
		}
		deadline, checks = time.Now().Add(d), durationChecks
	}
	setDefault(t, "rapid.checks", checks)
	setDefault(t, "rapid.steps", defaultSteps)
	var tally tally
	rapid.Check(t, func(rt *rapid.T) {
		if !deadline.IsZero() && time.Now().After(deadline) && tally.firstFailed == 0 {
			return
		}
		history(rt, &tally)
	})
	t.Logf("%d histories, %d actions (%d skipped), %d quiescence passes, %d etcd restores, %d namespaces recycled; at the end: %v",
		tally.histories, tally.steps, tally.skipped, tally.passes, tally.restores, tally.recycles, tally.outcomes)
}

// tally counts what the histories of a run reached, to show that they
// reach the paths worth checking.
type tally struct {
	histories, steps, skipped, passes int
	// restores and recycles count the etcd restores and the namespaces
	// recycled.
	restores, recycles int
	// started counts the histories begun; firstFailed is the number of
	// the first that failed (0: none), before rapid shrinks it.
	started, firstFailed int
	// outcomes counts the objects at the end of the histories by kind,
	// phase and Ready reason.
	outcomes map[string]int
}

// count adds the end of a history.
func (t *tally) count(b books) {
	if t.outcomes == nil {
		t.outcomes = map[string]int{}
	}
	t.histories++
	for i := range b.jobs {
		t.outcomes[fmt.Sprintf("job %s/%s", b.jobs[i].Status.Phase, readyReason(b.jobs[i].Status.Conditions))]++
	}
	for i := range b.refs {
		t.outcomes[fmt.Sprintf("refund %s/%s", b.refs[i].Status.Phase, readyReason(b.refs[i].Status.Conditions))]++
	}
	t.outcomes["charges"] += int(b.stats.Charges)
	t.outcomes["refunds"] += int(b.stats.Refunds)
	t.outcomes["provider faults"] += int(b.stats.Faults)
}

// history is one history: its world, its actions, then quiescence.
func history(t *rapid.T, tl *tally) {
	w, err := newWorld(rapid.Int64().Draw(t, "provider seed"))
	if err != nil {
		t.Fatalf("cannot build the world: %v", err)
	}
	defer w.close()
	tl.started++
	defer func() {
		if t.Failed() && tl.firstFailed == 0 {
			tl.firstFailed = tl.started
		}
	}()
	c := &campaign{w: w, m: &model{}, tally: tl}
	t.Repeat(c.repeatMap())
	c.quiesce(t)
}

// quiesce switches every fault off, re-applies the manifests of Git, moves
// time and runs every object's passes until nothing changes, then checks safety again and liveness:
// every object finished, or Stalled with a reason.
func (c *campaign) quiesce(t *rapid.T) {
	ctx := context.Background()
	c.w.faultsOff()
	quiet, moved := 0, ""
	for round := 0; quiet < quietRounds; round++ {
		if round == maxRounds {
			b, _ := c.w.read(ctx)
			for i := range b.jobs {
				j := &b.jobs[i]
				t.Logf("%s: %s attempts=%d claim=%+v ready=%q %v", j.Name, j.Status.Phase, j.Status.Attempts, j.Status.Claim, readyReason(j.Status.Conditions), j.Status.Conditions)
			}
			t.Fatalf("liveness: not quiet after %d rounds of passes; the last round moved %s", maxRounds, moved)
		}
		c.w.clock.Step(quietStep)
		// A namespace whose objects are gone is created again, and Git
		// converges: every pruned manifest is applied again.
		c.settleNamespaces(t)
		c.resync(t)
		before, err := c.w.fingerprint(ctx)
		if err != nil {
			t.Fatalf("%v", err)
		}
		refs, err := c.w.objects(ctx)
		if err != nil {
			t.Fatalf("%v", err)
		}
		for _, r := range refs {
			c.tally.passes++
			_, err := c.w.reconcile(c.w.managers[0], r.kind, r.key)
			c.failOnPanic(t, err)
		}
		after, err := c.w.fingerprint(ctx)
		if err != nil {
			t.Fatalf("%v", err)
		}
		if before == after {
			quiet++
		} else {
			quiet, moved = 0, fmt.Sprintf("from\n  %s\nto\n  %s", before, after)
		}
	}
	c.checkSafety(t)
	c.checkReconciliation(t)
	b, err := c.w.read(ctx)
	if err != nil {
		t.Fatalf("cannot read the books: %v", err)
	}
	if v := c.recycledViolations(b); len(v) > 0 {
		t.Fatalf("a recycled namespace's manifests, applied again:\n  %s", strings.Join(v, "\n  "))
	}
	if s := stuck(b); len(s) > 0 {
		t.Fatalf("liveness: with every fault off and time advanced:\n  %s", strings.Join(s, "\n  "))
	}
	c.tally.count(b)
}

// fingerprint sums up the three books: what a pass that changes anything
// changes.
func (w *world) fingerprint(ctx context.Context) (string, error) {
	b, err := w.read(ctx)
	if err != nil {
		return "", err
	}
	var s strings.Builder
	// A Stalled object may go on retrying at the longest backoff
	// (UncertainRefusal: docs/architecture.md); it waits on a person, and
	// its retries are no motion.
	version := func(rv string, conds []metav1.Condition) string {
		if isStalled(conds) {
			return "stalled"
		}
		return rv
	}
	for i := range b.jobs {
		fmt.Fprintf(&s, "%s/%s@%s ", b.jobs[i].Namespace, b.jobs[i].Name, version(b.jobs[i].ResourceVersion, b.jobs[i].Status.Conditions))
	}
	for i := range b.refs {
		fmt.Fprintf(&s, "%s/%s@%s ", b.refs[i].Namespace, b.refs[i].Name, version(b.refs[i].ResourceVersion, b.refs[i].Status.Conditions))
	}
	fmt.Fprintf(&s, "ledger=%d charges=%d refunds=%d", len(b.ledger), b.stats.Charges, b.stats.Refunds)
	return s.String(), nil
}

// setDefault sets the flag name to value unless the command line set it.
func setDefault(t *testing.T, name string, value int) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	if set {
		return
	}
	if err := flag.Set(name, fmt.Sprint(value)); err != nil {
		t.Fatalf("cannot set -%s: %v", name, err)
	}
}
