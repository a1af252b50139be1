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

// 3-D Secure: the test cards that need the customer's authentication,
// off_session, RequireAction, CompleteAction and the cancel of an intent.

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/sandboxprovider"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// offSession adds off_session=true to a create form.
func offSession(form url.Values) { form.Set("off_session", "true") }

func TestAuthenticationCardsOffAndOnSession(t *testing.T) {
	t.Parallel()
	const forced = "pm_card_forced3ds"
	tests := []struct {
		name          string
		paymentMethod string
		offSession    bool
		wantStatus    string
		wantDecline   bool
	}{
		{name: "authenticationRequired off-session", paymentMethod: sandbox.PaymentMethodAuthenticationRequired,
			offSession: true, wantStatus: sandbox.StatusRequiresPaymentMethod, wantDecline: true},
		{name: "threeDSecureRequired off-session", paymentMethod: sandbox.PaymentMethodThreeDSecureRequired,
			offSession: true, wantStatus: sandbox.StatusRequiresPaymentMethod, wantDecline: true},
		{name: "authenticationRequired on-session", paymentMethod: sandbox.PaymentMethodAuthenticationRequired,
			wantStatus: sandbox.StatusRequiresAction},
		{name: "RequireAction off-session", paymentMethod: forced, offSession: true, wantStatus: sandbox.StatusRequiresAction},
		{name: "RequireAction on-session", paymentMethod: forced, wantStatus: sandbox.StatusRequiresAction},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			e := sandbox.NewEngine()
			e.RequireAction(forced)
			p := request(1500, tt.paymentMethod)
			o := sandbox.ConfirmOptions{OffSession: tt.offSession}

			in, replayed, err := e.CreatePaymentIntentWithOptions("k", p, o)
			g.Expect(replayed).To(BeFalse())
			if tt.wantDecline {
				se := stripeError(g, err)
				g.Expect(se.HTTPStatus).To(Equal(http.StatusPaymentRequired))
				g.Expect(se.Type).To(Equal(sandbox.ErrorTypeCard))
				g.Expect(se.Code).To(Equal(sandbox.CodeAuthenticationRequired))
				g.Expect(se.DeclineCode).To(Equal(sandbox.DeclineAuthenticationRequired))
				var ok bool
				in, ok = se.PaymentIntent()
				g.Expect(ok).To(BeTrue(), "the decline carries the intent it left")
				g.Expect(in.LastPaymentError).To(HaveOccurred())
				g.Expect(in.LastPaymentError.Code).To(Equal(sandbox.CodeAuthenticationRequired))
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
			g.Expect(in.Status).To(Equal(tt.wantStatus))
			g.Expect(in.OffSession).To(Equal(tt.offSession))
			stored, ok := e.GetPaymentIntent(in.ID)
			g.Expect(ok).To(BeTrue())
			g.Expect(stored.Status).To(Equal(tt.wantStatus))

			// A retry replays the first answer, moving nothing.
			again, replayed, err := e.CreatePaymentIntentWithOptions("k", p, o)
			g.Expect(replayed).To(BeTrue())
			if tt.wantDecline {
				g.Expect(stripeError(g, err).Code).To(Equal(sandbox.CodeAuthenticationRequired))
			} else {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(again.ID).To(Equal(in.ID))
			}
			// off_session is one of the parameters a retry repeats.
			_, _, err = e.CreatePaymentIntentWithOptions("k", p, sandbox.ConfirmOptions{OffSession: !tt.offSession})
			g.Expect(stripeError(g, err).Type).To(Equal(sandbox.ErrorTypeIdempotency))

			st := e.Stats()
			g.Expect(st.Charges).To(BeZero(), "no money moved")
			g.Expect(st.ChargesByKey).To(BeEmpty())
			if tt.wantDecline {
				g.Expect(st.Declines).To(Equal(int64(1)))
			} else {
				g.Expect(st.RequiresAction).To(Equal(int64(1)))
			}
			_, found := e.LookupByKey("k")
			g.Expect(found).To(BeFalse(), "LookupByKey finds succeeded intents only")
		})
	}
}

