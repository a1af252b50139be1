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

package sandboxprovider_test

import (
	"testing"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment/sandboxprovider"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/paymenttest"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// TestProviderContract runs the payment.Provider contract against the
// in-process Provider.
func TestProviderContract(t *testing.T) {
	e := sandbox.NewEngine()
	paymenttest.Run(t, paymenttest.Harness{
		Provider:       sandboxprovider.NewProvider(e),
		LoseNextAnswer: func() { e.FailNext(sandbox.FaultAfterCommit, 1) },
		Hold: func() (<-chan string, func()) {
			gate := e.Hold()
			return gate.Entered(), gate.Release
		},
		Charges: func(key string) int { return e.Stats().ChargesByKey[key] },
	})
}
