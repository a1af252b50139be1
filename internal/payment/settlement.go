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

package payment

import "time"

// SettlementTime is how long a payment method's settlement takes, as its
// scheme documents it: Typical words it for people, Deadline is when a
// payment still not settled is overdue (business days counted as calendar
// days with their weekends).
type SettlementTime struct {
	Typical  string
	Deadline time.Duration
}

const day = 24 * time.Hour

// settlementTimes are the bank debits' documented settlement times
// (Stripe's payment method types).
var settlementTimes = map[string]SettlementTime{
	"sepa_debit":      {Typical: "up to 14 business days (7 to 8 on average)", Deadline: 20 * day},
	"us_bank_account": {Typical: "up to 4 business days", Deadline: 7 * day},
	"bacs_debit":      {Typical: "about 3 business days", Deadline: 7 * day},
	"au_becs_debit":   {Typical: "up to 3 business days", Deadline: 7 * day},
	"acss_debit":      {Typical: "up to 5 business days", Deadline: 9 * day},
}

// SettlementTimeOf returns the settlement time of the payment method type
// method; a method without a documented time (or "") gets 20 days, SEPA's.
func SettlementTimeOf(method string) SettlementTime {
	if t, ok := settlementTimes[method]; ok {
		return t
	}
	return SettlementTime{Typical: "days, as the provider decides", Deadline: 20 * day}
}

// BankDebit reports whether method is a bank debit whose payments settle
// days after they are accepted.
func BankDebit(method string) bool {
	_, ok := settlementTimes[method]
	return ok
}

// Read intervals of a settling payment: a tenth of its age without
// events, half of it when the provider sends events (which wake it when it
// settles), between the bounds below.
const (
	settleReadFloor       = 2 * time.Second
	settleReadFloorEvents = 30 * time.Second
	settleReadCeiling     = 2 * time.Hour
)

// SettleReadInterval is how long the engine waits before it reads again a
// payment that has been settling for age: age/10 (age/2 when the provider
// sends signed events), at least 2 s (30 s) and at most 2 h. A SEPA debit
// settling for 8 days is read about 180 times without events; 100,000
// payments settling evenly over 8 days cost about 92,000 reads an hour
// (make bench: settling_reads_per_hour_100k), a quarter of Stripe's live
// rate limit.
func SettleReadInterval(age time.Duration, events bool) time.Duration {
	lo, d := settleReadFloor, age/10
	if events {
		lo, d = settleReadFloorEvents, age/2
	}
	return min(max(d, lo), settleReadCeiling)
}
