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
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// A bank debit is accepted processing and decided after the debit settle
// delay, by the Engine's clock; it cannot be refunded before it succeeded.
func ExampleEngine_SetDebitSettleDelay() {
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	e := sandbox.NewEngine(sandbox.WithClock(func() time.Time { return now }))
	e.SetDebitSettleDelay(7 * 24 * time.Hour)

	paid, _, _ := e.CreatePaymentIntent("default/invoice-7", sandbox.PaymentIntentParams{
		Amount: 120000, Currency: "eur", PaymentMethod: sandbox.PaymentMethodSEPADebit})
	fmt.Println(paid.Status, paid.PaymentMethodType)

	_, _, err := e.CreateRefund("default.refund/r1", sandbox.RefundParams{PaymentIntent: paid.ID})
	var stripeErr *sandbox.StripeError
	if errors.As(err, &stripeErr) {
		fmt.Println(stripeErr.HTTPStatus, stripeErr.Refusal())
	}

	now = now.Add(7 * 24 * time.Hour)
	settled, _ := e.GetPaymentIntent(paid.ID)
	fmt.Println(settled.Status)

	failed, _, _ := e.CreatePaymentIntent("default/invoice-8", sandbox.PaymentIntentParams{
		Amount: 5000, Currency: "usd", PaymentMethod: sandbox.PaymentMethodACHDebitAccountClosed})
	now = now.Add(7 * 24 * time.Hour)
	failed, _ = e.GetPaymentIntent(failed.ID)
	fmt.Println(failed.Status, failed.LastPaymentError.Code)
	// Output:
	// processing sepa_debit
	// 400 ChargePending
	// succeeded
	// requires_payment_method account_closed
}

// Webhooks: every change is sent, signed, to a URL; stripe-go's webhook
// package verifies Stripe's format.
func ExampleEngine_SetWebhooks() {
	const secret = "whsec_example"
	received := make(chan string, 10)
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ev, err := webhook.ConstructEvent(body, r.Header.Get(sandbox.StripeSignatureHeader), secret)
		if err != nil {
			http.Error(w, "bad signature", http.StatusBadRequest)
			return
		}
		received <- string(ev.Type)
	}))
	defer endpoint.Close()

	e := sandbox.NewEngine(sandbox.WithDebitSettleDelay(100 * time.Millisecond))
	defer e.Close()
	if err := e.SetWebhooks(sandbox.WebhookConfig{URL: endpoint.URL, Secret: secret}); err != nil {
		fmt.Println(err)
		return
	}
	_, _, _ = e.CreatePaymentIntent("default/invoice-9", sandbox.PaymentIntentParams{
		Amount: 3000, Currency: "eur", PaymentMethod: sandbox.PaymentMethodSEPADebitInsufficientFunds})
	for range 2 {
		select {
		case t := <-received:
			fmt.Println(t)
		case <-time.After(5 * time.Second):
			fmt.Println("no event")
		}
	}
	// Output:
	// payment_intent.processing
	// payment_intent.payment_failed
}
