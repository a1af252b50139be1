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

// Reasons are what the operator writes, in one vocabulary, to
//
//   - the reason of the Ready, Reconciling and Stalled conditions;
//   - the reason of the Kubernetes events it records on the object (a
//     condition and the event announcing it carry the same reason, so
//     `kubectl get events --field-selector reason=...` finds both);
//   - status.failure.reason of a Failed PaymentJob or PaymentRefund.
//
// Match on these constants rather than on strings copied from the docs. The
// values are part of the API: they do not change within v1alpha1. Every one
// is a valid condition reason (^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$).
//
// The groups below say on which kind and where each reason appears, what it
// means and what to do. "Job" stands for PaymentJob and PaymentRefund alike
// where a reason is shared: both run the same exactly-once protocol.

// Reason is a reason the operator writes: a condition's, an event's,
// status.failure.reason. It names the vocabulary below and is the string
// metav1.Condition.Reason holds, so a reason compares with a condition's
// without a conversion (cond.Reason == v1alpha1.ReasonSucceeded), as Flux's
// meta reasons do.
type Reason = string

// Reasons of a job that waits before its claim (phase Pending, Ready=False).
// No money has moved.
const (
	// ReasonSuspended says spec.suspend holds the job in Pending.
	// To go on, set spec.suspend to false.
	ReasonSuspended Reason = "Suspended"
	// ReasonDeadlineExceeded says activeDeadlineSeconds passed before the
	// job was claimed (Stalled=True). It is never sent: create a new job if
	// the payment is still wanted.
	ReasonDeadlineExceeded Reason = "DeadlineExceeded"
	// ReasonProviderNotFound says the PaymentProvider in spec.providerRef
	// does not exist in the job's namespace. Create it, or fix the name on a
	// new job (providerRef is immutable).
	ReasonProviderNotFound Reason = "ProviderNotFound"
	// ReasonProviderNotReady says the PaymentProvider is not Ready; its own
	// Ready condition says why (see the PaymentProvider reasons). The job
	// goes on by itself once the provider is Ready.
	ReasonProviderNotReady Reason = "ProviderNotReady"
	// ReasonProviderDeleted says the PaymentProvider is being deleted: a job
	// not claimed yet waits and is never sent through it. On a Processing
	// job (Stalled=True) the provider is gone and the operator kept no
	// client for it: check the payment at the provider and resolve the job
	// with the payments.idempotency.dev/resolve annotation (a provider
	// re-created under the same name is another object: ProviderChanged).
	ReasonProviderDeleted Reason = "ProviderDeleted"
	// ReasonRateLimited says the job waits for a token of its provider's
	// client-side rate limit (spec.requestsPerSecond, spec.burst). It goes
	// on by itself; raise the limits if the wait is too long.
	ReasonRateLimited Reason = "RateLimited"
	// ReasonLookupFailed says the provider could not be asked whether it
	// already holds a payment under the job's key, so nothing is sent until
	// it answers. It is retried by itself; the message says what failed.
	ReasonLookupFailed Reason = "LookupFailed"
	// ReasonLedgerUnavailable says the outcome ledger (the PaymentLedger
	// pages, or the PostgreSQL database of --ledger-backend=postgres) could
	// not be asked whether this payment was made before: nothing is sent
	// until it answers. The job goes on by itself once the ledger answers;
	// the message and the operator's log say what failed
	// (docs/operations.md, PaymentJobLedgerUnavailable).
	ReasonLedgerUnavailable Reason = "LedgerUnavailable"
)

// Reasons of a job in flight (phase Processing, Reconciling=True): a claim
// was written and the request may be at the provider. Nothing to do.
const (
	// ReasonClaimed says this manager claimed the job and is sending it.
	ReasonClaimed Reason = "Claimed"
	// ReasonClaimTakenOver says the previous claim expired (its manager
	// stopped or lost the API server) and this manager took it over, with
	// the same idempotency key: the provider answers a second request with
	// the first one's outcome.
	ReasonClaimTakenOver Reason = "ClaimTakenOver"
	// ReasonTransientError says the provider's answer was uncertain (a
	// timeout, a 5xx, a pending payment); the job is retried with the same
	// key, with backoff.
	ReasonTransientError Reason = "TransientError"
	// ReasonAwaitingSettlement says the provider accepted the payment (a
	// bank debit: SEPA, ACH, Bacs) and has not settled it yet. It is not
	// an uncertainty: no attempt is counted and nothing is sent again; the
	// operator reads the payment at a rate that falls with its age, or
	// when a signed provider event names it, until the provider decides.
	ReasonAwaitingSettlement Reason = "AwaitingSettlement"
)

