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
	"slices"
	"strings"

	"pgregory.net/rapid"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	money "github.com/idempotency-dev/paymentjob-operator/internal/books"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// The reconciliation as an oracle. Once the world is quiet, the three
// books are compared as a PaymentReconciliation compares them
// (money.Compare): the cluster's records (the finished jobs and
// refunds, as the controller gathers them, and the ledger's entries) with
// the provider's objects (every charge and refund of the sandbox, with
// their disputes and refunded sums, as a provider that lists them gives
// them). The comparison must report exactly what the history did behind
// the operator's back, each once: a dashboard refund of a charge of ours
// (RefundedOutsideOperator), a dispute of a recorded charge (Disputed), a
// charge made under one of our keys by another system (UnknownToCluster),
// a recorded refund the provider failed after it succeeded
// (RefundFailedAfterSuccess); and nothing else. Any other discrepancy is
// one the books do not justify, and its advice (refund the extra ones,
// refund the difference, charge again) would move money for nothing.

// checkReconciliation is the reconciliation's comparison over the quiet
// world's books, judged against what the model knows was done behind the
// operator's back.
func (c *campaign) checkReconciliation(t *rapid.T) {
	v, err := c.reconciliationDisagrees(context.Background())
	if err != nil {
		t.Fatalf("cannot read the books: %v", err)
	}
	if len(v) > 0 {
		t.Fatalf("the reconciliation disagrees with the history:\n  %s", strings.Join(v, "\n  "))
	}
}

// reconciliationDisagrees compares the books as the reconciliation does
// and says where its findings and the history disagree, one line each.
func (c *campaign) reconciliationDisagrees(ctx context.Context) ([]string, error) {
	b, err := c.w.read(ctx)
	if err != nil {
		return nil, err
	}
	records, inFlight := clusterRecords(b)
	disputed := c.w.openDisputes()
	c.m.unverified = c.w.unverifiedKeys()
	findings := money.Compare(records, lookedUp(records, providerObjects(b, disputed), inFlight))
	// What the oracle checked shows in the run's tally.
	if c.tally.outcomes == nil {
		c.tally.outcomes = map[string]int{}
	}
	for _, f := range findings {
		if f.Category.Discrepancy() {
			c.tally.outcomes["reconciliation "+string(f.Category)]++
			if c.m.restoredAway[f.Key] {
				// Of which on a key an etcd restore took out of the books.
				c.tally.outcomes["reconciliation after a restore "+string(f.Category)]++
			}
		}
	}
	return c.m.reconciliationViolations(b, inFlight, disputed, findings), nil
}

// clusterRecords are the cluster's records as the reconciliation gathers
// them (paymentreconciliation's gather and entryRecord): the finished jobs
// and refunds sent somewhere, and every ledger entry; and the keys still
// in flight, whose provider objects are no finding.
func clusterRecords(b books) ([]money.Record, map[string]bool) {
	var records []money.Record
	inFlight := map[string]bool{}
	for i := range b.jobs {
		j := &b.jobs[i]
		st := j.Status
		if st.IdempotencyKey == "" || st.Provider == nil {
			continue
		}
		if !finished(st.Phase) {
			inFlight[st.IdempotencyKey] = true
			continue
		}
		records = append(records, money.Record{Kind: money.Charge, Key: st.IdempotencyKey,
			Object: j.Namespace + "/" + j.Name, Moved: st.Phase == paymentsv1alpha1.PhaseCompleted,
			ID: responseID(st.ProviderResponse), Amount: j.Spec.Amount, Currency: strings.ToLower(j.Spec.Currency)})
	}
	for i := range b.refs {
		rf := &b.refs[i]
		st := rf.Status
		if st.IdempotencyKey == "" || st.Provider == nil {
			continue
		}
		if !finished(st.Phase) {
			inFlight[st.IdempotencyKey] = true
			continue
		}
		r := money.Record{Kind: money.Refund, Key: st.IdempotencyKey, Object: rf.Namespace + "/" + rf.Name,
			Moved: st.Phase == paymentsv1alpha1.PhaseCompleted, ID: responseID(st.ProviderResponse),
			ChargeObject: rf.Namespace + "/" + rf.Spec.PaymentJobRef.Name, Exact: true}
		if ch := st.Charge; ch != nil {
			r.Amount, r.Currency, r.ChargeKey, r.Charge, r.ChargeAmount = ch.Amount, strings.ToLower(ch.Currency), ch.IdempotencyKey, ch.ID, ch.Amount
		}
		if rf.Spec.Amount != nil {
			r.Amount = *rf.Spec.Amount
		}
		records = append(records, r)
	}
	for _, e := range b.ledger {
		records = append(records, entryRecord(e))
	}
	return records, inFlight
}

