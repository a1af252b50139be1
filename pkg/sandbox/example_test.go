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

package sandbox_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// A retry under the same idempotency key replays the first outcome and moves
// no money; the same key with other parameters is refused; a forgotten key
// charges again, which is what the operator's lookups guard against.
func ExampleEngine_CreatePaymentIntent() {
	e := sandbox.NewEngine()
	order := sandbox.PaymentIntentParams{Amount: 2000, Currency: "eur", PaymentMethod: sandbox.PaymentMethodVisa}

	first, replayed, err := e.CreatePaymentIntent("default/order-42", order)
	fmt.Println(first.Status, replayed, err)

	again, replayed, err := e.CreatePaymentIntent("default/order-42", order)
	fmt.Println(again.ID == first.ID, replayed, err)

	other := order
	other.Amount = 3000
	_, _, err = e.CreatePaymentIntent("default/order-42", other)
	var stripeErr *sandbox.StripeError
	if errors.As(err, &stripeErr) {
		fmt.Println(stripeErr.HTTPStatus, stripeErr.Type)
	}

	e.ForgetKeys()
	_, replayed, _ = e.CreatePaymentIntent("default/order-42", order)
	fmt.Println(replayed, e.Stats().Charges)
	// Output:
	// succeeded false <nil>
	// true true <nil>
	// 400 idempotency_error
	// false 2
}

// A refund is idempotent like a charge, and never goes beyond what is left
// of the payment; a refund that fails later leaves its amount to refund
// again.
func ExampleEngine_CreateRefund() {
	e := sandbox.NewEngine()
	paid, _, _ := e.CreatePaymentIntent("default/order-42",
		sandbox.PaymentIntentParams{Amount: 2000, Currency: "eur", PaymentMethod: sandbox.PaymentMethodVisa})

	part := sandbox.RefundParams{PaymentIntent: paid.ID, Amount: 1500}
	first, _, err := e.CreateRefund("default.refund/r1", part)
	fmt.Println(first.Status, first.Amount, err)
	again, replayed, _ := e.CreateRefund("default.refund/r1", part)
	fmt.Println(again.ID == first.ID, replayed, e.Refunded(paid.ID))

	_, _, err = e.CreateRefund("default.refund/r2", part)
	var stripeErr *sandbox.StripeError
	if errors.As(err, &stripeErr) {
		fmt.Println(stripeErr.HTTPStatus, stripeErr.Code)
	}

	_, _ = e.FailRefund(first.ID, sandbox.RefundFailureExpiredOrCanceledCard)
	fmt.Println(e.Refunded(paid.ID))
	// Output:
	// succeeded 1500 <nil>
	// true true 1500
	// 400 amount_too_large
	// 0
}

// A list pages through what the provider created in a window, newest
// first: From is inclusive and To exclusive, to the second, and each page
// starts after the last object of the one before.
func ExampleEngine_ListIntents() {
	e := sandbox.NewEngine()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 5 {
		e.PutIntent(sandbox.Intent{ID: fmt.Sprintf("pi_%d", i), Amount: 1000, Currency: "eur",
			Created: start.Add(time.Duration(i) * time.Minute)})
	}

	q := sandbox.ListQuery{From: start.Add(time.Minute), To: start.Add(4 * time.Minute), Limit: 2}
	for {
		page, more, err := e.ListIntents(q)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, in := range page {
			fmt.Print(in.ID, " ")
		}
		fmt.Println(more)
		if !more {
			break
		}
		q.StartingAfter = page[len(page)-1].ID
	}
	// Output:
	// pi_3 pi_2 true
	// pi_1 false
}
