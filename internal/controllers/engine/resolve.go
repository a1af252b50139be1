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
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/teeth"
)

// A person's way out of an uncertain payment: the resolve annotation. It is
// honoured only on a Processing object that is Stalled, checked against the
// provider where the provider can be asked, recorded (status.resolution, an
// event, the ledger) and never followed by a charge.

const (
	resolveNotCharged    = "not-charged"
	resolveChargedPrefix = "charged="
)

// resolution is a parsed resolve annotation.
type resolution struct {
	value   string
	charged bool
	id      string
}

func parseResolution(v string) (resolution, error) {
	switch {
	case v == resolveNotCharged:
		return resolution{value: v}, nil
	case strings.HasPrefix(v, resolveChargedPrefix):
		id := strings.TrimPrefix(v, resolveChargedPrefix)
		if id == "" || len(id) > maxIDLength || strings.ContainsFunc(id, func(r rune) bool { return r <= ' ' || r > '~' }) {
			return resolution{}, fmt.Errorf("the charge id in %q must be 1 to %d visible ASCII characters", v, maxIDLength)
		}
		return resolution{value: v, charged: true, id: id}, nil
	}
	return resolution{}, fmt.Errorf("%q is not a resolution: use %q or %q", v, resolveChargedPrefix+"<charge id>", resolveNotCharged)
}

// refusedResolutions remembers the resolve annotations refused per object, so
// that a refusal is announced once, not on every pass.
type refusedResolutions struct {
	mu   sync.Mutex
	seen map[types.UID]string
}

// first reports whether value was not refused for the object before.
func (s *refusedResolutions) first(uid types.UID, value string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[types.UID]string{}
	}
	if s.seen[uid] == value {
		return false
	}
	s.seen[uid] = value
	return true
}

// refusedContradicted is the kind of refusal of a value the provider
// contradicted.
const refusedContradicted = "contradicted"

// contradicted reports whether the provider contradicted value for the object
// (a refusal of kind refusedContradicted), so that it is not checked again.
func (s *refusedResolutions) contradicted(uid types.UID, value string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[uid] == value+"\x00"+refusedContradicted
}

// forget drops what is remembered of the object's resolutions: its
// annotation was removed, and a value set again is checked again.
func (s *refusedResolutions) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.seen, uid)
}

// announceWait says, once per time, when a not-charged resolution will be
// checked, with a ResolutionWaiting event (a reason of its own, so that the
// refusal that may follow is not folded into this event's series).
func (r *Reconciler) announceWait(ctx context.Context, obj Object, w *searchLagWait) {
	value := obj.GetAnnotations()[paymentsv1alpha1.AnnotationResolve]
	if !r.refused.first(obj.GetUID(), value+"\x00lag "+w.at.String()) {
		return
	}
	log.FromContext(ctx).Info("Waiting out the provider's search lag before checking a resolution", "value", value, "at", w.at)
	r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, paymentsv1alpha1.ReasonResolutionWaiting, "Resolve",
		"%s", payment.CleanMessage(fmt.Sprintf("Not resolving %s=%q yet: %s", paymentsv1alpha1.AnnotationResolve, value, w), MaxMessageLength))
}

// refuseResolution announces, once per value, that the annotation is not
// honoured, and why. The object goes on as if it was not there.
func (r *Reconciler) refuseResolution(ctx context.Context, obj Object, why string) {
	r.refuseResolutionAs(ctx, obj, why, "")
}

// refuseResolutionAs is refuseResolution with a kind of refusal: a value
// refused for a new kind of reason is announced again.
func (r *Reconciler) refuseResolutionAs(ctx context.Context, obj Object, why, kind string) {
	value := obj.GetAnnotations()[paymentsv1alpha1.AnnotationResolve]
	if !r.refused.first(obj.GetUID(), value+"\x00"+kind) {
		return
	}
	resolutionsTotal.WithLabelValues(r.Kind.Name(), "refused").Inc()
	log.FromContext(ctx).Info("Refusing a resolution", "value", value, "why", why)
	r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, paymentsv1alpha1.ReasonResolutionRefused, "Resolve",
		"%s", payment.CleanMessage(fmt.Sprintf("Not honouring %s=%q: %s", paymentsv1alpha1.AnnotationResolve, value, why), MaxMessageLength))
}

