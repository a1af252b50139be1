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
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/providerlookup"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

const (
	namespace = "shop"
	// credential is the sandbox's test key; no error may show it.
	credential = "sk_test_do-not-print-0123456789"
	secretName = "provider-credentials"
	secretKey  = "apiKey"
)

// loopback lets the lookup call the sandbox over plain http on 127.0.0.1.
var loopback = providerlookup.Options{InsecureHosts: []string{"127.0.0.1"}}

// startSandbox serves a new Engine on 127.0.0.1 for the test.
func startSandbox(t *testing.T) (*sandbox.Engine, string) {
	t.Helper()
	e := sandbox.NewEngine()
	srv := httptest.NewServer(sandbox.NewServer(e, sandbox.ServerOptions{}))
	t.Cleanup(srv.Close)
	return e, srv.URL
}

func stripeProvider(base string) *paymentsv1alpha1.PaymentProvider {
	return &paymentsv1alpha1.PaymentProvider{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "stripe"},
		Spec: paymentsv1alpha1.PaymentProviderSpec{Stripe: &paymentsv1alpha1.StripeProvider{
			APIBase: base, SecretKeyRef: paymentsv1alpha1.SecretKeyReference{Name: secretName, Key: secretKey}}},
	}
}

func httpProvider(base string) *paymentsv1alpha1.PaymentProvider {
	return &paymentsv1alpha1.PaymentProvider{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "http"},
		Spec: paymentsv1alpha1.PaymentProviderSpec{HTTP: &paymentsv1alpha1.HTTPProvider{
			URL: base + "/http/charges", LookupURL: base + "/http/charges/lookup", RefundURL: base + "/http/refunds",
			SecretKeyRef: &paymentsv1alpha1.SecretKeyReference{Name: secretName, Key: secretKey}}},
	}
}

func secret(value string, labelled bool) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: secretName},
		Data:       map[string][]byte{secretKey: []byte(value)},
	}
	if labelled {
		s.Labels = map[string]string{paymentsv1alpha1.LabelCredentials: "true"}
	}
	return s
}

// newClient is a fake client holding objs, with funcs intercepting it.
func newClient(t *testing.T, funcs *interceptor.Funcs, objs ...client.Object) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := paymentsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...)
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	return b.Build()
}

// charge charges once at e under key, as the operator's adapters do: the
// key is also in the intent's metadata, where lookups find it.
func charge(t *testing.T, e *sandbox.Engine, key string, amount int64) sandbox.Intent {
	t.Helper()
	in, _, err := e.CreatePaymentIntent(key, sandbox.TaggedRequest(key, sandbox.PaymentIntentParams{
		Amount: amount, Currency: "eur", PaymentMethod: sandbox.PaymentMethodVisa}))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// refund refunds amount of intent at e under key, as the operator does.
func refund(t *testing.T, e *sandbox.Engine, key, intent string, amount int64) sandbox.Refund {
	t.Helper()
	r, _, err := e.CreateRefund(key, sandbox.TaggedRefund(key, sandbox.RefundParams{PaymentIntent: intent, Amount: amount}))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// writes are the counters of the Engine that a read-only lookup must not
// move.
func writes(e *sandbox.Engine) [5]int64 {
	s := e.Stats()
	return [5]int64{s.Requests, s.Charges, s.Cancels, s.RefundRequests, s.Refunds}
}

func TestLookupFindsTheChargeAndItsRefunds(t *testing.T) {
	kinds := []struct {
		name     string
		provider func(base string) *paymentsv1alpha1.PaymentProvider
	}{
		{name: "stripe", provider: stripeProvider},
		{name: "http", provider: httpProvider},
	}
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			e, base := startSandbox(t)
			pp := kind.provider(base)
			c := newClient(t, nil, pp, secret(credential, true))

			const key = "shop/order-42"
			paid := charge(t, e, key, 2000)
			charge(t, e, "shop/order-43", 999)
			before := writes(e)

			charges, err := providerlookup.Lookup(ctx, c, pp, key, loopback)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(charges).To(HaveLen(1))
			g.Expect(charges[0]).To(MatchFields(paid.ID, key, "Succeeded", 2000, "eur"))
			g.Expect(charges[0].Fingerprint).NotTo(BeEmpty())
			g.Expect(charges[0].RefundsListed).To(BeTrue())
			g.Expect(charges[0].Refunds).To(BeEmpty())
			g.Expect(writes(e)).To(Equal(before), "the lookup charged or refunded")

			const refundKey = "shop.refund/r1"
			r := refund(t, e, refundKey, paid.ID, 500)
			before = writes(e)
			charges, err = providerlookup.Lookup(ctx, c, pp, key, loopback)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(charges).To(HaveLen(1))
			g.Expect(charges[0].Refunds).To(HaveLen(1))
			got := charges[0].Refunds[0]
			g.Expect([]any{got.ID, got.Key, got.State, got.Amount, got.Currency}).
				To(Equal([]any{r.ID, refundKey, "Succeeded", int64(500), "eur"}))
			g.Expect(charges[0].Refunded).To(Equal(int64(500)))
			g.Expect(writes(e)).To(Equal(before), "the lookup charged or refunded")

			charges, err = providerlookup.Lookup(ctx, c, pp, "shop/never-charged", loopback)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(charges).NotTo(BeNil())
			g.Expect(charges).To(BeEmpty())
			g.Expect(writes(e)).To(Equal(before), "the lookup charged or refunded")
		})
	}
}