// Reasons of a job stopped so that nothing is paid twice (Stalled=True). The
// job keeps its phase and sends nothing that could move money again until a
// person looks: the message says what was found. A Processing job is
// resolved with the payments.idempotency.dev/resolve annotation
// ("charged=<id>" or "not-charged") once the provider has been checked.
const (
	// ReasonRetriesExhausted says backoffLimit uncertain attempts failed.
	// The job keeps retrying at the longest interval with the same key; look
	// at the provider (is it reachable, is the credential valid) and at the
	// events for the last error.
	ReasonRetriesExhausted Reason = "RetriesExhausted"
	// ReasonRequestChanged says the request no longer matches the one
	// recorded in status.requestHash at the first claim, so it is not sent
	// again. Check the provider under the job's key and resolve the job.
	ReasonRequestChanged Reason = "RequestChanged"
	// ReasonChargeMismatch says the provider holds a payment under the job's
	// key that was made for another request (another amount, card or
	// description reused the key). Nothing is sent; find out which object
	// owns the key and give this one another spec.idempotencyKey.
	ReasonChargeMismatch Reason = "ChargeMismatch"
	// ReasonProviderChanged says the job's PaymentProvider no longer reaches
	// the account (or object, endpoint, mode or key scope) its key was first
	// sent to: the same key elsewhere is a new payment. Point the provider
	// back at the first account, or resolve the job.
	ReasonProviderChanged Reason = "ProviderChanged"
	// ReasonKeyMismatch says status.idempotencyKey is not the key derived
	// from the namespace and spec (the status was edited or restored from
	// another object). Check the provider under both keys and resolve the
	// job.
	ReasonKeyMismatch Reason = "KeyMismatch"
	// ReasonUncertainRefusal says a retry was refused as invalid or as a
	// reused key, but an earlier attempt had no answer and may have gone
	// through. The job is not Failed: check the provider and resolve it.
	ReasonUncertainRefusal Reason = "UncertainRefusal"
	// ReasonLedgerConflict says the job finished (Completed or Failed, which
	// it stays), but the operator's outcome ledger holds another outcome
	// under its idempotency key, recorded first by another object with the
	// same key: the ledger keeps the first, so this job's outcome is not
	// recorded. The job keeps its finalizer and is never deleted by its
	// TTL. Compare the job with what the ledger and the provider hold under
	// the key (the operator's log names the entry), settle the money, then
	// remove the finalizer by hand (docs/operations.md,
	// PaymentJobLedgerConflict).
	ReasonLedgerConflict Reason = "LedgerConflict"
	// ReasonRefundedOutsideOperator (condition MovedOutsideOperator,
	// event) says the provider reports a refund of the job's charge made
	// without one of the operator's keys (in the dashboard): read at the
	// provider after a signed event named the payment.
	ReasonRefundedOutsideOperator Reason = "RefundedOutsideOperator"
	// ReasonSettlementOverdue says the provider accepted the payment and
	// has not settled it within the settlement deadline (the payment
	// method's documented time, or the PaymentProvider's
	// spec.settlement.deadlineSeconds). The operator goes on reading it;
	// a person checks it at the provider.
	ReasonSettlementOverdue Reason = "SettlementOverdue"
)

// Reasons of a finished job (phase Completed, Ready=True). The Ready
// condition's reason is always ReasonSucceeded; the event says how the
// outcome was learnt.
const (
	// ReasonSucceeded says the provider confirmed the payment.
	ReasonSucceeded Reason = "Succeeded"
	// ReasonReplayed (event) says the provider answered with the saved
	// outcome of an earlier request under the same key: no money moved
	// again.
	ReasonReplayed Reason = "Replayed"
	// ReasonFoundAtProvider (event) says the provider already held this
	// job's payment, found under its key or settled from pending: no money
	// moved again.
	ReasonFoundAtProvider Reason = "FoundAtProvider"
	// ReasonFoundInLedger (event, condition) says the operator's ledger
	// records this payment's outcome (the object was deleted and created
	// again with the same key): it was finished from the ledger, with no
	// provider call. The outcome is the first object's, Completed or Failed.
	ReasonFoundInLedger Reason = "FoundInLedger"
)

