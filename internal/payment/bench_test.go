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
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/paymenttest"
)

func BenchmarkSentKey(b *testing.B) {
	benchmarks := []struct {
		name string
		key  string
	}{
		{name: "short key", key: "invoice-42"},
		{name: "long key", key: strings.Repeat("k", 1024)},
	}
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				payment.SentKey("payments", bm.key)
			}
		})
	}
}

func BenchmarkRequestHash(b *testing.B) {
	req := paymenttest.FullRequest()
	b.ReportAllocs()
	for b.Loop() {
		payment.RequestHash("payments/invoice-42", req)
	}
}
