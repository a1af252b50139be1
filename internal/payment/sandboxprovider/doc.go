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

// Package sandboxprovider is the adapter of pkg/sandbox's Engine to the
// operator's payment.Provider: an in-process provider (also a
// payment.Looker, payment.Refunder and payment.Identifier) that charges,
// looks up and refunds at an Engine as the Stripe adapter does at Stripe,
// with no HTTP in between. It serves the operator's own tests, which is why
// it sits beside the other adapters under internal/payment and not in
// pkg/sandbox: its methods take the operator's internal payment types,
// which no other module can name. Code outside this module reaches an
// Engine through its methods or over HTTP (sandbox.NewServer).
//
// A bank debit (sandbox.PaymentMethodSEPADebit, ...) is answered by Charge
// and Settle with payment.Settling as soon as its intent is read
// processing, never polled; Settle answers its outcome once it settled, or
// a Declined refusal with its failure code (insufficient_funds,
// account_closed) as the reason. A refund of a payment still processing is
// a transient error: nothing was refunded.
package sandboxprovider
