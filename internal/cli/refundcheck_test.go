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

package cli

import (
	"math/rand/v2"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation"

	operatorpayment "github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// The keys refund compares with the ledger's and the provider's are the
// ones the operator sends, scoped and hashed alike.
func TestRefundChecksTheKeysTheOperatorSends(t *testing.T) {
	g := NewWithT(t)
	long := strings.Repeat("k", 250)
	for _, scope := range []string{"", "eu"} {
		for _, key := range []string{"invoice-3-refund-b2k9x", long, "sha256:abc"} {
			g.Expect(sentRefundKey(scope, "billing", key)).To(Equal(operatorpayment.RefundKey(scope, "billing", key)), "scope %q key %q", scope, key)
			g.Expect(sentJobKey(scope, "billing", key)).To(Equal(operatorpayment.ScopedKey(scope, "billing", key)), "scope %q key %q", scope, key)
		}
	}
	g.Expect(unscoped("eu:billing.refund/x")).To(Equal("billing.refund/x"))
	g.Expect(unscoped("billing.refund/a:b")).To(Equal("billing.refund/a:b"), "a ':' in the key part is not a scope")
}

// Drawn names are valid object names, at most 253 characters, and two
// draws for one job differ (27^5 suffixes; a collision with a used name
// is drawn again by refundName).
func TestRefundDrawsValidNamesThatDiffer(t *testing.T) {
	g := NewWithT(t)
	for _, job := range []string{"invoice-3", strings.Repeat("a", 240) + "." + strings.Repeat("b", 12), strings.Repeat("c", 253)} {
		name := drawRefundName(job, rand.IntN)
		g.Expect(validation.IsDNS1123Subdomain(name)).To(BeEmpty(), name)
		g.Expect(len(name)).To(BeNumerically("<=", maxObjectName))
	}
	seen := map[string]bool{}
	for range 100 {
		seen[drawRefundName("invoice-3", rand.IntN)] = true
	}
	g.Expect(seen).To(HaveLen(100))

	// The ledger's refunds of a job are known by the names refund gives
	// them, drawn or counted (before), and only by those.
	for key, want := range map[string]bool{
		"billing.refund/invoice-3-refund-b2k9x":       true,
		"billing.refund/invoice-3-refund":             true,
		"billing.refund/invoice-3-refund-2":           true,
		"billing.refund/invoice-3-refund-2-refund-xx": false,
		"billing.refund/invoice-30-refund-b2k9x":      false,
		"billing.refund/my-own-name":                  false,
		"other.refund/invoice-3-refund-b2k9x":         false,
		"billing/invoice-3-refund-b2k9x":              false,
	} {
		g.Expect(namedForJob(key, "billing", "invoice-3")).To(Equal(want), key)
	}
}
