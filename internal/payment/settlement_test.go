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
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// readsUntil counts the reads of a payment settling for d, read at
// SettleReadInterval (without jitter).
func readsUntil(d time.Duration, events bool) int {
	n := 0
	for age := time.Duration(0); age < d; age += payment.SettleReadInterval(age, events) {
		n++
	}
	return n
}

func TestTheReadRateFallsWithAge(t *testing.T) {
	g := NewWithT(t)
	g.Expect(payment.SettleReadInterval(0, false)).To(Equal(2 * time.Second))
	g.Expect(payment.SettleReadInterval(time.Minute, false)).To(Equal(6 * time.Second))
	g.Expect(payment.SettleReadInterval(time.Hour, false)).To(Equal(6 * time.Minute))
	g.Expect(payment.SettleReadInterval(3*24*time.Hour, false)).To(Equal(2 * time.Hour))
	g.Expect(payment.SettleReadInterval(0, true)).To(Equal(30 * time.Second))
	g.Expect(payment.SettleReadInterval(3*24*time.Hour, true)).To(Equal(2 * time.Hour))

	// What the doc comment says of a SEPA debit settling for 8 days.
	g.Expect(readsUntil(8*24*time.Hour, false)).To(BeNumerically("~", 180, 5))
	g.Expect(readsUntil(8*24*time.Hour, true)).To(BeNumerically("<", 120))
}

func TestSettlementTimesAreTheSchemes(t *testing.T) {
	g := NewWithT(t)
	g.Expect(payment.SettlementTimeOf("sepa_debit").Deadline).To(Equal(20 * 24 * time.Hour))
	g.Expect(payment.SettlementTimeOf("us_bank_account").Deadline).To(Equal(7 * 24 * time.Hour))
	g.Expect(payment.SettlementTimeOf("").Deadline).To(Equal(20 * 24 * time.Hour))
	g.Expect(payment.BankDebit("sepa_debit")).To(BeTrue())
	g.Expect(payment.BankDebit("card")).To(BeFalse())
}