// MatchFields matches a Charge's id, key, state, amount and currency.
func MatchFields(id, key, state string, amount int64, currency string) OmegaMatcher {
	return WithTransform(func(c providerlookup.Charge) []any {
		return []any{c.ID, c.Key, c.State, c.Amount, c.Currency}
	}, Equal([]any{id, key, state, amount, currency}))
}

func TestLookupErrors(t *testing.T) {
	_, base := startSandbox(t)
	forbidden := &interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*corev1.Secret); ok {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, key.Name, errors.New("RBAC says no"))
		}
		return c.Get(ctx, key, obj, opts...)
	}}
	noLookup := httpProvider(base)
	noLookup.Spec.HTTP.LookupURL = ""
	live := stripeProvider(base)

	tests := []struct {
		name     string
		provider *paymentsv1alpha1.PaymentProvider
		secret   *corev1.Secret
		funcs    *interceptor.Funcs
		opts     providerlookup.Options
		is       func(error) bool
		says     []string
	}{
		{name: "missing Secret", provider: stripeProvider(base), opts: loopback,
			is:   apierrors.IsNotFound,
			says: []string{secretName}},
		{name: "forbidden Secret", provider: stripeProvider(base), secret: secret(credential, true), funcs: forbidden, opts: loopback,
			is:   apierrors.IsForbidden,
			says: []string{secretName}},
		{name: "Secret not marked for the operator", provider: stripeProvider(base), secret: secret(credential, false), opts: loopback,
			is:   func(err error) bool { return errors.Is(err, providerlookup.ErrNoCredentials) },
			says: []string{secretName, paymentsv1alpha1.LabelCredentials}},
		{name: "Secret without the key", provider: stripeProvider(base), secret: secret("", true), opts: loopback,
			is:   func(err error) bool { return errors.Is(err, providerlookup.ErrNoCredentials) },
			says: []string{secretName, secretKey}},
		{name: "plain http to a host not listed (stripe)", provider: stripeProvider(base), secret: secret(credential, true),
			is:   func(err error) bool { return errors.Is(err, providerlookup.ErrEndpointRefused) },
			says: []string{"spec.stripe.apiBase", "127.0.0.1"}},
		{name: "plain http to a host not listed (http)", provider: httpProvider(base), secret: secret(credential, true),
			opts: providerlookup.Options{InsecureHosts: []string{"payments.example.com"}},
			is:   func(err error) bool { return errors.Is(err, providerlookup.ErrEndpointRefused) },
			says: []string{"spec.http.url"}},
		{name: "insecure host with a port", provider: httpProvider(base), secret: secret(credential, true),
			opts: providerlookup.Options{InsecureHosts: []string{"127.0.0.1:8080"}},
			is:   func(err error) bool { return err != nil },
			says: []string{"port"}},
		{name: "provider without lookup", provider: noLookup, secret: secret(credential, true), opts: loopback,
			is: func(err error) bool { return errors.Is(err, providerlookup.ErrUnsupported) }},
		{name: "credential the provider refuses", provider: live, secret: secret("sk_live_do-not-print-0123456789", true), opts: loopback,
			is: func(err error) bool { return err != nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			objs := []client.Object{tt.provider}
			if tt.secret != nil {
				objs = append(objs, tt.secret)
			}
			c := newClient(t, tt.funcs, objs...)

			charges, err := providerlookup.Lookup(context.Background(), c, tt.provider, "shop/order-42", tt.opts)
			g.Expect(err).To(HaveOccurred())
			t.Log(err)
			g.Expect(charges).To(BeNil())
			g.Expect(tt.is(err)).To(BeTrue(), "unexpected error: %v", err)
			for _, s := range tt.says {
				g.Expect(err.Error()).To(ContainSubstring(s))
			}
			g.Expect(err.Error()).NotTo(ContainSubstring("do-not-print"), "the credential is in the error")
		})
	}
}

