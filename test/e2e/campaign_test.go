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
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/campaign"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// The process campaign: the in-process campaign's generator and oracle
// (internal/campaign) over real processes. Each history has a world of
// its own: two fresh namespaces of its sub-test's control plane, a fresh
// sandbox process (its search lag drawn), and two manager processes
// without leader election. The actions are what users and the world do
// (campaign_actions_test.go); the managers work meanwhile, on the wall
// clock. After every step the oracle reads the three books (the API
// server's objects, the sandbox's GET /_sandbox/books, and the ledger
// where the managers keep it: the CRD ledger's pages, or the history's
// PostgreSQL database, campaign_postgres_test.go) and checks the safety
// invariants; at the end every fault is off,
// Git converges, and every object must become finished or Stalled with a
// reason within quietTimeout (liveness), the books still agreeing.

// The bounds of a run, unless the environment or the command line says
// otherwise: CAMPAIGN_DURATION (no history starts after it but a
// sub-test's first), CAMPAIGN_STEPS (rapid.steps, the actions of a
// history on average), and -rapid.checks (the histories at most).
const (
	defaultCampaignDuration = 90 * time.Second
	defaultCampaignSteps    = 15
	campaignChecks          = 10000
	// quietTimeout bounds the wait, once every fault is off, for every
	// object to finish or stall.
	quietTimeout = 2 * time.Minute
	// campaignAccount is the sandbox's account, as the in-process world's.
	campaignAccount = "acct_campaign"
)

// TestProcessCampaign runs histories until CAMPAIGN_DURATION has passed,
// in a sub-test per ledger backend that CAMPAIGN_LEDGER selects
// (campaignShares): crd, then postgres, each until the end of its share
// of the time. The shares end at fixed times after the start: the rest
// of a history of crd that runs past its share's end, and postgres's
// set-up (its control plane and server, about 5 s), come out of
// postgres's share, so the campaign takes CAMPAIGN_DURATION and the rest
// of its last history, as with one backend. Each sub-test runs one
// history at least.
// On a failure rapid prints the seed and the history (each action's
// t.Logf line), and the processes' logs are kept; -rapid.seed=N draws the
// same history again (the processes' timing is the world's own, so a
// replay may take another path: the printed history says what was done).
func TestProcessCampaign(t *testing.T) {
	duration := defaultCampaignDuration
	if v := os.Getenv("CAMPAIGN_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		NewWithT(t).Expect(err).NotTo(HaveOccurred(), "CAMPAIGN_DURATION")
		duration = d
	}
	steps := defaultCampaignSteps
	if v := os.Getenv("CAMPAIGN_STEPS"); v != "" {
		n, err := strconv.Atoi(v)
		NewWithT(t).Expect(err).NotTo(HaveOccurred(), "CAMPAIGN_STEPS")
		steps = n
	}
	shares := campaignShares(t)
	setFlagDefault(t, "rapid.checks", campaignChecks)
	setFlagDefault(t, "rapid.steps", steps)

	start := time.Now()
	total, done := 0, 0
	for _, s := range shares {
		total += s.weight
	}
	for _, s := range shares {
		done += s.weight
		deadline := start.Add(duration * time.Duration(done) / time.Duration(total))
		t.Run(s.backend, func(t *testing.T) { runCampaign(t, s.backend, deadline) })
	}
}

// runCampaign runs histories with the managers' ledger on backend until
// deadline, one at least.
func runCampaign(t *testing.T, backend string, deadline time.Time) {
	dir := filepath.Join(suite.artifacts, "campaign", backend)
	NewWithT(t).Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	l := newCampaignLedger(t, backend, dir)
	started := time.Now()
	tl := &campaignTally{}
	rapid.Check(t, func(rt *rapid.T) {
		// Past the deadline a history draws nothing and passes, unless
		// rapid is shrinking a failure.
		if time.Now().After(deadline) && tl.started > 0 && tl.failed == 0 {
			return
		}
		runHistory(t, rt, dir, l, tl)
	})
	t.Logf("process campaign, ledger %s: %d histories in %s, %d actions (%d skipped), %d safety checks; at the end: %v",
		backend, tl.histories, time.Since(started).Round(time.Second), tl.steps, tl.skipped, tl.checks, tl.outcomes)
	NewWithT(t).Expect(tl.histories).To(BeNumerically(">", 0), "no history ran")
}

// campaignTally counts what the histories of a run did.
type campaignTally struct {
	started, histories, failed int
	steps, skipped, checks     int
	outcomes                   map[string]int
}

// count adds the books at the end of a history.
func (tl *campaignTally) count(b campaignBooks) {
	if tl.outcomes == nil {
		tl.outcomes = map[string]int{}
	}
	tl.histories++
	for i := range b.jobs {
		tl.outcomes["job "+string(b.jobs[i].Status.Phase)]++
	}
	for i := range b.refs {
		tl.outcomes["refund "+string(b.refs[i].Status.Phase)]++
	}
	tl.outcomes["charges"] += int(b.sandbox.Stats.Charges)
	tl.outcomes["refunds"] += int(b.sandbox.Stats.Refunds)
	tl.outcomes["provider faults"] += int(b.sandbox.Stats.Faults)
	// The entries the oracle read from the ledger's backend at the end.
	tl.outcomes["ledger entries"] += len(b.ledger)
}

