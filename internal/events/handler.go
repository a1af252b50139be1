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

package events

// One request: refused with a 4xx (or 503) and counted by reason, or
// accepted with 200 and handled once.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/httpprovider"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/stripe"
)

// refusal is why a request is refused and its answer.
type refusal struct {
	reason string
	status int
	err    error
}

// parseErrors map the parsers' errors to their refusal.
var parseErrors = []struct {
	err    error
	reason string
	status int
}{
	{payment.ErrEventUnsigned, ReasonUnsigned, http.StatusUnauthorized},
	{payment.ErrEventBadSignature, ReasonBadSignature, http.StatusUnauthorized},
	{payment.ErrEventStale, ReasonStale, http.StatusBadRequest},
	{payment.ErrEventTooLarge, ReasonOversized, http.StatusRequestEntityTooLarge},
	{payment.ErrEventMalformed, ReasonMalformed, http.StatusBadRequest},
}

// refusalOf is the refusal of a parser's or readBody's error.
func refusalOf(err error) *refusal {
	for _, p := range parseErrors {
		if errors.Is(err, p.err) {
			return &refusal{reason: p.reason, status: p.status, err: err}
		}
	}
	return &refusal{reason: ReasonMalformed, status: http.StatusBadRequest, err: err}
}

// ServeHTTP handles one request to the events endpoint.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.init()
	ctx := r.Context()
	name, named := providerOf(r.URL.Path)
	var pp *paymentsv1alpha1.PaymentProvider
	var lookupErr error
	if named {
		pp, lookupErr = s.provider(ctx, name)
	}
	bucket := unknown
	if pp != nil {
		bucket = name
	}
	limiter := s.limiter(bucket)
	if limiter.TokensAt(s.Clock.Now()) < 1 {
		// Too many refusals lately: nothing more is read or verified.
		eventsRefusedTotal.WithLabelValues(ReasonRateLimited).Inc()
		w.Header().Set("Retry-After", "1")
		http.Error(w, "refused: "+ReasonRateLimited, http.StatusTooManyRequests)
		return
	}
	var ref *refusal
	switch {
	case r.Method != http.MethodPost:
		w.Header().Set("Allow", http.MethodPost)
		ref = &refusal{reason: ReasonMalformed, status: http.StatusMethodNotAllowed, err: errors.New("the method is not POST")}
	case lookupErr != nil:
		ref = &refusal{reason: ReasonUnavailable, status: http.StatusServiceUnavailable, err: lookupErr}
	case pp == nil:
		ref = &refusal{reason: ReasonUnknownProvider, status: http.StatusNotFound, err: errors.New("no PaymentProvider with spec.events at this path")}
	default:
		ref = s.accept(ctx, w, r, name, pp)
	}
	if ref == nil {
		return
	}
	limiter.AllowN(s.Clock.Now(), 1)
	eventsRefusedTotal.WithLabelValues(ref.reason).Inc()
	s.Log.V(1).Info("Refusing provider event", "path", r.URL.EscapedPath(), "reason", ref.reason, "status", ref.status, "error", ref.err.Error())
	http.Error(w, "refused: "+ref.reason, ref.status)
}

// provider reads the PaymentProvider name: nil when there is none or it
// has no spec.events.
func (s *Server) provider(ctx context.Context, name types.NamespacedName) (*paymentsv1alpha1.PaymentProvider, error) {
	var pp paymentsv1alpha1.PaymentProvider
	switch err := s.Reader.Get(ctx, name, &pp); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("cannot get PaymentProvider %s: %w", name, err)
	case pp.Spec.Events == nil, pp.DeletionTimestamp != nil:
		return nil, nil
	}
	return &pp, nil
}

// accept verifies the event of a provider with spec.events and handles it,
// or returns why it is refused.
func (s *Server) accept(ctx context.Context, w http.ResponseWriter, r *http.Request, name types.NamespacedName, pp *paymentsv1alpha1.PaymentProvider) *refusal {
	body, err := readBody(r)
	if err != nil {
		return refusalOf(err)
	}
	secret, err := s.secret(ctx, pp)
	if err != nil {
		return &refusal{reason: ReasonUnavailable, status: http.StatusServiceUnavailable, err: err}
	}
	var ev payment.Event
	switch {
	case pp.Spec.Stripe != nil:
		ev, err = stripe.ParseEvent(body, r.Header.Get(stripe.SignatureHeader), secret, s.Clock.Now())
	default:
		ev, err = httpprovider.ParseEvent(body, r.Header.Get(httpprovider.SignatureHeader), secret, s.Clock.Now())
	}
	if errors.Is(err, payment.ErrEventIgnored) {
		s.answer(w, name, ev, ResultIgnored, 0)
		return nil
	}
	if err != nil {
		return refusalOf(err)
	}
	if why := s.foreign(ctx, pp, ev); why != "" {
		return &refusal{reason: ReasonForeign, status: http.StatusForbidden, err: errors.New(why)}
	}
	if !s.seen.first(name, ev.ID, s.Clock.Now()) {
		s.answer(w, name, ev, ResultDuplicate, 0)
		return nil
	}
	woken, now := s.wakes.wake(s.context(), name, ev)
	switch {
	case !now:
		s.answer(w, name, ev, ResultCoalesced, 0)
	case woken == 0:
		s.answer(w, name, ev, ResultUnmatched, 0)
	default:
		s.answer(w, name, ev, ResultWoken, woken)
	}
	return nil
}

// secret reads the endpoint secret of pp from its labelled Secret.
func (s *Server) secret(ctx context.Context, pp *paymentsv1alpha1.PaymentProvider) (string, error) {
	ref := pp.Spec.Events.SecretRef
	var secret corev1.Secret
	err := s.Reader.Get(ctx, types.NamespacedName{Namespace: pp.Namespace, Name: ref.Name}, &secret)
	switch {
	case apierrors.IsNotFound(err), err == nil && secret.Labels[paymentsv1alpha1.LabelCredentials] != "true":
		return "", fmt.Errorf("the events Secret %q does not exist or lacks the label %s=true", ref.Name, paymentsv1alpha1.LabelCredentials)
	case err != nil:
		return "", fmt.Errorf("cannot get the events Secret %q: %w", ref.Name, err)
	case len(bytes.TrimSpace(secret.Data[ref.Key])) == 0:
		return "", fmt.Errorf("the events Secret %q has no value at key %q", ref.Name, ref.Key)
	}
	// A Secret made from a file (kubectl create secret --from-file) ends
	// in a newline that the provider never signed with.
	return string(bytes.TrimSpace(secret.Data[ref.Key])), nil
}

// answer counts and logs an accepted event and answers 200; duplicates
// and ignored types are logged at V(1).
func (s *Server) answer(w http.ResponseWriter, name types.NamespacedName, ev payment.Event, result string, woken int) {
	eventsReceivedTotal.WithLabelValues(result).Inc()
	log := s.Log
	if result == ResultDuplicate || result == ResultIgnored {
		// A replayed or uninteresting event costs no more than a refusal.
		log = log.V(1)
	}
	log.Info("Handled provider event", "paymentProvider", klog.KRef(name.Namespace, name.Name),
		"event", ev.ID, "type", ev.Type, "result", result, "woken", woken, "age", ageOf(ev, s.Clock.Now()))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprintln(w, result)
}

// ageOf is how long ago the provider created ev, or 0 when it does not say.
func ageOf(ev payment.Event, now time.Time) time.Duration {
	if ev.Created.IsZero() {
		return 0
	}
	return now.Sub(ev.Created).Round(time.Second)
}
