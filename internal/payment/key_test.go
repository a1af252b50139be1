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

package payment_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/paymenttest"
)

// hashFormat is the format of a RequestHash and of the hashed part of a
// SentKey.
var hashFormat = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

func TestEffectiveKey(t *testing.T) {
	tests := []struct {
		name, jobName, specKey, want string
	}{
		{name: "defaults to the job name", jobName: "invoice-42", specKey: "", want: "invoice-42"},
		{name: "spec key wins over the name", jobName: "invoice-42", specKey: "order-7f3a", want: "order-7f3a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(payment.EffectiveKey(tt.jobName, tt.specKey)).To(Equal(tt.want))
		})
	}
}

func TestSentKey(t *testing.T) {
	const ns = "payments"
	// keyOfScopedLen returns a key whose scoped form "<ns>/<key>" has n bytes.
	keyOfScopedLen := func(n int) string { return strings.Repeat("k", n-len(ns)-1) }

	tests := []struct {
		name       string
		namespace  string
		key        string
		wantHashed bool
	}{
		{name: "short key is sent scoped and readable", namespace: ns, key: "invoice-42"},
		{name: "254 bytes is kept verbatim", namespace: ns, key: keyOfScopedLen(254)},
		{name: "exactly 255 bytes is kept verbatim", namespace: ns, key: keyOfScopedLen(payment.MaxKeyLength)},
		{name: "256 bytes is hashed", namespace: ns, key: keyOfScopedLen(payment.MaxKeyLength + 1), wantHashed: true},
		{name: "very long key is hashed", namespace: ns, key: strings.Repeat("x", 10000), wantHashed: true},
		{name: "longest namespace with a long key is hashed", namespace: strings.Repeat("n", 63), key: strings.Repeat("x", 300), wantHashed: true},
		{name: "multi-byte key counted in bytes", namespace: ns, key: strings.Repeat("é", 124), wantHashed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			got := payment.SentKey(tt.namespace, tt.key)
			g.Expect(len(got)).To(BeNumerically("<=", payment.MaxKeyLength))
			g.Expect(payment.SentKey(tt.namespace, tt.key)).To(Equal(got), "a retry must send the same key")

			scoped := tt.namespace + "/" + tt.key
			if !tt.wantHashed {
				g.Expect(got).To(Equal(scoped))
				return
			}
			prefix := tt.namespace + "/"
			g.Expect(got).To(HavePrefix(prefix + "sha256:"))
			g.Expect(strings.TrimPrefix(got, prefix)).To(MatchRegexp(hashFormat.String()))
			// The documented derivation: the hash of the whole scoped key.
			// Changing it would change the key of jobs already charged.
			sum := sha256.Sum256([]byte(scoped))
			g.Expect(got).To(Equal(prefix + "sha256:" + hex.EncodeToString(sum[:])))
		})
	}
}

func TestSentKeyDistinguishesKeys(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		name       string
		keyA, keyB string
	}{
		{name: "short keys", keyA: "invoice-1", keyB: "invoice-2"},
		{name: "long keys differing in the last byte", keyA: long + "a", keyB: long + "b"},
		{name: "long keys differing in the first byte", keyA: "a" + long, keyB: "b" + long},
		{name: "boundary key and one byte longer", keyA: strings.Repeat("k", 246), keyB: strings.Repeat("k", 247)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(payment.SentKey("payments", tt.keyA)).NotTo(Equal(payment.SentKey("payments", tt.keyB)))
		})
	}
}

func TestSentKeyNeverCollidesAcrossNamespaces(t *testing.T) {
	tests := []struct {
		name     string
		nsA, nsB string
		key      string
	}{
		{name: "short key", nsA: "team-a", nsB: "team-b", key: "invoice-42"},
		{name: "long key", nsA: "team-a", nsB: "team-b", key: strings.Repeat("x", 300)},
		{name: "namespace that is a prefix of the other, short key", nsA: "team", nsB: "team-a", key: "invoice-42"},
		{name: "namespace that is a prefix of the other, long key", nsA: "team", nsB: "team-a", key: strings.Repeat("x", 300)},
		{name: "one side hashed, the other verbatim", nsA: "a", nsB: strings.Repeat("b", 63), key: strings.Repeat("x", 200)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			a := payment.SentKey(tt.nsA, tt.key)
			b := payment.SentKey(tt.nsB, tt.key)
			g.Expect(a).NotTo(Equal(b), "tenants sharing a provider account must never share a key")
			g.Expect(a).To(HavePrefix(tt.nsA + "/"))
			g.Expect(b).To(HavePrefix(tt.nsB + "/"))
		})
	}
}

