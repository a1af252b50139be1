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

// Package paymenttest is the contract of payment.Provider as a test suite,
// as cert-manager's acmetest is for ACME solvers: every implementation runs
// Run against a service it can inject faults into, and a deliberately
// broken provider must fail it. Check runs the same rules without a
// *testing.T, so that a test can assert which rules a provider breaks.
//
// It imports only the payment package, so that every implementation's own
// tests can import it.
package paymenttest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// Payment methods the suite charges with; Stripe's test mode and the
// sandbox both know them.
const (
	// PaymentMethodSucceeds always succeeds.
	PaymentMethodSucceeds = "pm_card_visa"
	// PaymentMethodDeclined is always declined.
	PaymentMethodDeclined = "pm_card_chargeDeclined"
)

// Names of the rules, as Run names its subtests and Check its results.
const (
	// RuleReplay: the same key and request return the first outcome,
	// Replayed, and charge once.
	RuleReplay = "ReplaysSameKeyAndRequest"
	// RuleLostAnswer: a charge whose answer was lost is an uncertain error,
	// and its retry under the same key replays the charge made.
	RuleLostAnswer = "RetryAfterLostAnswerReplays"
	// RuleKeyReused: the same key with another request is a KeyReused
	// refusal, and the first request still replays.
	RuleKeyReused = "RefusesKeyReusedWithAnotherRequest"
	// RuleDeclined: a declined payment method is a Declined refusal, again
	// on retry, and charges nothing.
	RuleDeclined = "DeclineIsARefusalAlsoOnRetry"
	// RuleInFlight: a charge under a key still in flight is an uncertain
	// error, never a second charge.
	RuleInFlight = "KeyInFlightIsUncertain"
	// RuleLookup: a payment.Looker finds a charge by its key, and nothing
	// under an unknown key. Skipped for providers that are not Lookers.
	RuleLookup = "LookupFindsChargeByKey"
)

// RuleTimeout bounds each rule, including its waits for held requests and
// for a Lookup index to catch up (Harness.LookupLag).
const RuleTimeout = 10 * time.Second

// InFlightWait is how long the in-flight rule lets the second charge wait
// for an answer while the first one is held.
const InFlightWait = time.Second

// lookupPollInterval is the wait between two Lookups while the charge is
// not found yet.
const lookupPollInterval = 50 * time.Millisecond

// Harness is one implementation under test and the switches of the service
// behind it (for the sandbox: an Engine's).
type Harness struct {
	// Provider is the implementation under test. Every rule charges under
	// keys of its own, so one provider serves the whole suite. Required.
	Provider payment.Provider
	// LoseNextAnswer makes the service commit the next charge with a new
	// key and then lose its answer (sandbox: FailNext(FaultAfterCommit, 1)).
	// Required.
	LoseNextAnswer func()
	// Hold makes the service keep every charge with a new key in flight
	// until release is called; entered receives the key of each held
	// charge (sandbox: Engine.Hold). release may be called more than once.
	// Required.
	Hold func() (entered <-chan string, release func())
	// Charges returns how many times the service moved money under key
	// (sandbox: Stats().ChargesByKey[key]). Required.
	Charges func(key string) int
	// LookupLag is how long a payment.Looker's index may take to find a
	// new charge (Stripe's search: minutes); the lookup rule looks up again
	// until then, within RuleTimeout. Zero means at once, as the sandbox
	// without a search lag. Optional.
	LookupLag time.Duration
}

// Result is the verdict of one rule.
type Result struct {
	// Rule is the rule's name, one of the Rule constants.
	Rule string
	// Err says how the provider broke the rule; nil when it kept it.
	Err error
	// Skipped says why the rule does not apply to the provider; empty when
	// it ran.
	Skipped string
}

// rule is one clause of the contract. check charges under key only.
type rule struct {
	name  string
	check func(ctx context.Context, h Harness, key string) error
}

// rules are the contract, in the order they run. They run one after the
// other: the harness's switches act on the whole service.
var rules = []rule{
	{RuleReplay, checkReplay},
	{RuleLostAnswer, checkLostAnswer},
	{RuleKeyReused, checkKeyReused},
	{RuleDeclined, checkDeclined},
	{RuleInFlight, checkInFlight},
	{RuleLookup, checkLookup},
}

// errSkipped marks an error returned by a rule that does not apply.
var errSkipped = errors.New("rule does not apply")

// Rules returns the names of the rules, in the order they run.
func Rules() []string {
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = r.name
	}
	return names
}

// Run checks h.Provider against every rule, each in a subtest named after
// it. A rule that does not apply is skipped.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if err := h.validate(); err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			res := r.run(t.Context(), h)
			switch {
			case res.Skipped != "":
				t.Skip(res.Skipped)
			case res.Err != nil:
				t.Fatal(res.Err)
			}
		})
	}
}

