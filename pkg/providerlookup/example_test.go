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

package providerlookup_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/providerlookup"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// Lookup asks the provider, read only, what it holds under a job's
// status.idempotencyKey. Here the provider is the sandbox on 127.0.0.1,
// which needs plain http to that host allowed, as the manager's
// --insecure-provider-hosts=127.0.0.1 does; a real client reads the
// PaymentProvider and its Secret from the cluster.
func ExampleLookup() {
	engine := sandbox.NewEngine()
	server := httptest.NewServer(sandbox.NewServer(engine, sandbox.ServerOptions{}))
	defer server.Close()

	// A charge and a partial refund, as the operator makes them.
	const key = "shop/order-42"
	paid, _, _ := engine.CreatePaymentIntent(key, sandbox.TaggedRequest(key,
		sandbox.PaymentIntentParams{Amount: 2000, Currency: "eur", PaymentMethod: sandbox.PaymentMethodVisa}))
	_, _, _ = engine.CreateRefund("shop.refund/r1", sandbox.TaggedRefund("shop.refund/r1",
		sandbox.RefundParams{PaymentIntent: paid.ID, Amount: 500}))

	provider := &paymentsv1alpha1.PaymentProvider{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "stripe"},
		Spec: paymentsv1alpha1.PaymentProviderSpec{Stripe: &paymentsv1alpha1.StripeProvider{
			APIBase:      server.URL,
			SecretKeyRef: paymentsv1alpha1.SecretKeyReference{Name: "stripe", Key: "apiKey"},
		}},
	}
	credentials := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "stripe",
			Labels: map[string]string{paymentsv1alpha1.LabelCredentials: "true"}},
		Data: map[string][]byte{"apiKey": []byte("sk_test_example")},
	}
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	_ = paymentsv1alpha1.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(provider, credentials).Build()

	opts := providerlookup.Options{InsecureHosts: []string{"127.0.0.1"}}
	charges, err := providerlookup.Lookup(context.Background(), c, provider, key, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, ch := range charges {
		fmt.Println(ch.Key, ch.State, ch.Amount, ch.Currency, "refunded", ch.Refunded)
		for _, r := range ch.Refunds {
			fmt.Println("  refund", r.Key, r.State, r.Amount, r.Currency)
		}
	}

	none, err := providerlookup.Lookup(context.Background(), c, provider, "shop/order-43", opts)
	fmt.Println(len(none), err)
	fmt.Println("charges at the provider:", engine.Stats().Charges)
	// Output:
	// shop/order-42 Succeeded 2000 eur refunded 500
	//   refund shop.refund/r1 Succeeded 500 eur
	// 0 <nil>
	// charges at the provider: 1
}
