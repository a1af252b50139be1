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
	"math/rand/v2"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// Backoff is the delay between attempts after uncertain provider outcomes:
// Initial after the first failed attempt, doubling up to Max.
type Backoff struct {
	Initial time.Duration
	Max     time.Duration
}

// after returns the delay after the given number of failed attempts, without jitter.
func (b Backoff) after(attempts int32) time.Duration {
	d := b.Initial
	for i := int32(1); i < attempts && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// Jitter adds up to 20% to d, so that objects failing together do not retry together.
func Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d + time.Duration(rand.Int64N(int64(d)/5+1))
}

// exhausted reports whether the object has used its backoffLimit retries.
func (r *Reconciler) exhausted(obj Object) bool {
	limit := int32(defaultBackoffLimit)
	if l := r.terms(obj).BackoffLimit; l != nil {
		limit = *l
	}
	return obj.GetPaymentStatus().Attempts-1 >= limit
}

// retryDelay is the wait after the object's latest failed attempt.
func (r *Reconciler) retryDelay(obj Object) time.Duration {
	if r.exhausted(obj) {
		return r.Backoff.Max
	}
	return r.Backoff.after(obj.GetPaymentStatus().Attempts)
}

// pendingRecheck is when an object waiting before its claim on something
// outside it (its provider) looks again, even if no event brings it back:
// as long again as it has not been Ready so far (the Ready condition's
// transition time, while its reason is this one), between Backoff.Initial
// and Backoff.Max, so the wait backs off without any state. A deadline
// sooner than that comes first.
func (r *Reconciler) pendingRecheck(obj Object, reason string, deadline time.Duration) time.Duration {
	waited := time.Duration(0)
	if c := meta.FindStatusCondition(obj.GetPaymentStatus().Conditions, paymentsv1alpha1.ConditionReady); c != nil && c.Reason == reason {
		waited = r.Clock.Since(c.LastTransitionTime.Time)
	}
	d := Jitter(min(max(waited, r.Backoff.Initial), r.Backoff.Max))
	if deadline > 0 && deadline < d {
		return deadline
	}
	return d
}

// retryIn puts the object's next attempt d from now and returns the requeue.
// The time is remembered (r.retries): a pass that put the object off beyond
// its backoff (a provider's Retry-After, a stall's longest interval) or
// with jitter is followed at once by the watch event of its own status
// write, and that must not claim it early. After a restart an object is retried
// after its backoff, with the same key.
func (r *Reconciler) retryIn(obj Object, d time.Duration) ctrl.Result {
	r.retries.set(obj, r.Clock.Now().Add(d))
	return ctrl.Result{RequeueAfter: d}
}
