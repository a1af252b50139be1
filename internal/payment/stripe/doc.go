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

// Package stripe is a payment.Provider and payment.Looker that charges
// through Stripe's PaymentIntents API with stripe-go.
//
// Charge sends exactly one request, POST /v1/payment_intents, with
// confirm=true, the amount, currency, customer, payment method, description
// and metadata of the payment.ChargeRequest, the metadata entry
// paymentjob_idempotency_key set to the idempotency key, and
// automatic_payment_methods[enabled]=true with
// automatic_payment_methods[allow_redirects]=never, so that no return_url is
// needed. The key also goes in the Idempotency-Key header, so a retry is
// answered with Stripe's saved response (Idempotent-Replayed: true) instead
// of charging again. stripe-go's own retries are turned off: the operator
// decides when to retry, always with the same key. An intent that is still
// processing or requires_action is then polled with GET
// /v1/payment_intents/{id}, never with another create, until it is final or
// the context is done.
//
// Every answer becomes an outcome or one of the error classes of package
// payment. A *payment.Refusal means Stripe definitively did not charge, and
// the PaymentJob fails; every other error means the outcome is uncertain,
// and the same request is sent again later with the same key:
//
//	answer                                          result
//	status succeeded or requires_capture            payment.Outcome (Replayed from Idempotent-Replayed: true)
//	status processing or requires_action            polled until final; payment.Transient naming the
//	                                                intent and its last status when the context ends
//	status requires_payment_method                  payment.Declined with the last payment error's codes
//	status canceled                                 payment.Declined, reason PaymentCanceled
//	any other status, or not the expected JSON      payment.Transient
//	card_error                                      payment.Declined "<code> (<decline code>): <message>"
//	idempotency_error                               payment.KeyReused
//	code idempotency_key_in_use, or HTTP 409        payment.InFlight, Retry-After or 1s
//	HTTP 429, code rate_limit                       payment.Transient with Retry-After
//	HTTP 401 or 403, authentication_error,          payment.Transient, saying to check the
//	permission_error                                PaymentProvider's secret
//	HTTP 5xx, api_error                             payment.Transient
//	other invalid_request_error, HTTP 400 or 404    payment.Invalid
//	network error, deadline, anything else          payment.Transient
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
// appear in errors or messages: messages copied from Stripe are cut to about
// 500 characters, made one line, and any occurrence of the API key is
// replaced.
package stripe
