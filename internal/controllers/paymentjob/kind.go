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

package paymentjob

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// +kubebuilder:rbac:groups=payments.idempotency.dev,resources=paymentjobs,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=payments.idempotency.dev,resources=paymentjobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=payments.idempotency.dev,resources=paymentjobs/finalizers,verbs=update

// Kind is the PaymentJob: a charge. The engine's Reconciler with this kind
// charges each PaymentJob at its provider exactly once.
func Kind() engine.Kind { return kind{} }

// kind is the PaymentJob kind.
type kind struct {
	engine.Objects[paymentsv1alpha1.PaymentJob, paymentsv1alpha1.PaymentJobList]
}

func (kind) Name() string { return "PaymentJob" }

func (kind) Words() engine.Words {
	return engine.Words{Action: "Charge", Noun: "charge", Done: "Charged",
		Request: "payment", Unmoved: "nothing was charged"}
}

// Counters are the charge calls by outcome and the replays.
func (kind) Counters() engine.Counters { return counters }

func (kind) Terms(obj engine.Object) engine.Terms {
	s := obj.(*paymentsv1alpha1.PaymentJob).Spec
	return engine.SpecTerms(obj, s.ProviderRef, s.IdempotencyKey, s.Suspend, s.BackoffLimit, s.ActiveDeadlineSeconds, s.TTLSecondsAfterFinished)
}

func (k kind) Key(obj engine.Object, scope string) string {
	return payment.ScopedKey(scope, obj.GetNamespace(), k.Terms(obj).Key)
}

func (kind) Request(obj engine.Object, key string) engine.Request {
	return chargeWithKey(obj.(*paymentsv1alpha1.PaymentJob), key).request()
}

// Prepare: a charge needs nothing beyond its spec.
func (kind) Prepare(context.Context, *engine.Reconciler, engine.Object) (*engine.Progress, *payment.Refusal, error) {
	return nil, nil, nil
}

func (kind) Calls(t *engine.Target, obj engine.Object) engine.Calls {
	return chargeCalls{t: t, req: chargeRequest(obj.(*paymentsv1alpha1.PaymentJob))}
}

// Observe looks the job's key up at the provider, batched with other
// jobs' keys, where the PaymentProvider looks keys up first.
func (kind) Observe(_ context.Context, r *engine.Reconciler, obj engine.Object, t *engine.Target, req engine.Request) (engine.Observation, error) {
	return r.ObserveBatched(obj, t, req), nil
}

// SearchLag is how long a charge may take to show at the job's provider:
// its PaymentProvider's spec.lookup.searchLagSeconds, or the default of its
// kind. A provider that cannot be read (gone) gets Stripe's, the longer one.
func (k kind) SearchLag(ctx context.Context, r *engine.Reconciler, obj engine.Object, t *engine.Target) time.Duration {
	var pp *paymentsv1alpha1.PaymentProvider
	if t != nil {
		pp = t.PaymentProvider
	}
	if pp == nil {
		var current paymentsv1alpha1.PaymentProvider
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: k.Terms(obj).Provider}, &current); err == nil {
			pp = &current
		}
	}
	switch {
	case pp != nil && pp.Spec.Lookup != nil && pp.Spec.Lookup.SearchLagSeconds != nil:
		return time.Duration(*pp.Spec.Lookup.SearchLagSeconds) * time.Second
	case pp != nil && pp.Spec.HTTP != nil:
		return engine.DefaultHTTPSearchLag
	}
	return engine.DefaultStripeSearchLag
}

// Watch: a charge watches nothing beyond its jobs and their providers.
func (kind) Watch(_ *engine.Reconciler, b *builder.Builder) *builder.Builder { return b }

// counters are the charge calls by outcome and the replays, which the
// engine counts.
var counters = engine.NewCounters(
	"paymentjob_charges_total", "Provider charge calls by outcome: succeeded (including replays), declined, invalid, key_reused, transient.",
	"paymentjob_replays_total", "Charge calls that the provider answered with the saved outcome of an earlier request with the same key.")

// Collectors returns every collector this package registers in
// controller-runtime's metrics registry.
func Collectors() []prometheus.Collector { return counters.Collectors() }

func init() {
	metrics.Registry.MustRegister(Collectors()...)
}

// Charge is what a job sends to its provider, the same on every attempt.
type Charge struct {
	// Key is the idempotency key: the job's key, scoped to its namespace
	// and to the key scope of the provider it was claimed for.
	Key string
	// Request is the charge request built from the job's spec.
	Request payment.ChargeRequest
	// Fingerprint is the request's hash under Key, recorded at the first
	// claim (status.requestHash) and compared at every later one.
	Fingerprint string
}

// request is the engine's view of the charge.
func (c Charge) request() engine.Request {
	return engine.Request{Key: c.Key, Fingerprint: c.Fingerprint, Amount: c.Request.Amount, Currency: c.Request.Currency}
}

// ChargeOf derives the charge job sends through the provider it was claimed
// for (status.provider).
func ChargeOf(job *paymentsv1alpha1.PaymentJob) Charge {
	return chargeWithKey(job, engine.KeyOf(kind{}, job))
}

// chargeWithKey is the charge job sends under key.
func chargeWithKey(job *paymentsv1alpha1.PaymentJob, key string) Charge {
	req := chargeRequest(job)
	return Charge{Key: key, Request: req, Fingerprint: payment.RequestHash(key, req)}
}

// chargeRequest is the request the job sends, the same on every attempt.
func chargeRequest(job *paymentsv1alpha1.PaymentJob) payment.ChargeRequest {
	return payment.ChargeRequest{
		Amount:        job.Spec.Amount,
		Currency:      job.Spec.Currency,
		Customer:      job.Spec.Customer,
		PaymentMethod: job.Spec.PaymentMethod,
		Description:   job.Spec.Description,
		Metadata:      job.Spec.Metadata,
	}
}

// chargeCalls are a job's provider calls: Charge, and the Looker's Lookup
// (within the lookup rate limit) and Settle.
type chargeCalls struct {
	t   *engine.Target
	req payment.ChargeRequest
}

func (c chargeCalls) Send(ctx context.Context, key string) (payment.Outcome, error) {
	return c.t.Provider.Charge(ctx, key, c.req)
}

func (c chargeCalls) CanFind() bool {
	_, ok := c.t.Provider.(payment.Looker)
	return ok
}

func (c chargeCalls) Find(ctx context.Context, key string) ([]payment.Found, error) {
	if lookups := c.t.Lookups(); lookups != nil {
		return lookups.LookupNow(ctx, key)
	}
	looker, ok := c.t.Provider.(payment.Looker)
	if !ok {
		return nil, fmt.Errorf("the provider cannot look charges up")
	}
	found, err := looker.Lookup(ctx, []string{key})
	return found[key], err
}

func (c chargeCalls) Settle(ctx context.Context, key, id string) (payment.Outcome, error) {
	looker, ok := c.t.Provider.(payment.Looker)
	if !ok {
		return payment.Outcome{}, fmt.Errorf("the provider cannot read charge %s", id)
	}
	return looker.Settle(ctx, key, id)
}
