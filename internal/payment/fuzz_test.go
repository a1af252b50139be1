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

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// maxNamespaceLength is the longest Kubernetes namespace name.
const maxNamespaceLength = 63

func FuzzSentKey(f *testing.F) {
	seeds := []struct{ nsA, nsB, key string }{
		{"payments", "billing", "invoice-42"},
		{"team", "team-a", "invoice-42"},
		{"a", "b", ""},
		{"", "default", "k"},
		{"payments", "billing", strings.Repeat("k", payment.MaxKeyLength-len("payments/"))},
		{"payments", "billing", strings.Repeat("k", payment.MaxKeyLength+1)},
		{strings.Repeat("n", maxNamespaceLength), "default", strings.Repeat("x", 300)},
		{strings.Repeat("n", 200), "default", "short"},
		{"payments", "billing", "sha256:" + strings.Repeat("0", 64)},
		{"payments", "billing", strings.Repeat("é", 200)},
	}
	for _, s := range seeds {
		f.Add(s.nsA, s.nsB, s.key)
	}

	f.Fuzz(func(t *testing.T, nsA, nsB, key string) {
		got := payment.SentKey(nsA, key)

		if again := payment.SentKey(nsA, key); again != got {
			t.Fatalf("SentKey(%q, %q) is not deterministic: %q then %q", nsA, key, got, again)
		}
		if len(got) > payment.MaxKeyLength {
			t.Fatalf("SentKey(%q, %q) has %d bytes, more than %d", nsA, key, len(got), payment.MaxKeyLength)
		}
		if len(nsA) <= maxNamespaceLength {
			if !strings.HasPrefix(got, nsA+"/") {
				t.Fatalf("SentKey(%q, %q) = %q does not start with the namespace", nsA, key, got)
			}
			scoped := nsA + "/" + key
			hashed := len(scoped) > payment.MaxKeyLength || strings.HasPrefix(key, "sha256:")
			if !hashed && got != scoped {
				t.Fatalf("SentKey(%q, %q) = %q, want it verbatim", nsA, key, got)
			}
			if hashed && !hashFormat.MatchString(strings.TrimPrefix(got, nsA+"/")) {
				t.Fatalf("SentKey(%q, %q) = %q, want %q followed by a sha256", nsA, key, got, nsA+"/")
			}
		}

		if nsA != nsB && !strings.Contains(nsA, "/") && !strings.Contains(nsB, "/") {
			if other := payment.SentKey(nsB, key); other == got {
				t.Fatalf("namespaces %q and %q share the sent key %q for key %q", nsA, nsB, got, key)
			}
		}
	})
}

func FuzzRequestHash(f *testing.F) {
	f.Add("payments/invoice-42", int64(1999), "eur", "cus_123", "pm_card_visa", "Invoice 42", "invoice", "42")
	f.Add("", int64(0), "", "", "", "", "", "")
	f.Add("k", int64(-1), "usd", "", "", "<&>\u2028", "a=b", "c")
	f.Add("k", int64(9223372036854775807), "jpy", "c", "p", "d", "", "")

	f.Fuzz(func(t *testing.T, key string, amount int64, currency, customer, paymentMethod, description, metaKey, metaValue string) {
		req := func() payment.ChargeRequest {
			return payment.ChargeRequest{
				Amount:        amount,
				Currency:      currency,
				Customer:      customer,
				PaymentMethod: paymentMethod,
				Description:   description,
				Metadata:      map[string]string{metaKey: metaValue, "fixed": "entry"},
			}
		}

		got := payment.RequestHash(key, req())
		if !hashFormat.MatchString(got) {
			t.Fatalf("RequestHash = %q, want sha256: followed by 64 hex digits", got)
		}
		// A fresh request with a fresh map must hash the same.
		if again := payment.RequestHash(key, req()); again != got {
			t.Fatalf("RequestHash is not deterministic: %q then %q", got, again)
		}
		changed := req()
		changed.Amount++
		if payment.RequestHash(key, changed) == got {
			t.Fatalf("RequestHash ignores the amount: %d and %d hash to %q", amount, changed.Amount, got)
		}
	})
}
