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

package ledger_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/ledger"
)

// t0 is the time of the first entry of the example ledger.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Provider accounts of the example ledger: one without a key scope, one
// with the scope "eu".
var (
	stripe   = paymentsv1alpha1.ProviderIdentity{UID: "uid-1", Endpoint: "https://api.stripe.com", Account: "acct_1", Mode: "live"}
	stripeEU = paymentsv1alpha1.ProviderIdentity{UID: "uid-2", Endpoint: "https://api.stripe.com", Account: "acct_2", Mode: "live", KeyScope: "eu"}
)

// longKey is a key whose sent form is hashed.
var longKey = strings.Repeat("k", 300)

// hashedEU is the key the operator sends for longKey in the namespace shop
// at the provider with the key scope eu (payment.ScopedKey): the SentKey of
// "eu:shop".
var hashedEU = ledger.SentKey("eu:shop", longKey)

// exampleLedger is a client of an API server holding two PaymentLedger
// pages, as the operator writes them.
func exampleLedger() client.Client {
	at := func(h int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(h) * time.Hour)) }
	first := &paymentsv1alpha1.PaymentLedger{
		ObjectMeta: metav1.ObjectMeta{Name: "page-00000001"},
		Providers:  []paymentsv1alpha1.ProviderIdentity{stripe, stripeEU},
		Entries: []paymentsv1alpha1.LedgerEntry{
			{Key: "shop/order-1", Fingerprint: "sha256:f1", Provider: 0, Charge: "pi_1", Amount: 1250, Currency: "eur",
				Outcome: paymentsv1alpha1.LedgerCompleted, At: at(0)},
			{Key: "eu:shop/order-2", Fingerprint: "sha256:f2", Provider: 1, Charge: "pi_2", Amount: 990, Currency: "eur",
				Outcome: paymentsv1alpha1.LedgerCompleted, At: at(1)},
			{Key: "shop.refund/order-1", Fingerprint: "sha256:f3", Provider: 0, Charge: "re_1", Amount: 250, Currency: "eur",
				Outcome: paymentsv1alpha1.LedgerCompleted, At: at(2)},
		},
	}
	second := &paymentsv1alpha1.PaymentLedger{
		ObjectMeta: metav1.ObjectMeta{Name: "page-00000002"},
		Providers:  []paymentsv1alpha1.ProviderIdentity{stripe, stripeEU},
		Entries: []paymentsv1alpha1.LedgerEntry{
			{Key: "other/order-1", Fingerprint: "sha256:f4", Provider: 0, Outcome: paymentsv1alpha1.LedgerFailed,
				Reason: "card_declined", Amount: 500, Currency: "usd", At: at(3)},
			{Key: hashedEU, Fingerprint: "sha256:f5", Provider: 1, Charge: "pi_5",
				Outcome: paymentsv1alpha1.LedgerCompleted, At: at(4)},
			{Key: "shop/order-3", Fingerprint: "sha256:f6", Provider: 0, Outcome: paymentsv1alpha1.LedgerFailed,
				Reason: "Resolved", ResolvedBy: `O'Brien, "ops"`, At: at(5)},
		},
	}
	return fake.NewClientBuilder().WithScheme(exampleScheme()).WithObjects(first, second).Build()
}

// exampleScheme knows the types of api/v1alpha1.
func exampleScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	if err := paymentsv1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	return scheme
}

// Looking a payment up by its job's namespace and key: the entry is found
// whether the provider had a key scope or not.
func ExampleNewCRDReader() {
	// A kubectl plugin makes c with client.New from its kubeconfig; it
	// reads the API server directly.
	var c client.Reader = exampleLedger()
	r := ledger.NewCRDReader(c)

	entries, err := r.Find(context.Background(), ledger.SentKey("shop", "order-2"))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range entries {
		fmt.Println(e.Key, e.Namespace, e.Outcome, e.Charge, e.Amount, e.Currency, e.Provider.Account)
	}
	// Output:
	// eu:shop/order-2 shop Completed pi_2 990 eur acct_2
}

// Exporting the entries of a namespace since a time as CSV.
func ExampleCSVWriter() {
	r := ledger.NewCRDReader(exampleLedger())
	w := ledger.NewCSVWriter(os.Stdout)
	err := r.Each(context.Background(), ledger.Filter{Namespace: "shop", Since: t0.Add(2 * time.Hour)}, w.Write)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// at,key,namespace,outcome,reason,charge,amount,currency,fingerprint,provider_endpoint,provider_account,resolved_by
	// 2026-03-01T14:00:00Z,shop.refund/order-1,shop,Completed,,re_1,250,eur,sha256:f3,https://api.stripe.com,acct_1,
	// 2026-03-01T16:00:00Z,eu:shop/sha256:dc328d52de8c104d587f8c98d05ed26e8f594585a96a7054e7395258c98ff1f7,shop,Completed,,pi_5,,,sha256:f5,https://api.stripe.com,acct_2,
	// 2026-03-01T17:00:00Z,shop/order-3,shop,Failed,Resolved,,,,sha256:f6,https://api.stripe.com,acct_1,"O'Brien, ""ops"""
}

// The keys the operator sends for a PaymentJob and for a PaymentRefund.
func ExampleSentKey() {
	fmt.Println(ledger.SentKey("shop", "order-7"))
	fmt.Println(ledger.RefundKey("shop", "order-7"))
	// Output:
	// shop/order-7
	// shop.refund/order-7
}
