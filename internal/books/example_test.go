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

package books_test

import (
	"fmt"

	"github.com/idempotency-dev/paymentjob-operator/internal/books"
)

// A job charged twice under its key, and a refund made in the dashboard.
func ExampleCompare() {
	records := []books.Record{{
		Kind: books.Charge, Key: "billing/invoice-42", Object: "billing/invoice-42", InLedger: true,
		Moved: true, ID: "pi_1", Amount: 1999, Currency: "eur",
	}}
	objects := []books.Object{
		{Kind: books.Charge, ID: "pi_1", Key: "billing/invoice-42", Status: books.StatusSucceeded, Amount: 1999, Currency: "eur"},
		{Kind: books.Charge, ID: "pi_2", Key: "billing/invoice-42", Status: books.StatusSucceeded, Amount: 1999, Currency: "eur"},
		{Kind: books.Refund, ID: "re_1", Status: books.StatusSucceeded, Amount: 500, Currency: "eur", Charge: "pi_1"},
	}
	for _, f := range books.Compare(records, objects) {
		fmt.Println(f.Category, f.Kind, f.Key, f.ProviderIDs)
	}
	// Output:
	// Duplicate charge billing/invoice-42 [pi_1 pi_2]
	// RefundedOutsideOperator refund billing/invoice-42 [re_1]
}
