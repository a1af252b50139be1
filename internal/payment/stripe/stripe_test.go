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

package stripe

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/paymenttest"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name, wantErr, wantBase string
		cfg                     Config
		wantPoll, wantMaxPoll   time.Duration
	}{
		{
			name:        "defaults",
			cfg:         Config{APIKey: testAPIKey},
			wantBase:    DefaultAPIBase,
			wantPoll:    DefaultPollInterval,
			wantMaxPoll: DefaultMaxPollInterval,
		},
		{
			name:        "custom base and intervals, key with a trailing newline",
			cfg:         Config{APIKey: testAPIKey + "\n", APIBase: "http://127.0.0.1:12111/", PollInterval: time.Second, MaxPollInterval: 3 * time.Second},
			wantBase:    "http://127.0.0.1:12111",
			wantPoll:    time.Second,
			wantMaxPoll: 3 * time.Second,
		},
		{
			name:        "long poll interval raises the default maximum",
			cfg:         Config{APIKey: testAPIKey, PollInterval: 10 * time.Second},
			wantBase:    DefaultAPIBase,
			wantPoll:    10 * time.Second,
			wantMaxPoll: 10 * time.Second,
		},
		{name: "missing key", cfg: Config{}, wantErr: "API key: it is empty"},
		{name: "key with a space", cfg: Config{APIKey: "sk_test_abc def"}, wantErr: "not allowed in an HTTP header"},
		{name: "relative base", cfg: Config{APIKey: testAPIKey, APIBase: "api.stripe.com"}, wantErr: "scheme must be http or https"},
		{name: "ftp base", cfg: Config{APIKey: testAPIKey, APIBase: "ftp://api.stripe.com"}, wantErr: "scheme must be http or https"},
		{name: "base with credentials", cfg: Config{APIKey: testAPIKey, APIBase: "https://user:" + testAPIKey + "@api.stripe.com"}, wantErr: "user information"},
		{name: "base without host", cfg: Config{APIKey: testAPIKey, APIBase: "https:///v1"}, wantErr: "with a host"},
		{name: "base with query", cfg: Config{APIKey: testAPIKey, APIBase: "https://api.stripe.com?x=1"}, wantErr: "query"},
		{name: "unparsable base", cfg: Config{APIKey: testAPIKey, APIBase: "http://[::1"}, wantErr: "not a valid URL"},
		{name: "negative poll interval", cfg: Config{APIKey: testAPIKey, PollInterval: -time.Second}, wantErr: "negative"},
		{name: "maximum shorter than interval", cfg: Config{APIKey: testAPIKey, PollInterval: 2 * time.Second, MaxPollInterval: time.Second}, wantErr: "shorter than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			p, err := New(tt.cfg)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(err.Error()).NotTo(ContainSubstring(testAPIKey))
				g.Expect(err.Error()).NotTo(ContainSubstring("sk_test_abc"))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.apiKey).To(Equal(testAPIKey))
			g.Expect(p.pollInterval).To(Equal(tt.wantPoll))
			g.Expect(p.maxPollInterval).To(Equal(tt.wantMaxPoll))
			base, err := apiBase(tt.cfg.APIBase)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(base).To(Equal(tt.wantBase))
		})
	}
}

func TestChargeSendsOneCreateRequest(t *testing.T) {
	// form is the create request every case sends, plus extra.
	form := func(req payment.ChargeRequest, extra url.Values) url.Values {
		v := url.Values{
			"amount":                               {strconv.FormatInt(req.Amount, 10)},
			"currency":                             {req.Currency},
			"metadata[paymentjob_idempotency_key]": {testKey},
			"metadata[paymentjob_request_fingerprint]": {payment.RequestHash(testKey, req)},
			"confirm":                                    {"true"},
			"automatic_payment_methods[enabled]":         {"true"},
			"automatic_payment_methods[allow_redirects]": {"never"},
			"off_session":                                {"true"},
		}
		for k, vs := range extra {
			v[k] = vs
		}
		return v
	}
	forged := payment.ChargeRequest{Amount: 150, Currency: "eur", Metadata: map[string]string{
		payment.MetadataKeyIdempotencyKey: "forged",
		payment.MetadataKeyFingerprint:    "sha256:forged",
		"team":                            "billing",
	}}
	tests := []struct {
		name     string
		req      payment.ChargeRequest
		wantForm url.Values
	}{
		{
			name: "every field",
			req:  paymenttest.FullRequest(),
			wantForm: form(paymenttest.FullRequest(), url.Values{
				"customer":          {"cus_123"},
				"payment_method":    {"pm_card_visa"},
				"description":       {"Invoice 42"},
				"metadata[invoice]": {"42"},
				"metadata[tenant]":  {"team-a"},
			}),
		},
		{
			name:     "required fields only",
			req:      payment.ChargeRequest{Amount: 150, Currency: "eur"},
			wantForm: form(payment.ChargeRequest{Amount: 150, Currency: "eur"}, nil),
		},
		{
			name:     "the key's and the fingerprint's metadata entries win over the request's",
			req:      forged,
			wantForm: form(forged, url.Values{"metadata[team]": {"billing"}}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeAnswering(t, succeeded("pi_1"))
			_, err := f.provider(t).Charge(context.Background(), testKey, tt.req)
			g.Expect(err).NotTo(HaveOccurred())

			r := f.single(g, http.MethodPost, "/v1/payment_intents")
			g.Expect(r.Form).To(Equal(tt.wantForm))
			g.Expect(r.Form.Get("metadata[paymentjob_request_fingerprint]")).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
			g.Expect(r.Header.Get("Idempotency-Key")).To(Equal(testKey))
			g.Expect(r.Header.Get("Content-Type")).To(Equal("application/x-www-form-urlencoded"))
			g.Expect(r.Header.Get("Stripe-Version")).NotTo(BeEmpty())
		})
	}
}

