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

// Package httpprovider is a payment.Provider for a team's own payment
// service that implements the operator's HTTP contract (docs/providers.md):
// one JSON POST per charge, with an Idempotency-Key header, answered with the
// status codes of the IETF httpapi Idempotency-Key draft, and an optional
// lookup endpoint that finds charges by their key.
//
// Every answer becomes an outcome or one of the error classes of package
// payment. A *payment.Refusal means the service definitively did not charge,
// and the PaymentJob fails; every other error means the outcome is uncertain,
// and the same request is sent again later with the same key:
//
//	answer                                          result
//	2xx, status "", succeeded, paid or completed    payment.Outcome (Replayed from the
//	                                                Idempotent-Replayed: true header or "replayed": true)
//	2xx, status failed, declined, canceled,         payment.Declined, with the status in the message
//	     cancelled or rejected
//	2xx, status processing, with an id              payment.Settling (id, the body's method): accepted,
//	                                                settles later; read by id, never sent again
//	2xx, status pending                             payment.Transient: retried with the same key;
//	                                                the service must replay the final outcome
//	202 Accepted without a status                   payment.Transient, as for pending
//	2xx, any other status                           payment.Transient
//	2xx without an id, or not the expected JSON     payment.Transient: the payment may have happened
//	400 Bad Request                                 payment.Invalid
//	402 Payment Required                            payment.Declined, reason from the body (default CardDeclined)
//	409 Conflict                                    payment.InFlight, with Retry-After
//	422 Unprocessable Content                       payment.KeyReused
//	429 and 5xx                                     payment.Transient, with Retry-After
//	401, 403, 404, other 4xx, 3xx, anything else    payment.Transient, with a message saying what to fix
//	network error, deadline, truncated body,        payment.Transient
//	body larger than Config.MaxResponseBytes
//
// Status values are compared without regard to case or surrounding spaces.
// Status codes are the service's word for 400, 402 and 422: the body only
// supplies the reason and message ({"reason", "message"}, or the "detail" and
// "title" of RFC 9457 problem details). An answer whose body could not be read
// in full is never acted on: it is Transient, whatever its status code.
//
// 401, 403, 404 and the other 4xx codes say that the service did not process
// the request, so refusing the payment would be safe, but the job did nothing
// wrong: the PaymentProvider's token or url is. They are Transient, so the job
// stays Processing (Stalled once its retries are exhausted) with a message
// naming what to fix, and completes by itself once the configuration is
// repaired, instead of failing jobs that would have succeeded. Redirects are
// not followed by the default client, for the same reason.
//
// Retry-After is read as seconds or as an HTTP date and capped at ten minutes.
// Messages copied from the service are cleaned by payment.CleanMessage: cut
// to 200 bytes, made one line, and never containing the bearer token. A
// reason is used only when payment.ValidReason accepts it as a condition
// reason; any other is kept at the front of the message.
//
// Every charge request carries "fingerprint", payment.RequestHash of the key
// and the request, for the service to store with the charge.
//
// With Config.LookupURL, New returns a *LookupProvider, which is also a
// payment.Looker: Lookup sends one GET {lookupURL}?key=K1&key=K2... and maps
// the 200 answer {"account", "charges": [...]} to payment.Found values, the
// state from each charge's status:
//
//	status                                          state
//	succeeded, paid or completed                    payment.StateSucceeded
//	failed, declined, canceled, cancelled,          payment.StateNotCharged
//	     rejected
//	processing, pending, or anything else           payment.StatePending: never charged around
//
// Any other answer (a status code other than 200, a body that is not that
// JSON object or has no charges array, a charge of an asked key without an
// id, amount or currency, a body larger than Config.MaxResponseBytes, a
// network error) is a payment.TransientError: nothing is known about any key.
// Settle repeats the lookup of one key, waiting Config.PollInterval doubling
// to Config.MaxPollInterval, until the charge is final, and never charges.
// Account reads "account" from a GET without keys.
//
// Without Config.LookupURL, New returns a *Provider, which is not a
// payment.Looker, and whose Account names no account and sends nothing. The
// service must then keep its idempotency keys for as long as a manifest can
// come back: the operator has no other way to find an earlier charge.
//
// Both are a payment.Refunder. Refund sends one JSON POST to
// Config.RefundURL with the charge's headers (Idempotency-Key: the refund
// key) and the body {"charge", "amount", "currency", "reason", "metadata",
// "idempotencyKey", "fingerprint"} (empty optional fields left out;
// fingerprint is payment.RefundHash), and maps the answer with the table
// above, but for these rows:
//
//	answer                                          result
//	2xx, status processing                          payment.Settling, as for a charge
//	2xx, status pending, 202 without a status       payment.Transient wrapping payment.ErrInFlight
//	2xx, status failed, declined, canceled,         payment.Declined, reason from the body (default RefundFailed)
//	     cancelled or rejected
//	400 Bad Request                                 payment.Invalid, reason from the body when it is a valid
//	                                                condition reason (default InvalidRequest)
//	402 Payment Required                            payment.Declined, reason from the body (default RefundFailed;
//	                                                RefundExceedsCharge, ChargeNotFound, ChargeNotRefundable)
//	401, 403, 404, 3xx                              payment.Transient, naming spec.http.refundURL
//
// Without Config.RefundURL, Refund sends nothing and returns a
// payment.TransientError saying that refunds need spec.http.refundURL.
//
// LookupRefunds sends GET {lookupURL}?charge=ID and reads the answer's
// "charges" (the charge with that id, if any; otherwise the book's Charge
// is the zero payment.Found with that ID and no State) and "refunds" (every
// refund of the charge, required: an answer without it is an error), each
// refund like a charge of a lookup, plus "charge"; refunds naming another
// charge are ignored. Refunds are grouped by idempotencyKey, newest first;
// Refunded sums those that succeeded or may still (any status but failed,
// declined, canceled, cancelled and rejected), with or without a key; the
// book is always Complete. SettleRefund repeats GET {lookupURL}?key=K until
// the refund with its id under K in "refunds" is final, as Settle does for
// charges; still pending when the context ends is payment.ErrInFlight. Both
// need Config.LookupURL: a *Provider without it answers them with a
// payment.TransientError and sends nothing. Every error of LookupRefunds,
// and every error of SettleRefund but the refusal of a refund that failed,
// is a payment.TransientError.
//
// Both are a payment.Lister. With Config.ListURL, List sends one GET
// {listURL}?kind=charges|refunds&createdFrom=<unix>&createdTo=<unix>&limit=100[&after=<cursor>]
// per page and reads {"account", "data": [...], "next"}: each item's status
// as a lookup's, a refund's "charge", and "next" as the next page's cursor.
// The contract lists no disputes: a list of payment.KindDisputes is the
// list of charges, each charge that carries a "dispute" id answered as that
// dispute (status "disputed", payment.StateSucceeded). Every error is a
// payment.TransientError; without Config.ListURL, List sends nothing and
// returns payment.ErrListUnsupported.
package httpprovider
