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

package httpprovider_test

import (
	"net/http/httptest"
	"testing"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment/httpprovider"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/paymenttest"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// TestProviderContract runs the payment.Provider contract against the
// HTTP provider talking to the sandbox's HTTP contract routes, with the
// lookup endpoint, so that the Looker rule runs too.
func TestProviderContract(t *testing.T) {
	e := sandbox.NewEngine()
	srv := httptest.NewServer(sandbox.NewServer(e, sandbox.ServerOptions{}))
	t.Cleanup(srv.Close)
	p, err := httpprovider.New(httpprovider.Config{
		URL:       srv.URL + "/http/charges",
		LookupURL: srv.URL + "/http/charges/lookup",
	})
	if err != nil {
		t.Fatal(err)
	}
	paymenttest.Run(t, paymenttest.Harness{
		Provider:       p,
		LoseNextAnswer: func() { e.FailNext(sandbox.FaultAfterCommit, 1) },
		Hold: func() (<-chan string, func()) {
			gate := e.Hold()
			return gate.Entered(), gate.Release
		},
		Charges: func(key string) int { return e.Stats().ChargesByKey[key] },
	})
}