// Reasons of a person's resolution with the payments.idempotency.dev/resolve
// annotation (events; ReasonResolved is also the conditions' reason).
const (
	// ReasonResolved says the resolution was accepted and recorded in
	// status.resolution and the ledger.
	ReasonResolved Reason = "Resolved"
	// ReasonResolutionRefused says the annotation was not honoured: the job
	// is not Stalled on an uncertain outcome, the value is not
	// "charged=<id>" or "not-charged", or the provider contradicts it. The
	// message says which; fix or remove the annotation.
	ReasonResolutionRefused Reason = "ResolutionRefused"
	// ReasonResolutionWaiting says a not-charged resolution waits until the
	// last attempt is older than the provider's search lag (a payment it
	// made may not show in its lookup before). Nothing to do.
	ReasonResolutionWaiting Reason = "ResolutionWaiting"
)

// Failure reasons of a PaymentJob the provider definitively refused (phase
// Failed, status.failure.reason, the Ready condition and a Warning event).
// Nothing was charged. An HTTP payment service may send its own reason (the
// body's "reason", a CamelCase code), which is used as it is.
const (
	// ReasonCardDeclined says the provider declined the payment method.
	// Ask the customer for another one and create a new job.
	ReasonCardDeclined Reason = "CardDeclined"
	// ReasonInvalidRequest says the provider refused the request as
	// malformed (an unknown customer or payment method, a bad currency).
	// The message quotes the provider; fix the spec in a new job.
	ReasonInvalidRequest Reason = "InvalidRequest"
	// ReasonIdempotencyKeyReused says the key was already used at the
	// provider for another request: another object (or another system)
	// shares it. Give this job another spec.idempotencyKey.
	ReasonIdempotencyKeyReused Reason = "IdempotencyKeyReused"
	// ReasonPaymentCanceled says the Stripe PaymentIntent was canceled
	// before it succeeded.
	ReasonPaymentCanceled Reason = "PaymentCanceled"
	// ReasonAuthenticationRequired says the payment needed the customer's
	// authentication (3-D Secure), which no customer is present to give.
	// The customer must pay on-session, or the card be set up for
	// off-session use. The value is Stripe's code, in lower case: the one
	// reason not in CamelCase, kept as it is because reason values do not
	// change within v1alpha1 (a v1 names it AuthenticationRequired).
	ReasonAuthenticationRequired Reason = "authentication_required"
	// ReasonPaymentRefused stands for a provider's refusal whose own reason
	// is not a valid condition reason; the message has the provider's words.
	ReasonPaymentRefused Reason = "PaymentRefused"
)

// Reasons of a PaymentRefund that waits, or cannot be made, before it is
// sent (Ready=False). The engine's reasons above apply to refunds too
// (ProviderNotFound, LookupFailed, ProviderChanged, ...).
const (
	// ReasonRefundsUnsupported says the PaymentProvider cannot refund (an
	// http provider without spec.http.refundURL and lookupURL). The refund
	// waits (Pending, Stalled=True) and sends nothing: give the provider
	// both URLs.
	ReasonRefundsUnsupported Reason = "RefundsUnsupported"
	// ReasonPaymentNotCompleted says the PaymentJob in spec.paymentJobRef is
	// not Completed yet: the refund waits (Pending) and goes on by itself
	// once it is. With Stalled=True the job is Completed without a charge
	// id, and the refund cannot name the charge.
	ReasonPaymentNotCompleted Reason = "PaymentNotCompleted"
	// ReasonPaymentFailed says the PaymentJob in spec.paymentJobRef Failed
	// (or the ledger records that it did): nothing was charged, so nothing
	// is refunded. The refund is Failed with this reason, without a call to
	// the provider.
	ReasonPaymentFailed Reason = "PaymentFailed"
	// ReasonPaymentNotFound says neither the PaymentJob named in
	// spec.paymentJobRef nor a ledger entry under its key exists. The refund
	// waits for it (Pending). For a job that is gone, set
	// spec.paymentJobRef.idempotencyKey to the job's spec.idempotencyKey,
	// in a new PaymentRefund.
	ReasonPaymentNotFound Reason = "PaymentNotFound"
	// ReasonPaymentMismatch says spec.paymentJobRef.idempotencyKey is not
	// the key of the PaymentJob it names (Stalled=True), so the refund could
	// give back another payment. Nothing is sent: create a new PaymentRefund
	// with the right key, or without one while the job exists.
	ReasonPaymentMismatch Reason = "PaymentMismatch"
	// ReasonRefundsInFlight says the refund fits in what is left of the
	// charge only if other refunds of it, still in flight, fail. It waits
	// for them and goes on, or fails with ReasonRefundExceedsCharge, by
	// itself.
	ReasonRefundsInFlight Reason = "RefundsInFlight"
	// ReasonChargeUnverified says the provider does not show the refunded
	// charge under the payment's own idempotency key (Stalled=True): it
	// carries another payment's key, or none, as a charge named by a
	// person's resolution that the provider could not check may. Nothing is
	// sent: a refund is only ever sent for a charge the provider holds under
	// the refunded payment's key, at the account the payment was made. The
	// refund goes on by itself once the provider's record of the charge
	// (Stripe: the PaymentIntent's metadata; HTTP: the lookup's charges)
	// carries that key; a charge that is not the payment's is refunded, if
	// at all, by a person at the provider.
	ReasonChargeUnverified Reason = "ChargeUnverified"
	// ReasonPaymentCreatedAfterRefund says the PaymentJob named in
	// spec.paymentJobRef was created more than five minutes after the
	// refund (manifests applied together land within that), and the refund does
	// not name its key in spec.paymentJobRef.idempotencyKey (Stalled=True):
	// whoever wrote the refund could not have seen that payment, so it is
	// not refunded. Create a new PaymentRefund that names the payment's key
	// (kubectl payments refund writes it).
	ReasonPaymentCreatedAfterRefund Reason = "PaymentCreatedAfterRefund"
)

