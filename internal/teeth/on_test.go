//go:build campaignteeth

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

package teeth_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/teeth"
)

// TestBreak: Break switches on exactly the variants named, and what it
// returns switches them back off, leaving the others as they were.
func TestBreak(t *testing.T) {
	g := NewWithT(t)
	for _, v := range teeth.All() {
		g.Expect(teeth.On(v)).To(BeFalse(), "%s before any Break", v)
	}
	restoreClaim := teeth.Break(teeth.UnguardedClaim)
	restoreBoth := teeth.Break(teeth.NoAccountFence, teeth.RecordIgnoresLedger)
	g.Expect(teeth.On(teeth.UnguardedClaim)).To(BeTrue())
	g.Expect(teeth.On(teeth.NoAccountFence)).To(BeTrue())
	g.Expect(teeth.On(teeth.RecordIgnoresLedger)).To(BeTrue())
	g.Expect(teeth.On(teeth.LedgerErrorAsNotFound)).To(BeFalse())

	restoreBoth()
	g.Expect(teeth.On(teeth.NoAccountFence)).To(BeFalse())
	g.Expect(teeth.On(teeth.UnguardedClaim)).To(BeTrue(), "another Break's variant stays on")
	restoreClaim()
	for _, v := range teeth.All() {
		g.Expect(teeth.On(v)).To(BeFalse(), "%s after every restore", v)
	}
}