// Check checks h.Provider against every rule and returns one Result per
// rule, in the order of Rules. An incomplete harness fails every rule.
func Check(ctx context.Context, h Harness) []Result {
	results := make([]Result, 0, len(rules))
	err := h.validate()
	for _, r := range rules {
		if err != nil {
			results = append(results, Result{Rule: r.name, Err: err})
			continue
		}
		results = append(results, r.run(ctx, h))
	}
	return results
}

// validate returns an error naming the first field h lacks.
func (h Harness) validate() error {
	switch {
	case h.Provider == nil:
		return errors.New("cannot run the provider contract: the harness has no Provider")
	case h.LoseNextAnswer == nil:
		return errors.New("cannot run the provider contract: the harness has no LoseNextAnswer")
	case h.Hold == nil:
		return errors.New("cannot run the provider contract: the harness has no Hold")
	case h.Charges == nil:
		return errors.New("cannot run the provider contract: the harness has no Charges")
	}
	return nil
}

// run checks the rule under a new key, within RuleTimeout.
func (r rule) run(ctx context.Context, h Harness) Result {
	ctx, cancel := context.WithTimeout(ctx, RuleTimeout)
	defer cancel()
	err := r.check(ctx, h, "paymenttest/"+r.name+"/"+rand.Text())
	if errors.Is(err, errSkipped) {
		return Result{Rule: r.name, Skipped: err.Error()}
	}
	return Result{Rule: r.name, Err: err}
}

// chargeRequest is the request every rule sends, with paymentMethod.
func chargeRequest(paymentMethod string) payment.ChargeRequest {
	return payment.ChargeRequest{
		Amount:        1999,
		Currency:      "usd",
		PaymentMethod: paymentMethod,
		Description:   "paymenttest",
		Metadata:      map[string]string{"suite": "paymenttest"},
	}
}

// charge charges req under key and expects a new charge.
func charge(ctx context.Context, p payment.Provider, key string, req payment.ChargeRequest) (payment.Outcome, error) {
	out, err := p.Charge(ctx, key, req)
	switch {
	case err != nil:
		return out, fmt.Errorf("first charge under the key failed: %w", err)
	case out.ID == "" || out.Replayed:
		return out, fmt.Errorf("first charge under the key answered %+v; want a new charge with an id", out)
	}
	return out, nil
}

// replays charges req under key again and expects first, Replayed.
func replays(ctx context.Context, p payment.Provider, key string, req payment.ChargeRequest, first payment.Outcome) error {
	again, err := p.Charge(ctx, key, req)
	switch {
	case err != nil:
		return fmt.Errorf("charge with the key and request of charge %s failed: %w", first.ID, err)
	case !again.Replayed:
		return fmt.Errorf("charge with the key and request of charge %s answered %+v, not Replayed", first.ID, again)
	case again.ID != first.ID || again.Status != first.Status || again.Amount != first.Amount ||
		again.Currency != first.Currency || !again.Created.Equal(first.Created):
		return fmt.Errorf("replay answered %+v; want the first charge %+v", again, first)
	}
	return nil
}

// chargedTimes expects the service to have charged key want times.
func chargedTimes(h Harness, key string, want int) error {
	if n := h.Charges(key); n != want {
		return fmt.Errorf("the service charged the key %d times; want %d", n, want)
	}
	return nil
}

// refusedAs reports whether err is a refusal of class.
func refusedAs(err, class error) bool {
	r, ok := payment.IsRefusal(err)
	return ok && errors.Is(r, class)
}

// uncertain returns nil when err is an uncertain outcome, and an error
// saying what was answered otherwise.
func uncertain(what string, out payment.Outcome, err error) error {
	if err == nil {
		return fmt.Errorf("%s answered %+v; want an uncertain error", what, out)
	}
	if r, ok := payment.IsRefusal(err); ok {
		return fmt.Errorf("%s answered the refusal %q; want an uncertain error, since money may move", what, r)
	}
	return nil
}

// checkReplay: RuleReplay.
func checkReplay(ctx context.Context, h Harness, key string) error {
	req := chargeRequest(PaymentMethodSucceeds)
	first, err := charge(ctx, h.Provider, key, req)
	if err != nil {
		return err
	}
	if err := replays(ctx, h.Provider, key, req, first); err != nil {
		return err
	}
	return chargedTimes(h, key, 1)
}

// checkLostAnswer: RuleLostAnswer.
func checkLostAnswer(ctx context.Context, h Harness, key string) error {
	req := chargeRequest(PaymentMethodSucceeds)
	h.LoseNextAnswer()
	out, err := h.Provider.Charge(ctx, key, req)
	if err := uncertain("a charge whose answer was lost", out, err); err != nil {
		return err
	}
	again, err := h.Provider.Charge(ctx, key, req)
	switch {
	case err != nil:
		return fmt.Errorf("retry after a lost answer failed: %w", err)
	case again.ID == "" || !again.Replayed:
		return fmt.Errorf("retry after a lost answer answered %+v; want the charge made, Replayed", again)
	}
	return chargedTimes(h, key, 1)
}

