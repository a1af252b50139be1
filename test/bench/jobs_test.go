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

package main

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentjob"
)

// The baseline's writes are the operator's functions; these tests compare
// them with what those functions produce when called as the reconciler's
// claim and outcome writes call them, and pin what the benchmark adds: the
// provider recorded at the first claim and the sandbox's answer.
func TestClaimAndCompleteWriteWhatTheOperatorWrites(t *testing.T) {
	g := NewWithT(t)
	job := newJob("ns", 7)
	job.UID = "0b0e7a6e-9c1d-4a53-8f2a-1f0cbd1c2e3f"
	job.Generation = 1
	provider := paymentsv1alpha1.ProviderIdentity{UID: "pp-uid", Endpoint: "http://127.0.0.1:4242", Account: "acct_sandbox"}
	claimed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := claimed.Add(40 * time.Millisecond)

	// As the reconciler's claim (claimAndAct) and outcome (recordSuccess)
	// writes set the status, for a first attempt answered by the sandbox.
	want := job.DeepCopy()
	want.Status.Provider = &provider
	wantNote := paymentjob.ClaimStatus(want, paymentjob.ChargeOf(want), "holder/1", claimed, engine.DefaultClaimLease, paymentsv1alpha1.ReasonClaimed)
	wantClaimed := *want.Status.DeepCopy()
	wantReason, wantMsg := paymentjob.CompletedStatus(want, sandboxAnswer(job, now), false, now)

	g.Expect(claim(job, provider, "holder/1", claimed)).To(Equal(wantNote))
	g.Expect(untimed(job.Status)).To(Equal(untimed(wantClaimed)))
	g.Expect(job.Status.IdempotencyKey).To(Equal("ns/job-000007"))
	g.Expect(job.Status.Provider).To(Equal(&provider), "recorded at the first claim")
	g.Expect(job.Status.Claim.ExpiresAt.Sub(job.Status.Claim.AcquiredAt.Time)).To(Equal(engine.DefaultClaimLease))

	reason, msg := complete(job, now)
	g.Expect(untimed(job.Status)).To(Equal(untimed(want.Status)))
	g.Expect(reason).To(Equal(wantReason))
	g.Expect(msg).To(Equal(wantMsg))
	g.Expect(reason).To(Equal(paymentsv1alpha1.ReasonSucceeded), "a charge answered, not found or replayed")
	g.Expect(msg).To(Equal("Charged 107 usd as pi_bench0b0e7a6e9c1d4a538f2"))
	g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted))
	g.Expect(job.Status.Claim).To(BeNil())
	g.Expect(job.Status.Attempts).To(Equal(int32(1)))
	g.Expect(job.Status.ObservedGeneration).To(Equal(int64(1)))
}

// untimed is s without the conditions' transition times, which are the
// clock's when they are set.
func untimed(s paymentsv1alpha1.PaymentJobStatus) paymentsv1alpha1.PaymentJobStatus {
	s = *s.DeepCopy()
	for i := range s.Conditions {
		s.Conditions[i].LastTransitionTime = metav1.Time{}
	}
	return s
}

func TestSandboxAnswerLooksLikeTheSandboxs(t *testing.T) {
	g := NewWithT(t)
	job := newJob("ns", 7)
	job.UID = "0b0e7a6e-9c1d-4a53-8f2a-1f0cbd1c2e3f"
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	o := sandboxAnswer(job, now)
	g.Expect(o.ID).To(MatchRegexp(`^pi_[A-Za-z0-9]{24}$`), "the sandbox's ids: pi_ and 24 letters and digits")
	g.Expect(o.Status).To(Equal("succeeded"))
	g.Expect(o.Amount).To(Equal(job.Spec.Amount))
	g.Expect(o.Currency).To(Equal(job.Spec.Currency))
	g.Expect(o.Created).To(BeTemporally("<", now))
	g.Expect(o.Replayed).To(BeFalse())
}

// fakeSink is an events.EventSink that keeps the events created, or
// refuses them with err.
type fakeSink struct {
	events.EventSink
	err error

	mu      sync.Mutex
	created []*eventsv1.Event
}

func (s *fakeSink) Create(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	if s.err != nil {
		return nil, s.err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.created = append(s.created, e)
	return e, nil
}

func (s *fakeSink) events() []*eventsv1.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*eventsv1.Event(nil), s.created...)
}

func TestTheBaselineEventComesFromTheManagersRecorder(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(paymentsv1alpha1.AddToScheme(scheme)).To(Succeed())
	sink := &fakeSink{}
	rec, err := newEventRecorder(context.Background(), sink, scheme)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(rec.stop)

	for _, job := range []*paymentsv1alpha1.PaymentJob{newJob("ns", 1), newJob("ns", 2)} {
		job.UID = "uid-1"
		job.ResourceVersion = "41"
		rec.Eventf(job, nil, corev1.EventTypeNormal, paymentsv1alpha1.ReasonSucceeded, chargeAction, "%s", "Charged "+job.Name)
	}
	g.Expect(rec.waitSent(context.Background(), 2, 10*time.Second)).To(Succeed())
	g.Expect(rec.waitSent(context.Background(), 3, 50*time.Millisecond)).To(MatchError("2 of 3 events sent within 50ms"))

	created := sink.events()
	g.Expect(created).To(HaveLen(2))
	e := created[0]
	if e.Regarding.Name != "job-000001" {
		e = created[1]
	}
	g.Expect(e.ReportingController).To(Equal("paymentjob-controller"))
	g.Expect(e.ReportingInstance).To(HavePrefix("paymentjob-controller-"), "the controller and the host name, as in the manager")
	g.Expect(e.Action).To(Equal("Charge"))
	g.Expect(e.Reason).To(Equal(paymentsv1alpha1.ReasonSucceeded))
	g.Expect(e.Type).To(Equal(corev1.EventTypeNormal))
	g.Expect(e.Note).To(Equal("Charged job-000001"))
	g.Expect(e.Regarding).To(Equal(corev1.ObjectReference{
		Kind: "PaymentJob", APIVersion: paymentsv1alpha1.GroupVersion.String(),
		Namespace: "ns", Name: "job-000001", UID: "uid-1", ResourceVersion: "41",
	}))
	g.Expect(e.Name).To(HavePrefix("job-000001."))
	g.Expect(e.EventTime.Time).NotTo(BeZero())
}

func TestARefusedEventFailsTheWait(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(paymentsv1alpha1.AddToScheme(scheme)).To(Succeed())
	rec, err := newEventRecorder(context.Background(), &fakeSink{err: apierrors.NewForbidden(eventsv1.Resource("events"), "", errors.New("not allowed"))}, scheme)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(rec.stop)
	rec.Eventf(newJob("ns", 1), nil, corev1.EventTypeNormal, paymentsv1alpha1.ReasonSucceeded, chargeAction, "%s", "Charged")
	g.Expect(rec.waitSent(context.Background(), 1, 10*time.Second)).To(MatchError(ContainSubstring("not allowed")))
}
