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

// Package paymentjob is the PaymentJob kind of the engine: a charge. Kind
// supplies what the engine's Reconciler needs to charge each PaymentJob
// exactly once (its terms, key and request, its provider calls and the
// batched lookup of its key before the first charge); ChargeOf,
// ClaimStatus, CompletedStatus and LedgerEntry are what the engine sends and
// writes for a job, for the tests and the benchmark that imitate it; the
// package registers paymentjob_charges_total and paymentjob_replays_total.
package paymentjob
