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
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/pkg/providertest"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// This example certifies the sandbox's HTTP contract, served on a loopback
// address. A test of a real service calls providertest.Run(t, opts) instead,
// which runs each rule as a subtest.
func Example() {
	// The sandbox's bank debits stay processing for two seconds.
	engine := sandbox.NewEngine(sandbox.WithDebitSettleDelay(2 * time.Second))
	defer engine.Close()
	srv := httptest.NewServer(sandbox.NewServer(engine, sandbox.ServerOptions{}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	results, err := providertest.Check(ctx, providertest.Options{
		URL:       srv.URL + "/http/charges",
		LookupURL: srv.URL + "/http/charges/lookup",
		RefundURL: srv.URL + "/http/refunds",
		ListURL:   srv.URL + "/http/list",
		Timeout:   10 * time.Second,
		// The sandbox's fault switches keep a charge in flight and lose
		// an answer after its commit.
		InFlight: &providertest.InFlight{Hold: func() (<-chan string, func()) {
			g := engine.Hold()
			return g.Entered(), g.Release
		}},
		LoseResponse: func() { engine.FailNext(sandbox.FaultAfterCommit, 1) },
		// A SEPA debit is answered processing and settles (or fails) later.
		Pending: &providertest.Pending{
			PaymentMethod:        sandbox.PaymentMethodSEPADebit,
			FailingPaymentMethod: sandbox.PaymentMethodSEPADebitInsufficientFunds,
		},
		// The sandbox sends its signed events where the rule asks.
		Events: &providertest.Events{Secret: "whsec_example", SendTo: func(url string) error {
			return engine.SetWebhooks(sandbox.WebhookConfig{URL: url, Secret: "whsec_example", Format: sandbox.WebhookFormatHTTP})
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range results {
		fmt.Println(r.Status, r.Rule)
	}
	fmt.Println("failed:", providertest.Failed(results))
	// Output:
	// PASS same-key-replays
	// PASS replay-after-lost-response
	// PASS key-reuse-refused
	// PASS fingerprint-not-compared
	// PASS key-from-header
	// PASS in-flight-conflict
	// PASS decline-saved
	// PASS lookup-by-key
	// PASS error-body
	// SKIP credentials-required
	// PASS key-required
	// PASS refund-same-key-replays
	// PASS refund-replay-after-lost-response
	// PASS refund-beyond-charge-refused
	// PASS refund-unknown-charge-refused
	// PASS refund-lookup-by-key
	// PASS list-window-exactly-once
	// PASS list-window-ends-before
	// PASS list-bad-parameter-refused
	// PASS pending-settles-once
	// PASS events-signed
	// failed: false
}
