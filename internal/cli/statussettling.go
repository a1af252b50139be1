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
	"time"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// SettlingLine is a payment the provider accepted and has not settled (a
// bank debit): how long it has waited and what the operator waits for.
type SettlingLine struct {
	// ID is the provider's payment, Method its payment method type.
	ID     string `json:"id"`
	Method string `json:"method,omitempty"`
	// Since is when it was accepted, Deadline when it is reported Stalled
	// (SettlementOverdue) if it has not settled.
	Since    time.Time `json:"since"`
	Deadline time.Time `json:"deadline"`
	// Overdue says the deadline passed.
	Overdue bool `json:"overdue,omitempty"`
	// SettledAt is when the operator saw the provider's final answer.
	SettledAt *time.Time `json:"settledAt,omitempty"`
}

// settlingOf is the settling line of st, or nil when its payment did not
// wait for a settlement.
func settlingOf(st *paymentsv1alpha1.PaymentStatus, now time.Time) *SettlingLine {
	s := st.Settlement
	if s == nil {
		return nil
	}
	l := &SettlingLine{Method: s.Method, Since: s.Since.Time, Deadline: s.Deadline.Time}
	if st.ProviderResponse != nil {
		l.ID = st.ProviderResponse.ID
	}
	if s.SettledAt != nil {
		at := s.SettledAt.Time
		l.SettledAt = &at
	} else {
		l.Overdue = now.After(s.Deadline.Time)
	}
	return l
}

// printSettling writes, with p, the settling line of s.
func printSettling(p func(string, ...any), s *Story, now time.Time) {
	l := s.Settling
	if l == nil {
		return
	}
	method := orDash(l.Method)
	if l.SettledAt != nil {
		p("  Settlement:\t%s %s, accepted %s, settled %s", method, l.ID, ago(l.Since, now), ago(*l.SettledAt, now))
		return
	}
	deadline := "deadline " + ago(l.Deadline, now)
	if l.Overdue {
		deadline = "overdue since " + ago(l.Deadline, now) + ": check it at the provider"
	}
	p("  Settling:\t%s %s, accepted %s, %s", method, l.ID, ago(l.Since, now), deadline)
	p("  Waiting for:\tthe provider to settle it (Why says how long such payments take); the operator reads it at a rate that " +
		"falls with its age (every tenth of its age, from 2s to 2h; half of it, from 30s, when its PaymentProvider has spec.events), " +
		"and at once when a signed provider event names it")
}
