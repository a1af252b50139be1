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

package httpprovider_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/httpprovider"
)

// testPoll is the poll interval of the lookup providers the tests build.
const testPoll = time.Millisecond

// newLooker returns the provider New builds for a service at srv with a
// lookup endpoint, as a *httpprovider.LookupProvider.
func newLooker(t *testing.T, srv *httptest.Server, cfg httpprovider.Config) *httpprovider.LookupProvider {
	t.Helper()
	cfg.URL = srv.URL + chargePath
	if cfg.LookupURL == "" {
		cfg.LookupURL = srv.URL + lookupPath
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = testPoll
	}
	p := newProvider(t, cfg)
	lp, ok := p.(*httpprovider.LookupProvider)
	if !ok {
		t.Fatalf("New with a LookupURL returned %T, want *httpprovider.LookupProvider", p)
	}
	return lp
}

func TestNewGivesALookerOnlyWithALookupURL(t *testing.T) {
	t.Run("without a lookup url", func(t *testing.T) {
		g := NewWithT(t)
		srv, requests := newServer(t, answer(http.StatusOK, nil, noCharges))
		p := newProvider(t, httpprovider.Config{URL: srv.URL + chargePath})

		_, isLooker := p.(payment.Looker)
		g.Expect(isLooker).To(BeFalse(), "without a lookup endpoint nothing can be looked up")
		g.Expect(p).To(BeAssignableToTypeOf(&httpprovider.Provider{}))
		id, ok := p.(payment.Identifier)
		g.Expect(ok).To(BeTrue())

		account, err := id.Account(context.Background())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(account).To(BeEmpty())
		g.Expect(requests).To(BeEmpty(), "naming no account sends nothing")
	})

	t.Run("with a lookup url", func(t *testing.T) {
		g := NewWithT(t)
		p := newProvider(t, httpprovider.Config{URL: "https://p.example/charges", LookupURL: "https://p.example/lookup"})

		_, isLooker := p.(payment.Looker)
		g.Expect(isLooker).To(BeTrue())
		_, isIdentifier := p.(payment.Identifier)
		g.Expect(isIdentifier).To(BeTrue())
	})
}

func TestNewValidatesTheLookupConfig(t *testing.T) {
	const chargeURL = "https://p.example/charges"
	tests := []struct {
		name    string
		cfg     httpprovider.Config
		wantErr string
	}{
		{name: "https lookup url", cfg: httpprovider.Config{LookupURL: "https://p.example/lookup"}},
		{name: "lookup url with a query", cfg: httpprovider.Config{LookupURL: "https://p.example/lookup?tenant=a"}},
		{name: "poll intervals", cfg: httpprovider.Config{LookupURL: "https://p.example/lookup", PollInterval: time.Second, MaxPollInterval: time.Minute}},
		{name: "ftp lookup url", cfg: httpprovider.Config{LookupURL: "ftp://p.example/lookup"}, wantErr: `lookup url: scheme must be http or https, not "ftp"`},
		{name: "relative lookup url", cfg: httpprovider.Config{LookupURL: "/lookup"}, wantErr: "lookup url: scheme must be http or https"},
		{name: "lookup url without a host", cfg: httpprovider.Config{LookupURL: "https:///lookup"}, wantErr: "lookup url: it must be absolute"},
		{name: "lookup url that does not parse", cfg: httpprovider.Config{LookupURL: "https://p ex/%zz" + testToken}, wantErr: "lookup url: it is not a valid URL"},
		{name: "lookup url with credentials", cfg: httpprovider.Config{LookupURL: "https://u:" + testToken + "@p.example/lookup"}, wantErr: "lookup url: it must not contain user information"},
		{name: "lookup url with a key parameter", cfg: httpprovider.Config{LookupURL: "https://p.example/lookup?key=a"}, wantErr: `must not have a "key" parameter`},
		{name: "negative poll interval", cfg: httpprovider.Config{LookupURL: "https://p.example/lookup", PollInterval: -1}, wantErr: "negative poll interval"},
		{name: "maximum shorter than the interval", cfg: httpprovider.Config{PollInterval: time.Second, MaxPollInterval: time.Millisecond}, wantErr: "maximum poll interval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			tt.cfg.URL = chargeURL
			p, err := httpprovider.New(tt.cfg)
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(p).To(BeAssignableToTypeOf(&httpprovider.LookupProvider{}))
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(err.Error()).NotTo(ContainSubstring(testToken))
			g.Expect(p).To(BeNil(), "an error comes with a nil interface, never a typed nil")
		})
	}
}

