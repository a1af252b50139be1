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
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/httpprovider"
)

// TestAcceptedEventWakesOnce: a signed event wakes the objects it names
// once, through the provider's namespace; the same event id again answers
// 200 and wakes nothing.
func TestAcceptedEventWakesOnce(t *testing.T) {
	httpBody := []byte(`{"id":"evt_h1","type":"payment.succeeded","created":1700000000,"data":{"id":"pay_1","idempotencyKey":"shop/order-1"}}`)
	tests := []struct {
		name     string
		provider string
		body     []byte
		header   http.Header
		want     payment.Event
	}{{
		name:     "stripe",
		provider: "stripe",
		body:     stripeBody("evt_s1", "payment_intent.succeeded", false),
		header:   stripeHeader(stripeSecret, testNow, stripeBody("evt_s1", "payment_intent.succeeded", false)),
		want:     payment.Event{ID: "evt_s1", Type: "payment_intent.succeeded", Subject: payment.SubjectPayment, ObjectID: "pi_1", Key: "shop/order-1"},
	}, {
		name:     "http contract",
		provider: "http",
		body:     httpBody,
		header:   http.Header{httpprovider.SignatureHeader: {httpprovider.Sign(httpSecret, testNow, httpBody)}},
		want:     payment.Event{ID: "evt_h1", Type: "payment.succeeded", Subject: payment.SubjectPayment, ObjectID: "pay_1", Key: "shop/order-1"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			h := newHarness(t, testObjects(), nil)
			woken, duplicates := received(ResultWoken), received(ResultDuplicate)

			g.Expect(h.post(t, tt.provider, tt.body, tt.header)).To(Equal(http.StatusOK))
			g.Expect(h.waker.woken()).To(HaveLen(1))
			got := h.waker.woken()[0]
			g.Expect(got).To(MatchFields(tt.want))
			g.Expect(h.waker.names).To(ConsistOf(types.NamespacedName{Namespace: testNamespace, Name: tt.provider}))
			g.Expect(received(ResultWoken) - woken).To(Equal(1.0))

			g.Expect(h.post(t, tt.provider, tt.body, tt.header)).To(Equal(http.StatusOK), "a duplicate")
			g.Expect(h.waker.woken()).To(HaveLen(1), "a duplicate wakes nothing")
			g.Expect(received(ResultDuplicate) - duplicates).To(Equal(1.0))
		})
	}
}

// MatchFields matches the fields of an event that name objects.
func MatchFields(want payment.Event) OmegaMatcher {
	return WithTransform(func(ev payment.Event) payment.Event {
		return payment.Event{ID: ev.ID, Type: ev.Type, Subject: ev.Subject, ObjectID: ev.ObjectID, Key: ev.Key, PaymentID: ev.PaymentID, Account: ev.Account}
	}, Equal(want))
}

// TestIgnoredTypeIsAccepted: a signed event of a type that names nothing
// the operator keeps answers 200 and wakes nothing.
func TestIgnoredTypeIsAccepted(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t, testObjects(), nil)
	ignored := received(ResultIgnored)
	body := []byte(`{"id":"evt_c","object":"event","type":"customer.created","created":1700000000,"livemode":false,"data":{"object":{"id":"cus_1"}}}`)
	g.Expect(h.post(t, "stripe", body, stripeHeader(stripeSecret, testNow, body))).To(Equal(http.StatusOK))
	g.Expect(h.waker.woken()).To(BeEmpty())
	g.Expect(received(ResultIgnored) - ignored).To(Equal(1.0))
}

// fakeIdentities knows every provider's account as acct_mine.
type fakeIdentities struct{}

func (fakeIdentities) KnownIdentity(context.Context, *paymentsv1alpha1.PaymentProvider) (paymentsv1alpha1.ProviderIdentity, bool) {
	return paymentsv1alpha1.ProviderIdentity{Account: "acct_mine"}, true
}