// entryRecord is a ledger entry as the reconciliation reads it.
func entryRecord(e ledger.Entry) money.Record {
	kind := money.Charge
	if payment.IsRefundKey(e.Key) {
		kind = money.Refund
	}
	return money.Record{Kind: kind, Key: e.Key, InLedger: true, Moved: e.Outcome == paymentsv1alpha1.LedgerCompleted,
		ID: e.Charge, Amount: e.Amount, Currency: strings.ToLower(e.Currency), Charge: e.RefundedCharge, Exact: true}
}

// openDisputes are the disputes that still take the money, by the charge
// they dispute: won and warning_closed ones no longer do (the Stripe
// adapter's list reads them as moving nothing).
func (w *world) openDisputes() map[string]string {
	disputed := map[string]string{}
	q := sandbox.ListQuery{Limit: sandbox.MaxListLimit}
	for {
		page, more, err := w.sbx.ListDisputes(q)
		if err != nil || len(page) == 0 {
			return disputed
		}
		for _, d := range page {
			if d.Status != sandbox.DisputeStatusWon && d.Status != sandbox.DisputeStatusWarningClosed {
				disputed[d.PaymentIntent] = d.ID
			}
		}
		if !more {
			return disputed
		}
		q.StartingAfter = page[len(page)-1].ID
	}
}

// lookedUp are the provider's objects a listed run compares: none under a
// key in flight (the controller's tally.ours), but those under the key or
// with the id of a record whose money moved are looked up again
// (paymentreconciliation's lookups: the provider holds them whatever else
// is in flight under the key).
func lookedUp(records []money.Record, all []money.Object, inFlight map[string]bool) []money.Object {
	kept := slices.DeleteFunc(slices.Clone(all), func(o money.Object) bool { return o.Key != "" && inFlight[o.Key] })
	for _, r := range records {
		if !r.Moved || slices.ContainsFunc(kept, func(o money.Object) bool {
			return (o.Kind == r.Kind && o.Key == r.Key) || o.ID == r.ID
		}) {
			continue
		}
		for _, o := range all {
			if o.Kind == r.Kind && (o.Key == r.Key || o.ID == r.ID) && !slices.Contains(kept, o) {
				kept = append(kept, o)
			}
		}
	}
	return kept
}

// providerObjects are the sandbox's charges and refunds as a provider that
// lists them gives them (the Stripe adapter's list): the key their
// metadata carries, none for one made in the dashboard; a charge's open
// dispute (won and warning_closed ones no longer take the money) and what
// its refunds that moved money sum to.
func providerObjects(b books, disputed map[string]string) []money.Object {
	var objects []money.Object
	keep := func(o money.Object) { objects = append(objects, o) }
	for _, in := range b.intents {
		status := money.StatusFailed
		switch in.Status {
		case sandbox.StatusSucceeded:
			status = money.StatusSucceeded
		case sandbox.StatusProcessing:
			status = money.StatusPending
		case sandbox.StatusCanceled:
			status = money.StatusCanceled
		}
		keep(money.Object{Kind: money.Charge, ID: in.ID, Key: in.Metadata[payment.MetadataKeyIdempotencyKey],
			Status: status, Amount: in.Amount, Currency: in.Currency, Dispute: disputed[in.ID],
			Refunded: refunded(b, in.ID), RefundsRead: true})
	}
	for _, r := range b.refunds {
		status := money.StatusFailed
		switch r.Status {
		case sandbox.RefundStatusSucceeded:
			status = money.StatusSucceeded
		case sandbox.RefundStatusPending:
			status = money.StatusPending
		}
		keep(money.Object{Kind: money.Refund, ID: r.ID, Key: r.Metadata[payment.MetadataKeyIdempotencyKey],
			Status: status, Amount: r.Amount, Currency: r.Currency, Charge: r.PaymentIntent})
	}
	slices.SortFunc(objects, func(a, b money.Object) int { return strings.Compare(a.ID, b.ID) })
	return objects
}

