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

package protocol_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// The example kind: a kind written by a newcomer from the engine's package
// doc and the PaymentJob kind alone, on the seam, and run through every row
// of the protocol table. It is not shipped: it shows what a kind is, and
// the table shows that the engine, not the kind, keeps the protocol. It
// moves the money of a PaymentJob (the table's objects) with words of its
// own, a client of its own, and no hook: it is told nothing of the engine
// beyond Kind, Description, Client, Target and Result.

// exampleKind is a kind of payments: Describe, Terms, Key, Request and
// Connect are all it implements.
type exampleKind struct{}

func (exampleKind) Describe() engine.Description[*paymentsv1alpha1.PaymentJob] {
	return engine.Description[*paymentsv1alpha1.PaymentJob]{
		// The kind of the objects, as the API server names it.
		Name:    "PaymentJob",
		New:     func() *paymentsv1alpha1.PaymentJob { return &paymentsv1alpha1.PaymentJob{} },
		NewList: func() client.ObjectList { return &paymentsv1alpha1.PaymentJobList{} },
		Words: engine.Words{Action: "Pay", Noun: "payment", Done: "Paid", Doing: "paying", Object: "order",
			Request: "payment", Unmoved: "nothing was paid"},
		Counters: exampleCounters,
	}
}

// exampleCounters are the example kind's call counters; a shipped kind
// registers them in controller-runtime's registry.
var exampleCounters = engine.NewCounters(
	"example_payments_total", "Example payment calls by outcome.",
	"example_replays_total", "Example payment calls the provider replayed.")

// Terms are the spec fields every kind has.
func (exampleKind) Terms(o *paymentsv1alpha1.PaymentJob) engine.Terms {
	s := o.Spec
	return engine.SpecTerms(o, s.ProviderRef, s.IdempotencyKey, s.Suspend, s.BackoffLimit, s.ActiveDeadlineSeconds, s.TTLSecondsAfterFinished)
}

// Key scopes the object's key to its namespace and the provider's key
// scope: the same on every attempt.
func (k exampleKind) Key(o *paymentsv1alpha1.PaymentJob, scope string) string {
	return payment.ScopedKey(scope, o.Namespace, k.Terms(o).Key)
}

// Request is what the object sends, fingerprinted under its key.
func (exampleKind) Request(o *paymentsv1alpha1.PaymentJob, key string) engine.Request {
	req := exampleRequest(o)
	return engine.Request{Key: key, Fingerprint: payment.RequestHash(key, req), Amount: req.Amount, Currency: req.Currency}
}

func exampleRequest(o *paymentsv1alpha1.PaymentJob) payment.ChargeRequest {
	return payment.ChargeRequest{Amount: o.Spec.Amount, Currency: o.Spec.Currency, Customer: o.Spec.Customer,
		PaymentMethod: o.Spec.PaymentMethod, Description: o.Spec.Description, Metadata: o.Spec.Metadata}
}

// Connect opens the object's client at the provider the engine resolved.
func (exampleKind) Connect(_ context.Context, o *paymentsv1alpha1.PaymentJob, t *engine.Target) (engine.Client, error) {
	return exampleClient{t: t, req: exampleRequest(o)}, nil
}

// exampleClient is the example kind's four provider calls.
type exampleClient struct {
	t   *engine.Target
	req payment.ChargeRequest
}

// Observe asks the engine's batched lookup what the provider holds under
// the key, where the PaymentProvider looks keys up first.
func (c exampleClient) Observe(_ context.Context, req engine.Request) (engine.Result, error) {
	return c.t.LookupBatched(req), nil
}

func (c exampleClient) Send(ctx context.Context, key string) (payment.Outcome, error) {
	return c.t.Provider.Charge(ctx, key, c.req)
}

func (c exampleClient) Find(ctx context.Context, key string) ([]payment.Found, error) {
	looker, ok := c.t.Provider.(payment.Looker)
	if !ok {
		return nil, engine.ErrCannotFind
	}
	found, err := looker.Lookup(ctx, []string{key})
	return found[key], err
}

func (c exampleClient) Settle(ctx context.Context, key, id string) (payment.Outcome, error) {
	looker, ok := c.t.Provider.(payment.Looker)
	if !ok {
		return payment.Outcome{}, engine.ErrCannotFind
	}
	return looker.Settle(ctx, key, id)
}

// TestExampleKind runs every row of the protocol table with the example
// kind: the same writes, provider calls, events, requeues and final states
// as the PaymentJob kind's, and the same invariants.
func TestExampleKind(t *testing.T) {
	kind := func(client.Client, engine.OutcomeLedger) engine.AnyKind { return engine.NewKind(exampleKind{}) }
	for _, tt := range theTable {
		t.Run(tt.name, func(t *testing.T) {
			runWith(t, NewWithT(t), tt, newWorldOf(t, tt, kind))
		})
	}
}
