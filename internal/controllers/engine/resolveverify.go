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

package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
)

// What the provider says of a person's resolution: whether it holds the
// charge named, or nothing under the key; and when it cannot say yet.

// verifyResolution asks the provider whether it agrees: it holds the charge
// (under this object's key, succeeded), or it holds no charge under the key.
// why says why the provider contradicts the resolution; err that it could
// not be asked. verified is false when the provider cannot look charges up.
func (r *Reconciler) verifyResolution(ctx context.Context, obj Object, want resolution) (verified bool, o payment.Outcome, why string, err error) {
	req, w := r.requestOf(obj), r.Kind.Words()
	o = payment.Outcome{ID: want.id, Status: "succeeded", Amount: req.Amount, Currency: req.Currency}
	target, waiting, err := r.ResolveProvider(ctx, obj)
	if err != nil {
		return false, o, "", err
	}
	if !want.charged {
		// Whoever looked (the operator's lookup, or a person searching the
		// provider's dashboard) may not see a charge made by an attempt
		// younger than the provider's search lag (Stripe's: usually under
		// a minute, up to an hour in incidents): "nothing found" says
		// nothing about it yet, verified or not.
		lag := r.searchLag(ctx, obj, target)
		if at := lastAttempt(obj).Add(lag); r.Clock.Now().Before(at) {
			return false, o, "", &searchLagWait{at: at, lag: lag, noun: w.Noun}
		}
	}
	calls, speaks, err := r.providerSpeaks(ctx, obj, want, target, waiting)
	if !speaks {
		return false, o, "", err
	}
	key := req.Key
	callCtx, cancel := context.WithTimeout(ctx, target.Timeout)
	defer cancel()
	if want.charged {
		got, err := calls.Settle(callCtx, key, want.id)
		var refusal *payment.Refusal
		switch {
		case errors.Is(err, ErrCannotFind):
			// The person's word stands, recorded as not verified.
			return false, o, "", nil
		case err == nil && !sameRequest(got, req):
			// Under a key two manifests share, another request's charge:
			// it is not this object's, whatever its key says.
			logChargeMismatch(ctx, "provider", got.ID, got.Amount, got.Currency)
			return false, o, payment.CleanMessage(fmt.Sprintf("%s %s under this %s's idempotency key is %d %s, and this "+
				"%s asks %d %s: it was made for another request, not this %s", w.Noun, got.ID, w.Object, got.Amount, got.Currency,
				w.Object, req.Amount, req.Currency, w.Object), MaxMessageLength), nil
		case err == nil:
			return true, got, "", nil
		case errors.As(err, &refusal):
			return false, o, payment.CleanMessage(fmt.Sprintf("the provider does not hold a succeeded %s %s under this %s's idempotency key: %s",
				w.Noun, want.id, w.Object, refusal.Message), MaxMessageLength), nil
		}
		// No answer about the charge: an unknown id, one made under
		// another key, or no provider at all. If the provider answers a
		// lookup of the key without that charge, it does not know it.
		found, lookupErr := calls.Find(callCtx, key)
		if lookupErr != nil {
			return false, o, "", err
		}
		for _, f := range found {
			if f.ID == want.id {
				return false, o, "", err
			}
		}
		return false, o, payment.CleanMessage(fmt.Sprintf("the provider does not know a %s %s under this %s's idempotency key (%v)",
			w.Noun, want.id, w.Object, err), MaxMessageLength), nil
	}
	found, err := calls.Find(callCtx, key)
	if errors.Is(err, ErrCannotFind) {
		_, _, err = r.unverified(r.Kind.exactFind(), "PaymentProvider %q cannot list what it holds", r.terms(obj).Provider)
		return false, o, "", err
	}
	if err != nil {
		return false, o, "", err
	}
	fingerprint := req.Fingerprint
	for _, f := range found {
		if f.State == payment.StateNotCharged {
			continue
		}
		if f.Fingerprint != "" && f.Fingerprint != fingerprint {
			logChargeMismatch(ctx, "provider", f.ID, f.Amount, f.Currency)
			return false, o, fmt.Sprintf("a payment under this %s's idempotency key for another request exists at the provider "+
				"(the operator's log names it); it is not this %s's, and this %s is not resolved as not %s", w.Object, w.Object, w.Object, w.done()), nil
		}
		return false, o, fmt.Sprintf("the provider holds %s %s under this %s's idempotency key (%s); "+
			"resolve it as %s%s instead", w.Noun, f.ID, w.Object, f.Status, resolveChargedPrefix, f.ID), nil
	}
	return true, o, "", nil
}