// checkKeyReused: RuleKeyReused.
func checkKeyReused(ctx context.Context, h Harness, key string) error {
	req := chargeRequest(PaymentMethodSucceeds)
	first, err := charge(ctx, h.Provider, key, req)
	if err != nil {
		return err
	}
	other := req
	other.Amount++
	if out, err := h.Provider.Charge(ctx, key, other); !refusedAs(err, payment.ErrKeyReused) {
		return fmt.Errorf("the key with another request answered %+v, %v; want a KeyReused refusal", out, err)
	}
	if err := replays(ctx, h.Provider, key, req, first); err != nil {
		return err
	}
	return chargedTimes(h, key, 1)
}

// checkDeclined: RuleDeclined.
func checkDeclined(ctx context.Context, h Harness, key string) error {
	req := chargeRequest(PaymentMethodDeclined)
	for attempt := 1; attempt <= 2; attempt++ {
		if out, err := h.Provider.Charge(ctx, key, req); !refusedAs(err, payment.ErrDeclined) {
			return fmt.Errorf("attempt %d with a declined payment method answered %+v, %v; want a Declined refusal",
				attempt, out, err)
		}
	}
	return chargedTimes(h, key, 0)
}

// checkInFlight: RuleInFlight. The second charge may also time out
// waiting; what matters is that it is uncertain and that the key is
// charged once.
func checkInFlight(ctx context.Context, h Harness, key string) error {
	req := chargeRequest(PaymentMethodSucceeds)
	entered, release := h.Hold()
	defer release()

	type result struct {
		out payment.Outcome
		err error
	}
	held := make(chan result, 1)
	go func() {
		out, err := h.Provider.Charge(ctx, key, req)
		held <- result{out, err}
	}()
	select {
	case <-entered:
	case r := <-held:
		return fmt.Errorf("the first charge was not held in flight: it answered %+v, %v", r.out, r.err)
	case <-ctx.Done():
		return fmt.Errorf("the first charge never reached the service: %w", ctx.Err())
	}

	secondCtx, cancel := context.WithTimeout(ctx, InFlightWait)
	out, err := h.Provider.Charge(secondCtx, key, req)
	cancel()
	if err := uncertain("a charge while the key was in flight", out, err); err != nil {
		return err
	}

	release()
	var first result
	select {
	case first = <-held:
	case <-ctx.Done():
		return fmt.Errorf("the held charge never answered after its release: %w", ctx.Err())
	}
	switch {
	case first.err != nil:
		return fmt.Errorf("the held charge failed after its release: %w", first.err)
	case first.out.ID == "" || first.out.Replayed:
		return fmt.Errorf("the held charge answered %+v; want a new charge with an id", first.out)
	}
	if err := replays(ctx, h.Provider, key, req, first.out); err != nil {
		return err
	}
	return chargedTimes(h, key, 1)
}

// checkLookup: RuleLookup. It looks up until the charge is found or
// h.LookupLag has passed, since a Looker's index may lag behind its writes.
func checkLookup(ctx context.Context, h Harness, key string) error {
	looker, ok := h.Provider.(payment.Looker)
	if !ok {
		return fmt.Errorf("%w: the provider is not a payment.Looker", errSkipped)
	}
	req := chargeRequest(PaymentMethodSucceeds)
	out, err := charge(ctx, h.Provider, key, req)
	if err != nil {
		return err
	}
	unknown := key + "/unknown"
	lagEnds := time.Now().Add(h.LookupLag)
	var found map[string][]payment.Found
	for {
		found, err = looker.Lookup(ctx, []string{key, unknown})
		if err == nil && len(found[key]) > 0 {
			break
		}
		if time.Now().After(lagEnds) {
			return fmt.Errorf("the lookup did not find charge %s by its key within %s: it answered %v, error %v",
				out.ID, h.LookupLag, found, err)
		}
		select {
		case <-time.After(lookupPollInterval):
		case <-ctx.Done():
			return fmt.Errorf("the lookup did not find charge %s by its key: %w", out.ID, ctx.Err())
		}
	}
	if _, ok := found[unknown]; ok || len(found) != 1 {
		return fmt.Errorf("the lookup of the charged key and an unknown key answered %v; want the charged key only", found)
	}
	want := payment.Found{
		Key:         key,
		Outcome:     out,
		State:       payment.StateSucceeded,
		Fingerprint: payment.RequestHash(key, req),
	}
	if got := found[key]; len(got) != 1 || got[0].Key != want.Key || got[0].ID != want.ID ||
		got[0].Amount != want.Amount || got[0].Currency != want.Currency || got[0].Replayed ||
		got[0].State != want.State || got[0].Fingerprint != want.Fingerprint {
		return fmt.Errorf("the lookup found %+v under the key; want %+v", got, want)
	}
	return nil
}
