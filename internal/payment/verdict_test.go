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

package payment_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

func TestDecide(t *testing.T) {
	req := payment.ChargeRequest{Amount: 2000, Currency: "usd", PaymentMethod: "pm_card_visa"}
	const key = "billing/invoice-1"
	mine := payment.RequestHash(key, req)
	at := func(minutes int) time.Time {
		return time.Unix(1_800_000_000, 0).Add(time.Duration(minutes) * time.Minute)
	}
	charge := func(id string, state payment.ChargeState, fingerprint string, created time.Time) payment.Found {
		return payment.Found{Key: key, Outcome: payment.Outcome{ID: id, Amount: 2000, Currency: "usd", Created: created},
			State: state, Fingerprint: fingerprint}
	}
	tests := []struct {
		name       string
		found      []payment.Found
		wantAction payment.Action
		wantID     string
	}{
		{name: "nothing found", wantAction: payment.ActionCharge},
		{name: "succeeded", found: []payment.Found{charge("pi_1", payment.StateSucceeded, mine, at(0))},
			wantAction: payment.ActionRecord, wantID: "pi_1"},
		{name: "the newest success of several", found: []payment.Found{
			charge("pi_old", payment.StateSucceeded, mine, at(0)), charge("pi_new", payment.StateSucceeded, mine, at(5))},
			wantAction: payment.ActionRecord, wantID: "pi_new"},
		{name: "pending is settled", found: []payment.Found{charge("pi_p", payment.StatePending, mine, at(0))},
			wantAction: payment.ActionSettle, wantID: "pi_p"},
		{name: "a success wins over a pending one", found: []payment.Found{
			charge("pi_p", payment.StatePending, mine, at(9)), charge("pi_s", payment.StateSucceeded, mine, at(0))},
			wantAction: payment.ActionRecord, wantID: "pi_s"},
		{name: "canceled and declined let a charge go", found: []payment.Found{
			charge("pi_c", payment.StateNotCharged, mine, at(0)), charge("pi_d", payment.StateNotCharged, mine, at(1))},
			wantAction: payment.ActionCharge},
		{name: "another request's charge stalls", found: []payment.Found{charge("pi_x", payment.StateSucceeded, "sha256:other", at(0))},
			wantAction: payment.ActionStall, wantID: "pi_x"},
		{name: "another request's canceled charge stalls too", found: []payment.Found{
			charge("pi_x", payment.StateNotCharged, "sha256:other", at(0))},
			wantAction: payment.ActionStall, wantID: "pi_x"},
		{name: "another request's charge beside a pending one of ours stalls", found: []payment.Found{
			charge("pi_p", payment.StatePending, mine, at(0)), charge("pi_x", payment.StateSucceeded, "sha256:other", at(1))},
			wantAction: payment.ActionStall, wantID: "pi_x"},
		{name: "our success beside another request's charge is recorded", found: []payment.Found{
			charge("pi_s", payment.StateSucceeded, mine, at(0)), charge("pi_x", payment.StateSucceeded, "sha256:other", at(1))},
			wantAction: payment.ActionRecord, wantID: "pi_s"},
		{name: "a charge without fingerprint of the same amount counts as ours",
			found:      []payment.Found{charge("pi_legacy", payment.StateSucceeded, "", at(0))},
			wantAction: payment.ActionRecord, wantID: "pi_legacy"},
		{name: "a charge without fingerprint of another amount stalls", found: []payment.Found{{Key: key,
			Outcome: payment.Outcome{ID: "pi_legacy", Amount: 1, Currency: "usd"}, State: payment.StateSucceeded}},
			wantAction: payment.ActionStall, wantID: "pi_legacy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			v := payment.Decide(tt.found, mine, req)
			g.Expect(v.Action).To(Equal(tt.wantAction))
			g.Expect(v.Charge.ID).To(Equal(tt.wantID))
			if tt.wantAction == payment.ActionStall {
				// Another request's charge may be another tenant's: the
				// reason, shown on the job, never names it.
				g.Expect(v.Reason).To(ContainSubstring("another request"))
				for _, f := range tt.found {
					g.Expect(v.Reason).NotTo(ContainSubstring(f.ID))
					g.Expect(v.Reason).NotTo(ContainSubstring(fmt.Sprint(f.Amount)))
				}
			}
		})
	}
}
