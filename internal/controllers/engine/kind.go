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
	"time"

	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// The seam between the engine and a kind of payment, on crossplane-runtime's
// model: a kind describes its objects and connects an object to its
// provider; the client it returns makes the provider calls. A kind gets its
// dependencies (a cache reader, the ledger) when it is built and never sees
// the Reconciler; what it decides, it returns as a Result, and the engine
// writes it. paymentjob is the smallest kind and the one to read first.

// Kind is what one kind of payment, whose objects are O, supplies to the
// engine. NewKind turns it into the AnyKind a Reconciler runs.
//
// A kind may also implement Preparer, LedgerPreparer and Watcher; the
// engine's defaults do nothing.
type Kind[O Object] interface {
	// Describe names the kind, makes its objects, and words its messages.
	Describe() Description[O]
	// Terms reads the spec fields of obj every kind has.
	Terms(obj O) Terms
	// Key is the idempotency key obj sends through a provider with key
	// scope scope: the same on every attempt, namespaced.
	Key(obj O, scope string) string
	// Request is what obj sends under key. It reads only obj (its spec, and
	// what Prepare recorded in its status), never the API.
	Request(obj O, key string) Request
	// Connect opens obj's client at t, the provider it is sent through for
	// this pass.
	Connect(ctx context.Context, obj O, t *Target) (Client, error)
}

// Description is what a kind is, as users and the engine name it.
type Description[O Object] struct {
	// Name is the kind, as users see it: PaymentJob.
	Name string
	// New returns an empty object of the kind, NewList an empty list.
	New     func() O
	NewList func() client.ObjectList
	// Words word every message, event and error the engine writes on the
	// kind's objects.
	Words Words
	// Counters are the kind's provider-call metrics.
	Counters Counters
	// ExactFind says the provider answers Client.Find from an exact list,
	// with no search lag (a charge's refunds). A not-charged resolution of
	// such an object is only recorded once that list, read at the account
	// the object was sent to, holds nothing under its key: never on a
	// person's word alone. Otherwise the provider's search lag is the
	// PaymentProvider's spec.lookup.searchLagSeconds, or its type's default.
	ExactFind bool
}

// Client is a kind's provider side for one object, opened by Connect for
// one pass.
type Client interface {
	// Observe looks at the provider before the object's first claim: what
	// it holds under req's key (Result.Found), and whether req may be sent
	// at all (Result.Wait, Result.Refuse). Target.LookupBatched is the
	// engine's batched lookup by key, for kinds whose provider searches.
	Observe(ctx context.Context, req Request) (Result, error)
	// Send makes the request under key: the charge, the refund.
	Send(ctx context.Context, key string) (payment.Outcome, error)
	// Find returns what the provider holds under key now, or
	// ErrCannotFind.
	Find(ctx context.Context, key string) ([]payment.Found, error)
	// Settle reads id, made under key, until it is final, or returns
	// ErrCannotFind.
	Settle(ctx context.Context, key, id string) (payment.Outcome, error)
}

// ErrCannotFind is what Client.Find and Client.Settle return when the
// provider cannot look its payments up (an HTTP service without a lookup
// endpoint): the engine then never waits on a lookup, and cannot verify a
// person's resolution.
var ErrCannotFind = errors.New("the provider cannot look payments up")

// Result is what a kind decides about an object before its first claim
// (Preparer.Prepare, Client.Observe): proceed (the zero Result), wait, or
// refuse. The engine writes it.
type Result struct {
	// Wait, when set, keeps the object Pending (or Stalled, with
	// Wait.Stalled) for its reason, without a provider call.
	Wait *Progress
	// Requeue is when to look again while waiting; zero: the engine's
	// recheck of Wait's reason. A Result with Requeue and no Wait waits
	// quietly (a batched lookup will wake the object).
	Requeue time.Duration
	// Refuse, when set, ends the object Failed without a provider call.
	Refuse *payment.Refusal
	// Found is what Observe found at the provider under the key.
	Found []payment.Found
}

// Proceed is the Result that lets the object go on; found is what the
// provider holds under its key (Observe), if anything.
func Proceed(found ...payment.Found) Result { return Result{Found: found} }

// Wait is the Result that keeps the object waiting for p's reason (stalled
// when p.Stalled) and looks again after requeue (zero: the engine's
// recheck).
func Wait(p Progress, requeue time.Duration) Result { return Result{Wait: &p, Requeue: requeue} }

// Refuse is the Result that fails the object without a provider call.
func Refuse(r *payment.Refusal) Result { return Result{Refuse: r} }

// Preparer is implemented by a kind that must look at something besides its
// own object before the first claim (a refund: the PaymentJob it refunds).
// Prepare records in obj's status, in memory, what Request needs; the claim
// write persists it, so Prepare runs once per admission. provider reaches
// obj's PaymentProvider when Prepare needs it, as the engine reaches it for
// the claim (from the manager's cache and the provider cache).
type Preparer[O Object] interface {
	Prepare(ctx context.Context, obj O, provider ProviderFunc) (Result, error)
}

// ProviderFunc resolves the object's PaymentProvider for this pass: the
// target, or why the object must wait for it.
type ProviderFunc func(ctx context.Context) (*Target, *Progress, error)

// LedgerPreparer is implemented by a kind whose Request needs what Prepare
// records (a refund: the charge it refunds). PrepareFromLedger records the
// same from the ledger's entry under obj's own key, so that a re-created
// object is finished from its own entry before Prepare reads anything else
// (a refund whose PaymentJob is gone); it returns false when the entry
// holds too little (recorded before the ledger kept it), and the object is
// then prepared first and compared with the entry after.
type LedgerPreparer[O Object] interface {
	PrepareFromLedger(obj O, e ledger.Entry) bool
}

// Watcher is implemented by a kind that watches more than its own objects
// and the PaymentProviders they use (a refund: its PaymentJob).
type Watcher interface {
	Watch(b *builder.Builder) *builder.Builder
}