func TestCancelPaymentIntent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		status     string
		reason     string
		id         string
		wantStatus int
		wantCode   string
	}{
		{name: "requires_action", status: sandbox.StatusRequiresAction, reason: sandbox.CancellationReasonAbandoned},
		{name: "requires_confirmation", status: sandbox.StatusRequiresConfirmation},
		{name: "requires_payment_method", status: sandbox.StatusRequiresPaymentMethod,
			reason: sandbox.CancellationReasonRequestedByCustomer},
		{name: "requires_capture", status: sandbox.StatusRequiresCapture, reason: sandbox.CancellationReasonDuplicate},
		{name: "succeeded is refused", status: sandbox.StatusSucceeded, wantStatus: http.StatusBadRequest,
			wantCode: sandbox.CodePaymentIntentUnexpectedState},
		{name: "processing is refused", status: sandbox.StatusProcessing, wantStatus: http.StatusBadRequest,
			wantCode: sandbox.CodePaymentIntentUnexpectedState},
		{name: "canceled is refused", status: sandbox.StatusCanceled, wantStatus: http.StatusBadRequest,
			wantCode: sandbox.CodePaymentIntentUnexpectedState},
		{name: "unknown reason", status: sandbox.StatusRequiresAction, reason: "bored",
			wantStatus: http.StatusBadRequest, wantCode: sandbox.CodeParameterInvalid},
		{name: "unknown intent", status: sandbox.StatusRequiresAction, id: "pi_unknown",
			wantStatus: http.StatusNotFound, wantCode: sandbox.CodeResourceMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			e := sandbox.NewEngine()
			in := e.PutIntent(sandbox.Intent{Amount: 700, Currency: "eur", Status: tt.status})
			id := in.ID
			if tt.id != "" {
				id = tt.id
			}

			got, replayed, err := e.CancelPaymentIntent("cancel-key", id, tt.reason)
			g.Expect(replayed).To(BeFalse())
			now, _ := e.GetPaymentIntent(in.ID)
			if tt.wantCode != "" {
				se := stripeError(g, err)
				g.Expect(se.HTTPStatus).To(Equal(tt.wantStatus))
				g.Expect(se.Code).To(Equal(tt.wantCode))
				g.Expect(now.Status).To(Equal(tt.status), "a refused cancel changes nothing")
				if tt.wantCode == sandbox.CodePaymentIntentUnexpectedState {
					carried, ok := se.PaymentIntent()
					g.Expect(ok).To(BeTrue())
					g.Expect(carried.Status).To(Equal(tt.status))
				}
				g.Expect(e.Stats().Cancels).To(BeZero())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status).To(Equal(sandbox.StatusCanceled))
			g.Expect(got.CancellationReason).To(Equal(tt.reason))
			g.Expect(now.Status).To(Equal(sandbox.StatusCanceled))

			// The same key and request replay; the key with anything else
			// is a key reused; a new key on a canceled intent is refused.
			again, replayed, err := e.CancelPaymentIntent("cancel-key", id, tt.reason)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(replayed).To(BeTrue())
			g.Expect(again).To(Equal(got))
			_, _, err = e.CancelPaymentIntent("cancel-key", id, sandbox.CancellationReasonFraudulent)
			g.Expect(stripeError(g, err).Type).To(Equal(sandbox.ErrorTypeIdempotency))
			_, _, err = e.CancelPaymentIntent("other-key", id, tt.reason)
			g.Expect(stripeError(g, err).Code).To(Equal(sandbox.CodePaymentIntentUnexpectedState))

			st := e.Stats()
			g.Expect(st.Cancels).To(Equal(int64(1)))
			g.Expect(st.Charges).To(BeZero(), "a canceled intent is not a charge")
		})
	}
}

