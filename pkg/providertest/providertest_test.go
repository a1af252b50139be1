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

package providertest_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/pkg/providertest"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// timeout bounds each request, and ten times it a whole run.
const timeout = 5 * time.Second

// refToken is the reference service's bearer token.
const refToken = "ref-secret-token"

// allRules are the names of every rule, in the order they run.
var allRules = []string{
	providertest.RuleReplay, providertest.RuleLostResponse, providertest.RuleKeyReuse,
	providertest.RuleFingerprint, providertest.RuleKeyFromHeader, providertest.RuleInFlight, providertest.RuleDecline, providertest.RuleLookup,
	providertest.RuleErrorBody, providertest.RuleCredentials, providertest.RuleKeyRequired,
	providertest.RuleRefundReplay, providertest.RuleRefundLostResponse, providertest.RuleRefundExceedsCharge,
	providertest.RuleRefundUnknownCharge, providertest.RuleRefundLookup,
	providertest.RuleListWindow, providertest.RuleListWindowEnd, providertest.RuleListBadParameter,
	providertest.RulePending, providertest.RuleEvents,
}

// refundRules are the names of the refund rules.
var refundRules = allRules[len(allRules)-10 : len(allRules)-5]

// listRules are the names of the list rules.
var listRules = allRules[len(allRules)-5 : len(allRules)-2]

// eventsSecret is the secret the services of the tests sign events with.
const eventsSecret = "whsec_providertest"

// sandboxOptions serves a new sandbox Engine's HTTP contract on a loopback
// server closed with the test, and returns Options that use its fault
// switches for the in-flight and lost-response rules.
func sandboxOptions(t *testing.T, opts ...sandbox.Option) (providertest.Options, *sandbox.Engine) {
	t.Helper()
	clock := &skewedClock{}
	e := sandbox.NewEngine(append([]sandbox.Option{sandbox.WithClock(clock.Now)}, opts...)...)
	t.Cleanup(e.Close)
	srv := httptest.NewServer(sandbox.NewServer(e, sandbox.ServerOptions{}))
	t.Cleanup(srv.Close)
	return providertest.Options{
		URL:       srv.URL + "/http/charges",
		LookupURL: srv.URL + "/http/charges/lookup",
		RefundURL: srv.URL + "/http/refunds",
		ListURL:   srv.URL + "/http/list",
		Timeout:   timeout,
		InFlight: &providertest.InFlight{Hold: func() (<-chan string, func()) {
			g := e.Hold()
			return g.Entered(), g.Release
		}},
		LoseResponse: func() { e.FailNext(sandbox.FaultAfterCommit, 1) },
		Pending: &providertest.Pending{
			PaymentMethod:        sandbox.PaymentMethodSEPADebit,
			FailingPaymentMethod: sandbox.PaymentMethodSEPADebitInsufficientFunds,
			// Past the debit settle delay by the sandbox's clock.
			Settle: func() { clock.Add(time.Hour); e.SettleDebits() },
		},
		Events: &providertest.Events{Secret: eventsSecret, SendTo: func(url string) error {
			if url == "" {
				return e.SetWebhooks(sandbox.WebhookConfig{})
			}
			return e.SetWebhooks(sandbox.WebhookConfig{URL: url, Secret: eventsSecret, Format: sandbox.WebhookFormatHTTP})
		}},
	}, e
}

// refOptions serves s and returns Options for every rule.
func refOptions(t *testing.T, s *refService) providertest.Options {
	t.Helper()
	s.token = refToken
	base := startRef(t, s)
	return providertest.Options{
		URL:          base + "/charges",
		LookupURL:    base + "/charges/lookup",
		RefundURL:    base + "/refunds",
		ListURL:      base + "/list",
		Token:        refToken,
		Timeout:      timeout,
		InFlight:     &providertest.InFlight{Hold: s.holdNext},
		LoseResponse: s.loseNextAnswer,
		Pending:      &providertest.Pending{PaymentMethod: refDebit, FailingPaymentMethod: refDebitFails, Settle: s.settle},
		Events: &providertest.Events{Secret: eventsSecret,
			SendTo: func(url string) error { return s.sendEventsTo(url, eventsSecret) }},
	}
}

// check runs Check within a bounded context.
func check(t *testing.T, opts providertest.Options) []providertest.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*timeout)
	defer cancel()
	results, err := providertest.Check(ctx, opts)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, r := range results {
		t.Log(r)
	}
	return results
}

// statuses maps each rule's name to its status.
func statuses(results []providertest.Result) map[string]providertest.Status {
	m := map[string]providertest.Status{}
	for _, r := range results {
		m[r.Rule] = r.Status
	}
	return m
}

