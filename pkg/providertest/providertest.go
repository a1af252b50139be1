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

// Package providertest is the conformance suite of the operator's HTTP
// contract (docs/providers.md, "The HTTP contract"), in the spirit of
// cert-manager's acmetest: one set of rules that every payment service the
// operator charges through must pass, and that a service breaking
// exactly-once must fail.
//
// Run runs the rules as subtests of a Go test; Check runs them without a
// testing.T and returns a Result per rule, for the providertest command.
// Each rule sends real charges of Options.Amount to the service, under keys
// that start with Options.KeyPrefix and are never reused, so point it at a
// test account; the refund rules, run when Options.RefundURL is set, give
// (part of) their own charges back, and the list rules, run when
// Options.ListURL is set, list them. Requests are sent by the operator's own
// HTTP client (internal/payment/httpprovider), so they are the operator's,
// byte for byte, and an answer passes only if the operator reads it the way
// the contract means it.
package providertest

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Defaults of Options.
const (
	// DefaultSucceedingPaymentMethod is Stripe's test card that always
	// succeeds, which the sandbox knows too.
	DefaultSucceedingPaymentMethod = "pm_card_visa"
	// DefaultDecliningPaymentMethod is Stripe's test card that is always
	// declined.
	DefaultDecliningPaymentMethod = "pm_card_chargeDeclined"
	// DefaultCurrency is the currency of every charge.
	DefaultCurrency = "eur"
	// DefaultAmount is the amount of every charge, in minor units.
	DefaultAmount = 1999
	// DefaultTimeout bounds each request, as the PaymentProvider's
	// timeoutSeconds does.
	DefaultTimeout = 30 * time.Second
	// DefaultInFlightAfter is how long after the first request of the
	// in-flight rule the second is sent when InFlight.Hold is nil.
	DefaultInFlightAfter = time.Second
)

// Options configure a run against a payment service that implements the
// HTTP contract.
type Options struct {
	// URL is the charge endpoint, the PaymentProvider's spec.http.url.
	// Required.
	URL string
	// LookupURL is the optional lookup endpoint, spec.http.lookupURL. Without
	// it the lookup rule is skipped, and the other rules cannot count the
	// charges made under a key.
	LookupURL string
	// RefundURL is the optional refund endpoint, spec.http.refundURL.
	// Without it the refund rules are skipped; the refund lookup rule also
	// needs LookupURL.
	RefundURL string
	// ListURL is the optional list endpoint, spec.http.listURL. Without it
	// the list rules are skipped.
	ListURL string
	// Token is the bearer token the service accepts, "" when it needs none.
	// Without it the credentials rule is skipped. It never appears in a
	// Result.
	Token string
	// HTTPClient sends the requests; nil is the operator's client, which
	// bounds connecting and does not follow redirects.
	HTTPClient *http.Client
	// Timeout bounds each request; DefaultTimeout when zero.
	Timeout time.Duration
	// SucceedingPaymentMethod is a payment method the service charges;
	// DefaultSucceedingPaymentMethod when empty.
	SucceedingPaymentMethod string
	// DecliningPaymentMethod is a payment method the service declines;
	// DefaultDecliningPaymentMethod when empty.
	DecliningPaymentMethod string
	// Currency of every charge; DefaultCurrency when empty.
	Currency string
	// Amount of every charge in minor units; DefaultAmount when zero. The
	// key-reuse rule also sends Amount+1.
	Amount int64
	// KeyPrefix starts every idempotency key sent; when empty, a random
	// prefix per run, so that two runs never share a key.
	KeyPrefix string
	// InFlight says how to keep a charge in flight at the service for the
	// in-flight rule; nil skips that rule.
	InFlight *InFlight
	// LoseResponse, when set, makes the service lose its answer to the next
	// charge after committing it, as a crash between the commit and the
	// answer does (the sandbox: engine.FailNext(sandbox.FaultAfterCommit,
	// 1)). The lost-response rule then also retries after that answer.
	LoseResponse func()
	// Pending says how to make the service accept a charge as processing
	// (a bank debit) and settle it later; nil skips the pending rule.
	Pending *Pending
	// Events says how to make the service send its signed events to the
	// kit; nil skips the events rule.
	Events *Events
}