// TestRefusals: unsigned, forged, stale, oversized, malformed, foreign and
// unknown-provider requests are refused with a 4xx, a missing Secret with
// 503; each is counted by reason and wakes nothing.
func TestRefusals(t *testing.T) {
	good := stripeBody("evt_1", "payment_intent.succeeded", false)
	big := append(bytes.Repeat([]byte(" "), payment.MaxEventBytes), good...)
	connect := []byte(`{"id":"evt_2","object":"event","account":"acct_other","type":"payment_intent.succeeded","created":1700000000,"livemode":false,"data":{"object":{"id":"pi_1"}}}`)
	withoutSecret := testObjects()[:3]
	unlabelled := testObjects()
	unlabelled[3].SetLabels(nil)
	tests := []struct {
		name       string
		objects    []client.Object
		identities Identities
		provider   string
		method     string
		body       []byte
		header     http.Header
		wantStatus int
		wantReason string
	}{
		{name: "unsigned", provider: "stripe", body: good, wantStatus: 401, wantReason: ReasonUnsigned},
		{name: "forged", provider: "stripe", body: good, header: stripeHeader("whsec_forged", testNow, good), wantStatus: 401, wantReason: ReasonBadSignature},
		{name: "signed with the HTTP secret", provider: "stripe", body: good, header: stripeHeader(httpSecret, testNow, good), wantStatus: 401, wantReason: ReasonBadSignature},
		{name: "stale replay", provider: "stripe", body: good, header: stripeHeader(stripeSecret, testNow.Add(-6*time.Minute), good), wantStatus: 400, wantReason: ReasonStale},
		{name: "from the future", provider: "stripe", body: good, header: stripeHeader(stripeSecret, testNow.Add(6*time.Minute), good), wantStatus: 400, wantReason: ReasonStale},
		{name: "oversized", provider: "stripe", body: big, header: stripeHeader(stripeSecret, testNow, big), wantStatus: 413, wantReason: ReasonOversized},
		{name: "malformed", provider: "stripe", body: []byte(`{"id":`), header: stripeHeader(stripeSecret, testNow, []byte(`{"id":`)), wantStatus: 400, wantReason: ReasonMalformed},
		{name: "not POST", provider: "stripe", method: http.MethodGet, wantStatus: 405, wantReason: ReasonMalformed},
		{name: "live event, test key", provider: "stripe", body: stripeBody("evt_3", "payment_intent.succeeded", true),
			header: stripeHeader(stripeSecret, testNow, stripeBody("evt_3", "payment_intent.succeeded", true)), wantStatus: 403, wantReason: ReasonForeign},
		{name: "another account", provider: "stripe", identities: fakeIdentities{}, body: connect, header: stripeHeader(stripeSecret, testNow, connect), wantStatus: 403, wantReason: ReasonForeign},
		{name: "no such provider", provider: "nobody", body: good, header: stripeHeader(stripeSecret, testNow, good), wantStatus: 404, wantReason: ReasonUnknownProvider},
		{name: "provider without events", provider: "quiet", body: good, header: stripeHeader(stripeSecret, testNow, good), wantStatus: 404, wantReason: ReasonUnknownProvider},
		{name: "not a provider name", provider: "Not_A_Name", body: good, header: stripeHeader(stripeSecret, testNow, good), wantStatus: 404, wantReason: ReasonUnknownProvider},
		{name: "no Secret", objects: withoutSecret, provider: "stripe", body: good, header: stripeHeader(stripeSecret, testNow, good), wantStatus: 503, wantReason: ReasonUnavailable},
		{name: "unlabelled Secret", objects: unlabelled, provider: "stripe", body: good, header: stripeHeader(stripeSecret, testNow, good), wantStatus: 503, wantReason: ReasonUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			objects := tt.objects
			if objects == nil {
				objects = testObjects()
			}
			h := newHarness(t, objects, func(s *Server) { s.Identities = tt.identities })
			before := refused(tt.wantReason)
			status := 0
			if tt.method == "" {
				status = h.post(t, tt.provider, tt.body, tt.header)
			} else {
				resp, err := http.Get(h.url + PathPrefix + testNamespace + "/" + tt.provider)
				g.Expect(err).NotTo(HaveOccurred())
				_ = resp.Body.Close()
				status = resp.StatusCode
			}
			g.Expect(status).To(Equal(tt.wantStatus))
			g.Expect(refused(tt.wantReason) - before).To(Equal(1.0))
			g.Expect(h.waker.woken()).To(BeEmpty())
		})
	}
}

