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
	"fmt"

	"k8s.io/utils/ptr"
	"pgregory.net/rapid"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// The facade of the model and the oracle for a campaign run elsewhere (the
// process campaign of test/e2e): the same manifests, the same draws and the
// same checks as the in-process campaign, over books read from processes.

// ProviderName is the PaymentProvider every manifest's objects name; the
// namespaces of a campaign hold one by that name.
const ProviderName = providerName

// JobManifest is a PaymentJob as a user applied it.
type JobManifest struct {
	Namespace, Name string
	// Key is spec.idempotencyKey, empty for the name.
	Key    string
	Amount int64
	// Suspend is spec.suspend: the job waits for a person's approval.
	Suspend bool
}

func (j JobManifest) internal() jobManifest {
	return jobManifest{ns: j.Namespace, name: j.Name, key: j.Key, amount: j.Amount, suspend: j.Suspend}
}

// SentKey is the idempotency key the job sends to the provider.
func (j JobManifest) SentKey() string { return j.internal().sentKey() }

// Object is the PaymentJob of the manifest, through ProviderName.
func (j JobManifest) Object() *paymentsv1alpha1.PaymentJob { return j.internal().object() }

// RefundManifest is a PaymentRefund as a user applied it.
type RefundManifest struct {
	Namespace, Name, Job string
	// Amount is spec.amount, nil for the whole charge.
	Amount *int64
}

func (r RefundManifest) internal() refundManifest {
	return refundManifest{ns: r.Namespace, name: r.Name, job: r.Job, amount: r.Amount}
}

// Object is the PaymentRefund of the manifest, through ProviderName.
func (r RefundManifest) Object() *paymentsv1alpha1.PaymentRefund { return r.internal().object() }

// Manifests is the model: every manifest a user applied in one history,
// kept after a prune as Git keeps it. The zero value holds none.
type Manifests struct {
	m model
}

// AddJob records a job's manifest, before its object is applied.
func (ms *Manifests) AddJob(j JobManifest) { ms.m.jobs = append(ms.m.jobs, j.internal()) }

// AddRefund records a refund's manifest, before its object is applied.
func (ms *Manifests) AddRefund(r RefundManifest) { ms.m.refunds = append(ms.m.refunds, r.internal()) }

// Jobs are the job manifests, in the order they were added.
func (ms *Manifests) Jobs() []JobManifest {
	jobs := make([]JobManifest, 0, len(ms.m.jobs))
	for _, j := range ms.m.jobs {
		jobs = append(jobs, JobManifest{Namespace: j.ns, Name: j.name, Key: j.key, Amount: j.amount, Suspend: j.suspend})
	}
	return jobs
}

// Refunds are the refund manifests, in the order they were added.
func (ms *Manifests) Refunds() []RefundManifest {
	refunds := make([]RefundManifest, 0, len(ms.m.refunds))
	for _, r := range ms.m.refunds {
		refunds = append(refunds, RefundManifest{Namespace: r.ns, Name: r.name, Job: r.job, Amount: r.amount})
	}
	return refunds
}

// Books are the three books at one moment: the provider's charges and
// refunds with its counters, the cluster's jobs and refunds, and the
// ledger's entries. They hold only what belongs to the history checked.
type Books struct {
	b books
}

// NewBooks gathers the books read from the provider (one account's, as
// the sandbox answers them), the API server and the ledger.
func NewBooks(provider sandbox.Books, jobs []paymentsv1alpha1.PaymentJob, refs []paymentsv1alpha1.PaymentRefund,
	entries []ledger.Entry) Books {
	b := books{intents: map[string]sandbox.Intent{}, refunds: map[string]sandbox.Refund{}, accounts: map[string]string{},
		charged: map[string]map[string]int{provider.Account: provider.Stats.ChargesByKey}, stats: provider.Stats,
		jobs: jobs, refs: refs, ledger: entries}
	for _, in := range provider.Intents {
		b.intents[in.ID] = in
		b.accounts[in.ID] = provider.Account
	}
	for _, r := range provider.Refunds {
		b.refunds[r.ID] = r
	}
	return Books{b: b}
}

// Violations are the safety invariants the books break against the model,
// one line each (the in-process campaign's checks after every step).
func (ms *Manifests) Violations(b Books) []string { return ms.m.violations(b.b) }

// Stuck are the objects of the books that, once the world is quiet, are
// neither finished nor Stalled with a reason that tells a person what to
// do (the in-process campaign's liveness check).
func Stuck(b Books) []string { return stuck(b.b) }

// DrawJob draws a job's manifest named name as the in-process campaign
// draws one: one of the namespaces, a key from a small set (so that names
// collide on keys) or the name itself, an amount from a small set (so that
// colliding keys ask for the same request as often as for another), one
// job in four suspended.
func DrawJob(t *rapid.T, namespaces []string, name string) JobManifest {
	return JobManifest{
		Namespace: rapid.SampledFrom(namespaces).Draw(t, "namespace"),
		Name:      name,
		Key:       rapid.SampledFrom([]string{"", "order-1", "order-2"}).Draw(t, "key"),
		Amount:    rapid.SampledFrom([]int64{500, 1000, 2500}).Draw(t, "amount"),
		Suspend:   rapid.IntRange(0, 3).Draw(t, "suspend") == 0,
	}
}

// DrawRefundAmount draws a refund's spec.amount of a charge of amount as
// the in-process campaign does: part of it, all of it (nil), or all of it
// again by amount, which is more than what is left once another refund
// took some. It says which in how.
func DrawRefundAmount(t *rapid.T, amount int64) (refund *int64, how string) {
	switch how = rapid.SampledFrom([]string{"partial", "full", "all-of-it-again"}).Draw(t, "how"); how {
	case "partial":
		return ptr.To(rapid.Int64Range(1, amount-1).Draw(t, "partial")), how
	case "all-of-it-again":
		return ptr.To(amount), how
	}
	return nil, how
}

// String is the manifest as the history logs it.
func (j JobManifest) String() string {
	return fmt.Sprintf("job %s/%s key=%q amount=%d suspend=%v (sends %s)", j.Namespace, j.Name, j.Key, j.Amount, j.Suspend, j.SentKey())
}