// providerSpeaks reports whether the provider behind target (or waiting,
// when it cannot be used now) can check a resolution of object, and gives its
// calls. When it cannot (not ready, gone, no lookup, another account than
// the one the object was sent to), the person's word stands, recorded as not
// verified; but where the provider keeps an exact list (ExactFind: a
// charge's refunds), "not made" is its word, never a person's alone, and
// err (an *exactListWait) says what is missing.
func (r *Reconciler) providerSpeaks(ctx context.Context, obj Object, want resolution, target *Target, waiting *Progress) (Client, bool, error) {
	exact := r.Kind.exactFind() && !want.charged
	if waiting != nil {
		return r.unverified(exact, "PaymentProvider %q cannot be read now (%s: %s)", r.terms(obj).Provider, waiting.Reason, waiting.Message)
	}
	if recorded := obj.GetPaymentStatus().Provider; recorded != nil {
		if same, _ := providercache.SameProvider(*recorded, target.ID, target.AccountsOnly()); !same {
			if !exact {
				// The provider now reaches another account: it cannot speak
				// for the one that was called.
				return nil, false, nil
			}
			// The account's list speaks for it, whatever object reaches it.
			if books, why := providercache.SameBooks(*recorded, target.ID, target.AccountsOnly()); !books {
				return r.unverified(exact, "PaymentProvider %q does not reach %s, where this %s was sent (%s)",
					r.terms(obj).Provider, providercache.DescribeBooks(*recorded), r.Kind.Words().Noun, why)
			}
		}
	}
	calls, err := r.connect(ctx, obj, target)
	if err != nil {
		return nil, false, err
	}
	return calls, true, nil
}

// unverified is providerSpeaks' answer when the provider cannot check a
// resolution: the person's word stands, unless the provider keeps an exact
// list (exact), which is then waited for.
func (r *Reconciler) unverified(exact bool, why string, args ...any) (Client, bool, error) {
	if exact {
		return nil, false, &exactListWait{why: fmt.Sprintf(why, args...)}
	}
	return nil, false, nil
}

// searchLag is how long a payment may take to show at obj's provider: none
// for a kind whose provider lists exactly (Description.ExactFind), else its
// PaymentProvider's spec.lookup.searchLagSeconds, or the default of its
// type. A provider that cannot be read (gone) gets Stripe's, the longer one.
func (r *Reconciler) searchLag(ctx context.Context, obj Object, t *Target) time.Duration {
	if r.Kind.exactFind() {
		return 0
	}
	var pp *paymentsv1alpha1.PaymentProvider
	if t != nil {
		pp = t.PaymentProvider
	}
	if pp == nil {
		var current paymentsv1alpha1.PaymentProvider
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: r.terms(obj).Provider}, &current); err == nil {
			pp = &current
		}
	}
	switch {
	case pp != nil && pp.Spec.Lookup != nil && pp.Spec.Lookup.SearchLagSeconds != nil:
		return time.Duration(*pp.Spec.Lookup.SearchLagSeconds) * time.Second
	case pp != nil && pp.Spec.HTTP != nil:
		return DefaultHTTPSearchLag
	}
	return DefaultStripeSearchLag
}

// exactListWait says a not-charged resolution of an ExactFind object waits
// for the provider's exact list, and why it cannot be read now.
type exactListWait struct {
	why string
}

func (w *exactListWait) Error() string {
	return "the provider's exact list of what it holds under this key is needed, at the account it was sent to, and " + w.why +
		". It is checked again by itself; nothing is sent meanwhile"
}

// searchLagWait says when a not-charged resolution can be checked: once
// the last attempt is older than the provider's search lag.
type searchLagWait struct {
	at   time.Time
	lag  time.Duration
	noun string
}

func (w *searchLagWait) Error() string {
	return fmt.Sprintf("the last attempt was made less than %s ago (the PaymentProvider's spec.lookup.searchLagSeconds), "+
		"and a %s it made may not show in the provider's lookup yet; no new attempt is made meanwhile, and the "+
		"resolution is checked at %s", w.lag, w.noun, w.at.UTC().Format(time.RFC3339))
}

// lastAttempt is when the object's last claim was written: its provider call
// came after it.
func lastAttempt(obj Object) time.Time {
	switch {
	case obj.GetPaymentStatus().Claim != nil:
		return obj.GetPaymentStatus().Claim.AcquiredAt.Time
	case obj.GetPaymentStatus().StartedAt != nil:
		return obj.GetPaymentStatus().StartedAt.Time
	}
	return time.Time{}
}

// sameRequest says whether the provider's outcome got can be the answer
// to req: the same amount and currency, where the provider says them.
func sameRequest(got payment.Outcome, req Request) bool {
	if got.Amount != 0 && req.Amount != 0 && got.Amount != req.Amount {
		return false
	}
	return got.Currency == "" || req.Currency == "" || strings.EqualFold(got.Currency, req.Currency)
}