// TestRefusalsAreRateLimited: beyond a burst of refused requests, a
// provider's requests are answered 429 without being verified, a good one
// included, until the bucket refills.
func TestRefusalsAreRateLimited(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t, testObjects(), func(s *Server) { s.RefusalBurst = 3 })
	limited := refused(ReasonRateLimited)
	good := stripeBody("evt_ok", "payment_intent.succeeded", false)
	for range 3 {
		g.Expect(h.post(t, "stripe", good, stripeHeader("whsec_forged", testNow, good))).To(Equal(http.StatusUnauthorized))
	}
	g.Expect(h.post(t, "stripe", good, stripeHeader("whsec_forged", testNow, good))).To(Equal(http.StatusTooManyRequests))
	g.Expect(h.post(t, "stripe", good, stripeHeader(stripeSecret, testNow, good))).To(Equal(http.StatusTooManyRequests))
	g.Expect(refused(ReasonRateLimited) - limited).To(Equal(2.0))
	g.Expect(h.waker.woken()).To(BeEmpty())

	// Another provider's bucket is its own.
	httpBody := []byte(`{"id":"evt_h","type":"payment.failed","data":{"id":"pay_1"}}`)
	g.Expect(h.post(t, "http", httpBody, http.Header{httpprovider.SignatureHeader: {httpprovider.Sign(httpSecret, testNow, httpBody)}})).To(Equal(http.StatusOK))

	h.clock.Step(time.Second)
	g.Expect(h.post(t, "stripe", good, stripeHeader(stripeSecret, h.clock.Now(), good))).To(Equal(http.StatusOK))
	g.Expect(h.waker.woken()).To(HaveLen(2))
}

// TestWakesAreCoalesced: events for the same object within the window wake
// it once at once and once more at the window's end, with the latest event.
func TestWakesAreCoalesced(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t, testObjects(), nil)
	coalesced := received(ResultCoalesced)
	for _, id := range []string{"evt_a", "evt_b", "evt_c"} {
		body := stripeBody(id, "payment_intent.processing", false)
		g.Expect(h.post(t, "stripe", body, stripeHeader(stripeSecret, testNow, body))).To(Equal(http.StatusOK))
	}
	g.Expect(h.waker.woken()).To(HaveLen(1))
	g.Expect(received(ResultCoalesced) - coalesced).To(Equal(2.0))

	h.clock.Step(DefaultCoalesceWindow)
	g.Eventually(h.waker.woken).WithTimeout(5 * time.Second).Should(HaveLen(2))
	g.Expect(h.waker.woken()[1].ID).To(Equal("evt_c"), "the latest event")
	g.Consistently(h.waker.woken).WithTimeout(100 * time.Millisecond).Should(HaveLen(2))
}

// TestLogsNeverHoldSecretsOrBodies: what the server logs for accepted and
// refused events names the event, never the body, the signature or a
// secret.
func TestLogsNeverHoldSecretsOrBodies(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t, testObjects(), nil)
	good := stripeBody("evt_logged", "payment_intent.succeeded", false)
	goodHeader := stripeHeader(stripeSecret, testNow, good)
	forgedHeader := stripeHeader("whsec_forged", testNow, good)
	g.Expect(h.post(t, "stripe", good, goodHeader)).To(Equal(http.StatusOK))
	g.Expect(h.post(t, "stripe", good, forgedHeader)).To(Equal(http.StatusUnauthorized))
	g.Expect(h.post(t, "stripe", good, stripeHeader(stripeSecret, testNow.Add(-time.Hour), good))).To(Equal(http.StatusBadRequest))
	live := stripeBody("evt_live", "payment_intent.succeeded", true)
	g.Expect(h.post(t, "stripe", live, stripeHeader(stripeSecret, testNow, live))).To(Equal(http.StatusForbidden))

	logged := h.log.String()
	g.Expect(logged).To(ContainSubstring("evt_logged"))
	g.Expect(logged).To(ContainSubstring("payment_intent.succeeded"))
	g.Expect(logged).To(ContainSubstring(ReasonBadSignature))
	for _, secret := range []string{stripeSecret, httpSecret, apiKey, "BODY-MARKER", "shop/order-1",
		strings.SplitN(goodHeader.Get("Stripe-Signature"), "v1=", 2)[1], strings.SplitN(forgedHeader.Get("Stripe-Signature"), "v1=", 2)[1]} {
		g.Expect(logged).NotTo(ContainSubstring(secret))
	}
}

