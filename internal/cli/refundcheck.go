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
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/ledger"
	"github.com/idempotency-dev/paymentjob-operator/pkg/providerlookup"
)

// What refund checks before it proposes a PaymentRefund: the payment
// exists (its job, or once the job is gone the ledger's entry), the
// amount fits in what is left of the charge, and the name, which is also
// the refund's idempotency key, was never used: not by a PaymentRefund of
// the namespace, not in the outcome ledger, not at the provider. A
// PaymentRefund under a used key is finished from the first refund's
// outcome, and no money goes back.

// The generated name is NAME-refund-XXXXX: the suffix is drawn, as
// Kubernetes draws metadata.generateName's, from consonants and digits
// (no words, no 0/1/o/i to misread). Drawn rather than counted
// (NAME-refund-2) or dated: a count proposes again the name of a refund
// that is deleted (its TTL), or that sits in Git and was never applied,
// and two runs in one second share a date; 27^5 draws make a collision of
// two dry runs unlikely, and the checks below draw again on one.
const (
	refundSuffixAlphabet = "bcdfghjklmnpqrstvwxz2456789"
	refundSuffixLength   = 5
	// refundNameDraws bounds the draws of a free name.
	refundNameDraws = 8
	// maxObjectName is the longest metadata.name (a DNS-1123 subdomain).
	maxObjectName = 253
	// maxRefKey is the longest spec.paymentJobRef.idempotencyKey.
	maxRefKey = 200
)

// refundCheck is one run of refund: what it found out, step by step.
type refundCheck struct {
	o    *refundOptions
	c    client.Client
	ns   string
	t    target
	live []paymentsv1alpha1.PaymentRefund

	// reader is the outcome ledger; ledgerErr says why it cannot be read
	// (reader is nil then).
	reader    ledger.Reader
	closeFn   func()
	ledgerErr error

	pay paidCharge
	// atProvider is the charge as the provider lists it, with its
	// refunds; nil when it was not asked or did not answer.
	atProvider *providerlookup.Charge
	// spent are the refunds that take from the charge.
	spent []spentRefund
	// left is what is left of the charge; -1 when the charge's amount is
	// unknown.
	left     int64
	warnings []string
}

// paidCharge is the charge a refund gives money back from, as the cluster
// knows it, or, once its job is gone, the outcome ledger.
type paidCharge struct {
	// job is nil once the job is gone.
	job *paymentsv1alpha1.PaymentJob
	// jobKey is the job's idempotency key: spec.idempotencyKey, or its name.
	jobKey string
	// sentKey is the key the charge was sent under (status.idempotencyKey,
	// the ledger entry's key); empty when unknown.
	sentKey string
	// id is the provider's id of the charge.
	id string
	// amount is 0 when unknown (a ledger entry older than amounts).
	amount   int64
	currency string
	// since is when this payment began: a refund recorded before it is a
	// refund of an earlier payment of the name.
	since time.Time
	// account is the provider account of the charge, if known.
	account string
	// scope is the key scope of the payment's PaymentProvider.
	scope string
	// pp is the payment's PaymentProvider; nil when it cannot be read.
	pp *paymentsv1alpha1.PaymentProvider
}

// spentRefund is a refund that takes from the charge.
type spentRefund struct {
	// key is its sent key without the provider's key scope ("" when
	// unknown: a refund the provider holds without one).
	key    string
	label  string
	amount int64
}

func (k *refundCheck) warnf(format string, args ...any) {
	k.warnings = append(k.warnings, fmt.Sprintf(format, args...))
}

// warn prints the warnings: what the checks could not see.
func (k *refundCheck) warn() {
	for _, w := range k.warnings {
		fmt.Fprintf(k.o.root.ErrOut(), "warning: %s\n", w)
	}
}

func (k *refundCheck) openLedger(ctx context.Context) error {
	reader, closeFn, err := k.o.ledger.open(ctx, k.c)
	if ExitCode(err) == ExitUsage {
		return err
	}
	k.reader, k.closeFn, k.ledgerErr = reader, closeFn, err
	return nil
}

func (k *refundCheck) close() {
	if k.closeFn != nil {
		k.closeFn()
	}
}

// ledgerFailed records that the ledger could not be read.
func (k *refundCheck) ledgerFailed(err error) {
	k.reader, k.ledgerErr = nil, ledgerError(err)
}