// An http provider without a refund endpoint cannot refund, and its lookup
// endpoint need not answer refunds: the charge is reported without them.
func TestLookupWithoutRefundEndpoint(t *testing.T) {
	g := NewWithT(t)
	e, base := startSandbox(t)
	pp := httpProvider(base)
	pp.Spec.HTTP.RefundURL = ""
	pp.Spec.HTTP.SecretKeyRef = nil
	paid := charge(t, e, "shop/order-42", 2000)

	charges, err := providerlookup.Lookup(context.Background(), newClient(t, nil, pp), pp, "shop/order-42", loopback)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(charges).To(HaveLen(1))
	g.Expect(charges[0]).To(MatchFields(paid.ID, "shop/order-42", "Succeeded", 2000, "eur"))
	g.Expect(charges[0].RefundsListed).To(BeFalse())
}

// The lookup reads nothing in the cluster but the Secret, and writes
// nothing there.
func TestLookupWritesNothingInTheCluster(t *testing.T) {
	g := NewWithT(t)
	e, base := startSandbox(t)
	pp := stripeProvider(base)
	charge(t, e, "shop/order-42", 2000)
	var reads []string
	refused := errors.New("the lookup wrote to the cluster")
	c := newClient(t, &interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads = append(reads, key.String())
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error { return refused },
		Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error { return refused },
		Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			return refused
		},
		Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error { return refused },
	}, pp, secret(credential, true))

	charges, err := providerlookup.Lookup(context.Background(), c, pp, "shop/order-42", loopback)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(charges).To(HaveLen(1))
	g.Expect(reads).To(Equal([]string{namespace + "/" + secretName}))
}

// A provider that echoes the credential back in its error does not put it
// in the lookup's error.
func TestLookupErrorsNeverHoldTheCredential(t *testing.T) {
	g := NewWithT(t)
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = fmt.Fprintf(w, `{"reason":"InternalError","message":"the token %s is not allowed"}`,
			strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}))
	t.Cleanup(echo.Close)
	pp := httpProvider(echo.URL)

	_, err := providerlookup.Lookup(context.Background(), newClient(t, nil, pp, secret(credential, true)), pp, "shop/order-42", loopback)
	g.Expect(err).To(HaveOccurred())
	t.Log(err)
	g.Expect(err.Error()).NotTo(ContainSubstring(credential))
	g.Expect(err.Error()).NotTo(ContainSubstring("do-not-print"))
}

// Account names the account the provider reaches, as the operator records
// it (the sandbox's http contract names it in its lookup answer too); it
// writes nothing.
func TestAccount(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e, base := startSandbox(t)
	before := writes(e)
	for _, tc := range []struct {
		pp   *paymentsv1alpha1.PaymentProvider
		want string
	}{{stripeProvider(base), e.Account()}, {httpProvider(base), e.Account()}} {
		c := newClient(t, nil, tc.pp, secret(credential, true))
		account, err := providerlookup.Account(ctx, c, tc.pp, loopback)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(account).To(Equal(tc.want))
	}
	g.Expect(writes(e)).To(Equal(before))
	c := newClient(t, nil, stripeProvider(base))
	_, err := providerlookup.Account(ctx, c, stripeProvider(base), loopback)
	g.Expect(err).To(MatchError(ContainSubstring("cannot read the credential of PaymentProvider shop/stripe")))
}
