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

package events

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stripe/stripe-go/v85/webhook"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

const (
	testNamespace = "shop"
	// stripeSecret and httpSecret are the endpoint secrets of the test
	// providers; apiKey is the Stripe provider's test-mode key.
	stripeSecret = "whsec_test_endpoint_secret"
	httpSecret   = "http-contract-shared-secret"
	apiKey       = "sk_test_api_key_never_logged"
)

// testNow is the fake clock's start.
var testNow = time.Unix(1700000000, 0)

// recordingWaker records the events it is asked to wake objects for and
// answers that it woke one object.
type recordingWaker struct {
	mu     sync.Mutex
	events []payment.Event
	names  []types.NamespacedName
}

func (w *recordingWaker) Wake(_ context.Context, provider types.NamespacedName, ev payment.Event) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events = append(w.events, ev)
	w.names = append(w.names, provider)
	return 1
}

func (w *recordingWaker) woken() []payment.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]payment.Event(nil), w.events...)
}

// credentials is a labelled Secret with data.
func credentials(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name,
		Labels: map[string]string{paymentsv1alpha1.LabelCredentials: "true"}}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// testObjects are a Stripe provider "stripe" and an HTTP provider "http"
// with events, a provider "quiet" without, and their labelled Secrets.
func testObjects() []client.Object {
	events := &paymentsv1alpha1.ProviderEvents{SecretRef: paymentsv1alpha1.SecretKeyReference{Name: "events", Key: "stripe"}}
	httpEvents := &paymentsv1alpha1.ProviderEvents{SecretRef: paymentsv1alpha1.SecretKeyReference{Name: "events", Key: "http"}}
	apiKeyRef := paymentsv1alpha1.SecretKeyReference{Name: "api", Key: "key"}
	return []client.Object{
		&paymentsv1alpha1.PaymentProvider{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "stripe", UID: "uid-stripe"},
			Spec: paymentsv1alpha1.PaymentProviderSpec{Stripe: &paymentsv1alpha1.StripeProvider{SecretKeyRef: apiKeyRef}, Events: events}},
		&paymentsv1alpha1.PaymentProvider{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "http"},
			Spec: paymentsv1alpha1.PaymentProviderSpec{HTTP: &paymentsv1alpha1.HTTPProvider{URL: "https://pay.example"}, Events: httpEvents}},
		&paymentsv1alpha1.PaymentProvider{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "quiet"},
			Spec: paymentsv1alpha1.PaymentProviderSpec{Stripe: &paymentsv1alpha1.StripeProvider{SecretKeyRef: apiKeyRef}}},
		credentials("events", map[string]string{"stripe": stripeSecret, "http": httpSecret}),
		credentials("api", map[string]string{"key": apiKey}),
	}
}

// harness is a Server on an httptest server, with a fake client, a
// recording Waker, a fake clock and a log buffer.
type harness struct {
	srv   *Server
	url   string
	waker *recordingWaker
	clock *testingclock.FakeClock
	log   *bytes.Buffer
}

// newHarness starts a Server reading objects; configure adjusts it first.
func newHarness(t *testing.T, objects []client.Object, configure func(*Server)) *harness {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := paymentsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	h := &harness{waker: &recordingWaker{}, clock: testingclock.NewFakeClock(testNow), log: &bytes.Buffer{}}
	var logMu sync.Mutex
	logger := funcr.New(func(prefix, args string) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintln(h.log, prefix, args)
	}, funcr.Options{Verbosity: 1})
	h.srv = &Server{
		Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build(),
		Waker:  h.waker,
		Clock:  h.clock,
		Log:    logger,
	}
	if configure != nil {
		configure(h.srv)
	}
	ts := httptest.NewServer(h.srv)
	t.Cleanup(ts.Close)
	h.url = ts.URL
	return h
}

// post sends body to the provider's path with header set, and returns the
// status code.
func (h *harness) post(t *testing.T, provider string, body []byte, header http.Header) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.url+PathPrefix+testNamespace+"/"+provider, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// stripeBody is a Stripe event id of typ about the PaymentIntent pi_1.
func stripeBody(id, typ string, live bool) []byte {
	return []byte(fmt.Sprintf(`{"id":%q,"object":"event","type":%q,"created":%d,"livemode":%t,"data":{"object":{"id":"pi_1","object":"payment_intent","description":"BODY-MARKER","metadata":{"paymentjob_idempotency_key":"shop/order-1"}}}}`,
		id, typ, testNow.Unix(), live))
}

// stripeHeader signs body for Stripe with secret at t.
func stripeHeader(secret string, t time.Time, body []byte) http.Header {
	sig := hex.EncodeToString(webhook.ComputeSignature(t, body, secret))
	return http.Header{"Stripe-Signature": {fmt.Sprintf("t=%d,v1=%s", t.Unix(), sig)}}
}

// refused reads paymentjob_events_refused_total{reason}.
func refused(reason string) float64 {
	return testutil.ToFloat64(eventsRefusedTotal.WithLabelValues(reason))
}

// received reads paymentjob_events_received_total{result}.
func received(result string) float64 {
	return testutil.ToFloat64(eventsReceivedTotal.WithLabelValues(result))
}