func TestSandboxPassesEveryRule(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	opts, e := sandboxOptions(t)

	results := check(t, opts)

	want := map[string]providertest.Status{}
	for _, name := range allRules {
		want[name] = providertest.Pass
	}
	// The sandbox's contract routes accept any token or none.
	want[providertest.RuleCredentials] = providertest.Skip
	g.Expect(statuses(results)).To(Equal(want))
	g.Expect(providertest.Failed(results)).To(BeFalse())
	// The sandbox is the oracle: no key the rules sent was charged or
	// refunded twice, and no charge was refunded beyond its amount.
	for key, n := range e.Stats().ChargesByKey {
		g.Expect(n).To(Equal(1), "charges under key %q", key)
	}
	g.Expect(e.Stats().RefundsByKey).NotTo(BeEmpty())
	for key, n := range e.Stats().RefundsByKey {
		g.Expect(n).To(Equal(1), "refunds under key %q", key)
	}
	for _, r := range e.ListRefunds("") {
		in, ok := e.GetPaymentIntent(r.PaymentIntent)
		g.Expect(ok).To(BeTrue())
		g.Expect(e.Refunded(r.PaymentIntent)).To(BeNumerically("<=", in.Amount))
	}
}

func TestRunPassesConformingServices(t *testing.T) {
	t.Parallel()
	t.Run("sandbox", func(t *testing.T) {
		t.Parallel()
		opts, _ := sandboxOptions(t)
		providertest.Run(t, opts)
	})
	t.Run("reference", func(t *testing.T) {
		t.Parallel()
		providertest.Run(t, refOptions(t, &refService{}))
	})
}

func TestReferenceServicePassesEveryRule(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)

	results := check(t, refOptions(t, &refService{}))

	g.Expect(results).To(HaveLen(len(allRules)))
	for i, r := range results {
		g.Expect(r.Rule).To(Equal(allRules[i]))
		g.Expect(r.Status).To(Equal(providertest.Pass), r.String())
	}
}