// InFlight says how to keep the first charge of the in-flight rule running
// at the service while the rule sends a second one with the same key.
type InFlight struct {
	// PaymentMethod is charged by the rule's requests;
	// Options.SucceedingPaymentMethod when empty. A service whose charges
	// are quick can name one here that it processes slowly.
	PaymentMethod string
	// Hold, when set, is called just before the first request is sent. It
	// returns entered, which receives a value or is closed once that request
	// is in flight at the service, and release, which lets it finish; the
	// rule calls release once. With the sandbox:
	//
	//	Hold: func() (<-chan string, func()) { g := engine.Hold(); return g.Entered(), g.Release }
	Hold func() (entered <-chan string, release func())
	// After is how long after the first request the second is sent when
	// Hold is nil; DefaultInFlightAfter when zero. The first must then take
	// longer than After at the service.
	After time.Duration
}

// Status is the result of a rule.
type Status string

// The statuses of a Result.
const (
	// Pass: the service did what the rule requires.
	Pass Status = "PASS"
	// Fail: the service broke the rule; the message says what was seen.
	Fail Status = "FAIL"
	// Skip: the rule could not be run, for the reason in the message.
	Skip Status = "SKIP"
)

// Result is the outcome of one rule.
type Result struct {
	// Rule is the rule's name, one of the Rule constants.
	Rule string
	// Status says whether the service passed the rule.
	Status Status
	// Message says what was seen: for a failure, what the service answered
	// and what the contract requires; for a skip, why.
	Message string
}

// String returns the status, the rule and the message on one line.
func (r Result) String() string {
	return fmt.Sprintf("%s %s: %s", r.Status, r.Rule, r.Message)
}

// Names of the rules, in the order they run. Each is one requirement of
// the contract; docs/conformance.md describes them.
const (
	// RuleReplay: the same key and request replay the first outcome.
	RuleReplay = "same-key-replays"
	// RuleLostResponse: a retry after an answer was lost finds the charge.
	RuleLostResponse = "replay-after-lost-response"
	// RuleKeyReuse: the same key with another request is refused with 422.
	RuleKeyReuse = "key-reuse-refused"
	// RuleFingerprint: the fingerprint is left out of that comparison: the
	// same request with and without it is a retry, replayed.
	RuleFingerprint = "fingerprint-not-compared"
	// RuleKeyFromHeader: the key is the Idempotency-Key header, not the
	// body's idempotencyKey.
	RuleKeyFromHeader = "key-from-header"
	// RuleInFlight: a second request while the first runs gets 409.
	RuleInFlight = "in-flight-conflict"
	// RuleDecline: a decline is a 402, saved and replayed, never a charge.
	RuleDecline = "decline-saved"
	// RuleLookup: the lookup endpoint finds the charge by its key.
	RuleLookup = "lookup-by-key"
	// RuleErrorBody: refusals carry a {"reason", "message"} body.
	RuleErrorBody = "error-body"
	// RuleCredentials: a missing or wrong token is refused with 401 or 403.
	RuleCredentials = "credentials-required"
	// RuleKeyRequired: a charge without an idempotency key is refused with 400.
	RuleKeyRequired = "key-required"
	// RuleRefundReplay: the same refund key and request replay the first
	// refund.
	RuleRefundReplay = "refund-same-key-replays"
	// RuleRefundLostResponse: a retry after a refund's answer was lost
	// finds that refund, and refunds nothing more.
	RuleRefundLostResponse = "refund-replay-after-lost-response"
	// RuleRefundExceedsCharge: a refund beyond what is left of the charge is
	// refused with reason RefundExceedsCharge.
	RuleRefundExceedsCharge = "refund-beyond-charge-refused"
	// RuleRefundUnknownCharge: a refund of a charge the service does not
	// hold is refused with reason ChargeNotFound.
	RuleRefundUnknownCharge = "refund-unknown-charge-refused"
	// RuleRefundLookup: the lookup endpoint finds a refund by its key, and
	// lists it among the refunds of its charge.
	RuleRefundLookup = "refund-lookup-by-key"
	// RuleListWindow: the charges and refunds just made are each listed
	// once in a window around them, walked a small page at a time.
	RuleListWindow = "list-window-exactly-once"
	// RuleListWindowEnd: a window that ends before the first of the run's
	// charges holds none of them; createdTo is exclusive, createdFrom
	// inclusive.
	RuleListWindowEnd = "list-window-ends-before"
	// RuleListBadParameter: a list with a parameter the contract does not
	// allow is refused, never answered as a window.
	RuleListBadParameter = "list-bad-parameter-refused"
	// RulePending: a charge answered processing is answered the same, with
	// the same id, on a retry and by the lookup, and once it settles says
	// succeeded (or failed with a reason); never a second payment. Run only
	// with Options.Pending.
	RulePending = "pending-settles-once"
	// RuleEvents: every event the service sends carries a valid
	// Paymentjob-Signature within five minutes, its own id and the
	// documented fields. Run only with Options.Events.
	RuleEvents = "events-signed"
)