func TestLookupSendsOneContractRequest(t *testing.T) {
	tests := []struct {
		name      string
		lookupURL string
		token     string
		keys      []string
		wantKeys  []string
		wantQuery url.Values
		wantAuth  string
	}{
		{
			name:     "keys in order, with a token",
			token:    testToken + "\n",
			keys:     []string{otherKey, testKey, "billing/sha256:0a1b"},
			wantKeys: []string{otherKey, testKey, "billing/sha256:0a1b"},
			wantAuth: "Bearer " + testToken,
		},
		{
			name:     "a repeated key is asked once, and no token sends no Authorization",
			keys:     []string{testKey, otherKey, testKey},
			wantKeys: []string{testKey, otherKey},
		},
		{
			name:      "the lookup url's own parameters are kept",
			lookupURL: lookupPath + "?tenant=a%2Fb",
			keys:      []string{testKey},
			wantKeys:  []string{testKey},
			wantQuery: url.Values{"tenant": {"a/b"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			srv, requests := newServer(t, answer(http.StatusOK, nil, noCharges))
			cfg := httpprovider.Config{Token: tt.token}
			if tt.lookupURL != "" {
				cfg.LookupURL = srv.URL + tt.lookupURL
			}
			p := newLooker(t, srv, cfg)

			found, err := p.Lookup(context.Background(), tt.keys)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(found).To(BeEmpty())

			got := drain(requests)
			g.Expect(got).To(HaveLen(1), "one request for every key")
			r := got[0]
			g.Expect(r.method).To(Equal(http.MethodGet))
			g.Expect(r.path).To(Equal(lookupPath))
			g.Expect(r.query["key"]).To(Equal(tt.wantKeys))
			for name, values := range tt.wantQuery {
				g.Expect(r.query[name]).To(Equal(values))
			}
			g.Expect(r.query).To(HaveLen(1 + len(tt.wantQuery)))
			g.Expect(r.header.Get("Accept")).To(Equal(jsonType))
			g.Expect(r.header.Get("User-Agent")).To(Equal("paymentjob-operator"))
			g.Expect(r.header).NotTo(HaveKey("Idempotency-Key"))
			if tt.wantAuth == "" {
				g.Expect(r.header).NotTo(HaveKey("Authorization"))
			} else {
				g.Expect(r.header.Values("Authorization")).To(Equal([]string{tt.wantAuth}))
			}
			g.Expect(r.body).To(BeEmpty())
		})
	}
}

func TestLookupMapsTheChargeStatus(t *testing.T) {
	statuses := map[payment.ChargeState][]string{
		payment.StateSucceeded:  {"succeeded", "paid", " Completed "},
		payment.StatePending:    {"processing", "PENDING", "requires_action", "refunded", ""},
		payment.StateNotCharged: {"failed", "declined", "canceled", "Cancelled", "rejected"},
	}
	for want, all := range statuses {
		for _, status := range all {
			t.Run(fmt.Sprintf("status %q", status), func(t *testing.T) {
				g := NewWithT(t)
				srv, _ := newServer(t, answer(http.StatusOK, nil, charges(fmt.Sprintf(testCharge, status))))
				p := newLooker(t, srv, httpprovider.Config{})

				found, err := p.Lookup(context.Background(), []string{testKey})

				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(found).To(HaveKeyWithValue(testKey, ConsistOf(HaveField("State", want))))
				g.Expect(found[testKey][0].Status).To(Equal(status), "the service's own word is kept")
			})
		}
	}
}

func TestLookupReturnsTheChargesOfTheAskedKeys(t *testing.T) {
	g := NewWithT(t)
	created := time.Unix(createdEpoch, 0).UTC()
	body := `{"account":"acct_42","charges":[
		{"idempotencyKey":"billing/invoice-2026-0001","id":"ch_1","status":"failed","amount":1999,"currency":"eur","created":1772368200,"fingerprint":"sha256:0123abcd"},
		{"idempotencyKey":"billing/invoice-2026-0001","id":"ch_2","status":"succeeded","amount":1999,"currency":"eur","created":"2026-03-01T13:30:00+01:00","fingerprint":"sha256:0123abcd"},
		{"idempotencyKey":"billing/invoice-2026-0002","id":"ch_3","status":"pending","amount":500,"currency":"usd","fingerprint":"sha256:ffff0000","note":"unknown fields are ignored"},
		{"idempotencyKey":"billing/not-asked","id":"ch_4","status":"succeeded","amount":1,"currency":"usd"},
		{"idempotencyKey":"billing/not-asked-either","status":"succeeded"}
	]}`
	srv, _ := newServer(t, answer(http.StatusOK, nil, body))
	p := newLooker(t, srv, httpprovider.Config{})

	found, err := p.Lookup(context.Background(), []string{testKey, otherKey, "billing/no-charge"})

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(Equal(map[string][]payment.Found{
		testKey: {
			{
				Key:         testKey,
				Outcome:     payment.Outcome{ID: "ch_1", Status: "failed", Amount: 1999, Currency: "eur", Created: created},
				State:       payment.StateNotCharged,
				Fingerprint: testFinger,
			},
			{
				Key:         testKey,
				Outcome:     payment.Outcome{ID: "ch_2", Status: "succeeded", Amount: 1999, Currency: "eur", Created: created},
				State:       payment.StateSucceeded,
				Fingerprint: testFinger,
			},
		},
		otherKey: {
			{
				Key:         otherKey,
				Outcome:     payment.Outcome{ID: "ch_3", Status: "pending", Amount: 500, Currency: "usd"},
				State:       payment.StatePending,
				Fingerprint: otherFinger,
			},
		},
	}), "charges of keys not asked are ignored, a key without charges is absent")
}

func TestLookupTreatsEveryOtherAnswerAsTransient(t *testing.T) {
	tests := []struct {
		name           string
		maxBytes       int64
		respond        http.HandlerFunc
		wantRetryAfter time.Duration
		wantMessage    string
		notWant        string // never in the message
	}{
		// Status codes other than 200.
		{name: "201", respond: answer(http.StatusCreated, nil, noCharges), wantMessage: "lookup endpoint answered 201 Created: the contract answers a lookup with 200 only"},
		{name: "204", respond: answer(http.StatusNoContent, nil, ""), wantMessage: "answered 204 No Content"},
		{name: "404", respond: answer(http.StatusNotFound, nil, `{"message":"no such key"}`), wantMessage: "404 Not Found: check the PaymentProvider's lookup url (spec.http.lookupURL); the service said: no such key"},
		{name: "401", respond: answer(http.StatusUnauthorized, nil, ""), wantMessage: "401 Unauthorized: check the PaymentProvider's secret"},
		{name: "403", respond: answer(http.StatusForbidden, nil, ""), wantMessage: "may look charges up"},
		{name: "302", respond: answer(http.StatusFound, map[string]string{"Location": "/elsewhere"}, ""), wantMessage: "302 Found: redirects are not followed"},
		{name: "400", respond: answer(http.StatusBadRequest, nil, `{"message":"bad key"}`), wantMessage: "400 Bad Request"},
		{name: "402", respond: answer(http.StatusPaymentRequired, nil, `{"reason":"CardDeclined"}`), wantMessage: "402 Payment Required"},
		{
			name: "429 with Retry-After", respond: answer(http.StatusTooManyRequests, map[string]string{"Retry-After": "7"}, `{"message":"slow down"}`),
			wantRetryAfter: 7 * time.Second, wantMessage: "429 Too Many Requests; the service said: slow down",
		},
		{
			name: "404 with a text body keeps the hint only", respond: answer(http.StatusNotFound, map[string]string{"Content-Type": "text/plain"}, "no route to /internal/admin"),
			wantMessage: "404 Not Found: check the PaymentProvider's lookup url (spec.http.lookupURL)", notWant: "admin",
		},
		{
			name: "500 with an HTML body does not copy it", respond: answer(http.StatusInternalServerError, map[string]string{"Content-Type": "text/html"}, "<h1>db-0.internal: connection refused</h1>"),
			wantMessage: "lookup endpoint answered 500 Internal Server Error", notWant: "db-0",
		},
		{
			name: "503 with a long problem detail keeps 200 characters", respond: answer(http.StatusServiceUnavailable, map[string]string{"Content-Type": "application/problem+json"}, `{"detail":"`+strings.Repeat("d", 250)+`"}`),
			wantMessage: "the service said: " + strings.Repeat("d", 200) + "...", notWant: strings.Repeat("d", 201),
		},
		{
			name: "503 with Retry-After", respond: answer(http.StatusServiceUnavailable, map[string]string{"Retry-After": "3"}, ""),
			wantRetryAfter: 3 * time.Second, wantMessage: "503 Service Unavailable",
		},

		// 200 with a body that is not the contract's.
		{name: "empty body", respond: answer(http.StatusOK, nil, ""), wantMessage: "not a JSON object"},
		{name: "null", respond: answer(http.StatusOK, nil, "null"), wantMessage: "not a JSON object"},
		{name: "an array", respond: answer(http.StatusOK, nil, `[]`), wantMessage: "not a JSON object"},
		{name: "HTML", respond: answer(http.StatusOK, map[string]string{"Content-Type": "text/html"}, "<html>ok</html>"), wantMessage: "not a JSON object"},
		{name: "malformed JSON", respond: answer(http.StatusOK, nil, `{"charges":[`), wantMessage: "not the expected JSON"},
		{name: "charges that are not an array", respond: answer(http.StatusOK, nil, `{"charges":{}}`), wantMessage: "not the expected JSON"},
		{name: "an amount that is not an integer", respond: answer(http.StatusOK, nil, charges(`{"idempotencyKey":"billing/invoice-2026-0001","id":"ch_1","amount":19.99,"currency":"eur"}`)), wantMessage: "not the expected JSON"},
		{name: "no charges array", respond: answer(http.StatusOK, nil, `{"account":"acct_42"}`), wantMessage: "without a charges array"},
		{name: "a null charges array", respond: answer(http.StatusOK, nil, `{"charges":null}`), wantMessage: "without a charges array"},
		{name: "a charge without an id", respond: answer(http.StatusOK, nil, charges(`{"idempotencyKey":"billing/invoice-2026-0001","status":"succeeded","amount":1999,"currency":"eur"}`)), wantMessage: "a charge without an id"},
		{name: "a charge without an amount", respond: answer(http.StatusOK, nil, charges(`{"idempotencyKey":"billing/invoice-2026-0001","id":"ch_1","status":"succeeded","currency":"eur"}`)), wantMessage: "without an amount or a currency"},
		{name: "a charge without a currency", respond: answer(http.StatusOK, nil, charges(`{"idempotencyKey":"billing/invoice-2026-0001","id":"ch_1","status":"succeeded","amount":1999}`)), wantMessage: "without an amount or a currency"},
		{name: "a malformed created", respond: answer(http.StatusOK, nil, charges(`{"idempotencyKey":"billing/invoice-2026-0001","id":"ch_1","amount":1999,"currency":"eur","created":"yesterday"}`)), wantMessage: "created is neither"},

		// Answers that cannot be read.
		{name: "10 MiB over the default 1 MiB limit", respond: huge(`{"charges":[],`), wantMessage: "larger than 1048576 bytes"},
		{name: "one byte over a configured limit", maxBytes: int64(len(noCharges)) - 1, respond: answer(http.StatusOK, nil, noCharges), wantMessage: "larger than 13 bytes"},
		{
			name:        "connection closed in the middle of the body",
			respond:     hangUp("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 64\r\n\r\n{\"charges\":["),
			wantMessage: "could not be read in full",
		},
		{name: "connection closed before any answer", respond: hangUp(""), wantMessage: "cannot reach the payment service's lookup endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			srv, _ := newServer(t, tt.respond)
			p := newLooker(t, srv, httpprovider.Config{Token: testToken, MaxResponseBytes: tt.maxBytes})

			found, err := p.Lookup(context.Background(), []string{testKey})

			g.Expect(found).To(BeNil(), "nothing is known")
			expectTransient(g, err)
			g.Expect(errors.Is(err, payment.ErrInFlight)).To(BeFalse())
			g.Expect(payment.RetryAfter(err)).To(Equal(tt.wantRetryAfter))
			g.Expect(err.Error()).To(ContainSubstring(tt.wantMessage))
			g.Expect(err.Error()).NotTo(ContainSubstring(testToken))
			if tt.notWant != "" {
				g.Expect(err.Error()).NotTo(ContainSubstring(tt.notWant))
			}
			g.Expect(err.Error()).NotTo(ContainSubstring("invoice-2026-0001"), "the keys asked are not repeated in errors")
		})
	}

	t.Run("service unreachable", func(t *testing.T) {
		g := NewWithT(t)
		srv := httptest.NewServer(http.NotFoundHandler())
		addr := srv.URL
		srv.Close()
		p := newProvider(t, httpprovider.Config{URL: addr, LookupURL: addr + lookupPath, Token: testToken}).(payment.Looker)

		_, err := p.Lookup(context.Background(), []string{testKey})

		expectTransient(g, err)
		g.Expect(err.Error()).To(ContainSubstring("cannot reach the payment service's lookup endpoint"))
		g.Expect(err.Error()).NotTo(ContainSubstring("invoice-2026-0001"))
	})

	t.Run("a done context sends nothing", func(t *testing.T) {
		g := NewWithT(t)
		srv, requests := newServer(t, answer(http.StatusOK, nil, noCharges))
		p := newLooker(t, srv, httpprovider.Config{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()

		_, err := p.Lookup(ctx, []string{testKey})

		expectCanceledBeforeSending(g, err, requests)
	})
}

func TestLookupNeverPutsTheTokenInAnError(t *testing.T) {
	tests := []struct {
		name    string
		respond http.HandlerFunc
	}{
		{name: "401 message", respond: echoToken(401, jsonType, `{"message":"TOKEN is not a valid token"}`)},
		{name: "404 text", respond: echoToken(404, "text/plain", "Authorization: Bearer TOKEN")},
		{name: "500 problem detail", respond: echoToken(500, "application/problem+json", `{"title":"TOKEN","detail":"Bearer TOKEN"}`)},
		{name: "200 malformed", respond: echoToken(200, jsonType, `{"charges":[{"id":"TOKEN`)},
		{name: "200 wrong type", respond: echoToken(200, jsonType, `{"charges":[{"id":["TOKEN"]}]}`)},
		{name: "200 malformed created", respond: echoToken(200, jsonType, charges(`{"idempotencyKey":"billing/invoice-2026-0001","id":"ch_1","amount":1,"currency":"eur","created":"TOKEN"}`))},
		{name: "200 charge id without an amount", respond: echoToken(200, jsonType, charges(`{"idempotencyKey":"billing/invoice-2026-0001","id":"TOKEN"}`))},
		{name: "message split across lines", respond: echoToken(503, jsonType, `{"message":"a TOKEN\nb"}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			srv, _ := newServer(t, tt.respond)
			p := newLooker(t, srv, httpprovider.Config{Token: testToken})

			_, err := p.Lookup(context.Background(), []string{testKey})

			expectTransient(g, err)
			expectNoToken(g, err)
		})
	}
}

func TestAccountReadsTheLookupEndpoint(t *testing.T) {
	tests := []struct {
		name        string
		respond     http.HandlerFunc
		want        string
		wantMessage string // an error
	}{
		{name: "account and no charges", respond: answer(http.StatusOK, nil, `{"account":"acct_42","charges":[]}`), want: testAccount},
		{name: "account without a charges array", respond: answer(http.StatusOK, nil, `{"account":" acct_42 "}`), want: testAccount},
		{name: "no account", respond: answer(http.StatusOK, nil, noCharges), want: ""},
		{name: "an account that is not a string", respond: answer(http.StatusOK, nil, `{"account":42}`), wantMessage: "not the expected JSON"},
		{name: "an account with a line break", respond: answer(http.StatusOK, nil, `{"account":"acct\n42"}`), wantMessage: "not printable ASCII"},
		{name: "an account too long", respond: answer(http.StatusOK, nil, `{"account":"`+strings.Repeat("a", 256)+`"}`), wantMessage: "longer than 255"},
		{name: "500", respond: answer(http.StatusInternalServerError, map[string]string{"Retry-After": "2"}, ""), wantMessage: "500 Internal Server Error"},
		{name: "garbage", respond: answer(http.StatusOK, map[string]string{"Content-Type": "text/html"}, "<html>"), wantMessage: "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			srv, requests := newServer(t, tt.respond)
			p := newLooker(t, srv, httpprovider.Config{Token: testToken})

			account, err := p.Account(context.Background())

			got := drain(requests)
			g.Expect(got).To(HaveLen(1))
			g.Expect(got[0].method).To(Equal(http.MethodGet))
			g.Expect(got[0].path).To(Equal(lookupPath))
			g.Expect(got[0].query).To(BeEmpty(), "the account is asked without keys")
			g.Expect(got[0].header.Get("Authorization")).To(Equal("Bearer " + testToken))
			g.Expect(got[0].header.Get("Accept")).To(Equal(jsonType))
			if tt.wantMessage != "" {
				expectTransient(g, err)
				g.Expect(err.Error()).To(ContainSubstring(tt.wantMessage))
				g.Expect(account).To(BeEmpty())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(account).To(Equal(tt.want))
		})
	}
}

// settled is what a settle call made of the lookup's answers, and the
// requests it sent.
type settled struct {
	got  payment.Outcome
	err  error
	sent []received
}

// settleAgainst serves answers, in order, to call, which settles, bounded
// by ten seconds should it poll on by mistake.
func settleAgainst(t *testing.T, answers []string, call func(ctx context.Context, p *httpprovider.LookupProvider) (payment.Outcome, error)) settled {
	t.Helper()
	srv, requests := newServer(t, sequence(answers...))
	p := newLooker(t, srv, httpprovider.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := call(ctx, p)
	return settled{got: got, err: err, sent: drain(requests)}
}

func TestSettleLooksTheChargeUpUntilItIsFinal(t *testing.T) {
	created := time.Unix(createdEpoch, 0).UTC()
	pending := fmt.Sprintf(testCharge, "pending")
	other := `{"idempotencyKey":"billing/invoice-2026-0001","id":"ch_0","status":"succeeded","amount":5,"currency":"eur"}`
	tests := []struct {
		name         string
		answers      []string
		wantOutcome  *payment.Outcome
		wantRequests int
		wantReason   string // a refusal
		wantMessage  string // a refusal's message or a transient error's
		wantSettling bool   // accepted, settling later
	}{
		{
			name: "pending, pending, then succeeded",
			answers: []string{
				charges(other, pending),
				charges(other, pending),
				charges(other, `{"idempotencyKey":"billing/invoice-2026-0001","id":"ch_1","status":"succeeded","amount":1999,"currency":"eur","created":1772368200}`),
			},
			wantOutcome:  &payment.Outcome{ID: "ch_1", Status: "succeeded", Amount: 1999, Currency: "eur", Created: created},
			wantRequests: 3,
		},
		{
			// A bank debit: accepted, settling for days; one read, not
			// polled within the call.
			name: "pending, then processing: settling later",
			answers: []string{
				charges(other, pending),
				charges(other, `{"idempotencyKey":"billing/invoice-2026-0001","id":"ch_1","status":"processing","method":"us_bank_account","amount":1999,"currency":"eur"}`),
			},
			wantRequests: 2,
			wantMessage:  "us_bank_account ch_1 is processing: accepted by the provider, not settled yet",
			wantSettling: true,
		},
		{
			name:         "succeeded at once",
			answers:      []string{charges(fmt.Sprintf(testCharge, "paid"))},
			wantOutcome:  &payment.Outcome{ID: "ch_1", Status: "paid", Amount: 1999, Currency: "eur"},
			wantRequests: 1,
		},
		{
			name: "pending, then declined with a reason and message",
			answers: []string{
				charges(pending),
				charges(`{"idempotencyKey":"billing/invoice-2026-0001","id":"ch_1","status":"Declined","amount":1999,"currency":"eur","reason":"InsufficientFunds","message":"not enough money"}`),
			},
			wantRequests: 2,
			wantReason:   "InsufficientFunds",
			wantMessage:  `payment service reported charge ch_1 as "declined": not enough money`,
		},
		{
			name:         "canceled without a reason",
			answers:      []string{charges(fmt.Sprintf(testCharge, "canceled"))},
			wantRequests: 1,
			wantReason:   payment.ReasonCardDeclined,
			wantMessage:  `reported charge ch_1 as "canceled"`,
		},
		{
			name:         "pending, then gone",
			answers:      []string{charges(pending), charges(other)},
			wantRequests: 2,
			wantMessage:  "cannot settle charge ch_1: the payment service's lookup endpoint holds no charge with this id",
		},
		{
			name:         "a lookup that fails",
			answers:      []string{charges(pending), `{"charges":`},
			wantRequests: 2,
			wantMessage:  "cannot settle charge ch_1: payment service's lookup endpoint answered 200 OK with a body that is not the expected JSON",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := settleAgainst(t, tt.answers, func(ctx context.Context, p *httpprovider.LookupProvider) (payment.Outcome, error) {
				return p.Settle(ctx, testKey, "ch_1")
			})
			got, err, sent := s.got, s.err, s.sent

			g.Expect(sent).To(HaveLen(tt.wantRequests))
			for _, r := range sent {
				g.Expect(r.method).To(Equal(http.MethodGet), "settling never charges")
				g.Expect(r.path).To(Equal(lookupPath))
				g.Expect(r.query["key"]).To(Equal([]string{testKey}))
			}
			if tt.wantOutcome != nil {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got).To(Equal(*tt.wantOutcome))
				return
			}
			g.Expect(got).To(Equal(payment.Outcome{}))
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantMessage)))
			if tt.wantSettling {
				_, ok := payment.IsSettling(err)
				g.Expect(ok).To(BeTrue(), "want settling: %v", err)
				return
			}
			if tt.wantReason == "" {
				expectTransient(g, err)
				return
			}
			refusal, ok := payment.IsRefusal(err)
			g.Expect(ok).To(BeTrue(), "want a refusal: %v", err)
			g.Expect(err).To(MatchError(payment.ErrDeclined))
			g.Expect(refusal.Reason).To(Equal(tt.wantReason))
		})
	}

	t.Run("a lookup's Retry-After is kept", func(t *testing.T) {
		g := NewWithT(t)
		srv, _ := newServer(t, answer(http.StatusServiceUnavailable, map[string]string{"Retry-After": "4"}, ""))
		p := newLooker(t, srv, httpprovider.Config{})

		_, err := p.Settle(context.Background(), testKey, "ch_1")

		expectTransient(g, err)
		g.Expect(payment.RetryAfter(err)).To(Equal(4 * time.Second))
		g.Expect(err.Error()).To(ContainSubstring("cannot settle charge ch_1: payment service's lookup endpoint answered 503"))
	})

	t.Run("still pending when the context ends", func(t *testing.T) {
		g := NewWithT(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		srv, requests := newServer(t, answer(http.StatusOK, nil, charges(pending)))
		// The context ends once the first answer was read, and the poll
		// interval is far longer than the test: the context, not the timer,
		// ends the wait.
		client := &http.Client{Transport: cancelAfterAnswer{next: srv.Client().Transport, cancel: cancel}}
		p := newLooker(t, srv, httpprovider.Config{HTTPClient: client, PollInterval: time.Hour})

		_, err := p.Settle(ctx, testKey, "ch_1")

		expectTransient(g, err)
		g.Expect(err).To(MatchError(context.Canceled))
		g.Expect(err.Error()).To(ContainSubstring(`charge ch_1 is still "pending"`))
		g.Expect(drain(requests)).To(HaveLen(1))
	})

	t.Run("an id or key it cannot look up sends nothing", func(t *testing.T) {
		g := NewWithT(t)
		srv, requests := newServer(t, answer(http.StatusOK, nil, charges(pending)))
		p := newLooker(t, srv, httpprovider.Config{})

		_, err := p.Settle(context.Background(), testKey, "")
		expectTransient(g, err)
		_, err = p.Settle(context.Background(), "", "ch_1")
		expectTransient(g, err)
		g.Expect(requests).To(BeEmpty())
	})
}