func TestBrokenServicesFail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// opts returns the Options of the broken service.
		opts func(t *testing.T) providertest.Options
		// wantFailed are the rules that must fail, at least.
		wantFailed []string
		// wantSaid are in the message of the first rule of wantFailed:
		// what the service must change.
		wantSaid []string
	}{
		{
			name:       "no replay: every request charges again",
			opts:       func(t *testing.T) providertest.Options { return refOptions(t, &refService{noReplay: true}) },
			wantFailed: []string{providertest.RuleReplay, providertest.RuleLostResponse, providertest.RuleDecline},
		},
		{
			name:       "another request under a key accepted",
			opts:       func(t *testing.T) providertest.Options { return refOptions(t, &refService{acceptOther: true}) },
			wantFailed: []string{providertest.RuleKeyReuse},
		},
		{
			name: "the fingerprint compared with the other fields",
			opts: func(t *testing.T) providertest.Options {
				return refOptions(t, &refService{compareFingerprint: true})
			},
			wantFailed: []string{providertest.RuleFingerprint},
		},
		{
			name:       "a request in flight charged twice",
			opts:       func(t *testing.T) providertest.Options { return refOptions(t, &refService{chargeInFlight: true}) },
			wantFailed: []string{providertest.RuleInFlight},
		},
		{
			name:       "the key taken from the body, the header ignored",
			opts:       func(t *testing.T) providertest.Options { return refOptions(t, &refService{keyFromBody: true}) },
			wantFailed: []string{providertest.RuleKeyFromHeader},
			wantSaid:   []string{"keys charges on the body's idempotencyKey", "must key charges on the Idempotency-Key header"},
		},
		{
			name: "a lookup without charges answered 404",
			opts: func(t *testing.T) providertest.Options {
				return refOptions(t, &refService{notFoundWhenEmpty: true})
			},
			wantFailed: []string{providertest.RuleLookup, providertest.RuleDecline},
			wantSaid:   []string{"404", "answer 200 with an empty charges array"},
		},
		{
			name:       "a charge status the contract does not name",
			opts:       func(t *testing.T) providertest.Options { return refOptions(t, &refService{status: "ok"}) },
			wantFailed: []string{providertest.RuleReplay, providertest.RuleLookup},
			wantSaid:   []string{`status "ok"`, `must report a charge that moved money as "succeeded"`, `"pending"`},
		},
		{
			name: "sandbox with idempotency off",
			opts: func(t *testing.T) providertest.Options {
				opts, _ := sandboxOptions(t, sandbox.WithIdempotency(false))
				return opts
			},
			wantFailed: []string{providertest.RuleReplay, providertest.RuleLostResponse, providertest.RuleKeyReuse,
				providertest.RuleInFlight, providertest.RuleDecline, providertest.RuleRefundReplay, providertest.RuleRefundLostResponse},
		},
		{
			name:       "no refund replay: every refund request refunds again",
			opts:       refundBroken(refRefundSwitches{noReplay: true}),
			wantFailed: []string{providertest.RuleRefundReplay, providertest.RuleRefundLostResponse},
			wantSaid:   []string{"was refunded again", "instead of replaying refund"},
		},
		{
			name:       "a refund's key lost when the client hangs up, the refund kept",
			opts:       refundBroken(refRefundSwitches{keyLostOnHangUp: true}),
			wantFailed: []string{providertest.RuleRefundLostResponse},
			wantSaid:   []string{"after the client hung up", "holds 2 refunds under key", "save the key with the refund"},
		},
		{
			name:       "refunds beyond the charge",
			opts:       refundBroken(refRefundSwitches{beyondCharge: true}),
			wantFailed: []string{providertest.RuleRefundExceedsCharge},
			wantSaid:   []string{"was refunded", `must refuse it with 402 Payment Required and the reason "RefundExceedsCharge"`},
		},
		{
			name:       "a refund of a charge never made",
			opts:       refundBroken(refRefundSwitches{unknownCharge: true}),
			wantFailed: []string{providertest.RuleRefundUnknownCharge},
			wantSaid:   []string{"which the service never made, was refunded", `the reason "ChargeNotFound"`},
		},
		{
			name:       "refund refusals with another reason",
			opts:       refundBroken(refRefundSwitches{refusalReason: "RefundFailed"}),
			wantFailed: []string{providertest.RuleRefundExceedsCharge, providertest.RuleRefundUnknownCharge},
			wantSaid:   []string{`refused with the reason "RefundFailed" (402)`, `must give the reason "RefundExceedsCharge"`},
		},
		{
			name:       "refunds not listed under their key",
			opts:       refundBroken(refRefundSwitches{byChargeOnly: true}),
			wantFailed: []string{providertest.RuleRefundLookup},
			wantSaid:   []string{"holds no refund", "every refund made under an asked key"},
		},
		{
			name:       "a charge's refunds answered without the charge's key",
			opts:       refundBroken(refRefundSwitches{chargeWithoutKey: true}),
			wantFailed: []string{providertest.RuleRefundLookup},
			wantSaid:   []string{`lists no charge`, "under the payment's own key"},
		},
		{
			name:       "a list page larger than its limit",
			opts:       listBroken(refListSwitches{ignoreLimit: true}),
			wantFailed: []string{providertest.RuleListWindow},
			wantSaid:   []string{"more than limit=2", "at most limit items a page"},
		},
		{
			name:       "a next page that starts at the cursor",
			opts:       listBroken(refListSwitches{cursorInclusive: true}),
			wantFailed: []string{providertest.RuleListWindow},
			wantSaid:   []string{"again, already listed on page 1", "exactly one page"},
		},
		{
			name:       "a window that holds what was created at its end",
			opts:       listBroken(refListSwitches{toInclusive: true}),
			wantFailed: []string{providertest.RuleListWindowEnd},
			wantSaid:   []string{"createdTo is exclusive"},
		},
		{
			name:       "a kind the contract does not name listed as charges",
			opts:       listBroken(refListSwitches{anyKind: true}),
			wantFailed: []string{providertest.RuleListBadParameter},
			wantSaid:   []string{"kind=everything was answered 200", "refuse a parameter it does not understand"},
		},
		{
			name:       "a retry of a processing payment made a second payment",
			opts:       settleBroken(refSettleSwitches{newOnProcessingRetry: true}),
			wantFailed: []string{providertest.RulePending},
			wantSaid:   []string{"while payment \"ch_", "must be answered processing with the same id, never as a second payment"},
		},
		{
			name:       "events signed with another secret",
			opts:       settleBroken(refSettleSwitches{wrongSecret: true}),
			wantFailed: []string{providertest.RuleEvents},
			wantSaid:   []string{"signature does not match", "sign each event with the shared secret"},
		},
		{
			name:       "events signed ten minutes before they are sent",
			opts:       settleBroken(refSettleSwitches{staleBy: 10 * time.Minute}),
			wantFailed: []string{providertest.RuleEvents},
			wantSaid:   []string{"outside the tolerance", "within 5 minutes of the receiver's clock"},
		},
		{
			name:       "one event id for every event",
			opts:       settleBroken(refSettleSwitches{reuseEventID: true}),
			wantFailed: []string{providertest.RuleEvents},
			wantSaid:   []string{`reuses event id "evt_1" of another event`, "each event has its own id"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)

			results := check(t, tt.opts(t))

			g.Expect(providertest.Failed(results)).To(BeTrue())
			if group := groupOf(tt.wantFailed[0]); group != nil {
				// A broken refund or list breaks no other rule.
				for _, r := range results {
					if !slices.Contains(group, r.Rule) {
						g.Expect(r.Status).To(Equal(providertest.Pass), r.String())
					}
				}
			}
			byRule := map[string]providertest.Result{}
			for _, r := range results {
				byRule[r.Rule] = r
			}
			for _, name := range tt.wantFailed {
				r := byRule[name]
				g.Expect(r.Status).To(Equal(providertest.Fail), r.String())
				g.Expect(r.String()).To(ContainSubstring(name))
				g.Expect(r.Message).NotTo(BeEmpty())
			}
			first := byRule[tt.wantFailed[0]]
			for _, said := range tt.wantSaid {
				g.Expect(first.Message).To(ContainSubstring(said))
			}
			// The reader is the service's author: a failure says what the
			// service must change, never which operator setting to check.
			for _, r := range results {
				if r.Status == providertest.Fail {
					g.Expect(r.Message).NotTo(MatchRegexp(`spec\.|PaymentProvider|PaymentJob`), r.String())
					g.Expect(r.Message).NotTo(ContainSubstring(eventsSecret), r.String())
				}
			}
		})
	}
}