// resolve handles the resolve annotation of a Processing object. handled is
// false when the object goes on as if there was none: not Stalled, an invalid
// value, or a value the provider contradicts.
func (r *Reconciler) resolve(ctx context.Context, obj Object) (res ctrl.Result, handled bool, err error) {
	stalled := meta.FindStatusCondition(obj.GetPaymentStatus().Conditions, paymentsv1alpha1.ConditionStalled)
	if stalled == nil || stalled.Status != metav1.ConditionTrue {
		r.refuseResolution(ctx, obj, fmt.Sprintf("the %s is not Stalled; only a Processing %s whose outcome the operator cannot settle "+
			"(Stalled=True) can be resolved by hand. It is still being retried with the same idempotency key", r.Kind.Words().Object, r.Kind.Words().Object))
		return ctrl.Result{}, false, nil
	}
	want, err := parseResolution(obj.GetAnnotations()[paymentsv1alpha1.AnnotationResolve])
	if err != nil {
		r.refuseResolution(ctx, obj, err.Error())
		return ctrl.Result{}, false, nil
	}
	if r.refused.contradicted(obj.GetUID(), want.value) {
		// The provider contradicted this value: the object goes on as if it
		// was not there, until a person changes or removes it.
		return ctrl.Result{}, false, nil
	}
	if c := obj.GetPaymentStatus().Claim; c != nil && c.Holder != r.Holder {
		// Another process may be calling the provider right now: its
		// answer comes first.
		if now := r.Clock.Now(); now.Before(c.ExpiresAt.Time) {
			return ctrl.Result{RequeueAfter: c.ExpiresAt.Sub(now)}, true, nil
		}
	}
	verified, outcome, why, err := r.verifyResolution(ctx, obj, want)
	var lag *searchLagWait
	var unlisted *exactListWait
	if errors.As(err, &unlisted) {
		// Only the provider's exact list can say nothing was made; until
		// it can be read, nothing is resolved and nothing is sent.
		p := Progress{Reason: paymentsv1alpha1.ReasonResolutionWaiting, Stalled: true, Message: payment.CleanMessage(fmt.Sprintf(
			"Not resolving %s=%q yet: %s", paymentsv1alpha1.AnnotationResolve, want.value, unlisted), MaxMessageLength)}
		previous := readyReason(obj)
		if err := r.writeProgress(ctx, obj, p); err != nil {
			return ctrl.Result{}, true, err
		}
		if previous != p.Reason {
			r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, p.Reason, "Resolve", "%s", p.Message)
		}
		return ctrl.Result{RequeueAfter: Jitter(r.retryDelay(obj))}, true, nil
	}
	if errors.As(err, &lag) {
		// A charge made by the last attempt may not show in the lookup
		// yet. No new attempt meanwhile: an attempt would start the wait
		// again, and the person asked to stop.
		r.announceWait(ctx, obj, lag)
		return ctrl.Result{RequeueAfter: lag.at.Sub(r.Clock.Now())}, true, nil
	}
	if err != nil {
		// Not sure yet: ask again later; nothing is charged meanwhile.
		r.refuseResolutionAs(ctx, obj, fmt.Sprintf("the provider cannot be asked now (%v); trying again", err), "unanswered")
		return ctrl.Result{RequeueAfter: Jitter(r.retryDelay(obj))}, true, nil
	}
	if why != "" {
		if !teeth.On(teeth.ResolutionUnverified) {
			r.refuseResolutionAs(ctx, obj, why, refusedContradicted)
			return ctrl.Result{}, false, nil
		}
		// The broken variant takes the contradicted word as checked.
		verified = true
	}
	return ctrl.Result{}, true, r.recordResolution(ctx, obj, want, verified, outcome)
}

