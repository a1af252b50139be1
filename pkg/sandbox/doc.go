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

// Package sandbox is a payment sandbox that behaves like Stripe's
// PaymentIntents API where exactly-once matters: idempotency keys that are in
// flight, saved, replayed, reused with other parameters or forgotten (as
// Stripe forgets them after 24 hours); test payment methods that succeed, are
// declined, or need the customer's authentication (3-D Secure); the
// cancellation of PaymentIntents; a search that lags behind writes and joins metadata clauses
// with AND or OR, and that can be turned off like the lookup of a provider
// that has none; live-mode rate limits; PaymentIntents in every status; and
// injected faults (errors before and after the commit, rate limits, latency)
// that can be random or switched on for the next requests. With idempotency
// switched off every request charges, which makes the sandbox the oracle
// that proves a caller never sends a payment twice.
//
// 3-D Secure is modelled as at Stripe. PaymentMethodAuthenticationRequired
// and PaymentMethodThreeDSecureRequired, confirmed off-session
// (off_session=true, ConfirmOptions.OffSession), are declined with a 402
// card_error whose code and decline code are authentication_required; the
// error carries the intent, kept in requires_payment_method with that last
// payment error. Confirmed on-session, their intent is kept in
// requires_action. To reach requires_action whatever the client sends, as
// an intent made without off_session is left, a test names a payment method
// in Engine.RequireAction (cmd/sandbox: --require-action=PM). An intent in
// requires_action waits until it is canceled (CancelPaymentIntent, POST
// /v1/payment_intents/{id}/cancel, allowed only in requires_payment_method,
// requires_capture, requires_confirmation and requires_action) or the
// customer authenticates (CompleteAction, the test's hook: it succeeds and
// only then counts as a charge). Neither a waiting nor a canceled intent
// is ever counted in Stats.Charges; Stats.RequiresAction and Stats.Cancels
// count them.
//
// Refunds are modelled as at Stripe too (CreateRefund, POST /v1/refunds):
// only a succeeded PaymentIntent is refunded, never beyond its amount less
// its succeeded and pending refunds (charge_already_refunded when nothing is
// left, amount_too_large beyond what is left), under the same idempotency
// keys, faults and rate limits as charges and in the same key space. A
// refund succeeds at once, or stays pending for SetRefundSettleDelay;
// FailRefund fails one afterwards, which leaves its amount to refund again.
// ListRefunds and Refunded are the oracle that proves a caller never
// refunds twice; Stats.RefundsByKey counts the refunds made under each key.
//
// Bank debits are modelled as at Stripe: the test payment methods
// PaymentMethodSEPADebit, PaymentMethodSEPADebitFailed,
// PaymentMethodSEPADebitInsufficientFunds, PaymentMethodACHDebit,
// PaymentMethodACHDebitAccountClosed and
// PaymentMethodACHDebitInsufficientFunds (Stripe's test-mode tokens) leave
// their intent processing, with its PaymentMethodType, for the debit
// settle delay (SetDebitSettleDelay, PUT /_sandbox/debits); then it
// succeeds, or is requires_payment_method with a last payment error whose
// code says why (insufficient_funds, account_closed). Both HTTP surfaces
// show it processing until then. A refund of a processing intent is
// refused, and not saved under its key, until it succeeded.
//
// Signed webhooks (SetWebhooks, WithWebhooks, PUT /_sandbox/webhooks) send
// an event for every change the Engine makes to a URL, in Stripe's format
// (Stripe-Signature, verified by stripe-go's webhook package) or the HTTP
// contract's (Paymentjob-Signature), both signed with Sign. A goroutine
// sends them from a queue, retries those not answered with a 2xx, decides
// the debits as they fall due, and injects the faults of WebhookFaults
// (duplicate, reorder, drop, bad signature, delay) from a seeded random
// source; WebhookStats counts them. Close stops it.
//
// Reconciliation reads the provider's books as Stripe's lists do:
// ListIntents, ListRefundsPage and ListDisputes (GET /v1/payment_intents,
// /v1/refunds, /v1/disputes, and the HTTP contract's GET /http/list) answer
// the objects created in a window, newest first, a page at a time, from an
// index that keeps a page O(log n + page) at any size. Tests make the books
// disagree with the operator's through PutIntent (an amount changed),
// DeleteIntent (a charge the provider lost), OpenDispute and
// SetDisputeStatus, in-process or over the /_sandbox routes; reads are
// limited by RateLimits.Reads, as Stripe's live mode limits them.
//
// The Engine holds the state and knows nothing of HTTP, so that an HTTP
// server can be put on top of it; its errors are *StripeError values that
// carry the HTTP status and the fields of a Stripe error body. NewServer
// serves it as a subset of Stripe's API and as the operator's generic HTTP
// contract. The operator's own tests charge an Engine in-process through
// internal/payment/sandboxprovider, whose Provider speaks the operator's
// internal payment types; code outside this module reaches an Engine
// through its methods or over HTTP.
package sandbox
