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
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// The golden values below were computed once by SentKey and RequestHash and
// written down by hand (the hashed ones also agree with `sha256sum` of the
// documented input). They must never change, and a failure here is not a
// file to regenerate:
//
//   - A different SentKey for the same namespace and key is a second charge
//     for every manifest applied again after its job was deleted (a GitOps
//     re-sync, a TTL deletion undone by Git, a rebuilt cluster): the ledger,
//     the provider lookup before the first charge and the provider's own
//     idempotency all find the earlier payment by this key, and a new key
//     finds none of them. Jobs in flight at the upgrade would not be charged
//     again, but every one of them would stop with KeyMismatch
//     (status.idempotencyKey is not the derived key) until a person resolves it.
//   - A different RequestHash stops every job in flight with RequestChanged
//     (status.requestHash is compared at every claim), and every re-created
//     job whose payment the ledger or the provider holds with ChargeMismatch
//     (the fingerprint recorded there is compared before anything is charged).
//
// See "Upgrades and rollbacks" in docs/operations.md.

// neverChange is the failure message of a golden value.
const neverChange = "this value is sent to providers and stored in status and in the ledger; " +
	"changing it breaks every upgrade (docs/operations.md#upgrades-and-rollbacks)"

func TestSentKeyGoldenValues(t *testing.T) {
	tests := []struct {
		name      string
		namespace string
		key       string
		want      string
	}{
		{
			name:      "short key: scoped, readable",
			namespace: "payments", key: "invoice-42",
			want: "payments/invoice-42",
		},
		{
			name:      "scoped key of exactly 255 bytes: verbatim",
			namespace: "payments", key: strings.Repeat("k", 246),
			want: "payments/" + strings.Repeat("k", 246),
		},
		{
			name:      "scoped key of 256 bytes: the sha256 of the scoped key",
			namespace: "payments", key: strings.Repeat("k", 247),
			want: "payments/sha256:5f1421041f2a0ac554b90d48f5276f52f9bdd2421869492fefb7630c825b3440",
		},
		{
			name:      "short key starting with sha256: is always hashed",
			namespace: "payments", key: "sha256:invoice-42",
			want: "payments/sha256:046662cb5b53c193868f966348fc1eb13ce9e4ba844a98e6b21c487c1304839d",
		},
		{
			name:      "very long key",
			namespace: "payments", key: strings.Repeat("x", 10000),
			want: "payments/sha256:8f932603ee8236a90d19ac7ae95a130f5e6ebdce44b09f717a1ff862466b256f",
		},
		{
			name:      "multi-byte key, counted in bytes",
			namespace: "payments", key: strings.Repeat("é", 124),
			want: "payments/sha256:32ca1d3f6d0472dd5ec50527d4df51dbb0aa62fe313345092f05c8b9aa316850",
		},
		{
			name:      "longest Kubernetes namespace: kept readable before the hash",
			namespace: strings.Repeat("n", 63), key: strings.Repeat("x", 300),
			want: strings.Repeat("n", 63) + "/sha256:beeb0a50f81c59a8f74baac365eba6b0315efc6917a14c6060df8717a4c9966c",
		},
		{
			name:      "namespace longer than Kubernetes allows: the hash alone",
			namespace: strings.Repeat("n", 200), key: strings.Repeat("x", 300),
			want: "sha256:0e9bac93872cf92e7a580c198cd5acce3960bb7f8b5036b83185c6f816afd238",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(payment.SentKey(tt.namespace, tt.key)).To(Equal(tt.want), neverChange)
		})
	}
}

// RequestHash pins of the cases TestRequestHashIsStableAcrossVersions (a
// request with every field) does not cover: fields left out when empty, and
// the JSON escaping of text, which another encoder would do differently.
func TestRequestHashGoldenValues(t *testing.T) {
	tests := []struct {
		name string
		key  string
		req  payment.ChargeRequest
		want string
	}{
		{
			// {"v":"1","key":"payments/invoice-42","request":{"amount":2000,"currency":"usd"}}
			name: "only the required fields: empty optional fields are left out",
			key:  "payments/invoice-42",
			req:  payment.ChargeRequest{Amount: 2000, Currency: "usd"},
			want: "sha256:15c0823304396dd3ae22314ea235b4792dc47698cc36fabce3da6ea84a946e01",
		},
		{
			// "Tom \u0026 Jerry \u003cMarch\u003e", "Café ☕" as UTF-8:
			// encoding/json escapes <, > and & and nothing else.
			name: "text with HTML characters and non-ASCII",
			key:  "billing/invoice-2026-0042",
			req: payment.ChargeRequest{Amount: 2000, Currency: "usd", Description: "Tom & Jerry <March>",
				Metadata: map[string]string{"note": "Café ☕"}},
			want: "sha256:fadbc53ca34a880120f98d76ceccd1f5b41ad9a189b358b6b9197ebf8d51f812",
		},
		{
			name: "empty metadata is left out like none",
			key:  "billing/invoice-2026-0042",
			req:  payment.ChargeRequest{Amount: 2000, Currency: "usd", Metadata: map[string]string{}},
			want: "sha256:822f805da8dac7a25f2c46d0a2ed5ab12a1a456c86f906efc022874dffa48d83",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(payment.RequestHash(tt.key, tt.req)).To(Equal(tt.want), neverChange)
		})
	}
}
