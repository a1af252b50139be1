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

package stripe_test

// Payments that need the customer's authentication (3-D Secure), which a
// job cannot give, against the sandbox's Stripe routes: they end in a
// definitive refusal without moving money, never in a job uncertain
// forever, and never in a refusal of a payment that succeeded.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/stripe"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// authTimeout bounds every call of these tests.
const authTimeout = 10 * time.Second

// forcedPaymentMethod is a payment method the tests make the sandbox leave
// in requires_action (Engine.RequireAction).
const forcedPaymentMethod = "pm_card_forcedRequiresAction"

// sandboxStripe is an adapter talking to a sandbox server over loopback,
// whose handler may be wrapped by the test.
type sandboxStripe struct {
	engine   *sandbox.Engine
	provider *stripe.Provider
}

// newSandboxStripe starts a sandbox server, its handler wrapped by wrap when
// it is not nil, and an adapter that polls it every millisecond.
func newSandboxStripe(t *testing.T, wrap func(e *sandbox.Engine, next http.Handler) http.Handler) *sandboxStripe {
	t.Helper()
	e := sandbox.NewEngine()
	e.RequireAction(forcedPaymentMethod)
	h := sandbox.NewServer(e, sandbox.ServerOptions{})
	if wrap != nil {
		h = wrap(e, h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	p, err := stripe.New(stripe.Config{APIKey: "sk_test_auth", APIBase: srv.URL, HTTPClient: srv.Client(),
		PollInterval: time.Millisecond, MaxPollInterval: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return &sandboxStripe{engine: e, provider: p}
}

// beforeCancel wraps a sandbox handler so that do runs with the intent's id
// just before each cancel request reaches the sandbox.
func beforeCancel(do func(e *sandbox.Engine, id string)) func(*sandbox.Engine, http.Handler) http.Handler {
	return func(e *sandbox.Engine, next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if id, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/v1/payment_intents/"), "/cancel"); ok &&
				r.Method == http.MethodPost {
				do(e, id)
			}
			next.ServeHTTP(w, r)
		})
	}
}

// authRequest is the request of these tests, paid with paymentMethod.
func authRequest(paymentMethod string) payment.ChargeRequest {
	return payment.ChargeRequest{Amount: 2500, Currency: "eur", PaymentMethod: paymentMethod,
		Metadata: map[string]string{"invoice": "3ds"}}
}

// only returns the single intent the adapter's Lookup finds under key.
func (s *sandboxStripe) only(g Gomega, key string) payment.Found {
	ctx, cancel := context.WithTimeout(context.Background(), authTimeout)
	defer cancel()
	found, err := s.provider.Lookup(ctx, []string{key})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found[key]).To(HaveLen(1))
	return found[key][0]
}

// expectAuthenticationRequired checks that err is a definitive refusal with
// the reason authentication_required.
func expectAuthenticationRequired(g Gomega, err error) {
	g.Expect(err).To(MatchError(payment.ErrDeclined))
	r, refused := payment.IsRefusal(err)
	g.Expect(refused).To(BeTrue(), "%v is not a definitive refusal", err)
	g.Expect(r.Reason).To(Equal(stripe.ReasonAuthenticationRequired))
	g.Expect(payment.ValidReason(r.Reason)).To(BeTrue())
}

func TestChargeOffSessionDeclinesAuthenticationRequired(t *testing.T) {
	for _, pm := range []string{sandbox.PaymentMethodAuthenticationRequired, sandbox.PaymentMethodThreeDSecureRequired} {
		t.Run(pm, func(t *testing.T) {
			g := NewWithT(t)
			s := newSandboxStripe(t, nil)
			const key = "billing/needs-3ds"
			ctx, cancel := context.WithTimeout(context.Background(), authTimeout)
			defer cancel()

			_, err := s.provider.Charge(ctx, key, authRequest(pm))
			expectAuthenticationRequired(g, err)
			g.Expect(err.Error()).To(ContainSubstring("declined off-session with authentication_required"))

			// A retry under the key replays the refusal, and the cancel.
			_, again := s.provider.Charge(ctx, key, authRequest(pm))
			expectAuthenticationRequired(g, again)

			st := s.engine.Stats()
			g.Expect(st.Charges).To(BeZero())
			g.Expect(st.Declines).To(Equal(int64(1)))
			g.Expect(st.Replays).To(Equal(int64(2)), "the create and the cancel replayed")
			g.Expect(st.RequiresAction).To(BeZero(), "off-session, no intent waits in requires_action")
			// Stripe keeps the declined intent, for the customer to
			// confirm on-session; the adapter cancels it, so that no one
			// can charge a Failed job later.
			g.Expect(st.Cancels).To(Equal(int64(1)))
			found := s.only(g, key)
			g.Expect(found.Status).To(Equal(sandbox.StatusCanceled))
			g.Expect(found.State).To(Equal(payment.StateNotCharged))
		})
	}
}

func TestChargeCancelsAnIntentThatRequiresAction(t *testing.T) {
	g := NewWithT(t)
	s := newSandboxStripe(t, nil)
	const key = "billing/forced-3ds"
	ctx, cancel := context.WithTimeout(context.Background(), authTimeout)
	defer cancel()

	_, err := s.provider.Charge(ctx, key, authRequest(forcedPaymentMethod))
	expectAuthenticationRequired(g, err)
	g.Expect(err.Error()).To(ContainSubstring("requires_action"))

	found := s.only(g, key)
	g.Expect(found.Status).To(Equal(sandbox.StatusCanceled))
	g.Expect(found.State).To(Equal(payment.StateNotCharged))
	in, ok := s.engine.GetPaymentIntent(found.ID)
	g.Expect(ok).To(BeTrue())
	g.Expect(in.CancellationReason).To(Equal(sandbox.CancellationReasonAbandoned))
	g.Expect(in.OffSession).To(BeTrue())

	// A retry (a replayed create, a replayed cancel) ends the same way and
	// cancels nothing more.
	_, again := s.provider.Charge(ctx, key, authRequest(forcedPaymentMethod))
	expectAuthenticationRequired(g, again)

	st := s.engine.Stats()
	g.Expect(st.Charges).To(BeZero())
	g.Expect(st.RequiresAction).To(Equal(int64(1)))
	g.Expect(st.Cancels).To(Equal(int64(1)))
}

func TestChargeCancelAnswerLostStillRefuses(t *testing.T) {
	g := NewWithT(t)
	// The sandbox cancels, and the answer is lost (a 500 after the commit).
	s := newSandboxStripe(t, beforeCancel(func(e *sandbox.Engine, _ string) {
		e.FailNextAny(sandbox.FaultAfterCommit, 1)
	}))
	const key = "billing/lost-cancel"
	ctx, cancel := context.WithTimeout(context.Background(), authTimeout)
	defer cancel()

	_, err := s.provider.Charge(ctx, key, authRequest(forcedPaymentMethod))
	expectAuthenticationRequired(g, err)
	g.Expect(s.only(g, key).Status).To(Equal(sandbox.StatusCanceled))
	g.Expect(s.engine.Stats().Charges).To(BeZero())
}

func TestCancelRacingSuccessNeverRefuses(t *testing.T) {
	const key = "billing/customer-came-back"
	tests := []struct {
		name string
		call func(ctx context.Context, s *sandboxStripe) (payment.Outcome, error)
	}{
		{name: "Charge", call: func(ctx context.Context, s *sandboxStripe) (payment.Outcome, error) {
			return s.provider.Charge(ctx, key, authRequest(forcedPaymentMethod))
		}},
		{name: "Settle", call: func(ctx context.Context, s *sandboxStripe) (payment.Outcome, error) {
			in := s.engine.PutIntent(sandbox.Intent{Amount: 2500, Currency: "eur", Status: sandbox.StatusRequiresAction,
				IdempotencyKey: key, Metadata: sandbox.TaggedRequest(key, sandbox.PaymentIntentParams(authRequest(forcedPaymentMethod))).Metadata})
			return s.provider.Settle(ctx, key, in.ID)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			// The customer authenticates just before the cancel arrives.
			s := newSandboxStripe(t, beforeCancel(func(e *sandbox.Engine, id string) {
				if err := e.CompleteAction(id); err != nil {
					t.Errorf("cannot complete the action: %v", err)
				}
			}))
			ctx, cancel := context.WithTimeout(context.Background(), authTimeout)
			defer cancel()

			out, err := tt.call(ctx, s)
			g.Expect(err).NotTo(HaveOccurred(), "a payment that succeeded must never be refused")
			g.Expect(out.Status).To(Equal(sandbox.StatusSucceeded))
			in, ok := s.engine.GetPaymentIntent(out.ID)
			g.Expect(ok).To(BeTrue())
			g.Expect(in.Status).To(Equal(sandbox.StatusSucceeded))
			st := s.engine.Stats()
			g.Expect(st.Charges).To(Equal(int64(1)))
			g.Expect(st.Cancels).To(BeZero(), "Stripe refuses to cancel a succeeded intent")
		})
	}
}

func TestSettleCancelsAnIntentThatWaitsForTheCustomer(t *testing.T) {
	tests := []struct {
		status     string
		wantReason string
	}{
		{status: sandbox.StatusRequiresAction, wantReason: stripe.ReasonAuthenticationRequired},
		{status: sandbox.StatusRequiresConfirmation, wantReason: stripe.ReasonPaymentCanceled},
	}
	for _, tt := range tests {
		t.Run(tt.status, func(t *testing.T) {
			g := NewWithT(t)
			s := newSandboxStripe(t, nil)
			const key = "billing/left-waiting"
			req := authRequest(sandbox.PaymentMethodVisa)
			in := s.engine.PutIntent(sandbox.Intent{Amount: req.Amount, Currency: req.Currency, Status: tt.status,
				IdempotencyKey: key, Metadata: sandbox.TaggedRequest(key, sandbox.PaymentIntentParams(req)).Metadata})
			ctx, cancel := context.WithTimeout(context.Background(), authTimeout)
			defer cancel()

			// The lookup counts it neither as charged nor as safe to
			// charge around: it must be settled.
			found := s.only(g, key)
			g.Expect(found.State).To(Equal(payment.StatePending))
			verdict := payment.Decide([]payment.Found{found}, payment.RequestHash(key, req), req)
			g.Expect(verdict.Action).To(Equal(payment.ActionSettle))

			_, err := s.provider.Settle(ctx, key, in.ID)
			g.Expect(err).To(MatchError(payment.ErrDeclined))
			r, refused := payment.IsRefusal(err)
			g.Expect(refused).To(BeTrue(), "%v is not a definitive refusal", err)
			g.Expect(r.Reason).To(Equal(tt.wantReason))

			now, _ := s.engine.GetPaymentIntent(in.ID)
			g.Expect(now.Status).To(Equal(sandbox.StatusCanceled))
			g.Expect(now.CancellationReason).To(Equal(sandbox.CancellationReasonAbandoned))
			st := s.engine.Stats()
			g.Expect(st.Charges).To(BeZero())
			g.Expect(st.Cancels).To(Equal(int64(1)))
			g.Expect(st.Requests).To(BeZero(), "Settle never creates an intent")
		})
	}
}

func TestChargeReplaysAPaymentBegunWithoutOffSession(t *testing.T) {
	g := NewWithT(t)
	s := newSandboxStripe(t, nil)
	const key = "billing/begun-by-an-older-operator"
	req := authRequest(sandbox.PaymentMethodVisa)
	// An operator that sent no off_session charged the key; its answer was
	// lost.
	first, _, err := s.engine.CreatePaymentIntent(key, sandbox.TaggedRequest(key, sandbox.PaymentIntentParams(req)))
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithTimeout(context.Background(), authTimeout)
	defer cancel()

	out, err := s.provider.Charge(ctx, key, req)
	g.Expect(err).NotTo(HaveOccurred(), "the retry must be the first attempt's replay, not a key reused")
	g.Expect(out.ID).To(Equal(first.ID))
	g.Expect(out.Replayed).To(BeTrue())
	st := s.engine.Stats()
	g.Expect(st.Charges).To(Equal(int64(1)))
	g.Expect(st.KeyReusedErrors).To(Equal(int64(1)))

	// A key first used for another request stays a key reused.
	other := req
	other.Amount++
	_, err = s.provider.Charge(ctx, key, other)
	g.Expect(err).To(MatchError(payment.ErrKeyReused))
	g.Expect(s.engine.Stats().Charges).To(Equal(int64(1)))
}

func TestChargeAuthenticationDeclineStandsWhenTheCancelFails(t *testing.T) {
	g := NewWithT(t)
	// Every cancel fails before the sandbox does anything.
	s := newSandboxStripe(t, beforeCancel(func(e *sandbox.Engine, _ string) {
		e.FailNextAny(sandbox.FaultBeforeCommit, 1)
	}))
	const key = "billing/cancel-fails"
	ctx, cancel := context.WithTimeout(context.Background(), authTimeout)
	defer cancel()

	// The declined intent moved no money: the refusal stands.
	_, err := s.provider.Charge(ctx, key, authRequest(sandbox.PaymentMethodAuthenticationRequired))
	expectAuthenticationRequired(g, err)
	g.Expect(s.only(g, key).Status).To(Equal(sandbox.StatusRequiresPaymentMethod))
	st := s.engine.Stats()
	g.Expect(st.Charges).To(BeZero())
	g.Expect(st.Cancels).To(BeZero())
	g.Expect(st.Faults).To(Equal(int64(1)))

	// An intent in requires_action may still succeed: while it is not
	// canceled, the outcome stays uncertain, never a refusal.
	_, err = s.provider.Charge(ctx, "billing/still-waiting", authRequest(forcedPaymentMethod))
	_, refused := payment.IsRefusal(err)
	g.Expect(refused).To(BeFalse(), "%v", err)
	g.Expect(err).To(BeAssignableToTypeOf(&payment.TransientError{}))
	g.Expect(err.Error()).To(ContainSubstring("still requires_action"))
	g.Expect(s.only(g, "billing/still-waiting").State).To(Equal(payment.StatePending))
}