// processWorld is one history's world: its namespaces, its sandbox, its
// managers and the model of what its users applied.
type processWorld struct {
	t  *testing.T
	rt *rapid.T
	s  *scenario
	// managers are the two replicas; a kill replaces one.
	managers [2]*manager
	m        campaign.Manifests
	// ledger is the history's book of the managers' outcome ledger.
	ledger *historyLedger
	tally  *campaignTally
	// dashboard counts the refunds made at the sandbox behind the
	// operator's back, to key them.
	dashboard int
	// forgets is whether the managers trust the provider's memory of
	// keys for no time (managerArgs), and so the sandbox may forget them.
	forgets     bool
	managerArgs []string
	// history is every line the history logged, to print it whole when
	// it fails.
	history []string
}

// logf logs a line of the history, and keeps it.
func (w *processWorld) logf(t *rapid.T, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	w.history = append(w.history, time.Now().UTC().Format("15:04:05.000")+" "+line)
	t.Logf("%s", line)
}

// runHistory is one history: its world, its actions, then quiescence.
func runHistory(t *testing.T, rt *rapid.T, dir string, l *campaignLedger, tl *campaignTally) {
	tl.started++
	n := tl.started
	name := fmt.Sprintf("campaign-%d", n)
	// The provider's memory of keys, as the managers trust it: a day
	// (--provider-key-retention's default; the sandbox then never
	// forgets a key within a history), or none (1ms: every send after
	// the first asks the ledger and looks the key up first, and the
	// sandbox may forget its keys at any step). A search lag makes a
	// lookup miss a charge for a while, as Stripe's index does; only a
	// provider that remembers keys longer than its search lags may have
	// one, or a lookup that misses would be a second charge.
	forgets := rapid.Bool().Draw(rt, "provider forgets keys")
	lag := time.Duration(0)
	if !forgets {
		lag = rapid.SampledFrom([]time.Duration{0, 2 * time.Second}).Draw(rt, "search lag")
	}
	hdir := filepath.Join(dir, name)
	NewWithT(t).Expect(os.MkdirAll(hdir, 0o755)).To(Succeed())
	sb := startSandbox(t, hdir, "--account-id="+campaignAccount, "--search-lag="+lag.String(),
		"--latency-min=10ms", "--latency-max=150ms")
	defer sb.Proc.Stop(10 * time.Second)
	s := &scenario{t: t, name: name, dir: hdir, cluster: l.cluster, sandbox: sb, started: time.Now(),
		namespaces: []string{fmt.Sprintf("c%d-shop", n), fmt.Sprintf("c%d-books", n)}}
	s.setUpNamespaces()
	s.addProvider(campaign.ProviderName, sb.URL)
	w := &processWorld{t: t, rt: rt, s: s, tally: tl, forgets: forgets, ledger: l.history(t, n, s.namespaces)}
	if forgets {
		w.managerArgs = []string{"--provider-key-retention=1ms"}
	}
	w.logf(rt, "history %d: %s, namespaces %v, sandbox %s (search lag %s, forgets keys %v), logs in %s",
		n, w.ledger, s.namespaces, sb.URL, lag, forgets, hdir)
	// rapid prints a history's lines only when it fails: its first line
	// goes to the test's log too, to tell the histories of a run apart.
	t.Logf("%s", w.history[0])
	defer w.close()
	for i := range w.managers {
		w.managers[i] = w.startManager()
	}
	defer func() {
		if rt.Failed() {
			tl.failed++
			// rapid prints the output of its last run of the seed,
			// which the processes' timing may have made pass: the
			// history that failed is printed here, whole.
			t.Logf("history %d (ledger %s) failed; its processes' logs are in %s; what it did:\n  %s",
				n, l.backend, hdir, strings.Join(w.history, "\n  "))
		}
	}()
	w.ledger.ready(rt, w.managers[:])
	rt.Repeat(w.repeatMap())
	w.quiesce()
}

// startManager starts a manager process, without leader election, on
// the history's ledger.
func (w *processWorld) startManager() *manager {
	return w.s.startManager(w.ledger.managerOptions(managerOptions{args: w.managerArgs}))
}

// close stops the managers and releases the history's objects (their
// finalizers removed), so that no later manager works on them, and then
// its ledger.
func (w *processWorld) close() {
	for _, m := range w.managers {
		if m != nil {
			m.Stop(10 * time.Second)
		}
	}
	defer w.ledger.close(w.t)
	ctx := context.Background()
	k8s := w.s.cluster.k8s
	for _, ns := range w.s.namespaces {
		for _, list := range []client.ObjectList{&paymentsv1alpha1.PaymentJobList{}, &paymentsv1alpha1.PaymentRefundList{}} {
			if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
				w.t.Logf("cannot list the objects of %s: %v", ns, err)
				continue
			}
			for _, obj := range objectsOf(list) {
				obj.SetFinalizers(nil)
				if err := k8s.Update(ctx, obj); client.IgnoreNotFound(err) != nil {
					w.t.Logf("cannot release %s/%s: %v", ns, obj.GetName(), err)
				}
				_ = client.IgnoreNotFound(k8s.Delete(ctx, obj))
			}
		}
	}
}

