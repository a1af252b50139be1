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

package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// GetPaymentStatus returns the job's protocol status, which the operator
// writes (the same for every kind that moves money).
func (in *PaymentJob) GetPaymentStatus() *PaymentStatus { return &in.Status.PaymentStatus }

// GetPaymentStatus returns the refund's protocol status, which the operator
// writes (the same for every kind that moves money).
func (in *PaymentRefund) GetPaymentStatus() *PaymentStatus { return &in.Status.PaymentStatus }

// Settlement is a payment the provider accepted and has not settled yet:
// a bank debit (SEPA Direct Debit, ACH Direct Debit, Bacs) takes days to
// succeed or fail. It is waited for, never sent again.
type Settlement struct {
	// method is the provider's payment method type, such as sepa_debit;
	// empty when the provider does not say.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Method string `json:"method,omitempty"`

	// since is when the operator first saw the payment accepted and not
	// settled.
	// +required
	Since metav1.Time `json:"since"`

	// deadline is when a payment still not settled is reported Stalled
	// (SettlementOverdue): since plus the time the payment method's
	// settlement can take, or the PaymentProvider's
	// spec.settlement.deadlineSeconds.
	// +required
	Deadline metav1.Time `json:"deadline"`

	// settledAt is when the operator saw the provider's final answer.
	// +optional
	SettledAt *metav1.Time `json:"settledAt,omitempty"`
}
