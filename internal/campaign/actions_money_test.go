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

	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentrefund"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// Money moved behind the operator's back, at the provider, and a person's
// resolution of a stuck refund. The dashboard refund (actions_test.go) is
// the first of the acts behind the operator's back; these are the others.
// The model records each (behind), for the oracle: the acts explain the
// provider's books where they differ from what the operator did, and are
// what the reconciliation must report (oracle_reconcile_test.go).

// outsideKeyDescription is the description of a charge made outside: not
// the operator's ("campaign"), so that its request is never the
// operator's, and a job sending the key is refused as a key reused.
const outsideKeyDescription = "charged by another system"

// chargeOutside is someone else (another system, a script replayed by
// hand) charging at the provider under a key a manifest sends or will
// send: a job's own name, that nothing has charged yet. The charge carries the key in its
// metadata, as a system copying the operator's requests would, but not
// the operator's request: the job sending the key is refused (the key
// reused) and moved nothing of its own.
func (c *campaign) chargeOutside(t *rapid.T) {
	// Keys of one job each: the next job's name (if it sends its name) and
	// the jobs sending their own names. A shared key (order-1) would take
	// every job sending it out of the ordinary path.
	var keys []string
	for _, ns := range namespaces {
		keys = append(keys, payment.ScopedKey(c.w.scopes[ns], ns, fmt.Sprintf("job-%d", len(c.m.jobs))))
	}
	for _, j := range c.m.jobs {
		if j.key == "" {
			keys = append(keys, j.sentKey())
		}
	}
	// Keys any charge of either account holds, even one the provider
	// forgot, are the operator's already.
	held := map[string]bool{}
	for _, e := range []*sandbox.Engine{c.w.sbx, c.w.other} {
		intents, err := allIntents(e)
		if err != nil {
			t.Fatalf("cannot list the charges of %s: %v", e.Account(), err)
		}
		for _, in := range intents {
			held[in.IdempotencyKey] = true
		}
	}
	slices.Sort(keys)
	keys = slices.DeleteFunc(slices.Compact(keys), func(k string) bool { return held[k] })
	if len(keys) == 0 {
		t.Skip("every key charged already")
	}
	key := rapid.SampledFrom(keys).Draw(t, "key")
	amount := rapid.SampledFrom([]int64{500, 1000, 2500}).Draw(t, "amount")
	in, _, err := c.w.sbx.CreatePaymentIntent(key, sandbox.PaymentIntentParams{Amount: amount, Currency: currency,
		PaymentMethod: "pm_card_visa", Description: outsideKeyDescription,
		Metadata: map[string]string{payment.MetadataKeyIdempotencyKey: key}})
	t.Logf("another system charges %d under our key %s: %s %s, %v", amount, key, in.ID, in.Status, err)
	// A fault meant for the operator's next request may take this one:
	// an answer lost after the provider committed still charged.
	in, charged := c.w.sbx.LookupByKey(key)
	if !charged || in.Description != outsideKeyDescription || in.Status != sandbox.StatusSucceeded {
		return
	}
	if c.m.behind.outside == nil {
		c.m.behind.outside = map[string]string{}
	}
	c.m.behind.outside[in.ID] = key
}

// dispute is a cardholder disputing a succeeded charge, or the provider
// deciding an open dispute (won: the money stays; lost: it went back;
// under review).
func (c *campaign) dispute(t *rapid.T) {
	intents, err := c.w.intents()
	if err != nil {
		t.Fatalf("cannot list the provider's charges: %v", err)
	}
	var open []string
	for _, in := range intents {
		if in.Status == sandbox.StatusSucceeded {
			open = append(open, in.ID)
		}
	}
	for id, charge := range c.m.behind.disputes {
		open = slices.DeleteFunc(open, func(o string) bool { return o == charge })
		open = append(open, id)
	}
	if len(open) == 0 {
		t.Skip("nothing to dispute")
	}
	slices.Sort(open)
	id := rapid.SampledFrom(open).Draw(t, "charge or dispute")
	if _, disputed := c.m.behind.disputes[id]; disputed {
		status := rapid.SampledFrom([]string{sandbox.DisputeStatusUnderReview, sandbox.DisputeStatusWon,
			sandbox.DisputeStatusLost}).Draw(t, "status")
		_, err := c.w.sbx.SetDisputeStatus(id, status)
		t.Logf("the provider moves dispute %s of %s to %s: %v", id, c.m.behind.disputes[id], status, err)
		return
	}
	d, err := c.w.sbx.OpenDispute(id, sandbox.DisputeReasonFraudulent)
	t.Logf("a cardholder disputes %s: %s, %v", id, d.ID, err)
	if err != nil {
		return
	}
	if c.m.behind.disputes == nil {
		c.m.behind.disputes = map[string]string{}
	}
	c.m.behind.disputes[d.ID] = id
}

