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
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// The internals that this package's external tests (package engine_test:
// the upgrade contract, the key scope) check with the PaymentJob kind. The
// kind's package imports this one, so these tests cannot be in-package
// tests; this file, compiled only with them, opens what they read. Nothing
// here is part of the package outside its tests.

// ClaimedScope is claimedScope.
var ClaimedScope = claimedScope

// ResponseOf is responseOf.
var ResponseOf = responseOf

// CheckRecordedKey is checkRecordedKey.
func (r *Reconciler) CheckRecordedKey(obj Object) *Progress { return r.checkRecordedKey(obj) }

// NextClaim is nextClaim.
func (r *Reconciler) NextClaim(obj Object) (reason string, notBefore time.Time) {
	return r.nextClaim(obj)
}

// ClaimAndAct is claimAndAct.
func (r *Reconciler) ClaimAndAct(ctx context.Context, obj Object, t *Target, reason string, verdict payment.Verdict) (ctrl.Result, error) {
	return r.claimAndAct(ctx, obj, t, reason, verdict)
}

// EnsureFinalizer is ensureFinalizer.
func (r *Reconciler) EnsureFinalizer(ctx context.Context, obj Object) error {
	return r.ensureFinalizer(ctx, obj)
}

// WriteOutcome is writeOutcome.
func (r *Reconciler) WriteOutcome(ctx context.Context, obj Object, apply func(Object)) error {
	return r.writeOutcome(ctx, obj, apply)
}

// Finish is finish.
func (r *Reconciler) Finish(ctx context.Context, obj Object) error { return r.finish(ctx, obj) }
