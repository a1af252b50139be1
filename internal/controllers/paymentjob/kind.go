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

package controller

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// jobKind is the PaymentJob: a charge.
type jobKind struct{}

var _ Kind = jobKind{}

func (jobKind) Name() string { return "PaymentJob" }

func (jobKind) Words() Words { return Words{Action: "Charge", Noun: "charge", Done: "Charged"} }

func (jobKind) New() Object { return &paymentsv1alpha1.PaymentJob{} }

func (jobKind) NewList() client.ObjectList { return &paymentsv1alpha1.PaymentJobList{} }

func (jobKind) Terms(obj Object) Terms {
	job := obj.(*paymentsv1alpha1.PaymentJob)
	return Terms{
		Provider:                job.Spec.ProviderRef.Name,
		Key:                     payment.EffectiveKey(job.Name, job.Spec.IdempotencyKey),
		Suspend:                 job.Spec.Suspend != nil && *job.Spec.Suspend,
		BackoffLimit:            job.Spec.BackoffLimit,
		ActiveDeadlineSeconds:   job.Spec.ActiveDeadlineSeconds,
		TTLSecondsAfterFinished: job.Spec.TTLSecondsAfterFinished,
	}
}

func (k jobKind) Key(obj Object, scope string) string {
	return payment.ScopedKey(scope, obj.GetNamespace(), k.Terms(obj).Key)
}

func (jobKind) Request(obj Object, key string) Request {
	return chargeWithKey(obj.(*paymentsv1alpha1.PaymentJob), key).request()
}

// Prepare: a charge needs nothing beyond its spec.
func (jobKind) Prepare(context.Context, *Reconciler, Object) (*progress, *payment.Refusal, error) {
	return nil, nil, nil
}

func (jobKind) Calls(t *target, obj Object) Calls {
	return chargeCalls{t: t, req: chargeRequest(obj.(*paymentsv1alpha1.PaymentJob))}
}

func (jobKind) Observe(ctx context.Context, r *Reconciler, obj Object, t *target, req Request) (Observation, error) {
	return r.observeCharge(obj, t, req), nil
}

func (jobKind) SearchLag(ctx context.Context, r *Reconciler, obj Object, t *target) time.Duration {
	return r.resolutionLag(ctx, obj, t)
}

func (jobKind) Watch(r *Reconciler, b *builder.Builder) *builder.Builder {
	return b.Watches(&paymentsv1alpha1.PaymentProvider{}, handler.EnqueueRequestsFromMapFunc(r.waitingFor))
}

func (jobKind) Finished(_ context.Context, r *Reconciler, obj Object) {
	if r.Collector != nil {
		r.Collector.Schedule(jobKind{}, obj)
	}
}

func (jobKind) Users(ctx context.Context, c client.Reader, provider client.Object) []reconcile.Request {
	return usersOf(ctx, c, &paymentsv1alpha1.PaymentJobList{}, providerRefIndex, provider, func(obj client.Object) bool {
		return !terminal(obj.(*paymentsv1alpha1.PaymentJob).Status.Phase)
	})
}

// terminal reports whether phase is final.
func terminal(phase paymentsv1alpha1.PaymentJobPhase) bool {
	return phase == paymentsv1alpha1.PhaseCompleted || phase == paymentsv1alpha1.PhaseFailed
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
func (c Charge) request() Request {
	return Request{Key: c.Key, Fingerprint: c.Fingerprint, Amount: c.Request.Amount, Currency: c.Request.Currency}
}

// ChargeOf derives the charge job sends through the provider it was claimed
// for (status.provider).
func ChargeOf(job *paymentsv1alpha1.PaymentJob) Charge {
	return chargeWithKey(job, keyOf(jobKind{}, job))
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
	t   *target
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
	if c.t.lookups != nil {
		return c.t.lookups.lookupNow(ctx, key)
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