// recordResolution finishes the object as the person said: Completed with the
// charge, or Failed as not charged. It never calls Charge.
func (r *Reconciler) recordResolution(ctx context.Context, obj Object, want resolution, verified bool, o payment.Outcome) error {
	now := metav1.NewTime(r.Clock.Now())
	by := r.resolvedBy(ctx, obj)
	checked := "not verified: the provider cannot be asked"
	if verified {
		checked = "verified with the provider"
	}
	obj.GetPaymentStatus().Resolution = &paymentsv1alpha1.Resolution{Value: want.value, At: now, By: by, Verified: verified}
	obj.GetPaymentStatus().Claim = nil
	obj.GetPaymentStatus().CompletedAt = &now
	if obj.GetPaymentStatus().IdempotencyKey == "" {
		obj.GetPaymentStatus().IdempotencyKey = r.sentKey(obj)
	}
	var msg string
	if want.charged {
		obj.GetPaymentStatus().Phase = paymentsv1alpha1.PhaseCompleted
		obj.GetPaymentStatus().ProviderResponse = responseOf(o)
		obj.GetPaymentStatus().Failure = nil
		msg = fmt.Sprintf("Resolved by %s as %s (%s, %s); not %s again", by, r.Kind.Words().done(), o.ID, checked, r.Kind.Words().done())
	} else {
		obj.GetPaymentStatus().Phase = paymentsv1alpha1.PhaseFailed
		msg = fmt.Sprintf("Resolved by %s as not %s (%s); it will not be %s", by, r.Kind.Words().done(), checked, r.Kind.Words().done())
	}
	if by == unattributed {
		msg += fmt.Sprintf(". Who resolved it is not known: the resolve-attribution admission policy is not enforced, so the %s "+
			"annotation is not trusted (install config/policy)", paymentsv1alpha1.AnnotationResolvedBy)
	}
	msg = payment.CleanMessage(msg, MaxMessageLength)
	if !want.charged {
		obj.GetPaymentStatus().Failure = &paymentsv1alpha1.Failure{Reason: paymentsv1alpha1.ReasonResolved, Message: msg}
	}
	SetConditions(obj, Progress{Reason: paymentsv1alpha1.ReasonResolved, Message: msg})
	if err := r.writeFound(ctx, obj, "the resolution"); err != nil {
		return err
	}
	result := "not_charged"
	if want.charged {
		result = "charged"
	}
	resolutionsTotal.WithLabelValues(r.Kind.Name(), result).Inc()
	r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, paymentsv1alpha1.ReasonResolved, "Resolve", "%s", payment.CleanMessage(msg, MaxMessageLength))
	log.FromContext(ctx).Info("Payment resolved by hand", "value", want.value, "by", by, "verified", verified)
	return r.recordAndFinish(ctx, obj)
}

// unknownResolver stands for whoever set a resolve annotation when neither
// the admission policy nor the managedFields name them.
const unknownResolver = "unknown"

// unattributed stands for whoever set a resolve annotation while the
// resolve-attribution admission policy is not enforced: anyone who may
// annotate the object may then also write the resolved-by annotation, so its
// value is never recorded.
const unattributed = "unattributed (resolve-attribution policy missing)"

// AttributionPolicy says whether the API server attributes resolutions:
// whether the resolve-attribution admission policy of config/policy is in
// place and enforced, so that the resolved-by annotation names the user
// the API server authenticated. *Auditor is the one the manager uses.
type AttributionPolicy interface {
	// AttributionEnforced checks the policy now.
	AttributionEnforced(ctx context.Context) (bool, error)
}

// resolvedBy names who set the annotation: the user the admission policy
// recorded when the policy is enforced, or else the field manager that
// wrote the annotation, as the API server's managedFields say (the cache
// drops them, so they are read). Without the policy, nobody is named: the
// resolved-by annotation and the field manager are the writer's own word.
func (r *Reconciler) resolvedBy(ctx context.Context, obj Object) string {
	enforced := false
	if r.Attribution != nil {
		var err error
		if enforced, err = r.Attribution.AttributionEnforced(ctx); err != nil {
			log.FromContext(ctx).Error(err, "Cannot check the resolve-attribution admission policy; the resolution is recorded as unattributed")
		}
	}
	if !enforced {
		return unattributed
	}
	if by := obj.GetAnnotations()[paymentsv1alpha1.AnnotationResolvedBy]; by != "" {
		return payment.Bound(by, MaxShortLength*3)
	}
	if r.APIReader == nil {
		return unknownResolver
	}
	var fresh metav1.PartialObjectMetadata
	fresh.SetGroupVersionKind(paymentsv1alpha1.GroupVersion.WithKind(r.Kind.Name()))
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), &fresh); err != nil {
		return unknownResolver
	}
	field := `"f:` + paymentsv1alpha1.AnnotationResolve + `"`
	for _, m := range fresh.ManagedFields {
		if m.FieldsV1 != nil && strings.Contains(m.FieldsV1.GetRawString(), field) {
			return payment.Bound("field manager "+m.Manager, MaxShortLength*3)
		}
	}
	return unknownResolver
}
