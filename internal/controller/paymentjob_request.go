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

package controller

import (
	"errors"
	"regexp"
	"strings"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// What a job sends (its key and request, the same on every attempt) and how
// a provider's refusal and messages are bounded before they reach the status.

func refusalOutcome(r *payment.Refusal) string {
	switch {
	case errors.Is(r, payment.ErrDeclined):
		return outcomeDeclined
	case errors.Is(r, payment.ErrKeyReused):
		return outcomeKeyReused
	default:
		return outcomeInvalid
	}
}

// truncate bounds s to n bytes, cut on a character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// conditionReason is the API's pattern for condition reasons.
var conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// refusalReason is the refusal's reason if the API accepts it as a
// condition reason, so that a provider's odd answer cannot make the outcome
// write fail forever.
func refusalReason(r *payment.Refusal) string {
	if len(r.Reason) <= maxShortLength && conditionReason.MatchString(r.Reason) {
		return r.Reason
	}
	return ReasonPaymentRefused
}