// TestStartServesUntilStopped: Start serves on its address until the
// manager's context ends, then returns; an address of "0" serves nothing.
func TestStartServesUntilStopped(t *testing.T) {
	g := NewWithT(t)
	g.Expect((&Server{Addr: "0"}).Start(context.Background())).To(Succeed())
	g.Expect((&Server{Addr: "127.0.0.1:0"}).Start(context.Background())).To(MatchError(ContainSubstring("needs a Reader and a Waker")))

	h := newHarness(t, testObjects(), nil)
	srv := &Server{Addr: "127.0.0.1:0", Reader: h.srv.Reader, Waker: h.waker, Clock: h.clock}
	g.Expect(srv.NeedLeaderElection()).To(BeFalse())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(cancel)
	g.Eventually(srv.Address).WithTimeout(5 * time.Second).ShouldNot(BeEmpty())

	body := stripeBody("evt_real", "payment_intent.succeeded", false)
	req, err := http.NewRequest(http.MethodPost, "http://"+srv.Address()+PathPrefix+testNamespace+"/stripe", bytes.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	req.Header = stripeHeader(stripeSecret, testNow, body)
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(h.waker.woken()).To(HaveLen(1))

	cancel()
	g.Eventually(done).WithTimeout(ShutdownTimeout + time.Second).Should(Receive(BeNil()))
	_, err = http.Post("http://"+srv.Address()+PathPrefix+testNamespace+"/stripe", "application/json", bytes.NewReader(body))
	g.Expect(err).To(HaveOccurred(), "the server stopped")
}

// TestSlowSenderIsCutOff: a sender that does not finish its headers within
// ReadHeaderTimeout is disconnected, so slow senders cannot hold the
// server's connections.
func TestSlowSenderIsCutOff(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t, testObjects(), nil)
	srv := &Server{Addr: "127.0.0.1:0", Reader: h.srv.Reader, Waker: h.waker}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	g.Eventually(srv.Address).WithTimeout(5 * time.Second).ShouldNot(BeEmpty())

	conn, err := net.Dial("tcp", srv.Address())
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = conn.Close() }()
	_, err = conn.Write([]byte("POST /events/shop/stripe HTTP/1.1\r\nHost: x\r\n"))
	g.Expect(err).NotTo(HaveOccurred())
	started := time.Now()
	g.Expect(conn.SetReadDeadline(started.Add(ReadHeaderTimeout + 5*time.Second))).To(Succeed())
	_, err = io.ReadAll(conn)
	g.Expect(err).NotTo(HaveOccurred(), "the server closed the connection before the test's deadline")
	g.Expect(time.Since(started)).To(BeNumerically(">=", ReadHeaderTimeout-time.Second))
}

// A Secret made from a file holds the endpoint secret with a newline: the
// provider signed without it, and the event is accepted.
func TestASecretFromAFileVerifies(t *testing.T) {
	g := NewWithT(t)
	objects := testObjects()
	for _, o := range objects {
		if s, ok := o.(*corev1.Secret); ok && s.Name == "events" {
			s.Data["stripe"] = []byte(stripeSecret + "\n")
		}
	}
	h := newHarness(t, objects, nil)
	body := stripeBody("evt_file", "payment_intent.succeeded", false)

	g.Expect(h.post(t, "stripe", body, stripeHeader(stripeSecret, testNow, body))).To(Equal(http.StatusOK))
	g.Expect(h.waker.woken()).To(HaveLen(1))
}