func TestRequestHashIsStableAndWellFormed(t *testing.T) {
	g := NewWithT(t)

	first := payment.RequestHash("payments/invoice-42", paymenttest.FullRequest())
	g.Expect(first).To(MatchRegexp(hashFormat.String()))
	for range 10 {
		g.Expect(payment.RequestHash("payments/invoice-42", paymenttest.FullRequest())).To(Equal(first))
	}
}

// The hash is recorded in a job's status; if it changed between operator
// versions, a job claimed before an upgrade would look like a different
// request after it. This pins the canonical encoding.
func TestRequestHashIsStableAcrossVersions(t *testing.T) {
	g := NewWithT(t)

	// The canonical encoding of paymenttest.FullRequest under the key: fields in a
	// fixed order, empty optional fields left out, map keys sorted.
	const canonical = `{"v":"1","key":"payments/invoice-42","request":{"amount":1999,"currency":"eur",` +
		`"customer":"cus_123","paymentMethod":"pm_card_visa","description":"Invoice 42",` +
		`"metadata":{"invoice":"42","tenant":"team-a"}}}`
	sum := sha256.Sum256([]byte(canonical))
	const golden = "sha256:19c6134a3346652e13813e2f4d817bb178ea2fd3d7d16109fb67f37abb7da84c"
	g.Expect("sha256:" + hex.EncodeToString(sum[:])).To(Equal(golden))

	g.Expect(payment.RequestHash("payments/invoice-42", paymenttest.FullRequest())).To(Equal(golden))
}

func TestRequestHashIgnoresMapInsertionOrder(t *testing.T) {
	g := NewWithT(t)

	keys := make([]string, 64)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%02d", i)
	}
	hashFor := func(order []int) string {
		req := paymenttest.FullRequest()
		req.Metadata = make(map[string]string, len(order))
		for _, i := range order {
			req.Metadata[keys[i]] = "value-" + keys[i]
		}
		return payment.RequestHash("payments/invoice-42", req)
	}

	sorted := make([]int, len(keys))
	for i := range sorted {
		sorted[i] = i
	}
	want := hashFor(sorted)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		g.Expect(hashFor(rng.Perm(len(keys)))).To(Equal(want))
	}
}

func TestRequestHashChangesWithAnyField(t *testing.T) {
	const key = "payments/invoice-42"
	base := payment.RequestHash(key, paymenttest.FullRequest())

	tests := []struct {
		name   string
		key    string
		change func(*payment.ChargeRequest)
	}{
		{name: "amount", key: key, change: func(r *payment.ChargeRequest) { r.Amount++ }},
		{name: "currency", key: key, change: func(r *payment.ChargeRequest) { r.Currency = "usd" }},
		{name: "customer", key: key, change: func(r *payment.ChargeRequest) { r.Customer = "cus_456" }},
		{name: "customer removed", key: key, change: func(r *payment.ChargeRequest) { r.Customer = "" }},
		{name: "payment method", key: key, change: func(r *payment.ChargeRequest) { r.PaymentMethod = "pm_card_mastercard" }},
		{name: "description", key: key, change: func(r *payment.ChargeRequest) { r.Description = "Invoice 43" }},
		{name: "metadata value", key: key, change: func(r *payment.ChargeRequest) { r.Metadata["invoice"] = "43" }},
		{name: "metadata key", key: key, change: func(r *payment.ChargeRequest) {
			delete(r.Metadata, "invoice")
			r.Metadata["invoice_id"] = "42"
		}},
		{name: "metadata entry added", key: key, change: func(r *payment.ChargeRequest) { r.Metadata["note"] = "" }},
		{name: "metadata removed", key: key, change: func(r *payment.ChargeRequest) { r.Metadata = nil }},
		{name: "key", key: "payments/invoice-43", change: func(*payment.ChargeRequest) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			req := paymenttest.FullRequest()
			tt.change(&req)
			g.Expect(payment.RequestHash(tt.key, req)).NotTo(Equal(base))
		})
	}
}

func TestRequestHashFieldBoundariesAreUnambiguous(t *testing.T) {
	g := NewWithT(t)

	a := payment.ChargeRequest{Amount: 100, Currency: "eur", Customer: "ab", PaymentMethod: "c"}
	b := payment.ChargeRequest{Amount: 100, Currency: "eur", Customer: "a", PaymentMethod: "bc"}
	g.Expect(payment.RequestHash("k", a)).NotTo(Equal(payment.RequestHash("k", b)))

	c := payment.ChargeRequest{Amount: 100, Currency: "eur", Metadata: map[string]string{"a": "b=c"}}
	d := payment.ChargeRequest{Amount: 100, Currency: "eur", Metadata: map[string]string{"a=b": "c"}}
	g.Expect(payment.RequestHash("k", c)).NotTo(Equal(payment.RequestHash("k", d)))
}