func TestChargeRetriesSendTheSameBytes(t *testing.T) {
	g := NewWithT(t)
	f := newFakeStripe(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		writeJSON(w, http.StatusInternalServerError, stripeError("api_error", "", "", "try again"))
	})
	// Equal requests whose metadata maps were built in other orders, sent
	// by two providers, as after a restart of the operator.
	request := func(names ...string) payment.ChargeRequest {
		req := paymenttest.FullRequest()
		req.Metadata = map[string]string{}
		for _, n := range names {
			req.Metadata[n] = "value of " + n
		}
		return req
	}
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h", payment.MetadataKeyFingerprint}
	reversed := slices.Clone(names)
	slices.Reverse(reversed)
	for _, req := range []payment.ChargeRequest{request(names...), request(reversed...), request(names...)} {
		_, err := f.provider(t).Charge(context.Background(), testKey, req)
		_, refusal := payment.IsRefusal(err)
		g.Expect(refusal).To(BeFalse())
	}

	reqs := f.received()
	g.Expect(reqs).To(HaveLen(3))
	g.Expect(reqs[0].Body).To(ContainSubstring("paymentjob_request_fingerprint"))
	for _, r := range reqs[1:] {
		g.Expect(r.Body).To(Equal(reqs[0].Body))
		g.Expect(r.Header.Get("Idempotency-Key")).To(Equal(reqs[0].Header.Get("Idempotency-Key")))
	}
}

func TestChargeOutcome(t *testing.T) {
	tests := []struct {
		name    string
		body    map[string]any
		headers []string
		want    payment.Outcome
	}{
		{
			name: "succeeded",
			body: succeeded("pi_1"),
			want: payment.Outcome{ID: "pi_1", Status: "succeeded", Amount: 2000, Currency: "usd", Created: time.Unix(1767225600, 0).UTC()},
		},
		{
			name:    "replayed by Stripe",
			body:    succeeded("pi_1"),
			headers: []string{"Idempotent-Replayed", "true"},
			want:    payment.Outcome{ID: "pi_1", Status: "succeeded", Amount: 2000, Currency: "usd", Created: time.Unix(1767225600, 0).UTC(), Replayed: true},
		},
		{
			name:    "not replayed when the header says false",
			body:    succeeded("pi_1"),
			headers: []string{"Idempotent-Replayed", "false"},
			want:    payment.Outcome{ID: "pi_1", Status: "succeeded", Amount: 2000, Currency: "usd", Created: time.Unix(1767225600, 0).UTC()},
		},
		{
			name: "requires_capture reports the amount",
			body: intent("pi_2", "requires_capture"),
			want: payment.Outcome{ID: "pi_2", Status: "requires_capture", Amount: 2000, Currency: "usd", Created: time.Unix(1767225600, 0).UTC()},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeAnswering(t, tt.body, tt.headers...)
			got, err := f.provider(t).Charge(context.Background(), testKey, paymenttest.FullRequest())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
			g.Expect(f.count(http.MethodPost)).To(Equal(1))
			g.Expect(f.count(http.MethodGet)).To(Equal(0))
		})
	}
}

func TestChargeRefusesBadKeysWithoutSending(t *testing.T) {
	for _, c := range creators {
		for name, key := range paymenttest.InvalidKeys() {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				g := NewWithT(t)
				f := newFakeAnswering(t, succeeded("pi_1"))
				_, err := c.call(f.provider(t), context.Background(), key)
				g.Expect(errors.Is(err, payment.ErrInvalid)).To(BeTrue())
				g.Expect(f.received()).To(BeEmpty())
			})
		}
	}
}

func TestChargeWithDoneContextSendsNothing(t *testing.T) {
	for _, c := range creators {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeAnswering(t, succeeded("pi_1"))
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := c.call(f.provider(t), ctx, testKey)
			g.Expect(errors.Is(err, context.Canceled)).To(BeTrue())
			_, refusal := payment.IsRefusal(err)
			g.Expect(refusal).To(BeFalse())
			g.Expect(f.received()).To(BeEmpty())
		})
	}
}

