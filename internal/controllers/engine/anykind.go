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

	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
)

// AnyKind is a Kind with its object type erased: what a Reconciler, the TTL
// collector and the PaymentProvider reconciler hold, side by side for every
// kind. NewKind makes one; nothing else can.
type AnyKind interface {
	// Name is the kind, as users see it.
	Name() string
	// Words word the kind's messages.
	Words() Words
	// New returns an empty object of the kind, NewList an empty list.
	New() Object
	NewList() client.ObjectList
	// Terms, Key and Request are the kind's, for an object of the kind.
	Terms(obj Object) Terms
	Key(obj Object, scope string) string
	Request(obj Object, key string) Request

	// The engine's side, sealed.
	counters() Counters
	exactFind() bool
	prepare(ctx context.Context, obj Object, provider ProviderFunc) (Result, error)
	prepareFromLedger(obj Object, e ledger.Entry) (prepared, implemented bool)
	connect(ctx context.Context, obj Object, t *Target) (Client, error)
	watch(b *builder.Builder) *builder.Builder
}

// NewKind makes the AnyKind a Reconciler runs from a kind of objects O.
func NewKind[O Object](k Kind[O]) AnyKind {
	return kindOf[O]{kind: k, d: k.Describe()}
}

// kindOf runs a Kind[O] behind AnyKind.
type kindOf[O Object] struct {
	kind Kind[O]
	d    Description[O]
}

// of is obj as the kind's own type. Every object the engine hands a kind
// was made by the kind's New or NewList, so this is the one place where
// the engine's Object becomes the kind's O.
func (k kindOf[O]) of(obj Object) O { return obj.(O) }

func (k kindOf[O]) Name() string                           { return k.d.Name }
func (k kindOf[O]) Words() Words                           { return k.d.Words }
func (k kindOf[O]) New() Object                            { return k.d.New() }
func (k kindOf[O]) NewList() client.ObjectList             { return k.d.NewList() }
func (k kindOf[O]) Terms(obj Object) Terms                 { return k.kind.Terms(k.of(obj)) }
func (k kindOf[O]) Key(obj Object, scope string) string    { return k.kind.Key(k.of(obj), scope) }
func (k kindOf[O]) Request(obj Object, key string) Request { return k.kind.Request(k.of(obj), key) }
func (k kindOf[O]) counters() Counters                     { return k.d.Counters }
func (k kindOf[O]) exactFind() bool                        { return k.d.ExactFind }

func (k kindOf[O]) prepare(ctx context.Context, obj Object, provider ProviderFunc) (Result, error) {
	if p, ok := k.kind.(Preparer[O]); ok {
		return p.Prepare(ctx, k.of(obj), provider)
	}
	return Proceed(), nil
}

func (k kindOf[O]) prepareFromLedger(obj Object, e ledger.Entry) (prepared, implemented bool) {
	if p, ok := k.kind.(LedgerPreparer[O]); ok {
		return p.PrepareFromLedger(k.of(obj), e), true
	}
	return false, false
}

func (k kindOf[O]) connect(ctx context.Context, obj Object, t *Target) (Client, error) {
	return k.kind.Connect(ctx, k.of(obj), t)
}

func (k kindOf[O]) watch(b *builder.Builder) *builder.Builder {
	if w, ok := k.kind.(Watcher); ok {
		return w.Watch(b)
	}
	return b
}