func TestCancelAndCompleteActionRace(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	e.RequireAction("pm_forced")
	won, _, err := e.CreatePaymentIntentWithOptions("customer-first", request(900, "pm_forced"), sandbox.ConfirmOptions{OffSession: true})
	g.Expect(err).NotTo(HaveOccurred())
	lost, _, err := e.CreatePaymentIntentWithOptions("merchant-first", request(900, "pm_forced"), sandbox.ConfirmOptions{OffSession: true})
	g.Expect(err).NotTo(HaveOccurred())

	// The customer authenticates first: the cancel is refused.
	g.Expect(e.CompleteAction(won.ID)).To(Succeed())
	_, _, err = e.CancelPaymentIntent("", won.ID, sandbox.CancellationReasonAbandoned)
	g.Expect(stripeError(g, err).Code).To(Equal(sandbox.CodePaymentIntentUnexpectedState))
	// The merchant cancels first: the customer can no longer pay.
	_, _, err = e.CancelPaymentIntent("", lost.ID, sandbox.CancellationReasonAbandoned)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.CompleteAction(lost.ID)).To(MatchError(ContainSubstring("its status is canceled")))

	st := e.Stats()
	g.Expect(st.Charges).To(Equal(int64(1)))
	g.Expect(st.ChargesByKey).To(Equal(map[string]int{"customer-first": 1}))
	g.Expect(st.Cancels).To(Equal(int64(1)))
	got, ok := e.LookupByKey("customer-first")
	g.Expect(ok).To(BeTrue())
	g.Expect(got.ID).To(Equal(won.ID))
	// A replay answers the intent as it was first answered.
	replay, replayed, err := e.CreatePaymentIntentWithOptions("customer-first", request(900, "pm_forced"), sandbox.ConfirmOptions{OffSession: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replayed).To(BeTrue())
	g.Expect(replay.Status).To(Equal(sandbox.StatusRequiresAction))
}

func TestCancelFaults(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	in := e.PutIntent(sandbox.Intent{Amount: 700, Currency: "eur", Status: sandbox.StatusRequiresAction})

	e.FailNextAny(sandbox.FaultBeforeCommit, 1)
	_, _, err := e.CancelPaymentIntent("k", in.ID, "")
	g.Expect(stripeError(g, err).Type).To(Equal(sandbox.ErrorTypeAPI))
	now, _ := e.GetPaymentIntent(in.ID)
	g.Expect(now.Status).To(Equal(sandbox.StatusRequiresAction), "nothing happened before the commit")

	e.FailNextAny(sandbox.FaultAfterCommit, 1)
	_, _, err = e.CancelPaymentIntent("k", in.ID, "")
	g.Expect(stripeError(g, err).Type).To(Equal(sandbox.ErrorTypeAPI))
	now, _ = e.GetPaymentIntent(in.ID)
	g.Expect(now.Status).To(Equal(sandbox.StatusCanceled), "the cancel committed; its answer was lost")

	got, replayed, err := e.CancelPaymentIntent("k", in.ID, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replayed).To(BeTrue())
	g.Expect(got.Status).To(Equal(sandbox.StatusCanceled))
	g.Expect(e.Stats().Cancels).To(Equal(int64(1)))
}

