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

package paymenttest_test

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/sandboxprovider"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/paymenttest"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// TestCheckFailsBrokenProviders is the suite's negative control: providers
// that each break part of the contract must fail exactly the rules they
// break, and between them every rule fails once.
func TestCheckFailsBrokenProviders(t *testing.T) {
	tests := []struct {
		name string
		// wrap turns the healthy sandbox provider into the one under test.
		wrap func(e *sandbox.Engine, p *sandboxprovider.Provider) payment.Provider
		// wantFailed are the rules the provider must fail.
		wantFailed []string
	}{
		{
			name:       "the healthy sandbox provider keeps every rule",
			wrap:       func(_ *sandbox.Engine, p *sandboxprovider.Provider) payment.Provider { return p },
			wantFailed: nil,
		},
		{
			name: "a provider that ignores idempotency keys charges again",
			wrap: func(e *sandbox.Engine, p *sandboxprovider.Provider) payment.Provider {
				e.SetIdempotency(false)
				return p
			},
			wantFailed: []string{
				paymenttest.RuleReplay, paymenttest.RuleLostAnswer,
				paymenttest.RuleKeyReused, paymenttest.RuleInFlight,
			},
		},
		{
			name: "a provider that reports refusals as uncertain and finds nothing",
			wrap: func(_ *sandbox.Engine, p *sandboxprovider.Provider) payment.Provider {
				return uncertainProvider{p}
			},
			wantFailed: []string{
				paymenttest.RuleKeyReused, paymenttest.RuleDeclined, paymenttest.RuleLookup,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			e := sandbox.NewEngine()
			results := paymenttest.Check(t.Context(), paymenttest.Harness{
				Provider:       tt.wrap(e, sandboxprovider.NewProvider(e)),
				LoseNextAnswer: func() { e.FailNext(sandbox.FaultAfterCommit, 1) },
				Hold: func() (<-chan string, func()) {
					gate := e.Hold()
					return gate.Entered(), gate.Release
				},
				Charges: func(key string) int { return e.Stats().ChargesByKey[key] },
			})

			var ran, failed []string
			for _, r := range results {
				g.Expect(r.Skipped).To(BeEmpty(), "rule %s", r.Rule)
				ran = append(ran, r.Rule)
				if r.Err != nil {
					t.Logf("%s: %v", r.Rule, r.Err)
					failed = append(failed, r.Rule)
				}
			}
			g.Expect(ran).To(Equal(paymenttest.Rules()))
			g.Expect(failed).To(ConsistOf(tt.wantFailed))
		})
	}
}

// TestCheckFailsAnIncompleteHarness checks that a harness without its
// switches fails every rule instead of passing them.
func TestCheckFailsAnIncompleteHarness(t *testing.T) {
	g := NewWithT(t)
	results := paymenttest.Check(t.Context(), paymenttest.Harness{Provider: sandboxprovider.NewProvider(sandbox.NewEngine())})
	g.Expect(results).To(HaveLen(len(paymenttest.Rules())))
	for _, r := range results {
		g.Expect(r.Err).To(MatchError(ContainSubstring("the harness has no LoseNextAnswer")), "rule %s", r.Rule)
	}
}

// uncertainProvider is a Looker that turns every refusal of the provider it
// wraps into an uncertain error and whose Lookup finds nothing.
type uncertainProvider struct {
	*sandboxprovider.Provider
}

// Charge charges through the wrapped provider and hides its refusals in
// uncertain errors.
func (p uncertainProvider) Charge(ctx context.Context, key string, req payment.ChargeRequest) (payment.Outcome, error) {
	out, err := p.Provider.Charge(ctx, key, req)
	if _, refused := payment.IsRefusal(err); refused {
		return out, payment.Transient(fmt.Errorf("the provider hides the refusal %w", err), 0)
	}
	return out, err
}

// Lookup finds nothing, whatever the provider holds.
func (uncertainProvider) Lookup(context.Context, []string) (map[string][]payment.Found, error) {
	return map[string][]payment.Found{}, nil
}
