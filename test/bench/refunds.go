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
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/sandboxproc"
)

// The refund windows: after the 0 ms run, and again after the run at
// -latency, the same manager refunds part of every job of that run, one
// PaymentRefund a job, through the same harness as the jobs (runWindow), so
// that its throughput and its API writes per refund compare with the jobs'.
// A refund makes one more API read (its job, out of the cache) and one more
// provider read (the charge's refunds) than a charge, by design: at 0 ms
// that costs more of a pass than at -latency, where the provider's answer
// dominates both, hence two targets.

// maxRefundWritesPerRefund is the target of the API writes per refund, in
// hundredths, the ledger's share included: claim, outcome and finish, as
// for a job, and a share of a ledger append. -max-refund-writes sets it.
const maxRefundWritesPerRefund = 330

// refundName is the name of the refund of the i-th job of a namespace.
func refundName(i int) string { return fmt.Sprintf("refund-%06d", i) }

// refundIndex is the i of a name made by refundName.
func refundIndex(name string) (int, bool) { return nameIndex("refund-", name) }

// newRefund is the refund of the i-th job of a namespace (newJob): half of
// its amount, a partial refund, through the same provider.
func newRefund(ns string, i int) *paymentsv1alpha1.PaymentRefund {
	amount := newJob(ns, i).Spec.Amount / 2
	return &paymentsv1alpha1.PaymentRefund{
		ObjectMeta: metav1.ObjectMeta{Name: refundName(i), Namespace: ns},
		Spec: paymentsv1alpha1.PaymentRefundSpec{
			ProviderRef:   paymentsv1alpha1.ProviderReference{Name: providerName},
			PaymentJobRef: paymentsv1alpha1.PaymentJobReference{Name: jobName(i)},
			Amount:        &amount,
			Reason:        paymentsv1alpha1.RefundRequestedByCustomer,
		},
	}
}

// refundRun refunds every job the run before left in ns, with the running
// manager and the sandbox at its current latency, and deletes the refunds;
// name names the window in the progress lines.
func (b *bench) refundRun(ctx context.Context, name, ns string) (runResult, error) {
	pctx, cancel := context.WithTimeout(ctx, b.cfg.timeout)
	defer cancel()
	r, err := b.runWindow(pctx, refundsKind, name, ns, b.cfg.jobs, b.sb)
	if err != nil {
		return r, err
	}
	return r, b.deleteAll(ctx, refundsKind, ns)
}

// addRefundRun reports the refund window beside the jobs' window of the
// same manager.
func (b *bench) addRefundRun(r, jobs runResult) {
	const title = "refunds, 0 ms"
	n := float64(r.n)
	refunds := int64(r.n)
	b.rep.add(figure{key: "refunds_per_sec_0ms", label: title + ": throughput", value: r.jobsPerSec(), kind: kindRefundRate})
	b.addRefundRatio(r, jobs, "", "0 ms", b.cfg.minRefundRatio)
	b.rep.add(figure{key: "p50_ms_refunds", label: title + ": create to Completed, p50", value: float64(r.latency(50)) / float64(time.Millisecond), kind: kindMillis})
	b.rep.add(figure{key: "p99_ms_refunds", label: title + ": create to Completed, p99", value: float64(r.latency(99)) / float64(time.Millisecond), kind: kindMillis})
	// The writes to jobs are in too: a refund that wrote its job would
	// cost that write.
	b.rep.add(perJob("refund_writes_per_refund", title+": API writes/refund (refunds, jobs: PATCH, PUT; ledger pages: POST, PUT, DELETE)",
		whole(r.req.refundWrites+r.req.jobWrites+r.req.ledgerWrites), refunds, perJobAtMost(b.cfg.maxRefundWrites)))
	// Without the admission policy's finalizer, the manager adds it: one
	// write more.
	b.rep.add(perJob("refund_guarded_at_create_per_refund", title+": created with the finalizer (admission policy)/refund",
		int64(r.guardedAtCreate), refunds, nil))
	b.rep.add(perJob("refund_ledger_writes_per_refund", title+": of which ledger page writes/refund", whole(r.req.ledgerWrites), refunds, nil))
	b.rep.add(figure{key: "refund_events_per_refund", label: title + ": events/refund", value: r.req.eventPosts / n, kind: kindPerJob})
	b.rep.add(figure{key: "refund_reads_per_refund", label: title + ": API reads/refund (GET, LIST)", value: r.req.reads / n, kind: kindPerJob})
	b.rep.add(figure{key: "refund_conflicts_per_refund", label: title + ": conflicts (409)/refund", value: r.req.conflicts / n, kind: kindPerJob})
	b.rep.add(perJob("refund_provider_calls_per_refund", title+": provider requests/refund (sandbox log: reads, lists, creates)", r.providerRequests(), refunds, nil))
	b.rep.add(perJob("refund_requests_per_refund", title+": refund requests/refund", r.refunds.Requests, refunds, nil))
	b.rep.add(perJob("refunded_per_refund", title+": refunds made/refund", r.refunds.Refunds, refunds, onePerJob()))
	b.rep.add(figure{key: "reconciles_per_refund", label: title + ": reconciles/refund", value: r.reconciles / n, kind: kindPerJob})
	b.addCPUOf(r.cpu, r.n, "refund", title, "_refunds")
	if r.finalizersLeft > 0 {
		b.rep.note("%s: %d Completed refunds still held the finalizer %s after %s.", title, r.finalizersLeft, paymentsv1alpha1.Finalizer, finalizerWait)
	}
	b.rep.note("%s: the API writes of the window, the benchmark's creates left out: %s (%d of %d refunds were created with the finalizer); the provider requests: %s.",
		title, r.requests.filter(operatorWrite).breakdown(), r.guardedAtCreate, r.n, routesString(r.routes))
}