func TestServerAuthenticationAndCancel(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	e.RequireAction("pm_forced")
	srv := startSandbox(t, e, sandbox.ServerOptions{})

	// Off-session, a card that needs authentication is a 402 with the
	// intent it left.
	declined := createIntent(g, srv, "ns/3ds", paymentForm("1500", sandbox.PaymentMethodAuthenticationRequired, offSession))
	g.Expect(declined.status).To(Equal(http.StatusPaymentRequired), string(declined.body))
	ae := declined.errorOf(g)
	g.Expect(ae.Type).To(Equal(sandbox.ErrorTypeCard))
	g.Expect(ae.Code).To(Equal("authentication_required"))
	g.Expect(ae.DeclineCode).To(Equal("authentication_required"))
	g.Expect(ae.PaymentIntent).To(HaveKeyWithValue("status", sandbox.StatusRequiresPaymentMethod))
	g.Expect(ae.PaymentIntent).To(HaveKeyWithValue("last_payment_error",
		HaveKeyWithValue("code", "authentication_required")))

	// On-session, it waits for the customer.
	waiting := createIntent(g, srv, "ns/on-session", paymentForm("1500", sandbox.PaymentMethodThreeDSecureRequired))
	g.Expect(waiting.status).To(Equal(http.StatusOK), string(waiting.body))
	g.Expect(waiting.intentOf(g)).To(HaveKeyWithValue("status", sandbox.StatusRequiresAction))

	// RequireAction: off-session too. The cancel ends it, once.
	forced := createIntent(g, srv, "ns/forced", paymentForm("1500", "pm_forced", offSession))
	g.Expect(forced.status).To(Equal(http.StatusOK), string(forced.body))
	id, _ := forced.intentOf(g)["id"].(string)
	cancelPath := "/v1/payment_intents/" + id + "/cancel"
	cancelBody := url.Values{"cancellation_reason": {"abandoned"}}.Encode()
	canceled := send(g, srv, apiRequest{method: http.MethodPost, path: cancelPath, body: cancelBody, idempotencyKey: "abandon_" + id})
	g.Expect(canceled.status).To(Equal(http.StatusOK), string(canceled.body))
	g.Expect(canceled.intentOf(g)).To(HaveKeyWithValue("status", sandbox.StatusCanceled))
	g.Expect(canceled.intentOf(g)).To(HaveKeyWithValue("cancellation_reason", "abandoned"))
	g.Expect(canceled.header.Values("Idempotent-Replayed")).To(BeEmpty())

	replay := send(g, srv, apiRequest{method: http.MethodPost, path: cancelPath, body: cancelBody, idempotencyKey: "abandon_" + id})
	g.Expect(replay.status).To(Equal(http.StatusOK), string(replay.body))
	g.Expect(replay.header.Get("Idempotent-Replayed")).To(Equal("true"))

	again := send(g, srv, apiRequest{method: http.MethodPost, path: cancelPath, body: cancelBody})
	g.Expect(again.status).To(Equal(http.StatusBadRequest), string(again.body))
	g.Expect(again.errorOf(g).Code).To(Equal(sandbox.CodePaymentIntentUnexpectedState))
	g.Expect(again.errorOf(g).PaymentIntent).To(HaveKeyWithValue("status", sandbox.StatusCanceled))

	missing := send(g, srv, apiRequest{method: http.MethodPost, path: "/v1/payment_intents/pi_nope/cancel", body: cancelBody})
	g.Expect(missing.status).To(Equal(http.StatusNotFound), string(missing.body))
	g.Expect(send(g, srv, apiRequest{method: http.MethodGet, path: cancelPath}).status).To(Equal(http.StatusMethodNotAllowed))
	g.Expect(send(g, srv, apiRequest{method: http.MethodPost, path: cancelPath, authorization: noAuth}).status).
		To(Equal(http.StatusUnauthorized))

	// Refused before the Engine, as malformed: not counted as a request.
	bad := createIntent(g, srv, "ns/bad", paymentForm("1500", sandbox.PaymentMethodVisa, func(f url.Values) { f.Set("off_session", "sometimes") }))
	g.Expect(bad.status).To(Equal(http.StatusBadRequest), string(bad.body))
	g.Expect(bad.errorOf(g).Param).To(Equal("off_session"))

	stats := sendControl(g, srv, http.MethodGet, "/_sandbox/stats", "")
	g.Expect(stats.body).To(MatchJSON(`{"account": "` + e.Account() + `", "requests": 3, "charges": 0, "replays": 1,
		"inFlightConflicts": 0, "declines": 1, "requiresAction": 2, "cancels": 1, "keyReusedErrors": 0,
		"invalidRequests": 2, "faults": 0, "rateLimited": 0, "searches": 0, "retrieves": 0, "reads": 0, "lists": 0, "keysForgotten": 0,
		"chargesByKey": {}, "refundRequests": 0, "refunds": 0, "refundsFailed": 0, "refundRefusals": 0,
		"refundsByKey": {}, "debits": 0, "debitsSettled": 0, "debitsFailed": 0}`))
}

func TestProviderCancelsWhatWaitsForTheCustomer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		paymentMethod string
		wantStatus    string
	}{
		{name: "off-session decline, its intent canceled", paymentMethod: sandbox.PaymentMethodAuthenticationRequired,
			wantStatus: sandbox.StatusCanceled},
		{name: "requires_action canceled", paymentMethod: "pm_forced", wantStatus: sandbox.StatusCanceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			e := sandbox.NewEngine()
			e.RequireAction("pm_forced")
			p := sandboxprovider.NewProvider(e)

			_, err := p.Charge(context.Background(), "ns/job", payment.ChargeRequest(request(800, tt.paymentMethod)))
			r, refused := payment.IsRefusal(err)
			g.Expect(refused).To(BeTrue(), "%v is not a refusal", err)
			g.Expect(r.Reason).To(Equal("authentication_required"))
			found, err := p.Lookup(context.Background(), []string{"ns/job"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(found["ns/job"]).To(HaveLen(1))
			g.Expect(found["ns/job"][0].Status).To(Equal(tt.wantStatus))
			g.Expect(found["ns/job"][0].State).To(Equal(payment.StateNotCharged))
			g.Expect(e.Stats().Charges).To(BeZero())
			g.Expect(e.Stats().Cancels).To(Equal(int64(1)))
		})
	}
}