// findPayment finds the payment to refund: its job, or, once the job is
// gone, its entry in the ledger. A payment neither knows is refused
// (exit 3), without advising --provider: that advice is given only when
// the ledger holds the payment.
func (k *refundCheck) findPayment(ctx context.Context) error {
	var pj paymentsv1alpha1.PaymentJob
	err := k.c.Get(ctx, client.ObjectKey{Namespace: k.ns, Name: k.t.Name}, &pj)
	switch {
	case err == nil:
		return k.jobPayment(ctx, &pj)
	case ExitCode(classify(err, "")) != ExitNotFound:
		return classify(err, fmt.Sprintf("%s in namespace %s", k.t, k.ns))
	}
	return k.gonePayment(ctx)
}

func (k *refundCheck) jobPayment(ctx context.Context, pj *paymentsv1alpha1.PaymentJob) error {
	if k.o.provider != "" && k.o.provider != pj.Spec.ProviderRef.Name {
		return usageError("--provider %s is not the PaymentProvider of %s (%s): a refund goes only to the account "+
			"that holds the charge; leave --provider out while the job exists", k.o.provider, k.t, pj.Spec.ProviderRef.Name)
	}
	if pj.Status.Phase != paymentsv1alpha1.PhaseCompleted {
		return notApplicable("%s in namespace %s is %s: only a Completed payment can be refunded", k.t, k.ns, orDash(string(pj.Status.Phase)))
	}
	if key := effectiveKey(pj.Name, pj.Spec.IdempotencyKey); k.o.paymentKey != "" && k.o.paymentKey != key {
		return usageError("--payment-key %s is not the idempotency key of %s (%s): leave --payment-key out while the job exists",
			k.o.paymentKey, k.t, key)
	}
	p := paidCharge{job: pj, jobKey: effectiveKey(pj.Name, pj.Spec.IdempotencyKey), sentKey: pj.Status.IdempotencyKey,
		amount: pj.Spec.Amount, currency: pj.Spec.Currency, since: pj.CreationTimestamp.Time}
	if r := pj.Status.ProviderResponse; r != nil {
		p.id = r.ID
		if r.Amount > 0 {
			p.amount, p.currency = r.Amount, r.Currency
		}
	}
	if id := pj.Status.Provider; id != nil {
		p.account, p.scope = id.Account, id.KeyScope
	}
	var pp paymentsv1alpha1.PaymentProvider
	switch err := k.c.Get(ctx, client.ObjectKey{Namespace: k.ns, Name: pj.Spec.ProviderRef.Name}, &pp); {
	case err == nil:
		p.pp, p.scope = &pp, pp.Spec.KeyScope
	case k.o.checkProvider:
		k.warnf("the provider was not asked for the charge's refunds: %v", classify(err, "PaymentProvider "+k.ns+"/"+pj.Spec.ProviderRef.Name))
	}
	k.pay = p
	return nil
}

