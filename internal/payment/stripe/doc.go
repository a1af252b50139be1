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

// Package stripe is a payment.Provider, payment.Looker and
// payment.Identifier that charges through Stripe's PaymentIntents API with
// stripe-go, and a payment.Refunder that refunds those payments through
// Stripe's Refunds API.
//
// Charge sends exactly one request, POST /v1/payment_intents, with
// confirm=true, the amount, currency, customer, payment method, description
// and metadata of the payment.ChargeRequest, two metadata entries of its
// own, payment.MetadataKeyIdempotencyKey (paymentjob_idempotency_key) set to
// the idempotency key and payment.MetadataKeyFingerprint
// (paymentjob_request_fingerprint) set to payment.RequestHash(key, request),
// automatic_payment_methods[enabled]=true with
// automatic_payment_methods[allow_redirects]=never, so that no return_url is
// needed, and off_session=true: a job has no customer present, so a payment
// that needs the customer's authentication (3-D Secure) is declined with
// authentication_required instead of waiting in requires_action. The two
// entries of its own replace request metadata of the same
// names. The request depends on the key and the request only (metadata is
// encoded with its keys sorted), so a retry sends the same bytes. The key
// also goes in the Idempotency-Key header, so a retry is answered with
// Stripe's saved response (Idempotent-Replayed: true) instead of charging
// again. stripe-go's own retries are turned off: the operator decides when
// to retry, always with the same key. An intent that is still processing is
// accepted and not settled: a bank debit's at once, any other's once GET
// /v1/payment_intents/{id} (never another create) has polled it until the
// context is done, it is a payment.Settling, which the operator reads again
// later by its id.
//
// An intent that waits for a customer (requires_action, or
// requires_confirmation) would keep the job uncertain forever: Charge and
// Settle cancel it once, POST /v1/payment_intents/{id}/cancel with
// cancellation_reason=abandoned under the idempotency key "abandon_<id>".
// Stripe cancels only an intent that has not succeeded (requires_payment_method,
// requires_capture, requires_confirmation, requires_action, rarely
// processing), and a canceled intent can never be charged; when the cancel
// does not answer a canceled intent (refused because the customer
// authenticated just before, or lost), the intent is read again and decided
// on as it is then: succeeded is an outcome, never a refusal; canceled is a
// refusal; still waiting is uncertain. The adapter never cancels a
// processing or requires_capture intent. The intent an off-session
// authentication_required decline leaves in requires_payment_method (the
// card error's payment_intent) is canceled the same way, so that no one can
// confirm it on-session after the job failed; it moved no money, so when
// that cancel fails the refusal stands.
//
// Stripe compares every parameter of a retry with the first request under
// its key, and operators before this one sent no off_session: when the
// create is answered with an idempotency_error, Charge sends it once more
// as those operators did, so that a job they began replays its first
// answer instead of failing as a key reused; a key used for another request
// is refused again and stays a key reused.
//
// Lookup finds the intents made under up to payment.MaxLookupKeys keys with
// one request to the Search API, GET /v1/payment_intents/search, whose query
// joins one clause per key with OR:
//
//	metadata['paymentjob_idempotency_key']:'k1' OR metadata['paymentjob_idempotency_key']:'k2'
//
// with limit=100, followed by its next pages while Stripe has more, at most
// ten requests; more results than that are an error. Zero keys return an
// empty map without a request; more keys, or an invalid one, are an error
// without a request. Every intent under one of the keys is returned,
// whatever its status, as a payment.Found with the fingerprint from its
// metadata and a state:
//
//	status                                              state
//	succeeded, requires_capture                         payment.StateSucceeded
//	processing, requires_action, requires_confirmation  payment.StatePending (Settle cancels the waiting ones)
//	requires_payment_method, canceled                   payment.StateNotCharged
//	any other status                                    payment.StatePending
//
// Stripe's search index lags behind writes (usually under a minute, longer
// during outages), so Lookup never proves that a key was not charged just
// before; and search has a rate limit of its own, lower than the API's (20
// requests per second in live mode), which is why keys are looked up ten at
// a time. Every error of Lookup is uncertain.
//
// Settle reads the intent that Lookup found with GET
// /v1/payment_intents/{id}, polls it and cancels it when it waits for a
// customer, like Charge; it never creates an intent. An intent whose metadata does not carry the key it was looked up
// by is an uncertain error, not an outcome.
//
// Account reads GET /v1/account and returns the id (acct_...) of the account
// the API key belongs to; its errors are uncertain.
//
// Refund sends one request, POST /v1/refunds, with payment_intent set to
// the payment.RefundRequest's charge, the amount (always), the reason when
// there is one, and payment.RefundMetadata: the request's metadata with the
// refund key and payment.RefundHash. The key is the Idempotency-Key, so a
// retry is answered with the first refund (Idempotent-Replayed: true). A
// refund that is pending or requires_action is read with GET
// /v1/refunds/{id} until it is final or the context is done, never created
// again and never canceled:
//
//	answer                                          result
//	status succeeded                                payment.Outcome (Replayed from Idempotent-Replayed: true)
//	status pending or requires_action               polled until final; payment.Transient wrapping
//	                                                payment.ErrInFlight when the context ends or a read fails
//	status failed or canceled                       payment.Declined, reason RefundFailed, with the failure_reason
//	any other status                                payment.Transient
//	code amount_too_large, charge_already_refunded, payment.Declined, reason RefundExceedsCharge
//	or parameter amount without a code
//	code resource_missing, parameter payment_intent payment.Declined, reason ChargeNotFound
//	code charge_disputed, refund_disputed_payment,  payment.Declined, reason ChargeNotRefundable
//	charge_not_refundable,
//	payment_intent_unexpected_state
//	anything else                                   as for a charge, in the table below
//
// LookupRefunds reads the intent, GET /v1/payment_intents/{id}, and lists its
// refunds as ListRefunds does (payment.RefundLister: the list without the
// intent, for a refund that knows its charge from the PaymentJob's record),
// GET /v1/refunds?payment_intent={id}&limit=100, following
// starting_after for at most ten pages. It has no search lag. Refunds are
// grouped by the metadata entry paymentjob_idempotency_key, newest first, a
// refund without it (made in the Dashboard) counting only in Refunded, the
// sum of the succeeded, pending and requires_action refunds; the book is
// always Complete. SettleRefund reads the refund that LookupRefunds found and
// polls it like Refund; a refund whose metadata does not carry the key it was
// looked up by is uncertain. Every error of LookupRefunds is uncertain but
// the read of an intent the account does not hold (404 resource_missing:
// payment.Declined, reason ChargeNotFound), and so is every error of
// SettleRefund but the refusal of a refund that failed or was canceled.
//
// Every answer becomes an outcome or one of the error classes of package
// payment. A *payment.Refusal means Stripe definitively did not charge, and
// the PaymentJob fails; every other error means the outcome is uncertain,
// and the same request is sent again later with the same key:
//
//	answer                                          result
//	status succeeded or requires_capture            payment.Outcome (Replayed from Idempotent-Replayed: true)
//	status processing                               a bank debit: payment.Settling at once; any other:
//	                                                polled until final, payment.Settling when the
//	                                                context ends
//	status requires_action                          canceled, then payment.Declined, reason
//	                                                authentication_required (or the status it is then)
//	status requires_confirmation                    canceled, then payment.Declined, reason PaymentCanceled
//	status requires_payment_method                  payment.Declined with the last payment error's codes;
//	                                                reason authentication_required when its code says so
//	status canceled                                 payment.Declined, reason PaymentCanceled
//	any other status, or not the expected JSON      payment.Transient
//	card_error, code or decline code                payment.Declined, reason authentication_required;
//	authentication_required                         its intent canceled
//	other card_error                                payment.Declined "<code> (<decline code>): <message>"
//	idempotency_error                               payment.KeyReused
//	code idempotency_key_in_use, or HTTP 409        payment.InFlight, Retry-After or 1s
//	HTTP 429, code rate_limit                       payment.Transient with Retry-After
//	HTTP 401 or 403, authentication_error,          payment.Transient, saying to check the
//	permission_error                                PaymentProvider's secret
//	HTTP 5xx, api_error                             payment.Transient
//	other invalid_request_error, HTTP 400 or 404    payment.Invalid
//	network error, deadline, anything else          payment.Transient
//
// List, a payment.Lister, reads one page of the payment intents, refunds or
// disputes created in a window (GET /v1/payment_intents, /v1/refunds or
// /v1/disputes with created[gte], created[lt], limit=100 and
// starting_after), one request a call; it never writes, and every error is
// a payment.Transient.
//
// Lookup, Settle and Account never return a refusal of their own request:
// it says nothing about a charge, and is wrapped in a payment.Transient.
// Settle returns payment.Declined only for an intent that ended without
// moving money, as Charge does.
//
// Authentication errors are Transient although nothing was charged: the job
// did nothing wrong, the PaymentProvider's secret is, and the job completes
// by itself once the secret is fixed. Errors while polling an intent that
// Stripe accepted are always Transient, whatever their class, since the
// intent may still succeed. Retry-After is read as seconds or as an HTTP
// date and capped at ten minutes.
//
// Nothing is logged: stripe-go's logger is silenced, since its debug and
// error lines may hold whole responses. The API key and card data never
// appear in errors or messages: messages copied from Stripe are cleaned by
// payment.CleanMessage, cut to 500 bytes, made one line, and any occurrence
// of the API key is replaced.
package stripe
