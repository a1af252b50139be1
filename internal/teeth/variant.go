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

// Package teeth holds the deliberately broken variants of the payment
// protocol that a test campaign must find: each is one line at the real
// place in the engine, the ledger or the refund kind, written
//
//	if teeth.On(teeth.UnguardedClaim) { ... }
//
// and each breaks one rule that keeps the three books (the provider's, the
// cluster's, the ledger's) in agreement. A campaign that finds nothing
// proves nothing until it is shown to find them (issue 38, "Teeth,
// measured").
//
// A variant can only be switched on in a binary built with the build tag
// campaignteeth: there, Break switches variants on for a test. Without the
// tag, On is the constant false (off.go), inlined and its branch removed,
// so no shipped binary can reach a variant, and Break does not exist.
package teeth

// Variant is one deliberately broken rule of the protocol.
type Variant uint

// The variants. Each names the rule it breaks, where, and the invariant
// that must catch it.
const (
	// UnguardedClaim writes the claim without its resourceVersion
	// precondition (engine, claim.go, claimAndAct): the claim goes on top
	// of whatever the API server holds, as a write without a
	// resourceVersion does, so a stale read (an informer behind, another
	// replica's claim or outcome meanwhile) is acted on and the provider is
	// called again for a payment another writer already finished. Caught
	// by "at most one charge per key and account" once the provider has
	// forgotten the key, and by "every Completed object's provider id
	// exists at the provider under its own key" (the outcome is
	// overwritten).
	UnguardedClaim Variant = iota
	// LedgerErrorAsNotFound reads a ledger that did not answer as one that
	// holds nothing under the key (engine, ledger.go finishFromLedger and
	// ledgerresume.go resumeFromLedger): a payment re-created (or restored
	// from an older etcd snapshot) whose outcome only the ledger holds is
	// sent again. Caught by "at most one charge per key and account" past
	// the provider's key memory, and by "every finished outcome in the
	// ledger exactly once".
	LedgerErrorAsNotFound
	// RefundWithoutLookup does not count what the provider lists as
	// already refunded on the charge (paymentrefund, kind.go Observe):
	// what is left of a charge is its amount less the refunds in flight
	// only, so a refund made on the provider's dashboard, or by a finished
	// PaymentRefund, is refunded again. Caught by "the refunds of a charge
	// never exceed it".
	RefundWithoutLookup
	// RecordIgnoresLedger makes every Record succeed whatever the ledger
	// already holds under the key (ledger, conflict.go CheckRecorded): the
	// first-outcome rule is gone, a second outcome under a key is taken as
	// recorded while the ledger keeps the first, and the object finishes.
	// Caught by "every finished outcome in the ledger exactly once and
	// equal to the object's".
	RecordIgnoresLedger
	// ResolutionUnverified accepts a person's resolution the provider
	// contradicts, as if the provider had confirmed it (engine, resolve.go
	// resolve; recorded verified): charged=<an id the
	// provider does not hold> completes the payment, not-charged while the
	// provider holds a charge under the key fails it. Caught by "every
	// Completed object's provider id exists at the provider" and "nothing
	// Failed that moved money".
	ResolutionUnverified
	// NoAccountFence skips the check that a Processing payment still
	// reaches the provider account (and object, endpoint, mode) its key was
	// first sent to (engine, guards.go providerMoved): after a provider's
	// Secret or spec is pointed at another account, the retry sends the
	// same key there, which is a new charge at that account. Caught by "at
	// most one charge per key and account" summed over accounts, and by
	// "every Completed object's provider id exists under that object's own
	// account".
	NoAccountFence

	// variants is how many there are.
	variants
)

// All are the variants, in order.
func All() []Variant {
	all := make([]Variant, 0, variants)
	for v := range variants {
		all = append(all, v)
	}
	return all
}

// String names the variant, as a campaign's report does.
func (v Variant) String() string {
	switch v {
	case UnguardedClaim:
		return "unguarded-claim"
	case LedgerErrorAsNotFound:
		return "ledger-error-as-not-found"
	case RefundWithoutLookup:
		return "refund-without-lookup"
	case RecordIgnoresLedger:
		return "record-ignores-ledger"
	case ResolutionUnverified:
		return "resolution-unverified"
	case NoAccountFence:
		return "no-account-fence"
	}
	return "unknown"
}
