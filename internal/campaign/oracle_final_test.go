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
	"fmt"
	"maps"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// outcome is what a finished object said: its phase and the provider's
// id of its charge or refund.
type outcome struct {
	phase paymentsv1alpha1.PaymentJobPhase
	id    string
}

// finalViolations: an outcome, once written, is final. A Completed or
// Failed object never goes back to Pending or Processing, nor to another
// outcome or another provider id: what GitOps health checks, kubectl wait
// and every person read as done stays done. The one change the product
// makes on purpose is a Completed refund that the provider failed later
// (RefundFailedAfterSuccess: Failed, naming the same refund). It is
// checked on every object of the same UID (a re-created object is
// another object, and may finish anew from the ledger).
func (c *campaign) finalViolations(b books) []string {
	if c.outcomes == nil {
		c.outcomes = map[types.UID]outcome{}
	}
	var v []string
	see := func(kind, name string, uid types.UID, st *paymentsv1alpha1.PaymentStatus, failedLater bool) {
		now := outcome{phase: st.Phase, id: responseID(st.ProviderResponse)}
		was, seen := c.outcomes[uid]
		switch {
		case !seen && finished(now.phase):
			c.outcomes[uid] = now
		case !seen, was == now:
		case failedLater && was.phase == paymentsv1alpha1.PhaseCompleted && now.phase == paymentsv1alpha1.PhaseFailed && was.id == now.id:
			c.outcomes[uid] = now
		default:
			v = append(v, fmt.Sprintf("outcome-final: %s %s was %s as %q and is now %q as %q", kind, name, was.phase, was.id, now.phase, now.id))
		}
	}
	for i := range b.jobs {
		j := &b.jobs[i]
		see("PaymentJob", j.Namespace+"/"+j.Name, j.UID, j.GetPaymentStatus(), false)
	}
	for i := range b.refs {
		rf := &b.refs[i]
		see("PaymentRefund", rf.Namespace+"/"+rf.Name, rf.UID, rf.GetPaymentStatus(),
			readyReason(rf.Status.Conditions) == paymentsv1alpha1.ReasonRefundFailedAfterSuccess)
	}
	return v
}

// takenBack notes the managers' status writes that took a finished
// outcome back, as they happen: a pass may claim a Completed object and
// finish it again within itself, which no read between two steps sees,
// but every watch (kubectl wait, a GitOps health check) does.
type takenBack struct {
	mu   sync.Mutex
	seen []string
	// unverified are the keys of the objects a manager wrote finished on
	// a person's resolution the provider could not check (status.resolution
	// verified: false), seen as it happens: the object may be gone
	// within the same pass (its finalizer released on deletion).
	unverified map[string]bool
}

// keepsOutcome runs a manager's status write of obj and notes it when it
// turned an outcome the API server held into another phase or id.
func (w *world) keepsOutcome(ctx context.Context, obj client.Object, write func() error) error {
	before := w.outcomeOf(ctx, obj)
	if err := write(); err != nil {
		return err
	}
	w.noteUnverified(obj)
	if !finished(before.phase) {
		return nil
	}
	after := w.outcomeOf(ctx, obj)
	failedLater := false
	if rf, ok := obj.(*paymentsv1alpha1.PaymentRefund); ok {
		failedLater = readyReason(rf.Status.Conditions) == paymentsv1alpha1.ReasonRefundFailedAfterSuccess
	}
	failedLaterAsItWas := failedLater && after.phase == paymentsv1alpha1.PhaseFailed && after.id == before.id
	if after != before && !failedLaterAsItWas {
		w.takenBack.mu.Lock()
		defer w.takenBack.mu.Unlock()
		w.takenBack.seen = append(w.takenBack.seen, fmt.Sprintf("outcome-final: a status write took %T %s from %s as %q to %q as %q",
			obj, client.ObjectKeyFromObject(obj), before.phase, before.id, after.phase, after.id))
	}
	return nil
}

// noteUnverified notes obj's key when its status, as a manager wrote it,
// is finished on a person's word the provider could not check.
func (w *world) noteUnverified(obj client.Object) {
	o, ok := obj.(interface {
		GetPaymentStatus() *paymentsv1alpha1.PaymentStatus
	})
	if !ok {
		return
	}
	st := o.GetPaymentStatus()
	if r := st.Resolution; r == nil || r.Verified || !finished(st.Phase) || st.IdempotencyKey == "" {
		return
	}
	w.takenBack.mu.Lock()
	defer w.takenBack.mu.Unlock()
	if w.takenBack.unverified == nil {
		w.takenBack.unverified = map[string]bool{}
	}
	w.takenBack.unverified[st.IdempotencyKey] = true
}

// unverifiedKeys are the keys noteUnverified noted so far.
func (w *world) unverifiedKeys() map[string]bool {
	w.takenBack.mu.Lock()
	defer w.takenBack.mu.Unlock()
	return maps.Clone(w.takenBack.unverified)
}

// outcomeOf is the outcome the API server holds for obj now, or none.
func (w *world) outcomeOf(ctx context.Context, obj client.Object) outcome {
	var st interface {
		client.Object
		GetPaymentStatus() *paymentsv1alpha1.PaymentStatus
	}
	switch obj.(type) {
	case *paymentsv1alpha1.PaymentJob:
		st = &paymentsv1alpha1.PaymentJob{}
	case *paymentsv1alpha1.PaymentRefund:
		st = &paymentsv1alpha1.PaymentRefund{}
	default:
		return outcome{}
	}
	if err := w.store.Get(ctx, client.ObjectKeyFromObject(obj), st); err != nil || st.GetUID() != obj.GetUID() {
		return outcome{}
	}
	return outcome{phase: st.GetPaymentStatus().Phase, id: responseID(st.GetPaymentStatus().ProviderResponse)}
}

// takenBackViolations are the writes noted since the last step.
func (w *world) takenBackViolations() []string {
	w.takenBack.mu.Lock()
	defer w.takenBack.mu.Unlock()
	v := w.takenBack.seen
	w.takenBack.seen = nil
	return v
}
