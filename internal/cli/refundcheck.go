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
	// outside is true for a refund made outside the operator.
	outside bool
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
