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
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/sandboxproc"
)

// refundStats is GET /_sandbox/stats with the refunds' counters.
type refundStats struct {
	sandboxproc.Stats
	// RefundRequests are the refund create requests, refused ones included.
	RefundRequests int64 `json:"refundRequests"`
	// Refunds are the refunds made; RefundsFailed those failed since.
	Refunds       int64 `json:"refunds"`
	RefundsFailed int64 `json:"refundsFailed"`
	// RefundRefusals are the refunds refused beyond what is left of a
	// charge, or of a charge that cannot be refunded.
	RefundRefusals int64 `json:"refundRefusals"`
	// RefundsByKey counts the refunds made under each idempotency key.
	RefundsByKey map[string]int `json:"refundsByKey"`
}

// providerRefund is a refund as the sandbox lists it (GET /v1/refunds).
type providerRefund struct {
	ID            string            `json:"id"`
	Amount        int64             `json:"amount"`
	PaymentIntent string            `json:"payment_intent"`
	Status        string            `json:"status"`
	Metadata      map[string]string `json:"metadata"`
}

// sandboxGet decodes the sandbox's JSON answer to GET path.
func (r *refundRun) sandboxGet(path string, into any) error {
	ctx, cancel := context.WithTimeout(context.Background(), sandboxRequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.sandbox.URL+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+sandboxproc.APIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("cannot GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(into)
}

// refundStats reads the sandbox's counters.
func (r *refundRun) refundStats() (refundStats, error) {
	var st refundStats
	err := r.sandboxGet("/_sandbox/stats", &st)
	return st, err
}

// providerRefunds lists every refund the sandbox made, page by page.
func (r *refundRun) providerRefunds() ([]providerRefund, error) {
	var all []providerRefund
	q := url.Values{"limit": {"100"}}
	for {
		var page struct {
			Data    []providerRefund `json:"data"`
			HasMore bool             `json:"has_more"`
		}
		if err := r.sandboxGet("/v1/refunds?"+q.Encode(), &page); err != nil {
			return nil, err
		}
		all = append(all, page.Data...)
		if !page.HasMore || len(page.Data) == 0 {
			return all, nil
		}
		q.Set("starting_after", page.Data[len(page.Data)-1].ID)
	}
}

// listRefunds returns the scenario's refunds, found by their label in one
// request, by namespace/name.
func (r *refundRun) listRefunds() (map[string]paymentsv1alpha1.PaymentRefund, error) {
	var l paymentsv1alpha1.PaymentRefundList
	err := r.cluster.k8s.List(context.Background(), &l, client.MatchingLabels{scenarioLabel: r.name})
	byKey := make(map[string]paymentsv1alpha1.PaymentRefund, len(l.Items))
	for _, rf := range l.Items {
		byKey[rf.Namespace+"/"+rf.Name] = rf
	}
	return byKey, err
}

// finished reports whether the refund reached its outcome.
func finished(rf *paymentsv1alpha1.PaymentRefund) bool {
	return rf.Status.Phase == paymentsv1alpha1.PhaseCompleted || rf.Status.Phase == paymentsv1alpha1.PhaseFailed
}

// describeRefund is a refund's phase, attempts, Ready condition and
// failure, for failure messages.
func describeRefund(rf *paymentsv1alpha1.PaymentRefund) string {
	st := rf.Status
	out := fmt.Sprintf("%s after %d attempts", cmp.Or(string(st.Phase), "New"), st.Attempts)
	if c := meta.FindStatusCondition(st.Conditions, paymentsv1alpha1.ConditionReady); c != nil {
		out += fmt.Sprintf(", Ready %s %s: %s", c.Status, c.Reason, c.Message)
	}
	if st.Failure != nil {
		out += ", failed " + st.Failure.Reason
	}
	return out
}

// refundResult is what verifyRefunds counted.
type refundResult struct {
	completed, failed, made  int
	duplicates, overrefunded int
	replays                  int
	stats                    refundStats
	live                     map[string]paymentsv1alpha1.PaymentRefund
}

// sentRefunds is how many planned refunds reach the provider: all but the
// ones refused before any call.
func (r *refundRun) sentRefunds() int {
	n := 0
	for _, p := range r.refunds {
		if p.refusal == "" {
			n++
		}
	}
	return n
}

// verifyAll is the proof every refund scenario ends with: the jobs'
// (verify), then every refund created and the refunds' (verifyRefunds).
func (r *refundRun) verifyAll() refundResult {
	r.t.Helper()
	jobs := r.verify()
	g := NewWithT(r.t)
	g.Eventually(r.created.Load, time.Minute, 200*time.Millisecond).Should(BeEquivalentTo(len(r.refunds)),
		"refunds created: some jobs were never seen terminal")
	for len(r.failed) > 0 {
		g.Expect(<-r.failed).NotTo(HaveOccurred())
	}
	return r.verifyRefunds(jobs.live)
}

// waitRefundsFinished waits until every planned refund is Completed or
// Failed and returns them by namespace/name.
func (r *refundRun) waitRefundsFinished() map[string]paymentsv1alpha1.PaymentRefund {
	r.t.Helper()
	var live map[string]paymentsv1alpha1.PaymentRefund
	unfinished := func() ([]string, error) {
		all, err := r.listRefunds()
		live = all
		var open []string
		for _, p := range r.refunds {
			if rf := all[p.key()]; err == nil && !finished(&rf) {
				open = append(open, p.key()+": "+describeRefund(&rf))
			}
		}
		sort.Strings(open)
		return open[:min(len(open), 6)], err
	}
	NewWithT(r.t).Eventually(unfinished, refundsTimeout, 500*time.Millisecond).Should(BeEmpty(), "refunds not finished (the first ones)")
	return live
}

// verifyRefunds proves, against the sandbox's own books, that every planned
// refund ended as planned: a Completed one made exactly once, for its
// amount, from its job's charge, and its status.providerResponse naming
// that one provider refund; a refused one Failed with its reason and never
// sent; no key refunded twice, no refund the plan does not hold, and no
// charge refunded beyond its amount. It prints the scenario's refund
// summary line.
func (r *refundRun) verifyRefunds(jobs map[string]paymentsv1alpha1.PaymentJob) refundResult {
	r.t.Helper()
	g := NewWithT(r.t)
	res := refundResult{live: r.waitRefundsFinished()}
	var err error
	res.stats, err = r.refundStats()
	g.Expect(err).NotTo(HaveOccurred())
	made, err := r.providerRefunds()
	g.Expect(err).NotTo(HaveOccurred())
	res.made = len(made)

	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	byKey := map[string][]providerRefund{}
	given := map[string]int64{} // refunded per charge, at the sandbox
	for _, m := range made {
		// The operator's adapters tag each refund with the key they sent.
		sentKey := m.Metadata[payment.MetadataKeyIdempotencyKey]
		byKey[sentKey] = append(byKey[sentKey], m)
		if m.Status != "failed" {
			given[m.PaymentIntent] += m.Amount
		}
	}
	charged := map[string]int64{} // by charge, what each job paid
	planned := map[string]int64{} // by charge, what the plan refunds
	for _, j := range jobs {
		if resp := j.Status.ProviderResponse; j.Status.Phase == paymentsv1alpha1.PhaseCompleted && resp != nil {
			charged[resp.ID] = j.Spec.Amount
		}
	}
	sent := map[string]bool{}
	for _, p := range r.refunds {
		key, sentKey := p.key(), p.sentKey()
		sent[sentKey] = true
		rf := res.live[key]
		mine, job := byKey[sentKey], jobs[p.job.key()]
		if p.refusal != "" {
			res.failed++
			if rf.Status.Phase != paymentsv1alpha1.PhaseFailed || rf.Status.Failure == nil || rf.Status.Failure.Reason != p.refusal {
				problem("%s must fail with %s: %s", key, p.refusal, describeRefund(&rf))
			}
			if len(mine) > 0 || res.stats.RefundsByKey[sentKey] > 0 {
				problem("%s must fail without a provider call, but the sandbox made %+v", key, mine)
			}
			continue
		}
		if rf.Status.Phase != paymentsv1alpha1.PhaseCompleted {
			res.failed++
			problem("%s must be Completed: %s", key, describeRefund(&rf))
			continue
		}
		res.completed++
		resp, charge := rf.Status.ProviderResponse, rf.Status.Charge
		switch {
		case len(mine) != 1:
			problem("%s is Completed (%+v) and the sandbox holds %d refunds under %s: %+v", key, resp, len(mine), sentKey, mine)
		case rf.Status.IdempotencyKey != sentKey:
			problem("%s sent the key %q, want %q", key, rf.Status.IdempotencyKey, sentKey)
		case resp == nil || resp.ID != mine[0].ID || resp.Amount != mine[0].Amount:
			problem("%s records %+v, the sandbox made %+v", key, resp, mine[0])
		case mine[0].Amount != p.refunded() || mine[0].Status != "succeeded":
			problem("%s: the sandbox made %+v, want %d succeeded", key, mine[0], p.refunded())
		case job.Status.ProviderResponse == nil || charge == nil ||
			mine[0].PaymentIntent != job.Status.ProviderResponse.ID || charge.ID != mine[0].PaymentIntent:
			problem("%s refunded %s, its status names charge %+v and its job %s", key, mine[0].PaymentIntent, charge, describe(&job))
		}
		if resp != nil && resp.Replayed {
			res.replays++
		}
		if len(mine) > 0 {
			planned[mine[0].PaymentIntent] += p.refunded()
		}
	}
	for sentKey, n := range res.stats.RefundsByKey {
		if n > 1 {
			res.duplicates += n - 1
			problem("%s was refunded %d times", sentKey, n)
		}
		if !sent[sentKey] {
			problem("the sandbox refunded %d times under %s, which no planned refund sends", n, sentKey)
		}
	}
	for charge, sum := range given {
		if sum > charged[charge] {
			res.overrefunded++
			problem("charge %s of %d was refunded %d", charge, charged[charge], sum)
		}
		if sum != planned[charge] {
			problem("charge %s was refunded %d, the Completed refunds of its job add up to %d", charge, sum, planned[charge])
		}
	}
	fmt.Printf("e2e scenario=%s jobs=%d refunds=%d completed=%d failed=%d provider-refunds=%d refund-requests=%d "+
		"duplicates=%d overrefunded=%d replays=%d seconds=%.1f\n",
		r.name, len(r.jobs), len(r.refunds), res.completed, res.failed, res.made, res.stats.RefundRequests,
		res.duplicates, res.overrefunded, res.replays, time.Since(r.started).Seconds())

	sort.Strings(problems)
	g.Expect(problems).To(BeEmpty(), "refunds not made exactly once in scenario %s (logs in %s)", r.name, r.dir)
	g.Expect(res.made).To(Equal(res.completed), "refunds at the sandbox == Completed refunds")
	g.Expect(res.stats.Refunds).To(BeEquivalentTo(res.completed), "refunds counted by the sandbox == Completed refunds")
	g.Expect(res.completed).To(Equal(r.sentRefunds()), "Completed refunds == planned refunds that fit in their charge")
	g.Expect(res.stats.RefundRefusals).To(BeZero(), "refunds the sandbox refused: the operator sent more than was left")
	g.Expect(res.stats.RefundsFailed).To(BeZero())
	return res
}

// trackRefundClaims follows, through an informer, who holds the claim of
// each of the scenario's Processing refunds, in the claims the job
// scenarios keep, until the test ends.
func (r *refundRun) trackRefundClaims() *claims {
	g := NewWithT(r.t)
	c := &claims{holder: map[string]string{}, finishers: map[string]string{}}
	see := func(obj any) {
		rf, ok := obj.(*paymentsv1alpha1.PaymentRefund)
		if !ok {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if claim := rf.Status.Claim; rf.Status.Phase == paymentsv1alpha1.PhaseProcessing && claim != nil {
			c.holder[rf.Namespace+"/"+rf.Name] = claim.Holder
		} else {
			delete(c.holder, rf.Namespace+"/"+rf.Name)
		}
	}
	namespaces := map[string]crcache.Config{}
	for _, ns := range r.namespaces {
		namespaces[ns] = crcache.Config{}
	}
	informers, err := crcache.New(r.cluster.cp.cfg, crcache.Options{Scheme: suite.scheme, DefaultNamespaces: namespaces})
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	inf, err := informers.GetInformer(ctx, &paymentsv1alpha1.PaymentRefund{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: see, UpdateFunc: func(_, obj any) { see(obj) }})
	g.Expect(err).NotTo(HaveOccurred())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = informers.Start(ctx)
	}()
	r.t.Cleanup(func() {
		cancel()
		<-stopped
	})
	g.Expect(informers.WaitForCacheSync(ctx)).To(BeTrue(), "the refund informer did not sync")
	return c
}

// refundsHeldBy returns the refunds Processing under a claim of the
// manager, read from the API server.
func (r *refundRun) refundsHeldBy(m *manager) []paymentsv1alpha1.PaymentRefund {
	all, err := r.listRefunds()
	NewWithT(r.t).Expect(err).NotTo(HaveOccurred())
	var held []paymentsv1alpha1.PaymentRefund
	for _, rf := range all {
		if rf.Status.Phase == paymentsv1alpha1.PhaseProcessing && rf.Status.Claim != nil && m.holds(rf.Status.Claim.Holder) {
			held = append(held, rf)
		}
	}
	return held
}

// refundedUnrecorded returns, among the refunds a killed manager held,
// those the sandbox made while the refund still had no outcome and the same
// claim: the kill landed between the refund and its outcome write. It waits
// up to within for the requests in flight to commit, and returns once one
// is found. The sandbox is read before the refund, so the outcome cannot
// have been written after the read; and the dead process's claim cannot
// expire within that time.
func (r *refundRun) refundedUnrecorded(held []paymentsv1alpha1.PaymentRefund, within time.Duration) map[string]int32 {
	found := map[string]int32{}
	sameClaim := func(was paymentsv1alpha1.PaymentRefund) bool {
		var now paymentsv1alpha1.PaymentRefund
		err := r.cluster.k8s.Get(context.Background(), client.ObjectKeyFromObject(&was), &now)
		return err == nil && now.Status.Phase == paymentsv1alpha1.PhaseProcessing && now.Status.Claim != nil &&
			now.Status.Claim.Holder == was.Status.Claim.Holder && now.Status.Claim.AcquiredAt.Equal(&was.Status.Claim.AcquiredAt)
	}
	look := func() bool {
		stats, err := r.refundStats()
		for i := 0; err == nil && i < len(held); i++ {
			if was := held[i]; stats.RefundsByKey[was.Status.IdempotencyKey] > 0 && sameClaim(was) {
				found[was.Namespace+"/"+was.Name] = was.Status.Attempts
			}
		}
		return len(found) > 0
	}
	if len(held) > 0 {
		// Finding none is an answer, not a failure.
		NewGomega(func(string, ...int) {}).Eventually(look, within, 50*time.Millisecond).Should(BeTrue())
	}
	return found
}

// dumpAndReleaseRefunds, after a failed scenario, writes its refunds to
// refunds.json in its folder and deletes the unfinished ones, finalizers
// included, so that later managers do not retry them against a sandbox
// that is gone.
func (r *refundRun) dumpAndReleaseRefunds() {
	ctx := context.Background()
	all, err := r.listRefunds()
	if err != nil {
		r.t.Logf("cannot list the refunds: %v", err)
		return
	}
	if data, err := json.MarshalIndent(all, "", "  "); err == nil {
		_ = os.WriteFile(filepath.Join(r.dir, "refunds.json"), data, 0o644)
	}
	for _, rf := range all {
		if finished(&rf) {
			continue
		}
		unguarded := rf.DeepCopy()
		unguarded.Finalizers = nil
		err := r.cluster.k8s.Patch(ctx, unguarded, client.MergeFrom(&rf))
		if err == nil {
			err = r.cluster.k8s.Delete(ctx, unguarded)
		}
		if client.IgnoreNotFound(err) != nil {
			r.t.Logf("cannot release refund %s/%s: %v", rf.Namespace, rf.Name, err)
		}
	}
	r.t.Logf("scenario %s: the refunds are in %s", r.name, filepath.Join(r.dir, "refunds.json"))
}
