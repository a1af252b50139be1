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

package stripe_test

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment/stripe"
)

func TestModeOfAKey(t *testing.T) {
	tests := []struct{ key, want string }{
		{"sk_live_51Hx", "live"},
		{"rk_live_51Hx", "live"},
		{"sk_test_51Hx", "test"},
		{"rk_test_51Hx", "test"},
		{"pk_live_51Hx", ""},
		{"sk_51Hx", ""},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			NewWithT(t).Expect(stripe.Mode(tt.key)).To(Equal(tt.want))
		})
	}
}

func ExampleMode() {
	fmt.Println(stripe.Mode("sk_test_4eC39HqLyjWDarjtT1zdp7dc"))
	// Output: test
}
