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

package books

import (
	"fmt"
	"strings"
)

// What a person does about each category: the runbook's short form. Each
// is an act through a path that exists (the provider's dashboard, a
// PaymentRefund, the resolve annotation, a job created from its manifest
// again); reconciliation itself never moves money.

// action is what a person should do about the finding f, by its
// category and kind.
func action(f Finding) string {
	k := f.Kind
	switch f.Category {
	case Matched:
		return ""
	case MissingAtProvider:
		if k == Refund {
			return "The customer did not get this money back: confirm in the provider's dashboard, then refund with a new PaymentRefund (a new key)."
		}
		return "The customer was not charged: confirm in the provider's dashboard that nothing moved, then charge with a new PaymentJob (a new key) if the payment is still owed."
	case UnknownToCluster:
		if k == Refund {
			return "Money went back under one of our keys with no PaymentRefund or ledger entry: find who refunded it; apply the PaymentRefund's manifest again so that the lookup records it."
		}
		return "Money moved under one of our keys with no job or ledger entry that says so: apply the job's manifest again (the lookup finds the charge and records it), or refund it at the provider if it was never owed."
	case Duplicate:
		return "Refund the extra ones at the provider (the dashboard): the cluster's PaymentRefund refunds only the one it recorded."
	case AmountMismatch:
		return "Compare the manifest's amount with the provider's: refund the difference with a PaymentRefund (spec.amount) if the provider took more, charge the rest with a new job if it took less."
	case CurrencyMismatch:
		return "Refund the charge in full with a PaymentRefund and charge again with a new job in the right currency."
	case RefundedOutside:
		return "Someone refunded this charge outside the operator (the dashboard, another system): confirm that it was meant to" +
			seeCharge(f) + "; nothing in the cluster needs to change."
	case Disputed:
		return "Answer the dispute at the provider (evidence, before its deadline); do not refund it as well."
	case CanceledOutside:
		return "The provider canceled the charge after the operator recorded it: charge with a new PaymentJob (a new key) if the payment is still owed."
	case RefundFailedAfterSuccess:
		return "The refund failed after it succeeded and the money is back with us: refund again with a new PaymentRefund (a new key), or by another means if the customer's method cannot take it."
	case RefundOfForeignCharge:
		return "Another payment's customer got this money back: stop refunds of this payment, tell whoever owns the charge, and check how the refunded payment came to record that charge (a resolution, a shared account). Do not refund again."
	}
	return ""
}

// unreadRefundAction is the action for a refund the provider showed
// nothing of when the run could not read its charge's refunds: what to
// check, since the refund may well have moved money.
func unreadRefundAction(charge string) string {
	return "The run could not read the provider's list of the refunds of charge " + charge +
		": look for this refund there (the provider's dashboard) before anything else. Do not refund again from this report; " +
		"a run whose provider lists the charge's refunds says whether it moved."
}

// seeCharge is the command that shows a finding's charge and its refunds,
// as a clause: the job's status with the provider's refunds, or, once the
// job is deleted, its ledger entry.
func seeCharge(f Finding) string {
	ns, name, ok := strings.Cut(f.ChargeObject, "/")
	switch {
	case !ok:
		return ""
	case f.ChargeObjectDeleted:
		return fmt.Sprintf(" (pj/%s is deleted: kubectl payments ledger find pj/%s -n %s shows its entry, the provider's dashboard its refunds)",
			name, name, ns)
	}
	return fmt.Sprintf(" (kubectl payments status pj/%s -n %s --check-provider shows the charge and its refunds)", name, ns)
}