// failRefund is the provider failing a refund after it succeeded (the
// customer's card was closed): the money is back with the account. The
// refund is the operator's or a dashboard's.
func (c *campaign) failRefund(t *rapid.T) {
	var ids []string
	for _, r := range c.w.sbx.ListRefunds("") {
		if r.Status != sandbox.RefundStatusFailed {
			ids = append(ids, r.ID)
		}
	}
	if len(ids) == 0 {
		t.Skip("no refund to fail")
	}
	slices.Sort(ids)
	id := rapid.SampledFrom(ids).Draw(t, "refund")
	r, err := c.w.sbx.FailRefund(id, sandbox.RefundFailureExpiredOrCanceledCard)
	t.Logf("the provider fails refund %s (key %s, %d of %s) after it succeeded: %v", id, r.IdempotencyKey, r.Amount, r.PaymentIntent, err)
	if err != nil {
		return
	}
	if c.m.behind.failed == nil {
		c.m.behind.failed = map[string]bool{}
	}
	c.m.behind.failed[id] = true
}

// resolveRefund is a person resolving a refund by its annotation, as
// docs/refunds.md says: charged= the refund under its key (right),
// charged= another refund or one that does not exist (wrong), or
// not-charged (right only when nothing went back under its key).
func (c *campaign) resolveRefund(t *rapid.T) {
	r := c.pickUnfinished(t, kindRefund)
	rf := &paymentsv1alpha1.PaymentRefund{}
	if err := c.w.store.Get(context.Background(), r.key, rf); err != nil {
		t.Fatalf("cannot read %s: %v", r, err)
	}
	key := rf.Status.IdempotencyKey
	if key == "" {
		key = payment.RefundKey("", rf.Namespace, rf.Name)
	}
	refunds := c.w.sbx.ListRefunds("")
	ids := make([]string, 0, len(refunds)+1)
	ids = append(ids, "re_doesnotexist")
	var under []string
	for _, made := range refunds {
		ids = append(ids, made.ID)
		if made.IdempotencyKey == key {
			under = append(under, made.ID+" "+made.Status)
		}
	}
	slices.Sort(ids)
	value := "not-charged"
	if rapid.Bool().Draw(t, "charged") {
		value = "charged=" + rapid.SampledFrom(ids).Draw(t, "id")
	}
	if rf.Annotations == nil {
		rf.Annotations = map[string]string{}
	}
	rf.Annotations[paymentsv1alpha1.AnnotationResolve] = value
	rf.Annotations[paymentsv1alpha1.AnnotationResolvedBy] = "alice@example.com"
	t.Logf("a person resolves %s (phase %s) as %q; the provider holds %v under its key %s", r, rf.Status.Phase, value, under, key)
	if err := c.w.store.Update(context.Background(), rf); err != nil {
		t.Fatalf("cannot annotate %s: %v", r, err)
	}
}

// refundWatch is a round of a manager's refund watch (cmd/main.go runs it
// every --refund-recheck-interval): the Completed refunds are read again
// at the provider, and one the provider failed after it succeeded is set
// Failed (RefundFailedAfterSuccess); the ledger keeps its first outcome,
// Completed (docs/operations.md, "A refund failed after it succeeded").
func (c *campaign) refundWatch(t *rapid.T) {
	i := rapid.IntRange(0, len(c.w.managers)-1).Draw(t, "manager")
	watch := &paymentrefund.RefundWatch{Refunds: c.w.managers[i].refs, Reader: c.w.store}
	err := watch.Round(log.IntoContext(context.Background(), c.w.logger))
	t.Logf("manager %d's refund watch reads the completed refunds again: %v", i, err)
}

// String lists what was done behind the operator's back, for a report.
func (b *behind) String() string {
	return fmt.Sprintf("charged outside %v, disputes %v, refunds failed %v", b.outside, b.disputes, b.failed)
}