// gonePayment finds the payment of a job that is gone in the ledger, under
// the key the operator looks it up with: the job's key (--payment-key, or
// its name) under the key scope of --provider.
func (k *refundCheck) gonePayment(ctx context.Context) error {
	notFound := fmt.Sprintf("%s not found in namespace %s", k.t, k.ns)
	jobKey, hint := effectiveKey(k.t.Name, k.o.paymentKey), ", or, if its job set spec.idempotencyKey, give that key with --payment-key"
	if k.o.paymentKey != "" {
		hint = ""
	}
	if k.reader == nil {
		err := fmt.Errorf("%s, and whether the outcome ledger holds its payment cannot be told: %w. The operator refunds "+
			"a payment whose job is gone only from its ledger entry: check the name, or ask someone who may read the ledger "+
			"(kubectl payments ledger find pj/%s -n %s)", notFound, k.ledgerErr, k.t.Name, k.ns)
		if k.o.provider == "" {
			return &Error{Code: ExitNotFound, Err: err}
		}
		return &Error{Code: ExitCode(k.ledgerErr), Err: err}
	}
	entries, err := k.reader.Find(ctx, ledger.SentKey(k.ns, jobKey))
	if err != nil {
		k.ledgerFailed(err)
		return k.gonePayment(ctx)
	}
	if len(entries) == 0 {
		return &Error{Code: ExitNotFound, Err: fmt.Errorf("%s, and the %s outcome ledger holds no payment under its key %s: "+
			"check the name and the namespace (-n)%s; nothing to refund", notFound, k.o.ledger.backend, ledger.SentKey(k.ns, jobKey), hint)}
	}
	if k.o.provider == "" {
		i := slices.IndexFunc(entries, func(e ledger.Entry) bool { return e.Outcome == paymentsv1alpha1.LedgerCompleted })
		if i < 0 {
			return notApplicable("%s: the outcome ledger records that its payment failed (%s): nothing was charged, so nothing "+
				"is refunded", notFound, orDash(entries[0].Reason))
		}
		e := entries[i]
		return &Error{Code: ExitNotFound, Err: fmt.Errorf("%s: its job was deleted, and the outcome ledger holds its payment "+
			"(%s %s, charge %s, recorded %s at account %s): to refund it, name its PaymentProvider with --provider",
			notFound, e.Outcome, money(e.Amount, e.Currency), orDash(e.Charge), e.At.Format(time.RFC3339), orDash(e.Provider.Account))}
	}
	var pp paymentsv1alpha1.PaymentProvider
	if err := k.c.Get(ctx, client.ObjectKey{Namespace: k.ns, Name: k.o.provider}, &pp); err != nil {
		return classify(err, fmt.Sprintf("PaymentProvider %s/%s", k.ns, k.o.provider))
	}
	key := sentJobKey(pp.Spec.KeyScope, k.ns, jobKey)
	var found *ledger.Entry
	var others []string
	for i, e := range entries {
		if e.Key == key {
			found = &entries[i]
			continue
		}
		others = append(others, fmt.Sprintf("%s at account %s", e.Key, orDash(e.Provider.Account)))
	}
	switch {
	case found == nil:
		return &Error{Code: ExitNotFound, Err: fmt.Errorf("%s, and the outcome ledger holds no payment under %s, the key "+
			"PaymentProvider %s gives it (it holds %s): a refund through --provider %s would never find the payment; name "+
			"the PaymentProvider of the account that was charged", notFound, key, pp.Name, strings.Join(others, ", "), pp.Name)}
	case found.Outcome != paymentsv1alpha1.LedgerCompleted:
		return notApplicable("the outcome ledger records that %s failed (%s): nothing was charged, so nothing is refunded",
			k.t, orDash(found.Reason))
	}
	k.pay = paidCharge{jobKey: jobKey, sentKey: found.Key, id: found.Charge, amount: found.Amount, currency: found.Currency,
		since: found.At, account: found.Provider.Account, scope: pp.Spec.KeyScope, pp: &pp}
	return nil
}

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
		add(spentRefund{label: "refunds without a key at the provider", amount: other})
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

