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

package cli

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// The plan resolve prints follows the operator's order
// (internal/controllers/engine, resolve): the claim, the search lag of a
// not-charged answer counted from the last attempt, then the provider if
// it can be asked, else the person's word recorded unverified.
func TestResolvePlan(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	ready := []metav1.Condition{{Type: paymentsv1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1}}
	stripe := func(change ...func(*paymentsv1alpha1.PaymentProvider)) *paymentsv1alpha1.PaymentProvider {
		pp := &paymentsv1alpha1.PaymentProvider{
			ObjectMeta: metav1.ObjectMeta{Name: "stripe", UID: "pp-uid", Generation: 1},
			Spec:       paymentsv1alpha1.PaymentProviderSpec{Stripe: &paymentsv1alpha1.StripeProvider{}},
			Status:     paymentsv1alpha1.PaymentProviderStatus{Conditions: ready},
		}
		for _, c := range change {
			c(pp)
		}
		return pp
	}
	sent := func(acquired time.Time) *paymentsv1alpha1.PaymentStatus {
		return &paymentsv1alpha1.PaymentStatus{IdempotencyKey: "billing/invoice-1",
			Claim:    &paymentsv1alpha1.Claim{Holder: "manager-a", AcquiredAt: metav1.NewMicroTime(acquired), ExpiresAt: metav1.NewMicroTime(acquired.Add(time.Minute))},
			Provider: &paymentsv1alpha1.ProviderIdentity{UID: "pp-uid", Account: "acct_1"}}
	}
	for _, tc := range []struct {
		name       string
		p          plan
		say, never []string
	}{
		{name: "not charged, claim held, Stripe's default lag",
			p: plan{kind: kindJob, st: sent(now.Add(-30 * time.Second)), pp: stripe(), ref: "stripe", notCharged: true},
			say: []string{"1. wait for the claim of manager-a to expire (2026-12-02T10:00:30Z",
				"2. wait until the last attempt is older than the provider's search lag (15m0s, spec.lookup.searchLagSeconds): until 2026-12-02T10:14:30Z",
				"3. look the key billing/invoice-1 up at PaymentProvider stripe", "still reaches account acct_1",
				"4. then mark it Failed (reason Resolved)"}},
		{name: "not charged, the provider's own lag is over",
			p: plan{kind: kindJob, st: sent(now.Add(-10 * time.Minute)), ref: "stripe", notCharged: true,
				pp: stripe(func(pp *paymentsv1alpha1.PaymentProvider) {
					pp.Spec.Lookup = &paymentsv1alpha1.ProviderLookup{SearchLagSeconds: ptr.To(int32(60))}
				})},
			say:   []string{"search lag (1m0s, spec.lookup.searchLagSeconds): already over"},
			never: []string{"wait for the claim"}},
		{name: "no claim: the lag counts from startedAt",
			p: plan{kind: kindJob, ref: "stripe", notCharged: true, pp: stripe(),
				st: &paymentsv1alpha1.PaymentStatus{IdempotencyKey: "k", StartedAt: &metav1.Time{Time: now.Add(-5 * time.Minute)}}},
			say: []string{"until 2026-12-02T10:10:00Z"}},
		{name: "a refund has no search lag",
			p:     plan{kind: kindRefund, st: sent(now.Add(-2 * time.Minute)), pp: stripe(), ref: "stripe", notCharged: true},
			never: []string{"older than the provider's search lag"}},
		{name: "charged: read by id",
			p:   plan{kind: kindJob, st: sent(now.Add(-2 * time.Minute)), pp: stripe(), ref: "stripe", charged: "pi_1"},
			say: []string{"read pi_1 at PaymentProvider stripe (by its id", "then mark it Completed with pi_1"}, never: []string{"older than the provider's search lag"}},
		{name: "the provider is gone: still the lag, then unverified",
			p:     plan{kind: kindJob, st: sent(now.Add(-2 * time.Minute)), ref: "stripe", notCharged: true},
			say:   []string{"search lag (15m0s", "record your word unverified (status.resolution.verified: false): PaymentProvider stripe is gone"},
			never: []string{"look the key"}},
		{name: "an http service without lookupURL",
			p: plan{kind: kindJob, st: sent(now.Add(-2 * time.Minute)), ref: "svc", charged: "ch_1",
				pp: stripe(func(pp *paymentsv1alpha1.PaymentProvider) {
					pp.Spec = paymentsv1alpha1.PaymentProviderSpec{HTTP: &paymentsv1alpha1.HTTPProvider{URL: "https://svc"}}
				})},
			say: []string{"unverified (status.resolution.verified: false): PaymentProvider svc has no lookupURL"}, never: []string{"read ch_1"}},
		{name: "the provider was replaced",
			p: plan{kind: kindJob, st: sent(now.Add(-2 * time.Minute)), ref: "stripe", charged: "pi_1",
				pp: stripe(func(pp *paymentsv1alpha1.PaymentProvider) { pp.UID = "new-uid" })},
			say: []string{"PaymentProvider stripe was replaced since the payment was sent (uid pp-uid, now new-uid)"}},
		{name: "the provider is not Ready",
			p: plan{kind: kindJob, st: sent(now.Add(-2 * time.Minute)), ref: "stripe", charged: "pi_1",
				pp: stripe(func(pp *paymentsv1alpha1.PaymentProvider) { pp.Status.Conditions = nil })},
			say: []string{"PaymentProvider stripe is not Ready (no Ready condition)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var out strings.Builder
			tc.p.write(&out, now)
			for _, want := range tc.say {
				g.Expect(out.String()).To(ContainSubstring(want))
			}
			for _, not := range tc.never {
				g.Expect(out.String()).NotTo(ContainSubstring(not))
			}
		})
	}
}
