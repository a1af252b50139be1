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
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// What status says of the money: what was refunded of the charge and what
// is left, counted as refund counts it (refundCheck), and why a refund of
// the job failed.

// RefundPicture is what was refunded of a charge and what is left of it.
type RefundPicture struct {
	// Job is the PaymentJob of the charge.
	Job string `json:"job"`
	// Charge is the provider's id of the charge.
	Charge   string `json:"charge,omitempty"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency,omitempty"`
	// Refunded is what the refunds below gave back (or hold, pending).
	Refunded int64 `json:"refunded"`
	// Left is what is left of the charge to refund.
	Left int64 `json:"left"`
	// Refunds are the refunds counted: the job's PaymentRefunds that did
	// not fail, and, from the provider's list (countedAtProvider) or
	// else the ledger, refunds without a PaymentRefund.
	Refunds []RefundTaken `json:"refunds,omitempty"`
	// CountedAtProvider is true when the provider's own list of the
	// charge's refunds was read (--check-provider): refunds made outside
	// the operator are counted. Otherwise they are not.
	CountedAtProvider bool `json:"countedAtProvider"`
	// Notes say what the count could not see.
	Notes []string `json:"notes,omitempty"`

	// asked is true when the provider was to be asked (--check-provider).
	asked bool
}

// RefundTaken is one refund that takes from the charge.
type RefundTaken struct {
	Name   string `json:"name"`
	Amount int64  `json:"amount"`
	// Outside is true for a refund made outside the operator (the
	// provider's dashboard or API, under no key).
	Outside bool `json:"outside,omitempty"`
}

// refundPicture counts the refunds of the job's charge as refund does:
// job names the PaymentJob, provider and paymentKey the PaymentProvider
// and key to find its payment in the ledger once the job is gone. It is
// nil, with why, when the charge cannot be told.
func (o *statusOptions) refundPicture(ctx context.Context, c client.Client, ns, job, provider, paymentKey string) (*RefundPicture, string) {
	var live paymentsv1alpha1.PaymentRefundList
	if err := c.List(ctx, &live, client.InNamespace(ns)); err != nil {
		return nil, classify(err, "the PaymentRefunds of namespace "+ns).Error()
	}
	ro := &refundOptions{root: o.root, provider: provider, paymentKey: paymentKey, bookFlags: o.bookFlags}
	k := &refundCheck{o: ro, c: c, ns: ns, t: target{Kind: kindJob, Name: job}, live: live.Items}
	if err := k.openLedger(ctx); err != nil {
		return nil, err.Error()
	}
	defer k.close()
	if err := k.findPayment(ctx); err != nil {
		return nil, err.Error()
	}
	k.askProvider(ctx)
	k.readRefunds(ctx)
	if k.pay.amount == 0 {
		return nil, fmt.Sprintf("the amount of charge %s is not known (its ledger entry predates amounts)", orDash(k.pay.id))
	}
	left, taken := k.tally()
	p := &RefundPicture{Job: job, Charge: k.pay.id, Amount: k.pay.amount, Currency: k.pay.currency, Left: max(left, 0),
		CountedAtProvider: k.atProvider != nil, Notes: k.warnings}
	for _, r := range taken {
		p.Refunded += r.amount
		p.Refunds = append(p.Refunds, RefundTaken{Name: r.label, Amount: r.amount, Outside: r.outside})
	}
	p.asked = o.checkProvider
	return p, ""
}

// line is the picture in one line: "500 of 1999 usd, 1499 left".
func (p *RefundPicture) line() string {
	s := fmt.Sprintf("%d of %s, %d left", p.Refunded, money(p.Amount, p.Currency), p.Left)
	var outside int64
	for _, r := range p.Refunds {
		if r.Outside {
			outside += r.Amount
		}
	}
	switch {
	case p.CountedAtProvider && outside > 0:
		s += fmt.Sprintf(" (the provider's list; %d of it refunded outside the operator)", outside)
	case p.CountedAtProvider:
		s += " (the provider's list)"
	case p.asked:
		s += " (refunds made outside the operator, in the dashboard, are not counted: the provider's list was not read)"
	default:
		s += " (refunds made outside the operator, in the dashboard, are not counted: add --check-provider to see them)"
	}
	return s
}

// whyFailed is why a refund failed or is stuck: its failure, or
// the reason of its Stalled condition, with a short message.
func whyFailed(st *paymentsv1alpha1.PaymentStatus) string {
	if f := st.Failure; f != nil && st.Phase == paymentsv1alpha1.PhaseFailed {
		return f.Reason + ": " + shorten(f.Message, 60)
	}
	if st.Phase == paymentsv1alpha1.PhaseFailed || stalledReason(st) != "" {
		return shorten(why(st), 70)
	}
	return ""
}

// shorten cuts s to n characters at most, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.TrimSpace(s[:n-3]) + "..."
}

// unsentFailure says, for an object that failed before anything was sent
// to the provider (no attempt, no answer), what the ledger records of it:
// nothing. It is empty for any other object.
func unsentFailure(kind string, st *paymentsv1alpha1.PaymentStatus) string {
	if st.Phase != paymentsv1alpha1.PhaseFailed || st.Attempts > 0 || st.ProviderResponse != nil {
		return ""
	}
	what := "payment"
	if kind == string(kindRefund) {
		what = "refund"
	}
	return fmt.Sprintf("not recorded: the %s failed before anything was sent to the provider, so no money moved "+
		"(the operator records only outcomes of a provider call)", what)
}

// unsentFinding is, for ledger find of arg (TYPE/NAME) that names an
// object that failed before anything was sent, what the ledger records of
// it (unsentFailure); empty otherwise.
func unsentFinding(ctx context.Context, c client.Client, ns, arg string) string {
	typ, name, ok := strings.Cut(arg, "/")
	k, isObject := kindNames[strings.ToLower(typ)]
	if !ok || !isObject {
		return ""
	}
	obj := newPayment(k)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		return ""
	}
	return unsentFailure(string(k), obj.GetPaymentStatus())
}
