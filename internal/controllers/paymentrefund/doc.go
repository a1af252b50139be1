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

// Package paymentrefund is the PaymentRefund kind of the engine: money given
// back from a PaymentJob's charge, at the account that holds the charge,
// never more than is left. Kind supplies what the engine's Reconciler needs
// (the refunded charge, found before the first claim; the refund calls; the
// look at the charge's refunds); RefundWatch reads the Completed refunds
// again at their providers and sets Failed the ones that failed there since.
// The package registers paymentjob_refunds_total,
// paymentjob_refund_replays_total and
// paymentjob_refunds_failed_after_success_total.
package paymentrefund
