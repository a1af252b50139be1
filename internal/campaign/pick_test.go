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

package campaign

import (
	"context"

	"pgregory.net/rapid"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// How an action draws the object it acts on, among those the API server
// holds.

// pick draws an object of kind ("" for either) that the API server holds,
// or skips the step when there is none.
func (c *campaign) pick(t *rapid.T, kind string) ref {
	refs, err := c.w.objects(context.Background())
	if err != nil {
		t.Fatalf("%v", err)
	}
	var of []ref
	for _, r := range refs {
		if kind == "" || r.kind == kind {
			of = append(of, r)
		}
	}
	if len(of) == 0 {
		t.Skip("no object to act on")
	}
	return rapid.SampledFrom(of).Draw(t, "object")
}

// pickUnfinished draws an object of kind that is neither Completed nor
// Failed: where a person's resolution or approval means something.
func (c *campaign) pickUnfinished(t *rapid.T, kind string) ref {
	return c.pickIn(t, kind, func(phase paymentsv1alpha1.PaymentJobPhase) bool { return !finished(phase) })
}

// pickStuck draws a Processing object of kind, where a person resolves
// (the runbook resolves a payment that may have moved money), or any
// unfinished one when none is Processing.
func (c *campaign) pickStuck(t *rapid.T, kind string) ref {
	if r, ok := c.tryPick(t, kind, func(phase paymentsv1alpha1.PaymentJobPhase) bool {
		return phase == paymentsv1alpha1.PhaseProcessing
	}); ok {
		return r
	}
	return c.pickUnfinished(t, kind)
}

// pickIn draws an object of kind whose phase is in, or skips the step.
func (c *campaign) pickIn(t *rapid.T, kind string, in func(paymentsv1alpha1.PaymentJobPhase) bool) ref {
	r, ok := c.tryPick(t, kind, in)
	if !ok {
		t.Skip("no object to act on in such a phase")
	}
	return r
}

// tryPick draws an object of kind whose phase is in, if there is one.
func (c *campaign) tryPick(t *rapid.T, kind string, in func(paymentsv1alpha1.PaymentJobPhase) bool) (ref, bool) {
	refs, err := c.w.objects(context.Background())
	if err != nil {
		t.Fatalf("%v", err)
	}
	var of []ref
	for _, r := range refs {
		if r.kind != kind {
			continue
		}
		obj := c.w.newObject(r.kind)
		if err := c.w.store.Get(context.Background(), r.key, obj); err != nil {
			t.Fatalf("cannot read %s: %v", r, err)
		}
		if in(obj.(interface {
			GetPaymentStatus() *paymentsv1alpha1.PaymentStatus
		}).GetPaymentStatus().Phase) {
			of = append(of, r)
		}
	}
	if len(of) == 0 {
		return ref{}, false
	}
	return rapid.SampledFrom(of).Draw(t, "object"), true
}
