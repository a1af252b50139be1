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

package cli

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/ledger"
	"github.com/idempotency-dev/paymentjob-operator/pkg/providerlookup"
)

// What is left of the charge a refund gives money back from: the job's
// PaymentRefunds, the provider's list of the charge's refunds, or the
// refunds the ledger records for the charge.

// askProvider reads the charge's refunds at the provider, read-only, when
// --check-provider and it can; otherwise it says why not.
func (k *refundCheck) askProvider(ctx context.Context) {
	p := k.pay
	if !k.o.checkProvider || p.pp == nil {
		return
	}
	notAsked := "the provider's list of the charge's refunds was not read (%s); what is left counts the refunds the " +
		"cluster and the ledger know, and the operator checks the provider's list before it refunds"
	if p.sentKey == "" {
		k.warnf(notAsked, "the payment's idempotency key is not known")
		return
	}
	opts := providerlookup.Options{InsecureHosts: k.o.insecureHosts}
	charges, err := providerlookup.Lookup(ctx, k.c, p.pp, p.sentKey, opts)
	if err != nil {
		k.warnf(notAsked, lookupError(err, p.pp).Error())
		return
	}
	var ch *providerlookup.Charge
	for i := range charges {
		if charges[i].ID == p.id || (p.id == "" && charges[i].State == "Succeeded") {
			ch = &charges[i]
			break
		}
	}
	switch {
	case ch == nil:
		k.warnf(notAsked, fmt.Sprintf("the provider does not show charge %s under %s yet: a search index lags behind", orDash(p.id), p.sentKey))
		return
	case !ch.RefundsListed:
		k.warnf(notAsked, fmt.Sprintf("PaymentProvider %s does not list refunds", p.pp.Name))
		return
	}
	if p.account != "" {
		switch account, err := providerlookup.Account(ctx, k.c, p.pp, opts); {
		case err != nil:
			k.warnf(notAsked, "the provider's account could not be told: "+err.Error())
			return
		case account != "" && account != p.account:
			k.warnf(notAsked, fmt.Sprintf("the provider now reaches account %s, not %s where the payment was charged", account, p.account))
			return
		}
	}
	k.atProvider = ch
	if p.amount == 0 {
		k.pay.amount, k.pay.currency = ch.Amount, ch.Currency
	}
}

// readRefunds lists the refunds that take from the charge: the job's
// PaymentRefunds that did not fail, then the provider's list when it was
// read (it is the whole truth, refunds made by hand included), or else
// the refunds the ledger records for the charge (refundsCharge). A refund
// is counted once: a ledger entry or a provider's refund under the key of
// a PaymentRefund counted already (its status.idempotencyKey) is that
// PaymentRefund.
func (k *refundCheck) readRefunds(ctx context.Context) {
	seen := map[string]int{}
	add := func(r spentRefund) {
		if i, ok := seen[r.key]; ok && r.key != "" {
			// The same refund: the later source (the provider) knows
			// the amount that went back.
			k.spent[i].amount = r.amount
			return
		}
		seen[r.key] = len(k.spent)
		k.spent = append(k.spent, r)
	}
	for _, rf := range k.live {
		if r, ok := k.liveRefund(rf); ok {
			add(r)
		}
	}
	if k.atProvider != nil {
		k.providerRefunds(add)
		return
	}
	if k.reader == nil {
		k.warnf("the outcome ledger could not be read (%v): what is left does not count refunds whose PaymentRefund is "+
			"deleted; the operator checks the provider's list before it refunds", k.ledgerErr)
		return
	}
	if err := k.ledgerRefunds(ctx, seen, add); err != nil {
		k.ledgerFailed(err)
		k.warnf("the outcome ledger could not be read (%v): what is left does not count refunds whose PaymentRefund is "+
			"deleted; the operator checks the provider's list before it refunds", k.ledgerErr)
	}
}

// liveRefund is what PaymentRefund rf takes from the charge, and whether
// it takes from it at all: a refund of the job that did not fail, and not
// of an earlier payment of a job of this name.
func (k *refundCheck) liveRefund(rf paymentsv1alpha1.PaymentRefund) (spentRefund, bool) {
	if rf.Spec.PaymentJobRef.Name != k.t.Name || rf.Status.Phase == paymentsv1alpha1.PhaseFailed {
		return spentRefund{}, false
	}
	if ch := rf.Status.Charge; ch != nil && k.pay.id != "" && ch.ID != k.pay.id {
		// A refund of an earlier payment of a job of this name.
		return spentRefund{}, false
	}
	amount := int64(-1) // a whole refund takes what is left
	switch {
	case rf.Status.ProviderResponse != nil && rf.Status.ProviderResponse.Amount > 0:
		amount = rf.Status.ProviderResponse.Amount
	case rf.Spec.Amount != nil:
		amount = *rf.Spec.Amount
	}
	key := rf.Status.IdempotencyKey
	if key == "" {
		key = sentRefundKey(k.pay.scope, k.ns, effectiveKey(rf.Name, rf.Spec.IdempotencyKey))
	}
	return spentRefund{key: unscoped(key), label: "prefund/" + rf.Name, amount: amount}, true
}

