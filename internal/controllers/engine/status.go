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
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// What an object sends and what the claim, the outcome and the finishing
// write set on it, as functions of the object alone. The reconciler's writes
// use them, and so do the kinds' typed forms (paymentjob.ClaimStatus, ...)
// that the benchmark's writes-only baseline uses, so that the baseline
// writes what the operator writes.

// sentKey is the key obj sends: the one derived from its namespace, its
// spec and the key scope of the provider it was claimed for
// (checkRecordedKey stops an object whose status says otherwise).
func (r *Reconciler) sentKey(obj Object) string { return KeyOf(r.Kind, obj) }

// KeyOf is the key obj of kind k sends: the one its namespace, its spec
// and the key scope it was claimed with derive.
func KeyOf(k AnyKind, obj Object) string { return k.Key(obj, claimedScope(obj)) }

// requestOf is what obj sends under its key.
func (r *Reconciler) requestOf(obj Object) Request { return r.Kind.Request(obj, r.sentKey(obj)) }

// claimedScope is the key scope the object was claimed with:
// status.provider.keyScope, or else the scope its recorded key carries. A
// version that does not know key scopes erases status.provider.keyScope
// with its first status write (a rollback), but not the key it found
// recorded; namespaces never contain ':', so "<scope>:<namespace>/..." says
// the scope. checkRecordedKey still compares the whole key.
func claimedScope(obj Object) string {
	st := obj.GetPaymentStatus()
	if p := st.Provider; p != nil && p.KeyScope != "" {
		return p.KeyScope
	}
	k := st.IdempotencyKey
	colon, slash := strings.IndexByte(k, ':'), strings.IndexByte(k, '/')
	if colon > 0 && colon < slash {
		return k[:colon]
	}
	return ""
}

// ClaimStatus sets what a claim write sets: phase Processing, the key and
// fingerprint of c, one more attempt, a claim by holder from now for lease,
// the start time of the first claim, and the conditions with reason. It
// returns the conditions' message.
func ClaimStatus(obj Object, c Request, holder string, now time.Time, lease time.Duration, reason string) string {
	obj.GetPaymentStatus().Phase = paymentsv1alpha1.PhaseProcessing
	obj.GetPaymentStatus().IdempotencyKey = c.Key
	obj.GetPaymentStatus().RequestHash = c.Fingerprint
	obj.GetPaymentStatus().Attempts++
	obj.GetPaymentStatus().Claim = &paymentsv1alpha1.Claim{
		Holder:     holder,
		AcquiredAt: metav1.NewMicroTime(now),
		ExpiresAt:  metav1.NewMicroTime(now.Add(lease)),
	}
	if obj.GetPaymentStatus().StartedAt == nil {
		obj.GetPaymentStatus().StartedAt = &metav1.Time{Time: now}
	}
	note := fmt.Sprintf("Attempt %d claimed by %s until %s", obj.GetPaymentStatus().Attempts, holder,
		obj.GetPaymentStatus().Claim.ExpiresAt.UTC().Format(time.RFC3339))
	SetConditions(obj, Progress{Reason: reason, Message: note})
	return note
}

// CompletedStatus sets what the outcome write of a payment sets: phase
// Completed with the provider's answer, the claim released, the completion
// time and the conditions, worded with the kind's words. found marks a
// payment found at the provider (by a lookup or a settle) rather than
// answered to a request. It returns the reason and the message of the
// object's event.
func CompletedStatus(obj Object, words Words, o payment.Outcome, found bool, now time.Time) (reason, message string) {
	resp := responseOf(o)
	message = fmt.Sprintf("%s %d %s as %s", words.Done, resp.Amount, resp.Currency, resp.ID)
	reason = paymentsv1alpha1.ReasonSucceeded
	switch {
	case found:
		message += " (found at the provider under its idempotency key; no money moved again)"
		reason = paymentsv1alpha1.ReasonFoundAtProvider
	case o.Replayed:
		message += " (the provider replayed the outcome of an earlier attempt; no money moved again)"
		reason = paymentsv1alpha1.ReasonReplayed
	}
	completed := metav1.NewTime(now)
	obj.GetPaymentStatus().Phase = paymentsv1alpha1.PhaseCompleted
	obj.GetPaymentStatus().ProviderResponse = resp
	obj.GetPaymentStatus().Failure = nil
	obj.GetPaymentStatus().Claim = nil
	obj.GetPaymentStatus().CompletedAt = &completed
	SetConditions(obj, Progress{Reason: paymentsv1alpha1.ReasonSucceeded, Message: message})
	return reason, message
}

// MarkFinished sets what the last write of a finished object sets: the
// finalizer removed and the finished label, which takes the object out of the
// manager's cache.
func MarkFinished(obj client.Object) {
	controllerutil.RemoveFinalizer(obj, paymentsv1alpha1.Finalizer)
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[paymentsv1alpha1.LabelFinished] = "true"
	obj.SetLabels(labels)
}

// responseOf is the status's record of a provider's answer, bounded
// whatever the provider answers (see maxIDLength).
func responseOf(o payment.Outcome) *paymentsv1alpha1.ProviderResponse {
	resp := &paymentsv1alpha1.ProviderResponse{
		ID:       payment.Bound(o.ID, maxIDLength),
		Status:   payment.Bound(o.Status, MaxShortLength),
		Amount:   o.Amount,
		Currency: payment.Bound(o.Currency, MaxShortLength),
		Replayed: o.Replayed,
	}
	if !o.Created.IsZero() {
		resp.Created = &metav1.Time{Time: o.Created}
	}
	return resp
}