// refunded sums the refunds of charge that moved money (succeeded or
// pending).
func refunded(b books, charge string) int64 {
	var sum int64
	for _, r := range b.refunds {
		if r.PaymentIntent == charge && r.Status != sandbox.RefundStatusFailed {
			sum += r.Amount
		}
	}
	return sum
}

// expected is a finding the history calls for: its category, the provider
// object it names, and the act behind the operator's back that made it.
type expected struct {
	category money.Category
	id       string
	act      string
}

// expectedFindings are the findings the acts behind the operator's back
// call for, once the world is quiet; allowed are the ones an act explains
// without calling for them (a dispute of a charge the cluster never
// recorded as its own is no row of its own: the charge's row says it).
func (m *model) expectedFindings(b books, inFlight map[string]bool, disputed map[string]string) (want []expected, allowed map[string]bool) {
	allowed = map[string]bool{}
	// A key charged at both accounts (a key several manifests send, the
	// second sent after its PaymentProvider was pointed at the other
	// account) or charged again after the provider forgot it (the
	// safety rules accept both: docs/reliability.md) is a Duplicate the
	// comparison reports rightly: it reads both accounts' books at once. Its row speaks for
	// the key: a dispute or a dashboard refund of one of its charges is
	// no row of its own.
	at := map[string]map[string]bool{}
	for id, in := range b.intents {
		if in.Status != sandbox.StatusSucceeded {
			continue
		}
		if at[in.IdempotencyKey] == nil {
			at[in.IdempotencyKey] = map[string]bool{}
		}
		at[in.IdempotencyKey][b.accounts[id]] = true
	}
	for id, in := range b.intents {
		if key := in.IdempotencyKey; len(at[key]) > 1 || m.forgotten[key] || m.unrecorded[key] {
			allowed[id] = true
		}
	}
	// A person's resolution the provider could not check (its
	// PaymentProvider reached another account then) stands, recorded as
	// not verified; that is what a reconciliation is for: whatever it
	// reports on the key or the charge named (missing at the provider,
	// another manifest's charge of another amount, money moved under a
	// refused key) is the person's word against the books.
	// The ledger keeps a person's resolution without saying whether the
	// provider checked it: a re-created object finished from it names a
	// charge no account holds, or one held under another key (a job
	// resolved as another payment's charge while its provider reached the
	// other account, then deleted), or a refusal where money moved, only
	// when the check could not be made. An object finished on a person's
	// word the provider could not check that is gone since (a prune, a
	// TTL, a recycled namespace, a restore) leaves its entry only: one
	// naming a charge of another request is that word too (m.unverified).
	for _, e := range b.ledger {
		in, held := b.intents[e.Charge]
		checkable := held && in.IdempotencyKey == e.Key && e.Outcome == paymentsv1alpha1.LedgerCompleted
		if e.ResolvedBy != "" && (!checkable || m.unverified[e.Key]) {
			allowed["key:"+e.Key], allowed[e.Charge] = true, e.Charge != ""
		}
	}
	for i := range b.refs {
		if r := b.refs[i].Status.Resolution; r != nil && !r.Verified {
			allowed["key:"+b.refs[i].Status.IdempotencyKey] = true
			allowed[responseID(b.refs[i].Status.ProviderResponse)] = true
		}
	}
	for i := range b.jobs {
		j := &b.jobs[i]
		id := responseID(j.Status.ProviderResponse)
		if r := j.Status.Resolution; r != nil && !r.Verified {
			allowed["key:"+j.Status.IdempotencyKey], allowed[id] = true, id != ""
		}
	}
	// The charges a record of the cluster names as moved: the comparison
	// reads them as ours, whatever is in flight under their key.
	completedJob := map[string]bool{}
	for i := range b.jobs {
		if j := &b.jobs[i]; j.Status.Phase == paymentsv1alpha1.PhaseCompleted {
			completedJob[responseID(j.Status.ProviderResponse)] = true
		}
	}
	for _, e := range b.ledger {
		if e.Outcome == paymentsv1alpha1.LedgerCompleted && !payment.IsRefundKey(e.Key) {
			completedJob[e.Charge] = true
		}
	}
	completedRefund := map[string]bool{}
	for i := range b.refs {
		if rf := &b.refs[i]; rf.Status.Phase == paymentsv1alpha1.PhaseCompleted {
			completedRefund[responseID(rf.Status.ProviderResponse)] = true
		}
	}
	for _, e := range b.ledger {
		if e.Outcome == paymentsv1alpha1.LedgerCompleted && payment.IsRefundKey(e.Key) {
			completedRefund[e.Charge] = true
		}
	}
	ours := func(charge string) bool {
		in, ok := b.intents[charge]
		key := in.Metadata[payment.MetadataKeyIdempotencyKey]
		return ok && (completedJob[charge] || (key != "" && !inFlight[key]))
	}
	for _, r := range b.refunds {
		if allowed[r.PaymentIntent] {
			// A refund of a charge whose key the Duplicate row speaks
			// for may be reported on a row of its own, or not.
			allowed[r.ID] = true
			continue
		}
		if strings.HasPrefix(r.IdempotencyKey, "dashboard-") && r.Status != sandbox.RefundStatusFailed && ours(r.PaymentIntent) {
			want = append(want, expected{money.RefundedOutside, r.ID, "a dashboard refund of " + r.PaymentIntent})
		}
	}
	// The charges of the cluster's own records, by key: an outside charge
	// under a key the operator charged too (the provider had forgotten
	// the key, or the job's PaymentProvider reached the other account) is
	// a second charge under one key, reported as a Duplicate.
	charged := map[string]bool{}
	for id := range completedJob {
		if in, ok := b.intents[id]; ok && in.Status == sandbox.StatusSucceeded {
			charged[in.IdempotencyKey] = true
		}
	}
	for id, key := range m.behind.outside {
		switch {
		case inFlight[key], allowed[id], allowed["key:"+key]:
		case completedJob[id]:
			// A person resolved a job as this charge: the cluster
			// records it as the job's.
			allowed[id] = true
		case charged[key]:
			want = append(want, expected{money.Duplicate, id, "a second charge under " + key + " by another system"})
		default:
			want = append(want, expected{money.UnknownToCluster, id, "a charge under " + key + " by another system"})
		}
	}
	for charge, dispute := range disputed {
		if completedJob[charge] && !allowed[charge] && !allowed["key:"+b.intents[charge].IdempotencyKey] {
			want = append(want, expected{money.Disputed, charge, "dispute " + dispute})
		}
	}
	for id := range m.behind.failed {
		if completedRefund[id] && !allowed[id] {
			want = append(want, expected{money.RefundFailedAfterSuccess, id, "refund " + id + " failed after it succeeded"})
		}
	}
	return want, allowed
}