func TestChargePollsUntilFinal(t *testing.T) {
	tests := []struct {
		pollCase
		// replayed is whether Stripe answers the create as a replay.
		replayed bool
	}{
		{pollCase: pollCase{name: "processing until succeeded", first: "processing", pending: 2, final: succeeded("pi_1"), check: succeededAs("succeeded")}},
		{
			pollCase: pollCase{name: "replayed processing until succeeded stays replayed", first: "processing", final: succeeded("pi_1"), check: func(g Gomega, out payment.Outcome, err error) {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(out.Replayed).To(BeTrue())
			}},
			replayed: true,
		},
		{pollCase: pollCase{name: "processing until the attempt failed", first: "processing", pending: 1, final: attemptFailed(), check: declinedWith(payment.ReasonCardDeclined, "do_not_honor")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeStripe(t, func(w http.ResponseWriter, r *http.Request, n int) {
				switch {
				case r.Method == http.MethodPost && tt.replayed:
					writeJSON(w, http.StatusOK, intent("pi_1", tt.first), "Idempotent-Replayed", "true")
				case r.Method == http.MethodPost:
					writeJSON(w, http.StatusOK, intent("pi_1", tt.first))
				default:
					tt.answer(w, r, n)
				}
			})
			out, err := f.provider(t).Charge(context.Background(), testKey, paymenttest.FullRequest())
			tt.check(g, out, err)

			g.Expect(f.count(http.MethodPost)).To(Equal(1), "polling must never create again")
			tt.expectReads(g, f.received()[1:])
		})
	}
}

// pendingCreate is a create that Stripe answers with an object that is not
// final yet (status), which the call then reads until it is.
type pendingCreate struct {
	name, id, status string
	// answer is the create's answer and every read's.
	answer map[string]any
	// inFlight is whether an object still pending is payment.ErrInFlight.
	inFlight bool
	call     func(p *Provider, ctx context.Context) (payment.Outcome, error)
}

// pendingCreates are the charge and the refund whose creates are answered
// pending.
var pendingCreates = []pendingCreate{
	{name: "Charge", id: "pi_1", status: "processing", answer: intent("pi_1", "processing"),
		call: func(p *Provider, ctx context.Context) (payment.Outcome, error) {
			return p.Charge(ctx, testKey, paymenttest.FullRequest())
		}},
	{name: "Refund", id: "re_1", status: "pending", answer: pendingRefund("pending"), inFlight: true,
		call: func(p *Provider, ctx context.Context) (payment.Outcome, error) {
			return p.Refund(ctx, testRefundKey, fullRefund())
		}},
}

func TestChargeProcessingForeverIsSettlingRefundPendingForeverIsTransient(t *testing.T) {
	for _, c := range pendingCreates {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			const reads = 3
			f := newFakeStripe(t, func(w http.ResponseWriter, r *http.Request, n int) {
				if r.Method == http.MethodGet && n == reads-1 {
					// The operator's deadline passes while the object
					// is still not final.
					cancel()
				}
				writeJSON(w, http.StatusOK, c.answer)
			})

			_, err := c.call(f.provider(t), ctx)
			g.Expect(err).To(HaveOccurred())
			_, refusal := payment.IsRefusal(err)
			g.Expect(refusal).To(BeFalse())
			if c.name == "Charge" {
				// Accepted by Stripe and not final: it settles later,
				// read by its id (settling_test.go).
				s, ok := payment.IsSettling(err)
				g.Expect(ok).To(BeTrue(), "settling: %v", err)
				g.Expect(s.ID).To(Equal(c.id))
				g.Expect(f.count(http.MethodPost)).To(Equal(1))
				return
			}
			var te *payment.TransientError
			g.Expect(errors.As(err, &te)).To(BeTrue())
			g.Expect(errors.Is(err, context.Canceled)).To(BeTrue())
			g.Expect(errors.Is(err, payment.ErrInFlight)).To(Equal(c.inFlight))
			g.Expect(err.Error()).To(ContainSubstring(c.id))
			g.Expect(err.Error()).To(ContainSubstring(c.status))
			g.Expect(f.count(http.MethodPost)).To(Equal(1))
			g.Expect(f.count(http.MethodGet)).To(Equal(reads))
		})
	}
}

func TestChargePollingErrorsAreTransient(t *testing.T) {
	for _, c := range pendingCreates {
		for _, tt := range readErrors {
			t.Run(c.name+"/"+tt.name, func(t *testing.T) {
				g := NewWithT(t)
				f := newFakeStripe(t, func(w http.ResponseWriter, r *http.Request, _ int) {
					if r.Method == http.MethodPost {
						// A fresh connection for the GET: net/http itself
						// resends a GET once when a reused connection is
						// closed before the answer.
						writeJSON(w, http.StatusOK, c.answer, "Connection", "close")
						return
					}
					tt.answer(w, r)
				})
				_, err := c.call(f.provider(t), context.Background())
				tt.expectAbout(g, err, c.id)
				g.Expect(err.Error()).To(ContainSubstring("last seen " + c.status))
				g.Expect(errors.Is(err, payment.ErrInFlight)).To(Equal(c.inFlight))
				g.Expect(f.count(http.MethodPost)).To(Equal(1))
				g.Expect(f.count(http.MethodGet)).To(Equal(1))
			})
		}
	}
}