func TestCheckSkipsWhatItCannotCheck(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	opts, _ := sandboxOptions(t)
	opts.LookupURL, opts.RefundURL, opts.ListURL, opts.InFlight, opts.LoseResponse = "", "", "", nil, nil
	opts.Pending, opts.Events = nil, nil

	results := check(t, opts)

	byRule := map[string]providertest.Result{}
	for _, r := range results {
		byRule[r.Rule] = r
	}
	g.Expect(byRule[providertest.RuleInFlight].Status).To(Equal(providertest.Skip))
	g.Expect(byRule[providertest.RuleInFlight].Message).To(ContainSubstring("InFlight"))
	g.Expect(byRule[providertest.RuleLookup].Status).To(Equal(providertest.Skip))
	g.Expect(byRule[providertest.RuleLookup].Message).To(ContainSubstring("LookupURL"))
	g.Expect(byRule[providertest.RuleCredentials].Status).To(Equal(providertest.Skip))
	g.Expect(byRule[providertest.RuleReplay].Status).To(Equal(providertest.Pass))
	g.Expect(byRule[providertest.RuleReplay].Message).To(ContainSubstring("no lookup endpoint"))
	for _, name := range refundRules {
		g.Expect(byRule[name].Status).To(Equal(providertest.Skip), "never counted as passed: %s", byRule[name])
		g.Expect(byRule[name].Message).To(ContainSubstring("Options.RefundURL (--refund-url) is not set"))
	}
	for _, name := range listRules {
		g.Expect(byRule[name].Status).To(Equal(providertest.Skip), "never counted as passed: %s", byRule[name])
		g.Expect(byRule[name].Message).To(ContainSubstring("Options.ListURL (--list-url) is not set"))
	}
	// A service without debits or events is told so, and never passes them.
	g.Expect(byRule[providertest.RulePending].Status).To(Equal(providertest.Skip))
	g.Expect(byRule[providertest.RulePending].Message).To(ContainSubstring("Options.Pending (--pending-payment-method) is not set"))
	g.Expect(byRule[providertest.RuleEvents].Status).To(Equal(providertest.Skip))
	g.Expect(byRule[providertest.RuleEvents].Message).To(ContainSubstring("Options.Events is not set"))
	g.Expect(providertest.Failed(results)).To(BeFalse())
}

// TestRefundRulesWithoutALookup: with a refund endpoint and no lookup
// endpoint, the refund rules judge by the answers alone, and the refund
// lookup rule is skipped.
func TestRefundRulesWithoutALookup(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	opts, _ := sandboxOptions(t)
	opts.LookupURL = ""

	byRule := map[string]providertest.Result{}
	for _, r := range check(t, opts) {
		byRule[r.Rule] = r
	}

	for _, name := range refundRules[:4] {
		g.Expect(byRule[name].Status).To(Equal(providertest.Pass), byRule[name].String())
	}
	g.Expect(byRule[providertest.RuleRefundReplay].Message).To(ContainSubstring("no lookup endpoint to count the refunds"))
	g.Expect(byRule[providertest.RuleRefundLookup].Status).To(Equal(providertest.Skip))
	g.Expect(byRule[providertest.RuleRefundLookup].Message).To(ContainSubstring("LookupURL"))
}

// refundBroken returns the Options of a reference service whose refunds
// are broken by sw.
func refundBroken(sw refRefundSwitches) func(t *testing.T) providertest.Options {
	return func(t *testing.T) providertest.Options { return refOptions(t, &refService{refunds: sw}) }
}
