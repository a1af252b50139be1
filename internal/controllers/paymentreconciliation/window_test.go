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

package paymentreconciliation

import (
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// The window a run covers: spec.from and spec.to as given, to the second;
// without spec.to it ends the settle margin before the run starts; with
// lookbackSeconds it starts that long before its end.
func TestWindowOf(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 12, 1, 1, 30, 0, 700_000_000, time.UTC)
	day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	lookback := int64(24 * 3600)
	for _, tc := range []struct {
		name     string
		spec     paymentsv1alpha1.PaymentReconciliationSpec
		from, to time.Time
	}{
		{"a day", paymentsv1alpha1.PaymentReconciliationSpec{From: &metav1.Time{Time: day}, To: &metav1.Time{Time: day.Add(24 * time.Hour)}},
			day, day.Add(24 * time.Hour)},
		{"from a day to now", paymentsv1alpha1.PaymentReconciliationSpec{From: &metav1.Time{Time: day}},
			day, time.Date(2026, 12, 1, 1, 25, 0, 0, time.UTC)},
		{"the last 24 hours", paymentsv1alpha1.PaymentReconciliationSpec{LookbackSeconds: &lookback},
			time.Date(2026, 11, 30, 1, 25, 0, 0, time.UTC), time.Date(2026, 12, 1, 1, 25, 0, 0, time.UTC)},
	} {
		from, to := windowOf(tc.spec, now, DefaultSettleMargin)
		g.Expect(from).To(Equal(tc.from), tc.name)
		g.Expect(to).To(Equal(tc.to), tc.name)
	}
}

// A run that could not finish is tried again, unless the provider refused
// one of its requests for good: then it is Failed (and Stalled), since the
// same request would be refused again.
func TestUnfinished(t *testing.T) {
	g := NewWithT(t)
	for _, tc := range []struct {
		name   string
		err    error
		phase  paymentsv1alpha1.ReconciliationPhase
		reason string
		again  bool
	}{
		{"the API server", errors.New("cannot list the PaymentJobs: connection refused"),
			paymentsv1alpha1.ReconciliationRunning, ReasonClusterUnavailable, true},
		{"a rate limit", providerError{payment.Transient(errors.New("429"), time.Second)},
			paymentsv1alpha1.ReconciliationRunning, ReasonProviderUnavailable, true},
		{"an invalid request", providerError{fmt.Errorf("cannot list the provider's charges: %w", payment.Invalid("no such parameter"))},
			paymentsv1alpha1.ReconciliationFailed, ReasonProviderRefused, false},
	} {
		phase, reason, again := unfinished(tc.err)
		g.Expect([]any{phase, reason, again}).To(Equal([]any{tc.phase, tc.reason, tc.again}), tc.name)
	}
}