// rule is one requirement and the function that checks it.
type rule struct {
	name  string
	check func(ctx context.Context, s *session) (Status, string)
}

// rules are every rule, in the order they run.
var rules = []rule{
	{RuleReplay, checkReplay},
	{RuleLostResponse, checkLostResponse},
	{RuleKeyReuse, checkKeyReuse},
	{RuleFingerprint, checkFingerprint},
	{RuleKeyFromHeader, checkKeyFromHeader},
	{RuleInFlight, checkInFlight},
	{RuleDecline, checkDecline},
	{RuleLookup, checkLookup},
	{RuleErrorBody, checkErrorBody},
	{RuleCredentials, checkCredentials},
	{RuleKeyRequired, checkKeyRequired},
	{RuleRefundReplay, checkRefundReplay},
	{RuleRefundLostResponse, checkRefundLostResponse},
	{RuleRefundExceedsCharge, checkRefundExceedsCharge},
	{RuleRefundUnknownCharge, checkRefundUnknownCharge},
	{RuleRefundLookup, checkRefundLookup},
	{RuleListWindow, checkListWindow},
	{RuleListWindowEnd, checkListWindowEnd},
	{RuleListBadParameter, checkListBadParameter},
	{RulePending, checkPending},
	{RuleEvents, checkEvents},
}

// Run runs every rule against the service as a subtest of t named after
// the rule; a broken rule fails its subtest with the Result's String, a rule
// that cannot run is skipped. An invalid Options fails t.
func Run(t *testing.T, opts Options) {
	t.Helper()
	s, err := newSession(opts)
	if err != nil {
		t.Fatalf("providertest: %v", err)
	}
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			res := s.run(t.Context(), r)
			switch res.Status {
			case Fail:
				t.Error(res.String())
			case Skip:
				t.Skip(res.String())
			default:
				t.Log(res.String())
			}
		})
	}
}

// Check runs every rule against the service, one after the other, and
// returns their results in order. An invalid Options is returned as an
// error, before anything is sent; a rule still running when ctx ends fails.
func Check(ctx context.Context, opts Options) ([]Result, error) {
	s, err := newSession(opts)
	if err != nil {
		return nil, err
	}
	results := make([]Result, 0, len(rules))
	for _, r := range rules {
		results = append(results, s.run(ctx, r))
	}
	return results, nil
}

// Failed reports whether any result is a failure.
func Failed(results []Result) bool {
	for _, r := range results {
		if r.Status == Fail {
			return true
		}
	}
	return false
}

// withDefaults returns opts with its defaults filled in, or an error for
// an invalid one.
func (opts Options) withDefaults() (Options, error) {
	if opts.URL == "" {
		return opts, fmt.Errorf("cannot check a payment service without its charge url")
	}
	if opts.Timeout < 0 || opts.Amount < 0 {
		return opts, fmt.Errorf("cannot check with a negative timeout or amount")
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Amount == 0 {
		opts.Amount = DefaultAmount
	}
	if opts.SucceedingPaymentMethod == "" {
		opts.SucceedingPaymentMethod = DefaultSucceedingPaymentMethod
	}
	if opts.DecliningPaymentMethod == "" {
		opts.DecliningPaymentMethod = DefaultDecliningPaymentMethod
	}
	if opts.Currency == "" {
		opts.Currency = DefaultCurrency
	}
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = "providertest/" + strings.ToLower(rand.Text()[:12]) + "/"
	}
	if opts.InFlight != nil {
		f := *opts.InFlight
		if f.PaymentMethod == "" {
			f.PaymentMethod = opts.SucceedingPaymentMethod
		}
		if f.After <= 0 {
			f.After = DefaultInFlightAfter
		}
		opts.InFlight = &f
	}
	if opts.Pending != nil && opts.Pending.PaymentMethod == "" {
		return opts, fmt.Errorf("cannot check pending payments without Pending.PaymentMethod")
	}
	if opts.Events != nil && (opts.Events.Secret == "" || opts.Events.SendTo == nil) {
		return opts, fmt.Errorf("cannot check events without Events.Secret and Events.SendTo")
	}
	return opts, nil
}
