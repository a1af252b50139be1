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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

func TestBackoffDoublesUpToTheMaximum(t *testing.T) {
	b := Backoff{Initial: time.Second, Max: 5 * time.Minute}
	tests := []struct {
		attempts int32
		want     time.Duration
	}{
		{1, time.Second},
		{2, 2 * time.Second},
		{3, 4 * time.Second},
		{9, 256 * time.Second},
		{10, 5 * time.Minute},
		{1000, 5 * time.Minute},
	}
	for _, tt := range tests {
		NewWithT(t).Expect(b.after(tt.attempts)).To(Equal(tt.want), "after %d attempts", tt.attempts)
	}
}

func TestJitterAddsAtMostTwentyPercent(t *testing.T) {
	g := NewWithT(t)
	for range 1000 {
		d := Jitter(10 * time.Second)
		g.Expect(d).To(BeNumerically(">=", 10*time.Second))
		g.Expect(d).To(BeNumerically("<=", 12*time.Second))
	}
	g.Expect(Jitter(0)).To(BeZero())
}

// backoffKind is a kind of PaymentJobs whose objects all have the
// backoffLimit limit: the only term the engine's retry delays read.
type backoffKind struct {
	jobsKind
	limit *int32
}

func (k backoffKind) Terms(*paymentsv1alpha1.PaymentJob) Terms { return Terms{BackoffLimit: k.limit} }

func TestRetryDelayUsesTheMaximumOnceExhausted(t *testing.T) {
	r := &Reconciler{Kind: NewKind[*paymentsv1alpha1.PaymentJob](backoffKind{limit: ptr.To[int32](2)}), Backoff: Backoff{Initial: time.Second, Max: time.Minute}}
	job := &paymentsv1alpha1.PaymentJob{Spec: paymentsv1alpha1.PaymentJobSpec{BackoffLimit: ptr.To[int32](2)}}
	tests := []struct {
		attempts      int32
		wantExhausted bool
		wantDelay     time.Duration
	}{
		{1, false, time.Second},
		{2, false, 2 * time.Second},
		{3, true, time.Minute},
		{4, true, time.Minute},
	}
	for _, tt := range tests {
		g := NewWithT(t)
		job.Status.Attempts = tt.attempts
		g.Expect(r.exhausted(job)).To(Equal(tt.wantExhausted), "attempts %d", tt.attempts)
		g.Expect(r.retryDelay(job)).To(Equal(tt.wantDelay), "attempts %d", tt.attempts)
	}
}

// TestPendingRecheckBacksOffWithoutAnEvent: a job waiting for its provider
// looks again by itself, as long again as it has waited so far, between
// Backoff.Initial and Backoff.Max, and never later than its deadline: it
// never depends on a watch event or the informer's resync.
func TestPendingRecheckBacksOffWithoutAnEvent(t *testing.T) {
	now := time.Now()
	r := &Reconciler{Backoff: Backoff{Initial: time.Second, Max: 5 * time.Minute},
		Clock: clocktesting.NewFakePassiveClock(now)}
	waiting := func(reason string, since time.Duration) *paymentsv1alpha1.PaymentJob {
		return &paymentsv1alpha1.PaymentJob{Status: paymentsv1alpha1.PaymentJobStatus{PaymentStatus: paymentsv1alpha1.PaymentStatus{Conditions: []metav1.Condition{{
			Type: paymentsv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason,
			LastTransitionTime: metav1.NewTime(now.Add(-since)),
		}}}}}
	}
	tests := []struct {
		name     string
		job      *paymentsv1alpha1.PaymentJob
		deadline time.Duration
		atLeast  time.Duration
	}{
		{"new job", &paymentsv1alpha1.PaymentJob{}, 0, time.Second},
		{"just started waiting", waiting(paymentsv1alpha1.ReasonProviderNotReady, 0), 0, time.Second},
		{"waited 40s", waiting(paymentsv1alpha1.ReasonProviderNotReady, 40*time.Second), 0, 40 * time.Second},
		{"waited a day", waiting(paymentsv1alpha1.ReasonProviderNotReady, 24*time.Hour), 0, 5 * time.Minute},
		{"waited for something else", waiting(paymentsv1alpha1.ReasonSuspended, time.Hour), 0, time.Second},
		{"deadline first", waiting(paymentsv1alpha1.ReasonProviderNotReady, time.Hour), 7 * time.Second, 7 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			d := r.pendingRecheck(tt.job, paymentsv1alpha1.ReasonProviderNotReady, tt.deadline)
			g.Expect(d).To(BeNumerically(">=", tt.atLeast))
			g.Expect(d).To(BeNumerically("<=", tt.atLeast*6/5))
		})
	}
}