// Failure reasons of a PaymentRefund that cannot be made (phase Failed,
// status.failure.reason): no money went back. The operator finds some before
// it sends anything (it reads the charge and its refunds at the provider);
// every provider adapter answers the others the same way, so a PaymentRefund
// says the same thing whatever the provider. ReasonInvalidRequest and
// ReasonIdempotencyKeyReused apply to refunds too.
const (
	// ReasonRefundExceedsCharge says the amount is more than what is left of
	// the charge (the charge less the refunds already made). Refund less, in
	// a new PaymentRefund.
	ReasonRefundExceedsCharge Reason = "RefundExceedsCharge"
	// ReasonChargeNotFound says the provider holds no charge with the id the
	// payment recorded, usually because the PaymentProvider reaches another
	// account than the one charged. Refund through a provider for that
	// account.
	ReasonChargeNotFound Reason = "ChargeNotFound"
	// ReasonChargeNotRefundable says the charge exists but cannot be
	// refunded (it did not succeed, or it is disputed). Settle the dispute
	// at the provider.
	ReasonChargeNotRefundable Reason = "ChargeNotRefundable"
	// ReasonRefundFailed says the provider reports the refund failed or was
	// canceled (the card was closed, for example). Give the money back
	// another way, or retry with a new PaymentRefund and another
	// idempotencyKey.
	ReasonRefundFailed Reason = "RefundFailed"
	// ReasonRefundFailedAfterSuccess (Warning event on a Completed
	// PaymentRefund) says the provider later reports a refund it had
	// confirmed as failed: the money did not go back after all. Give it back
	// another way, or create a new PaymentRefund with another idempotencyKey.
	ReasonRefundFailedAfterSuccess Reason = "RefundFailedAfterSuccess"
)

// Reasons of a PaymentProvider's Ready condition (and the events of the
// provider). A job through a provider that is not Ready waits with
// ReasonProviderNotReady.
const (
	// ReasonReady says the provider can be used.
	ReasonReady Reason = "Ready"
	// ReasonSecretNotFound says the Secret in secretKeyRef does not exist,
	// or lacks the label payments.idempotency.dev/credentials: "true"
	// (the operator reads no other Secret). Create or label it.
	ReasonSecretNotFound Reason = "SecretNotFound"
	// ReasonSecretKeyMissing says the Secret has no entry under
	// secretKeyRef.key. Add it, or fix the key.
	ReasonSecretKeyMissing Reason = "SecretKeyMissing"
	// ReasonSecretReadFailed says the Secret could not be read (an API
	// error); retried with backoff.
	ReasonSecretReadFailed Reason = "SecretReadFailed"
	// ReasonEndpointRefused says the provider's URL is not allowed by the
	// manager's egress policy: https to a public address only, unless the
	// host is listed in the manager's --insecure-provider-hosts.
	ReasonEndpointRefused Reason = "EndpointRefused"
	// ReasonInvalidConfiguration says no client can be built from the
	// provider's spec and credential; the message says why.
	ReasonInvalidConfiguration Reason = "InvalidConfiguration"
)

// Reasons of the operator's periodic audit (Warning events).
const (
	// ReasonFinishedLabelWithoutOutcome says a PaymentJob carries the label
	// payments.idempotency.dev/finished but is neither Completed nor Failed.
	// The label keeps it out of the operator's sight: it is never charged
	// until the label is removed.
	ReasonFinishedLabelWithoutOutcome Reason = "FinishedLabelWithoutOutcome"
)
