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
	"errors"
	"fmt"
	"time"
)

// The Reconciler's defaults, which pkg/operator's Options and the manager's
// flags (cmd/main.go) take theirs from. The manager's own settings (its
// cache, its client's limits, its leader election, how many objects it
// works on at once) are pkg/operator's; the provider cache's are in its own
// defaults.go, the refund watch's, the audit's and the PaymentProvider
// reconciler's beside them.
const (
	// DefaultClaimLease is how long a claim is held before another process
	// may take it over (--claim-lease-duration); longer than
	// DefaultProviderTimeout.
	DefaultClaimLease = 60 * time.Second
	// DefaultProviderTimeout bounds one provider call unless the
	// PaymentProvider sets timeoutSeconds (--provider-timeout).
	DefaultProviderTimeout = 30 * time.Second
	// DefaultKeyRetention is how long providers are trusted to remember an
	// idempotency key (--provider-key-retention): a day less than Stripe's
	// 24 hours of key memory.
	DefaultKeyRetention = 23 * time.Hour
	// DefaultStripeSearchLag is how long a Stripe charge may take to show
	// in its search, unless the PaymentProvider sets
	// spec.lookup.searchLagSeconds: Stripe's search usually lags by under
	// a minute, and by up to an hour during incidents.
	DefaultStripeSearchLag = 15 * time.Minute
	// DefaultHTTPSearchLag is the same for an HTTP service's lookup, which
	// the contract requires to be read-after-write: a margin for the call
	// of an attempt whose claim was just taken over.
	DefaultHTTPSearchLag = time.Minute
)

// DefaultBackoff paces the retries after uncertain provider outcomes:
// DefaultBackoffInitial doubling to DefaultBackoffMax.
var DefaultBackoff = Backoff{Initial: DefaultBackoffInitial, Max: DefaultBackoffMax}

// The bounds of DefaultBackoff: 1 s doubling to 5 min.
const (
	DefaultBackoffInitial = time.Second
	DefaultBackoffMax     = 5 * time.Minute
)

// lookupWakeBackstop requeues an object waiting for its lookup (a charge's look
// before its first claim, batched by the provider cache), in case the
// wake-up is lost.
const lookupWakeBackstop = 10 * time.Second

// rateLimitNotice is how long an object waits in all for its provider's rate
// limit before its status says so (paymentsv1alpha1.ReasonRateLimited); shorter waits only
// requeue.
const rateLimitNotice = 5 * time.Second

// Bounds of what the status records and the default of spec.backoffLimit.
const (
	// defaultBackoffLimit applies when spec.backoffLimit is unset (the CRD
	// defaults it, so only objects written around the schema lack it).
	defaultBackoffLimit = 6
	// MaxMessageLength bounds provider messages copied into the status.
	MaxMessageLength = 1024
	// maxIDLength bounds the provider's charge id in the status; Stripe's
	// ids are about 30 characters.
	maxIDLength = 255
	// MaxShortLength bounds the provider's status and currency strings.
	MaxShortLength = 64
)

// FinishedListPage is how many finished objects one list request returns:
// the TTL collector's sweeps and the refund watch read them from the API
// server a page at a time.
const FinishedListPage = 500

// conflictRequeue is the wait before an object whose write was refused with a
// conflict is looked at again (with jitter).
const conflictRequeue = 100 * time.Millisecond

// checkSettings refuses missing dependencies (the Kind first), and a claim
// lease that a provider call could outlive.
func (r *Reconciler) checkSettings() error {
	switch {
	case r.Kind == nil:
		return errors.New("payment reconciler needs a kind: what it pays (paymentjob.Kind, paymentrefund.Kind)")
	case r.Client == nil, r.Recorder == nil, r.Providers == nil, r.Clock == nil:
		return errors.New("payment reconciler needs a client, an event recorder, a provider resolver and a clock")
	case r.Holder == "":
		return errors.New("payment reconciler needs a claim holder identity")
	case r.ProviderTimeout <= 0 || r.ClaimLease <= r.ProviderTimeout:
		return fmt.Errorf("the claim lease (%s) must be longer than the provider timeout (%s)", r.ClaimLease, r.ProviderTimeout)
	case r.Backoff.Initial <= 0 || r.Backoff.Max < r.Backoff.Initial:
		return fmt.Errorf("invalid backoff %s..%s", r.Backoff.Initial, r.Backoff.Max)
	}
	return nil
}
