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

package ledger

import (
	"context"
	"errors"
	"strings"
	"time"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	internalledger "github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// Entry is one finished payment (or refund) as the ledger records it.
type Entry struct {
	// Key is the idempotency key the operator sent to the provider:
	// "[<scope>:]<namespace>/<key>" for a PaymentJob,
	// "[<scope>:]<namespace>.refund/<key>" for a PaymentRefund, the key
	// part hashed ("sha256:<hex>") when the whole is longer than 255
	// characters. It is the job's status.idempotencyKey.
	Key string `json:"key"`
	// Namespace is the namespace Key was sent for, read from Key; empty
	// for a key the operator did not send.
	Namespace string `json:"namespace,omitempty"`
	// Refund is true for a PaymentRefund's entry.
	Refund bool `json:"refund,omitempty"`
	// Fingerprint is the request fingerprint (the job's
	// status.requestHash).
	Fingerprint string `json:"fingerprint"`
	// Outcome is Completed or Failed.
	Outcome paymentsv1alpha1.LedgerOutcome `json:"outcome"`
	// Reason is a Failed entry's reason, or Resolved for an outcome a
	// person resolved.
	Reason string `json:"reason,omitempty"`
	// ResolvedBy names who resolved the outcome by hand, if a person did.
	ResolvedBy string `json:"resolvedBy,omitempty"`
	// Charge is the provider's id of the charge or refund, if any.
	Charge string `json:"charge,omitempty"`
	// Amount is the money moved, in the currency's minor unit; zero, with
	// an empty Currency, for an entry recorded before the ledger kept it.
	Amount int64 `json:"amount,omitempty"`
	// Currency is the lower-case ISO 4217 code of Amount.
	Currency string `json:"currency,omitempty"`
	// RefundedCharge is, for a refund's entry, the provider's id of the
	// charge the refund gives money back from; empty for a charge's entry
	// and for an entry recorded before the ledger kept it.
	RefundedCharge string `json:"refundedCharge,omitempty"`
	// At is when the outcome was recorded, in UTC.
	At time.Time `json:"at"`
	// Provider is the provider account the key was sent to.
	Provider paymentsv1alpha1.ProviderIdentity `json:"provider"`
}

// Filter chooses entries; its zero value chooses every one.
type Filter struct {
	// Since, when set, leaves out the entries recorded before it.
	Since time.Time
	// Namespace, when set, leaves out the entries of other namespaces
	// (Entry.Namespace), the payments and the refunds of the namespace
	// under any key scope being chosen.
	Namespace string
}

// Reader reads the outcome ledger. Its methods never write to it.
type Reader interface {
	// Find returns the entries recorded under key: exactly key, or key
	// under any provider key scope ("<scope>:" + key). key is a sent key
	// (a job's status.idempotencyKey, SentKey, RefundKey), or
	// "<namespace>/<key>" with the key as the job or refund gives it: then
	// a key too long to be sent as it is is found under its hashed forms
	// too, scoped or not. (A hashed sent key, "<namespace>/sha256:...", is
	// found as it is, not under another scope: its hash depends on the
	// scope.) None, and a nil error, when there are none. The entries of
	// one key under several scopes are several payments, at several
	// accounts.
	Find(ctx context.Context, key string) ([]Entry, error)
	// Each hands fn every entry that passes f, reading a batch (a few
	// pages, or a thousand rows) at a time: memory never holds the whole
	// ledger. The order is the backend's; see NewCRDReader and
	// PostgresReader.Each. An error of fn ends Each and is returned.
	Each(ctx context.Context, f Filter, fn func(Entry) error) error
}

// ErrUnavailable is wrapped by every error of a Reader, or of OpenPostgres,
// that means the ledger did not answer: the database or the API server
// could not be reached, a connection was lost, a timeout, a server
// starting up or shutting down. Asking again later may succeed; the error
// says nothing of what the ledger holds.
var ErrUnavailable = errors.New("the outcome ledger did not answer")

// unavailableError is an error of a backend that means the ledger did not
// answer: errors.Is finds ErrUnavailable, and the backend's error (and its
// own sentinels) through Unwrap; its text is the backend's.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string        { return e.err.Error() }
func (e *unavailableError) Unwrap() error        { return e.err }
func (e *unavailableError) Is(target error) bool { return target == ErrUnavailable }

// SentKey is the key the operator sends and records for a PaymentJob whose
// idempotency key (spec.idempotencyKey, else its name) is key, in
// namespace, at a provider without a key scope: "<namespace>/<key>",
// hashed when longer than 255 characters. Find also finds it under any key
// scope.
func SentKey(namespace, key string) string {
	return payment.SentKey(namespace, key)
}

// RefundKey is SentKey for a PaymentRefund: "<namespace>.refund/<key>",
// hashed when longer than 255 characters. No refund key equals a job's.
func RefundKey(namespace, key string) string {
	return payment.RefundKey("", namespace, key)
}

// entryOf is e as this package gives it.
func entryOf(e internalledger.Entry) Entry {
	return Entry{
		Key:            e.Key,
		Namespace:      payment.KeyNamespace(e.Key),
		Refund:         payment.IsRefundKey(e.Key),
		Fingerprint:    e.Fingerprint,
		Outcome:        e.Outcome,
		Reason:         e.Reason,
		ResolvedBy:     e.ResolvedBy,
		Charge:         e.Charge,
		Amount:         e.Amount,
		Currency:       e.Currency,
		RefundedCharge: e.RefundedCharge,
		At:             e.At.UTC(),
		Provider:       e.Provider,
	}
}

// passes reports whether e passes f.
func (f Filter) passes(e internalledger.Entry) bool {
	if !f.Since.IsZero() && e.At.Before(f.Since) {
		return false
	}
	return f.Namespace == "" || payment.KeyNamespace(e.Key) == f.Namespace
}

// keyMatch tells the entries Find returns for a key.
type keyMatch struct {
	key string
	// namespace and name are key's parts when it has the form
	// "<namespace>/<key>" with a key that is not hashed; split says so.
	namespace, name string
	split           bool
	// sent is SentKey of the parts: key itself, or its hashed form.
	sent string
	// scoped caches the forms of key under a key scope, by scope.
	scoped map[string]string
}

func newKeyMatch(key string) *keyMatch {
	m := &keyMatch{key: key, sent: key, scoped: map[string]string{}}
	m.namespace, m.name, m.split = strings.Cut(key, "/")
	if m.split && !strings.HasPrefix(m.name, "sha256:") {
		m.sent = payment.SentKey(m.namespace, m.name)
	} else {
		m.split = false
	}
	return m
}

// underScope is key under scope, as the operator forms it
// (payment.ScopedKey), or "" when key is not "<namespace>/<key>".
func (m *keyMatch) underScope(scope string) string {
	if !m.split || scope == "" {
		return ""
	}
	k, ok := m.scoped[scope]
	if !ok {
		k = payment.ScopedKey(scope, m.namespace, m.name)
		m.scoped[scope] = k
	}
	return k
}

// candidates are the keys an entry of key may be recorded under, given
// the key scopes of the ledger.
func (m *keyMatch) candidates(scopes []string) []string {
	keys := []string{m.key}
	if m.sent != m.key {
		keys = append(keys, m.sent)
	}
	for _, s := range scopes {
		keys = append(keys, s+":"+m.key)
		if k := m.underScope(s); k != "" && k != s+":"+m.key {
			keys = append(keys, k)
		}
	}
	return keys
}

// matches reports whether e is recorded under key.
func (m *keyMatch) matches(e internalledger.Entry) bool {
	if e.Key == m.key || e.Key == m.sent {
		return true
	}
	if scope, rest, ok := strings.Cut(e.Key, ":"); ok && rest == m.key && !strings.Contains(scope, "/") {
		return true
	}
	return e.Provider.KeyScope != "" && e.Key == m.underScope(e.Provider.KeyScope)
}
