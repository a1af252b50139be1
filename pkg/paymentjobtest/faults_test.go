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

package paymentjobtest_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/paymentjobtest"
)

// TestFaultSwitchesRefuseWhatTheyCannotDo: every switch returns an error
// for a value it cannot use, and switches nothing then: the next job is
// charged at once.
func TestFaultSwitchesRefuseWhatTheyCannotDo(t *testing.T) {
	tests := []struct {
		name  string
		fault func(paymentjobtest.Faults) error
		want  string
	}{
		{"decline no payment method", func(f paymentjobtest.Faults) error { return f.Decline(" ") }, "empty payment method"},
		{"lose a negative number of responses", func(f paymentjobtest.Faults) error { return f.LoseResponses(-1) }, "-1 responses"},
		{"rate-limit a negative number of requests", func(f paymentjobtest.Faults) error { return f.RateLimit(-2, time.Second) }, "-2 requests"},
		{"a negative Retry-After", func(f paymentjobtest.Faults) error { return f.RateLimit(1, -time.Second) }, "-1s"},
		{"latency the wrong way round", func(f paymentjobtest.Faults) error { return f.Latency(time.Second, time.Millisecond) }, "least latency"},
		{"refunds pending for a negative time", func(f paymentjobtest.Faults) error { return f.PendingRefunds(-time.Second) }, "pending for -1s"},
		{"fail a refund without an id", func(f paymentjobtest.Faults) error { return f.FailRefund(" ") }, "without an id"},
		{"fail a refund the sandbox never made", func(f paymentjobtest.Faults) error { return f.FailRefund("re_unknown") }, "no such refund"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.fault(env.Faults())).To(MatchError(ContainSubstring(tt.want)))
		})
	}

	g := NewWithT(t)
	ns := namespace(t)
	before := env.Sandbox().Stats().Faults
	job(t, ns, "unfaulted", paymentjobtest.PaymentMethodSucceeds)
	done, err := env.WaitForPhase(context.Background(), ns, "unfaulted", paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(done.Status.Attempts).To(Equal(int32(1)))
	g.Expect(env.Sandbox().Stats().Faults).To(Equal(before))
}

// TestFaultSwitchesAcceptZero: zero is a valid count and cancels what is
// pending.
func TestFaultSwitchesAcceptZero(t *testing.T) {
	g := NewWithT(t)
	f := env.Faults()
	t.Cleanup(func() { g.Expect(f.Reset()).To(Succeed()) })
	g.Expect(f.LoseResponses(2)).To(Succeed())
	g.Expect(f.LoseResponses(0)).To(Succeed())
	g.Expect(f.RateLimit(0, 0)).To(Succeed())
	g.Expect(f.Latency(0, 0)).To(Succeed())
	g.Expect(f.PendingRefunds(0)).To(Succeed())

	ns := namespace(t)
	before := env.Sandbox().Stats().Faults
	job(t, ns, "cancelled-faults", paymentjobtest.PaymentMethodSucceeds)
	_, err := env.WaitForPhase(context.Background(), ns, "cancelled-faults", paymentsv1alpha1.PhaseCompleted, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Sandbox().Stats().Faults).To(Equal(before))
}