// addSlowRefundRun reports the refund window at the sandbox's latency slow
// (e.g. "50ms") beside the jobs' window of the same manager at that
// latency: its throughput and the ratio, under keys ending in _ and slow.
func (b *bench) addSlowRefundRun(r, jobs runResult, slow string) {
	b.rep.add(figure{key: "refunds_per_sec_" + slow, label: "refunds, " + slow + ": throughput", value: r.jobsPerSec(), kind: kindRefundRate})
	b.addRefundRatio(r, jobs, "_"+slow, slow, b.cfg.minRefundRatioSlow)
}

// addRefundRatio reports the refunds' throughput over the jobs' of the same
// manager and latency, against the minimum least (0 does not enforce it).
func (b *bench) addRefundRatio(r, jobs runResult, suffix, title string, least float64) {
	b.rep.add(figure{
		key: "ratio_refunds_vs_jobs" + suffix, label: title + ": throughput, refunds / jobs (same manager)",
		value: r.jobsPerSec() / jobs.jobsPerSec(), kind: kindRatio, target: atLeastUnlessZero(least),
	})
}

// operatorWrite keeps the writes to jobs, refunds and ledger pages but the
// creates of jobs and refunds, which are the benchmark's.
func operatorWrite(k requestKey) bool {
	switch k.resource {
	case resourceJobs, resourceRefunds:
		return isMutating(k.verb) && k.verb != verbCreate
	case resourceLedgers:
		return isMutating(k.verb)
	}
	return false
}

// checkRefunds fails a refund window unless the sandbox made one refund
// under each refund's key, and charged nothing.
func checkRefunds(name string, n int, r runResult) error {
	rc := r.refunds
	switch {
	case r.provider.Charges != 0:
		return fmt.Errorf("%s: the sandbox charged %d times while only refunds ran", name, r.provider.Charges)
	case rc.Refunds != int64(n):
		return fmt.Errorf("%s: the sandbox made %d refunds for %d Completed refunds", name, rc.Refunds, n)
	case len(rc.ByKey) != n:
		return fmt.Errorf("%s: the sandbox refunded under %d keys for %d refunds", name, len(rc.ByKey), n)
	}
	for key, c := range rc.ByKey {
		if c != 1 {
			return fmt.Errorf("%s: the sandbox refunded %d times under key %s", name, c, key)
		}
	}
	return nil
}

// refundCounters are the sandbox's refund counters (GET /_sandbox/stats),
// which sandboxproc.Counters does not read. Like those, they only grow.
type refundCounters struct {
	// Requests are the refund requests, refused ones included.
	Requests int64 `json:"refundRequests"`
	// Refunds are the refunds whose money moved (or is pending).
	Refunds int64 `json:"refunds"`
	// Failed are the refunds that failed after they were made.
	Failed int64 `json:"refundsFailed"`
	// Refusals are the refund requests refused.
	Refusals int64 `json:"refundRefusals"`
	// ByKey counts the refunds made, by idempotency key.
	ByKey map[string]int `json:"refundsByKey"`
}

// minus returns the counts added since before; ByKey keeps the keys whose
// count changed.
func (c refundCounters) minus(before refundCounters) refundCounters {
	d := refundCounters{
		Requests: c.Requests - before.Requests, Refunds: c.Refunds - before.Refunds,
		Failed: c.Failed - before.Failed, Refusals: c.Refusals - before.Refusals,
	}
	for k, v := range c.ByKey {
		if v != before.ByKey[k] {
			if d.ByKey == nil {
				d.ByKey = map[string]int{}
			}
			d.ByKey[k] = v - before.ByKey[k]
		}
	}
	return d
}

// plus adds the counts of two windows.
func (c refundCounters) plus(o refundCounters) refundCounters {
	s := refundCounters{
		Requests: c.Requests + o.Requests, Refunds: c.Refunds + o.Refunds,
		Failed: c.Failed + o.Failed, Refusals: c.Refusals + o.Refusals,
	}
	for _, m := range []map[string]int{c.ByKey, o.ByKey} {
		for k, v := range m {
			if s.ByKey == nil {
				s.ByKey = map[string]int{}
			}
			s.ByKey[k] += v
		}
	}
	return s
}

// readRefundCounters reads the refund counters of sb.
func readRefundCounters(ctx context.Context, sb *sandboxproc.Sandbox) (refundCounters, error) {
	var c refundCounters
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(sb.URL, "/")+"/_sandbox/stats", nil)
	if err != nil {
		return c, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return c, fmt.Errorf("cannot read the sandbox's refund counters: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return c, fmt.Errorf("cannot read the sandbox's refund counters: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return c, fmt.Errorf("cannot read the sandbox's refund counters: %s: %.512s", resp.Status, body)
	}
	if err := json.Unmarshal(body, &c); err != nil {
		return c, fmt.Errorf("cannot decode the sandbox's refund counters: %w", err)
	}
	return c, nil
}