// providerRefunds adds the refunds of the provider's list of the charge
// (k.atProvider), those it did not make left out, and what it refunded
// under no key as one more.
func (k *refundCheck) providerRefunds(add func(spentRefund)) {
	ch := k.atProvider
	var keyed int64
	for _, r := range ch.Refunds {
		if r.State == "NotCharged" {
			continue
		}
		keyed += r.Amount
		add(spentRefund{key: unscoped(r.Key), label: refundLabel(r.Key, "at the provider, "+r.ID), amount: r.Amount})
	}
	if other := ch.Refunded - keyed; other > 0 {
		// Refunds without a key: made outside the operator (the
		// dashboard, the provider's API by hand).
		add(spentRefund{label: outsideLabel, amount: other, outside: true})
	}
}

// ledgerRefunds adds the completed refunds the ledger records for the
// charge (refundsCharge) and its account, but none under a key in seen
// (counted already). It returns the error of reading the ledger.
func (k *refundCheck) ledgerRefunds(ctx context.Context, seen map[string]int, add func(spentRefund)) error {
	return k.reader.Each(ctx, ledger.Filter{Namespace: k.ns, Since: k.pay.since}, func(e ledger.Entry) error {
		key := unscoped(e.Key)
		if _, ok := seen[key]; ok {
			return nil
		}
		if !e.Refund || e.Outcome != paymentsv1alpha1.LedgerCompleted || !k.refundsCharge(e, key) ||
			(e.Provider.Account != "" && k.pay.account != "" && e.Provider.Account != k.pay.account) {
			return nil
		}
		if e.Amount == 0 {
			k.warnf("the ledger records refund %s without its amount (an entry older than amounts): what is left does not count it", e.Key)
		}
		add(spentRefund{key: key, label: refundLabel(e.Key, "in the ledger, "+orDash(e.Charge)), amount: e.Amount})
		return nil
	})
}

// outsideLabel names, in a message, what the provider refunded under no
// key.
const outsideLabel = "refunds made outside the operator (at the provider, without a key; the dashboard)"

// tally is what is left of the charge once the refunds that take from it
// are counted, and those refunds, each with what it took (a whole refund
// takes what was left).
func (k *refundCheck) tally() (int64, []spentRefund) {
	left := k.pay.amount
	taken := make([]spentRefund, 0, len(k.spent))
	for _, r := range k.spent {
		if r.amount < 0 {
			r.amount = max(left, 0)
		}
		left -= r.amount
		taken = append(taken, r)
	}
	return left, taken
}

// checkLeft computes what is left of the charge and refuses an amount
// over it; without --amount, a refund after others asks for the rest.
func (k *refundCheck) checkLeft() error {
	k.left = -1
	if k.pay.amount == 0 {
		k.warnf("the amount of charge %s is not known here (its ledger entry predates amounts, and the provider was not read): "+
			"the operator refuses a refund over what is left (RefundExceedsCharge)", orDash(k.pay.id))
		return nil
	}
	left, taken := k.tally()
	by := make([]string, 0, len(taken))
	for _, r := range taken {
		by = append(by, fmt.Sprintf("%s %d", r.label, r.amount))
	}
	if left <= 0 {
		return notApplicable("%s is refunded in whole already (%s)", k.t, strings.Join(by, ", "))
	}
	if k.o.amount > left {
		refunded := "nothing refunded"
		if len(by) > 0 {
			refunded = "refunded: " + strings.Join(by, ", ")
		}
		return notApplicable("--amount %d is more than what is left of %s: %s (%s)", k.o.amount, k.t,
			money(left, k.pay.currency), refunded)
	}
	if k.o.amount == 0 && len(by) > 0 {
		// A PaymentRefund without an amount refunds the whole charge,
		// which is more than is left: ask for the rest.
		k.o.amount = left
	}
	k.left = left
	return nil
}

// refundsCharge reports whether the ledger's refund entry e, under the
// unscoped key, gave money back from the charge: the entry names the
// charge it refunded (Entry.RefundedCharge), whatever the refund's name.
// An entry recorded before the ledger kept that, or a charge whose id is
// not known here, is told by the name refund gives the job's refunds
// (namedForJob).
func (k *refundCheck) refundsCharge(e ledger.Entry, key string) bool {
	if e.RefundedCharge != "" && k.pay.id != "" {
		return e.RefundedCharge == k.pay.id
	}
	return namedForJob(key, k.ns, k.t.Name)
}

// refundNameOf matches the names refund gives a job's refunds, now and
// before (NAME-refund, NAME-refund-2): NAME-refund with at most one more
// segment.
var refundNameOf = regexp.MustCompile(`^(.+)-refund(-[a-z0-9]+)?$`)

// namedForJob reports whether the refund key (unscoped) carries a name
// refund gives the refunds of job: a ledger entry recorded before the
// ledger kept the refunded charge tells a deleted PaymentRefund to be the
// job's only by its name.
func namedForJob(key, ns, job string) bool {
	prefix := ns + ".refund/"
	if !strings.HasPrefix(key, prefix) {
		return false
	}
	m := refundNameOf.FindStringSubmatch(strings.TrimPrefix(key, prefix))
	return m != nil && m[1] == job
}

// refundLabel names a refund known by its key, for a message.
func refundLabel(key, where string) string {
	name := unscoped(key)
	if _, after, ok := strings.Cut(name, "/"); ok {
		name = after
	}
	return fmt.Sprintf("%s (no PaymentRefund; %s)", name, where)
}