// A job whose metadata is absent and one whose metadata is an empty map send
// the same request, so they must fingerprint the same: otherwise an API
// round-trip that turns one into the other would look like a changed request.
func TestRequestHashTreatsNilAndEmptyMetadataAlike(t *testing.T) {
	g := NewWithT(t)

	withNil := paymenttest.FullRequest()
	withNil.Metadata = nil
	withEmpty := paymenttest.FullRequest()
	withEmpty.Metadata = map[string]string{}

	g.Expect(payment.RequestHash("payments/invoice-42", withEmpty)).
		To(Equal(payment.RequestHash("payments/invoice-42", withNil)))
}

func TestSentKeyNeverEqualsTheHashOfAnotherKey(t *testing.T) {
	g := NewWithT(t)
	long := strings.Repeat("k", 300)
	hashedLong := payment.SentKey("payments", long)
	g.Expect(hashedLong).To(HavePrefix("payments/sha256:"))

	// A user may type the hashed form as a key of its own; it must not be
	// sent verbatim, or the two jobs would share one payment.
	lookalike := strings.TrimPrefix(hashedLong, "payments/")
	g.Expect(payment.SentKey("payments", lookalike)).NotTo(Equal(hashedLong))
	g.Expect(payment.SentKey("payments", lookalike)).To(HavePrefix("payments/sha256:"))
}

func TestScopedKeyKeepsScopesApart(t *testing.T) {
	tests := []struct {
		name  string
		scope string
		ns    string
		key   string
		want  string // "" means hashed: checked by shape
	}{
		{name: "no scope is the unscoped key", ns: "billing", key: "invoice-42", want: "billing/invoice-42"},
		{name: "a scope is prepended", scope: "tenant-7", ns: "billing", key: "invoice-42", want: "tenant-7:billing/invoice-42"},
		{name: "long keys are hashed within the bound", scope: strings.Repeat("s", 63), ns: strings.Repeat("n", 63), key: strings.Repeat("x", 250)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := payment.ScopedKey(tt.scope, tt.ns, tt.key)
			g.Expect(len(got)).To(BeNumerically("<=", payment.MaxKeyLength))
			if tt.want != "" {
				g.Expect(got).To(Equal(tt.want))
				return
			}
			g.Expect(got).To(HavePrefix(tt.scope + ":" + tt.ns + "/sha256:"))
		})
	}

	g := NewWithT(t)
	keys := map[string]string{}
	for _, scope := range []string{"", "a", "b", "a-b"} {
		for _, ns := range []string{"billing", "a", "b", "a-billing"} {
			for _, key := range []string{"invoice-42", strings.Repeat("x", 300)} {
				k := payment.ScopedKey(scope, ns, key)
				where := fmt.Sprintf("scope %q, namespace %q, key %.10q", scope, ns, key)
				g.Expect(keys).NotTo(HaveKey(k), "%s sends the key of %s", where, keys[k])
				keys[k] = where
			}
		}
	}
}

func TestKeyNamespace(t *testing.T) {
	long := strings.Repeat("k", 300)
	tests := []struct {
		name, key, wantNamespace string
		wantRefund               bool
	}{
		{name: "a job's key", key: payment.SentKey("shop", "order-7"), wantNamespace: "shop"},
		{name: "a key with slashes", key: payment.SentKey("shop", "a/b/c"), wantNamespace: "shop"},
		{name: "a hashed key", key: payment.SentKey("shop", long), wantNamespace: "shop"},
		{name: "a scoped key", key: payment.ScopedKey("eu", "shop", "order-7"), wantNamespace: "shop"},
		{name: "a scoped hashed key", key: payment.ScopedKey("eu", "shop", long), wantNamespace: "shop"},
		{name: "a refund's key", key: payment.RefundKey("", "shop", "order-7"), wantNamespace: "shop", wantRefund: true},
		{name: "a scoped refund's key", key: payment.RefundKey("eu", "shop", "order-7"), wantNamespace: "shop", wantRefund: true},
		{name: "a hashed refund's key", key: payment.RefundKey("eu", "shop", long), wantNamespace: "shop", wantRefund: true},
		{name: "a key the operator did not send", key: "order-7", wantNamespace: ""},
		{name: "a key hashed whole", key: payment.SentKey(strings.Repeat("n", 300), "k"), wantNamespace: ""},
		{name: "a refund suffix in the key part", key: payment.SentKey("shop", "x.refund/y"), wantNamespace: "shop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(payment.KeyNamespace(tt.key)).To(Equal(tt.wantNamespace), tt.key)
			g.Expect(payment.IsRefundKey(tt.key)).To(Equal(tt.wantRefund), tt.key)
		})
	}
}
