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

package paymenttest

// Helpers for adapters' own tests, beside the contract suite.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// CheckTransient returns nil when err is what an adapter answers when the
// outcome is uncertain or nothing is known: a *payment.TransientError, which
// payment.IsRefusal never takes for a refusal. Otherwise it returns an error
// saying what err is. Adapters' own tests use it on the calls they expect to
// be uncertain.
func CheckTransient(err error) error {
	var te *payment.TransientError
	switch {
	case err == nil:
		return errors.New("the call succeeded; want a *payment.TransientError")
	case !errors.As(err, &te):
		return fmt.Errorf("the call answered %T %q; want a *payment.TransientError", err, err)
	}
	return nil
}

// FullRequest returns a new request with every field set, for adapters'
// tests of what they send; each call returns a new Metadata map.
func FullRequest() payment.ChargeRequest {
	return payment.ChargeRequest{
		Amount:        1999,
		Currency:      "eur",
		Customer:      "cus_123",
		PaymentMethod: PaymentMethodSucceeds,
		Description:   "Invoice 42",
		Metadata:      map[string]string{"invoice": "42", "tenant": "team-a"},
	}
}

// InvalidKeys returns keys that payment.ValidKey refuses, by what is wrong
// with them: an adapter must refuse each before it sends anything.
func InvalidKeys() map[string]string {
	return map[string]string{
		"empty":                 "",
		"with a space":          "paymenttest/a b",
		"with a line break":     "paymenttest/a\r\nX-Evil: 1",
		"with a trailing tab":   "paymenttest/a\t",
		"not ASCII":             "paymenttest/zahlung-ü",
		"longer than 255 bytes": "paymenttest/" + strings.Repeat("k", payment.MaxKeyLength+1-len("paymenttest/")),
	}
}

// Keys returns n distinct idempotency keys that payment.ValidKey accepts,
// for tests of how many keys one Lookup takes.
func Keys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("paymenttest/key-%d", i)
	}
	return keys
}