// checkLeft computes what is left of the charge and refuses an amount
// over it; without --amount, a refund after others asks for the rest.
func (k *refundCheck) checkLeft() error {
	k.left = -1
	if k.pay.amount == 0 {
		k.warnf("the amount of charge %s is not known here (its ledger entry predates amounts, and the provider was not read): "+
			"the operator refuses a refund over what is left (RefundExceedsCharge)", orDash(k.pay.id))
		return nil
	}
	left := k.pay.amount
	by := make([]string, 0, len(k.spent))
	for _, r := range k.spent {
		amount := r.amount
		if amount < 0 {
			amount = max(left, 0)
		}
		left -= amount
		by = append(by, fmt.Sprintf("%s %d", r.label, amount))
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

// refundName is --name once checked, or a drawn name no refund has used.
//
// A name the user gives must be checked against the ledger too: a name
// used before is how a refund comes to be finished from another's
// outcome. A drawn one is new unless the draw repeats one, so it is
// checked against what can be read, with a warning when the ledger cannot.
func (k *refundCheck) refundName(ctx context.Context) (string, error) {
	if k.o.name == "" {
		for range refundNameDraws {
			name := drawRefundName(k.t.Name, rand.IntN)
			if k.used(ctx, name) == "" {
				return name, nil
			}
		}
		return "", fmt.Errorf("no free PaymentRefund name after %d draws; name one with --name", refundNameDraws)
	}
	used := k.used(ctx, k.o.name)
	if used != "" {
		return "", notApplicable("--name %s was used already: %s. A PaymentRefund under a used key is finished from that "+
			"refund's outcome, and no money goes back; leave --name out, or name another", k.o.name, used)
	}
	if k.reader == nil {
		return "", &Error{Code: ExitCode(k.ledgerErr), Err: fmt.Errorf("cannot check --name %s against the outcome ledger: %w. "+
			"A PaymentRefund under a key the ledger holds is finished from that refund, and no money goes back: "+
			"leave --name out (a drawn name is new), or ask someone who may read the ledger", k.o.name, k.ledgerErr)}
	}
	return k.o.name, nil
}

// used says who has used name as a refund's key already ("" when none):
// a PaymentRefund of the namespace (its name or its key), the provider's
// list of the charge's refunds, or the ledger. A ledger that cannot be
// read is noted (reader nil, a warning).
func (k *refundCheck) used(ctx context.Context, name string) string {
	for _, rf := range k.live {
		switch {
		case rf.Name == name:
			return fmt.Sprintf("PaymentRefund %s/%s exists (follow it with kubectl payments status prefund/%s -n %s)",
				k.ns, name, name, k.ns)
		case effectiveKey(rf.Name, rf.Spec.IdempotencyKey) == name:
			return fmt.Sprintf("PaymentRefund %s/%s has that key", k.ns, rf.Name)
		}
	}
	key := unscoped(sentRefundKey(k.pay.scope, k.ns, name))
	if ch := k.atProvider; ch != nil {
		for _, r := range ch.Refunds {
			if unscoped(r.Key) == key {
				return fmt.Sprintf("the provider holds refund %s of charge %s under its key (%s %s)", r.ID, ch.ID, r.State,
					money(r.Amount, r.Currency))
			}
		}
	}
	if k.reader == nil {
		return ""
	}
	entries, err := k.reader.Find(ctx, ledger.RefundKey(k.ns, name))
	if err != nil {
		k.ledgerFailed(err)
		k.warnf("the outcome ledger could not be read (%v): the refund's name is not checked against it", k.ledgerErr)
		return ""
	}
	if len(entries) > 0 {
		e := entries[len(entries)-1]
		return fmt.Sprintf("the outcome ledger holds a refund under its key %s (%s, %s, %s, recorded %s)", e.Key, e.Outcome,
			orDash(e.Charge), money(e.Amount, e.Currency), e.At.Format(time.RFC3339))
	}
	return ""
}

// manifest is the PaymentRefund of the checks, named name.
func (k *refundCheck) manifest(name string) *paymentsv1alpha1.PaymentRefund {
	ref := paymentsv1alpha1.PaymentJobReference{Name: k.t.Name}
	// The job's key finds its payment in the ledger once the job is
	// gone. A name longer than the field allows is left to the operator's
	// default, which is the name.
	if k.pay.jobKey != k.t.Name || len(k.pay.jobKey) <= maxRefKey {
		ref.IdempotencyKey = k.pay.jobKey
	}
	provider := k.o.provider
	if k.pay.job != nil {
		provider = k.pay.job.Spec.ProviderRef.Name
	}
	rf := &paymentsv1alpha1.PaymentRefund{
		TypeMeta:   metav1.TypeMeta{APIVersion: paymentsv1alpha1.GroupVersion.String(), Kind: "PaymentRefund"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.ns},
		Spec: paymentsv1alpha1.PaymentRefundSpec{
			ProviderRef:   paymentsv1alpha1.ProviderReference{Name: provider},
			PaymentJobRef: ref,
			Reason:        paymentsv1alpha1.RefundReason(k.o.reason),
		},
	}
	if k.o.amount > 0 {
		rf.Spec.Amount = ptr.To(k.o.amount)
	}
	return rf
}

// drawRefundName is job's name, cut to leave room, then "-refund-" and a
// suffix drawn with intN: a valid object name of at most 253 characters.
func drawRefundName(job string, intN func(int) int) string {
	suffix := make([]byte, refundSuffixLength)
	for i := range suffix {
		suffix[i] = refundSuffixAlphabet[intN(len(refundSuffixAlphabet))]
	}
	tail := "-refund-" + string(suffix)
	if room := maxObjectName - len(tail); len(job) > room {
		job = strings.TrimRight(job[:room], "-.")
	}
	return job + tail
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

// unscoped is a sent key without its provider's key scope:
// "<namespace>[.refund]/<key>".
func unscoped(key string) string {
	scope, rest, ok := strings.Cut(key, ":")
	if ok && !strings.Contains(scope, "/") {
		return rest
	}
	return key
}

// effectiveKey is an object's idempotency key: spec.idempotencyKey, or
// its name.
func effectiveKey(name, specKey string) string {
	if specKey != "" {
		return specKey
	}
	return name
}

// sentJobKey is the key the operator sends for a PaymentJob with key in
// namespace through a PaymentProvider with key scope scope
// ("[<scope>:]<namespace>/<key>", hashed when too long), as
// internal/payment.ScopedKey forms it: a scope is prefixed to the
// namespace before the key is hashed.
func sentJobKey(scope, namespace, key string) string {
	if scope != "" {
		namespace = scope + ":" + namespace
	}
	return ledger.SentKey(namespace, key)
}

// sentRefundKey is sentJobKey for a PaymentRefund, as
// internal/payment.RefundKey forms it.
func sentRefundKey(scope, namespace, key string) string {
	if scope != "" {
		namespace = scope + ":" + namespace
	}
	return ledger.RefundKey(namespace, key)
}