// objectsOf are the items of a job or refund list.
func objectsOf(list client.ObjectList) []client.Object {
	var objs []client.Object
	switch l := list.(type) {
	case *paymentsv1alpha1.PaymentJobList:
		for i := range l.Items {
			objs = append(objs, &l.Items[i])
		}
	case *paymentsv1alpha1.PaymentRefundList:
		for i := range l.Items {
			objs = append(objs, &l.Items[i])
		}
	}
	return objs
}

// campaignBooks are the three books of a history as read from the
// processes.
type campaignBooks struct {
	jobs    []paymentsv1alpha1.PaymentJob
	refs    []paymentsv1alpha1.PaymentRefund
	ledger  []ledger.Entry
	sandbox sandbox.Books
}

// read reads the books: the API server's objects first, then the ledger,
// then the sandbox, so that every charge or refund an object names was
// made before the sandbox is read.
func (w *processWorld) read() (campaignBooks, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b campaignBooks
	for _, ns := range w.s.namespaces {
		var jobs paymentsv1alpha1.PaymentJobList
		if err := w.s.cluster.k8s.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
			return b, fmt.Errorf("cannot list jobs: %w", err)
		}
		b.jobs = append(b.jobs, jobs.Items...)
		var refs paymentsv1alpha1.PaymentRefundList
		if err := w.s.cluster.k8s.List(ctx, &refs, client.InNamespace(ns)); err != nil {
			return b, fmt.Errorf("cannot list refunds: %w", err)
		}
		b.refs = append(b.refs, refs.Items...)
	}
	var err error
	b.ledger, err = w.ledger.read(ctx)
	if err != nil {
		return b, fmt.Errorf("cannot read the ledger: %w", err)
	}
	b.sandbox, err = w.s.sandbox.Books(ctx)
	return b, err
}

// books are the books as the oracle takes them.
func (b campaignBooks) books() campaign.Books {
	return campaign.NewBooks(b.sandbox, b.jobs, b.refs, b.ledger)
}

// checkSafety is the "" action of Repeat: the invariants that hold after
// every step, whatever the faults.
func (w *processWorld) checkSafety(rt *rapid.T) {
	w.tally.checks++
	b, err := w.read()
	if err != nil {
		rt.Fatalf("cannot read the books: %v", err)
	}
	if v := w.m.Violations(b.books()); len(v) > 0 {
		w.logf(rt, "the books disagree:\n  %s", strings.Join(v, "\n  "))
		rt.Fatalf("the books disagree:\n  %s", strings.Join(v, "\n  "))
	}
}

// quiesce switches every fault off, re-applies Git's manifests (again
// while it waits), and waits until every object is finished or Stalled
// with a reason; then the books must still agree.
func (w *processWorld) quiesce() {
	rt := w.rt
	NewWithT(w.t).Expect(w.s.sandbox.SetFaults(context.Background(), 0, 0, 0)).To(Succeed())
	for i, m := range w.managers {
		if m.Exited() {
			rt.Fatalf("manager %d (%s) exited by itself:\n%s", i, m.Name, m.ReadLog())
		}
	}
	if synced := w.resync(); len(synced) > 0 {
		w.logf(rt, "at the end, gitops sync re-creates %v", synced)
	}
	g := NewGomega(func(message string, _ ...int) { rt.Fatalf("liveness: %s", message) })
	var b campaignBooks
	started := time.Now()
	g.Eventually(func() ([]string, error) {
		// Git keeps converging: a job pruned while it was still being
		// deleted (its finalizer held it until its payment finished) is
		// gone only later, and applied again then, as the in-process
		// campaign's every round of passes does. Without it, a refund
		// naming such a job by name waits PaymentNotFound for ever.
		if synced := w.resync(); len(synced) > 0 {
			w.logf(rt, "gitops sync re-creates %v", synced)
		}
		var err error
		b, err = w.read()
		if err != nil {
			return nil, err
		}
		return campaign.Stuck(b.books()), nil
	}, quietTimeout, 500*time.Millisecond).Should(BeEmpty(), "with every fault off, objects neither finished nor Stalled with a reason")
	w.logf(rt, "quiet after %s", time.Since(started).Round(100*time.Millisecond))
	w.checkSafety(rt)
	w.tally.count(b)
}

// setFlagDefault sets the flag name to value unless the command line set
// it.
func setFlagDefault(t *testing.T, name string, value int) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	if set {
		return
	}
	NewWithT(t).Expect(flag.Set(name, strconv.Itoa(value))).To(Succeed())
}
