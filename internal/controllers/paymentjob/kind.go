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

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
func Kind() engine.AnyKind { return engine.NewKind(kind{}) }

// kind is the PaymentJob kind: a charge needs nothing beyond its spec and
// its provider, so it implements none of the engine's optional hooks.
type kind struct{}

// Words word the engine's messages on a PaymentJob.
var words = engine.Words{Action: "Charge", Noun: "charge", Done: "Charged", Doing: "charging",
	Object: "job", Request: "payment", Unmoved: "nothing was charged"}

func (kind) Describe() engine.Description[*paymentsv1alpha1.PaymentJob] {
	return engine.Description[*paymentsv1alpha1.PaymentJob]{
		Name:     "PaymentJob",
		New:      func() *paymentsv1alpha1.PaymentJob { return &paymentsv1alpha1.PaymentJob{} },
		NewList:  func() client.ObjectList { return &paymentsv1alpha1.PaymentJobList{} },
		Words:    words,
		Counters: counters,
	}
}

func (kind) Terms(job *paymentsv1alpha1.PaymentJob) engine.Terms {
	s := job.Spec
	return engine.SpecTerms(job, s.ProviderRef, s.IdempotencyKey, s.Suspend, s.BackoffLimit, s.ActiveDeadlineSeconds, s.TTLSecondsAfterFinished)
}

func (k kind) Key(job *paymentsv1alpha1.PaymentJob, scope string) string {
	return payment.ScopedKey(scope, job.Namespace, k.Terms(job).Key)
}

func (kind) Request(job *paymentsv1alpha1.PaymentJob, key string) engine.Request {
	return chargeWithKey(job, key).request()
}

// Connect opens the job's charge calls at t.
func (kind) Connect(_ context.Context, job *paymentsv1alpha1.PaymentJob, t *engine.Target) (engine.Client, error) {
	return chargeCalls{t: t, req: chargeRequest(job)}, nil
}

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
	return chargeWithKey(job, engine.KeyOf(Kind(), job))
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

// chargeCalls are a job's provider calls: the lookup of its key before the
// first charge (batched, where the PaymentProvider looks keys up first),
// Charge, and the Looker's Lookup (within the lookup rate limit) and
// Settle.
type chargeCalls struct {
	t   *engine.Target
	req payment.ChargeRequest
}

// Observe looks the job's key up at the provider, batched with other jobs'
// keys, where the PaymentProvider looks keys up first.
func (c chargeCalls) Observe(_ context.Context, req engine.Request) (engine.Result, error) {
	return c.t.LookupBatched(req), nil
}

func (c chargeCalls) Send(ctx context.Context, key string) (payment.Outcome, error) {
	return c.t.Provider.Charge(ctx, key, c.req)
}

func (c chargeCalls) Find(ctx context.Context, key string) ([]payment.Found, error) {
	looker, ok := c.t.Provider.(payment.Looker)
	if !ok {
		return nil, engine.ErrCannotFind
	}
	if lookups := c.t.Lookups(); lookups != nil {
		return lookups.LookupNow(ctx, key)
	}
	found, err := looker.Lookup(ctx, []string{key})
	return found[key], err
}

func (c chargeCalls) Settle(ctx context.Context, key, id string) (payment.Outcome, error) {
	looker, ok := c.t.Provider.(payment.Looker)
	if !ok {
		return payment.Outcome{}, engine.ErrCannotFind
	}
	return looker.Settle(ctx, key, id)
}