// reconciliationViolations: every finding the history calls for is
// reported once; every discrepancy reported is one the history calls for.
func (m *model) reconciliationViolations(b books, inFlight map[string]bool, disputed map[string]string, findings []money.Finding) []string {
	want, allowed := m.expectedFindings(b, inFlight, disputed)
	var v []string
	seen := map[expected]int{}
	for _, f := range findings {
		if !f.Category.Discrepancy() {
			continue
		}
		explained := false
		for _, e := range want {
			if e.category == f.Category && slices.Contains(append(slices.Clone(f.ProviderIDs), f.ClusterID), e.id) {
				seen[e]++
				explained = true
			}
		}
		// A charge or refund whose record an etcd restore took out of the
		// books (its object back to before it, or gone, the ledger's page
		// older) is money the cluster does not know of until its manifest
		// is applied again and finished from the provider:
		// UnknownToCluster is the comparison's right report while it
		// cannot (a suspended job waits for a person, a key another
		// manifest took stalls), as after a cluster rebuilt without its
		// ledger (docs/reliability.md), and its advice (apply the
		// manifest again) moves no money.
		restored := f.Category == money.UnknownToCluster && m.restoredAway[f.Key]
		if !explained && !restored && !allowed["key:"+f.Key] && !slices.ContainsFunc(f.ProviderIDs, func(id string) bool { return allowed[id] }) {
			v = append(v, fmt.Sprintf("reconciliation-justified: %s %s %s (cluster %q, provider %v): %s; advises: %s",
				f.Category, f.Kind, f.Key, f.ClusterID, f.ProviderIDs, f.Detail, f.Action))
		}
	}
	for _, e := range want {
		if n := seen[e]; n != 1 {
			v = append(v, fmt.Sprintf("reconciliation-reports-once: %s (%s) reported %d times as %s", e.act, e.id, n, e.category))
		}
	}
	return v
}
