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
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/httpprovider"
)

// testRequest is a request with every field set.
var testRequest = payment.ChargeRequest{
	Amount:        1999,
	Currency:      "eur",
	Customer:      "cus_123",
	PaymentMethod: "pm_card_visa",
	Description:   "Invoice 2026-0001",
	Metadata:      map[string]string{"paymentjob": "billing/invoice"},
}

// newProvider is the provider New builds from cfg.
func newProvider(t *testing.T, cfg httpprovider.Config) payment.Provider {
	t.Helper()
	p, err := httpprovider.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

func TestNewValidatesTheConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     httpprovider.Config
		wantErr string
	}{
		{name: "https url", cfg: httpprovider.Config{URL: "https://payments.internal/charges"}},
		{name: "http url with a port and a token", cfg: httpprovider.Config{URL: "http://127.0.0.1:8080/v1/charges", Token: testToken}},
		{name: "token with the newline of a file-based secret", cfg: httpprovider.Config{URL: "https://p.example/c", Token: testToken + "\n"}},
		{name: "empty url", cfg: httpprovider.Config{}, wantErr: "scheme must be http or https"},
		{name: "ftp url", cfg: httpprovider.Config{URL: "ftp://payments.internal/charges"}, wantErr: `not "ftp"`},
		{name: "relative url", cfg: httpprovider.Config{URL: "/charges"}, wantErr: "scheme must be http or https"},
		{name: "url without a host", cfg: httpprovider.Config{URL: "https:///charges"}, wantErr: "with a host"},
		{name: "opaque url", cfg: httpprovider.Config{URL: "https:payments.internal"}, wantErr: "with a host"},
		{name: "url that does not parse", cfg: httpprovider.Config{URL: "https://pay ments.internal/%zz" + testToken}, wantErr: "not a valid URL"},
		{name: "url with credentials", cfg: httpprovider.Config{URL: "https://user:" + testToken + "@payments.internal/c"}, wantErr: "user information"},
		{name: "token with a line break inside", cfg: httpprovider.Config{URL: "https://p.example/c", Token: testToken + "\r\nX-Evil: 1"}, wantErr: "not allowed in an HTTP header"},
		{name: "negative response limit", cfg: httpprovider.Config{URL: "https://p.example/c", MaxResponseBytes: -1}, wantErr: "maximum response size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			p, err := httpprovider.New(tt.cfg)
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(p).NotTo(BeNil())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(err.Error()).NotTo(ContainSubstring(testToken))
			g.Expect(p).To(BeNil())
		})
	}
}

func TestChargeSendsTheContractRequest(t *testing.T) {
	tests := []struct {
		name, token, wantAuth string
		req                   payment.ChargeRequest
		wantFields            map[string]any
	}{
		{
			name:     "every field and a token",
			token:    testToken + "\n",
			req:      testRequest,
			wantAuth: "Bearer " + testToken,
			wantFields: map[string]any{
				"amount":         float64(1999),
				"currency":       "eur",
				"customer":       "cus_123",
				"paymentMethod":  "pm_card_visa",
				"description":    "Invoice 2026-0001",
				"metadata":       map[string]any{"paymentjob": "billing/invoice"},
				"idempotencyKey": testKey,
				"fingerprint":    payment.RequestHash(testKey, testRequest),
			},
		},
		{
			name:     "empty optional fields are left out and no token sends no Authorization",
			req:      payment.ChargeRequest{Amount: 50, Currency: "usd"},
			wantAuth: "",
			wantFields: map[string]any{
				"amount":         float64(50),
				"currency":       "usd",
				"idempotencyKey": testKey,
				"fingerprint":    payment.RequestHash(testKey, payment.ChargeRequest{Amount: 50, Currency: "usd"}),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			srv, requests := newServer(t, answer(http.StatusOK, nil, `{"id":"ch_1","status":"succeeded"}`))
			p := newProvider(t, httpprovider.Config{URL: srv.URL + "/v1/charges", Token: tt.token})

			_, err := p.Charge(context.Background(), testKey, tt.req)
			g.Expect(err).NotTo(HaveOccurred())

			g.Expect(requests).To(HaveLen(1))
			got := <-requests
			g.Expect(got.method).To(Equal(http.MethodPost))
			g.Expect(got.path).To(Equal("/v1/charges"))
			g.Expect(got.header.Get("Content-Type")).To(Equal("application/json"))
			g.Expect(got.header.Get("Accept")).To(Equal("application/json"))
			g.Expect(got.header.Get("Idempotency-Key")).To(Equal(testKey))
			g.Expect(got.header.Get("User-Agent")).To(Equal("paymentjob-operator"))
			if tt.wantAuth == "" {
				g.Expect(got.header).NotTo(HaveKey("Authorization"))
			} else {
				g.Expect(got.header.Values("Authorization")).To(Equal([]string{tt.wantAuth}))
			}

			var fields map[string]any
			g.Expect(json.Unmarshal(got.body, &fields)).To(Succeed())
			g.Expect(fields).To(Equal(tt.wantFields))
		})
	}
}

// answerCase is an answer of the service and what the call that sent the
// request must make of it.
type answerCase struct {
	name   string
	status int
	header map[string]string
	body   string

	wantOutcome    *payment.Outcome       // success
	wantSettling   *payment.SettlingError // accepted, settles later
	wantClass      error                  // errors.Is; nil for a bare transient
	wantRefusal    bool
	wantReason     string
	wantRetryAfter time.Duration
	wantMessage    string
	notWant        string // never in the message
}

// check asserts that got and err are what the answer must be made into.
func (tt answerCase) check(g Gomega, got payment.Outcome, err error) {
	if tt.wantOutcome != nil {
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(*tt.wantOutcome))
		return
	}
	g.Expect(err).To(HaveOccurred())
	g.Expect(got).To(Equal(payment.Outcome{}))
	if tt.wantSettling != nil {
		settling, ok := payment.IsSettling(err)
		g.Expect(ok).To(BeTrue(), "settling: %v", err)
		g.Expect(*settling).To(Equal(*tt.wantSettling))
		return
	}
	refusal, refused := payment.IsRefusal(err)
	g.Expect(refused).To(Equal(tt.wantRefusal), "refusal: %v", err)
	if tt.wantRefusal {
		g.Expect(refusal.Reason).To(Equal(tt.wantReason))
	} else if tt.wantClass == nil {
		expectTransient(g, err)
	}
	for _, class := range classes {
		g.Expect(errors.Is(err, class)).To(Equal(class == tt.wantClass), "errors.Is(err, %v) for %v", class, err)
	}
	g.Expect(payment.RetryAfter(err)).To(Equal(tt.wantRetryAfter))
	g.Expect(err.Error()).To(ContainSubstring(tt.wantMessage))
	g.Expect(err.Error()).NotTo(ContainSubstring(testToken))
	if tt.notWant != "" {
		g.Expect(err.Error()).NotTo(ContainSubstring(tt.notWant))
		if tt.wantRefusal {
			g.Expect(refusal.Message).NotTo(ContainSubstring(tt.notWant))
		}
	}
}

func TestChargeMapsEveryAnswer(t *testing.T) {
	created := time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)
	tests := []answerCase{
		// Successes.
		{
			name: "200 succeeded with every field, created as unix seconds", status: 200,
			body:        `{"id":"ch_1","status":"succeeded","amount":1999,"currency":"eur","created":1772368200}`,
			wantOutcome: &payment.Outcome{ID: "ch_1", Status: "succeeded", Amount: 1999, Currency: "eur", Created: created},
		},
		{
			name: "201 paid with created as RFC 3339", status: 201,
			body:        `{"id":"ch_2","status":"paid","amount":1999,"currency":"eur","created":"2026-03-01T13:30:00+01:00"}`,
			wantOutcome: &payment.Outcome{ID: "ch_2", Status: "paid", Amount: 1999, Currency: "eur", Created: created},
		},
		{
			name: "200 completed, status compared without case", status: 200,
			body:        `{"id":"ch_3","status":" Completed "}`,
			wantOutcome: &payment.Outcome{ID: "ch_3", Status: " Completed ", Amount: 1999, Currency: "eur"},
		},
		{
			name: "200 without status, amount or currency takes them from the request", status: 200,
			body:        `{"id":"ch_4"}`,
			wantOutcome: &payment.Outcome{ID: "ch_4", Amount: 1999, Currency: "eur"},
		},
		{
			name: "200 replayed through the Idempotent-Replayed header", status: 200,
			header:      map[string]string{"Idempotent-Replayed": "true"},
			body:        `{"id":"ch_5","status":"succeeded"}`,
			wantOutcome: &payment.Outcome{ID: "ch_5", Status: "succeeded", Amount: 1999, Currency: "eur", Replayed: true},
		},
		{
			name: "200 replayed through the body", status: 200,
			body:        `{"id":"ch_6","status":"succeeded","replayed":true}`,
			wantOutcome: &payment.Outcome{ID: "ch_6", Status: "succeeded", Amount: 1999, Currency: "eur", Replayed: true},
		},
		{
			name: "200 with Idempotent-Replayed false is not a replay", status: 200,
			header:      map[string]string{"Idempotent-Replayed": "false"},
			body:        `{"id":"ch_7","status":"succeeded"}`,
			wantOutcome: &payment.Outcome{ID: "ch_7", Status: "succeeded", Amount: 1999, Currency: "eur"},
		},

		// 2xx that say the payment failed: definitive.
		{
			name: "200 failed", status: 200, body: `{"id":"ch_8","status":"failed"}`,
			wantClass: payment.ErrDeclined, wantRefusal: true, wantReason: payment.ReasonCardDeclined,
			wantMessage: `reported the charge as "failed"`,
		},
		{
			name: "200 declined with a reason and message", status: 200,
			body:      `{"id":"ch_9","status":"declined","reason":"InsufficientFunds","message":"not enough money"}`,
			wantClass: payment.ErrDeclined, wantRefusal: true, wantReason: "InsufficientFunds",
			wantMessage: `reported the charge as "declined": not enough money`,
		},
		{
			name: "200 canceled", status: 200, body: `{"id":"ch_10","status":"canceled"}`,
			wantClass: payment.ErrDeclined, wantRefusal: true, wantReason: payment.ReasonCardDeclined,
			wantMessage: `"canceled"`,
		},

		// 2xx whose outcome is not known yet, or not understood.
		{
			name: "200 processing is accepted, settling later", status: 200,
			header: map[string]string{"Retry-After": "5"}, body: `{"id":"ch_11","status":"processing","method":"sepa_debit"}`,
			wantSettling: &payment.SettlingError{ID: "ch_11", Status: "processing", Method: "sepa_debit"},
		},
		{
			name: "200 processing without a method", status: 200, body: `{"id":"ch_11","status":"Processing"}`,
			wantSettling: &payment.SettlingError{ID: "ch_11", Status: "processing"},
		},
		{name: "200 pending is retried later", status: 200, body: `{"id":"ch_12","status":"pending"}`, wantMessage: `"pending"`},
		{name: "202 without a status is pending", status: 202, body: `{"id":"ch_13"}`, wantMessage: "without a status"},
		{name: "200 with an unknown status", status: 200, body: `{"id":"ch_14","status":"requires_action"}`, wantMessage: `unknown status "requires_action"`},
		{name: "200 without an id", status: 200, body: `{"status":"succeeded","amount":1999}`, wantMessage: "without a charge id"},
		{name: "200 with an empty id", status: 200, body: `{"id":"","status":"succeeded"}`, wantMessage: "without a charge id"},
		{name: "200 with null", status: 200, body: `null`, wantMessage: "without a charge id"},
		{name: "204 without a body", status: 204, wantMessage: "empty body"},
		{name: "200 with malformed JSON", status: 200, body: `{"id":"ch_15","status":`, wantMessage: "not the expected JSON"},
		{name: "200 with HTML", status: 200, header: map[string]string{"Content-Type": "text/html"}, body: `<html>ok</html>`, wantMessage: "not the expected JSON"},
		{name: "200 with a JSON array", status: 200, body: `[{"id":"ch_16"}]`, wantMessage: "not the expected JSON"},
		{name: "200 with an id that is a number", status: 200, body: `{"id":16,"status":"succeeded"}`, wantMessage: "not the expected JSON"},
		{name: "200 with a fractional amount", status: 200, body: `{"id":"ch_17","amount":19.99}`, wantMessage: "not the expected JSON"},
		{name: "200 with a malformed created", status: 200, body: `{"id":"ch_18","created":"yesterday"}`, wantMessage: "created is neither"},

		// Refusals.
		{
			name: "400 is invalid", status: 400, body: `{"message":"amount must be at least 50"}`,
			wantClass: payment.ErrInvalid, wantRefusal: true, wantReason: payment.ReasonInvalidRequest,
			wantMessage: "amount must be at least 50",
		},
		{
			name: "402 with a reason is declined with that reason", status: 402,
			body:      `{"reason":"InsufficientFunds","message":"your card has insufficient funds"}`,
			wantClass: payment.ErrDeclined, wantRefusal: true, wantReason: "InsufficientFunds",
			wantMessage: "your card has insufficient funds",
		},
		{
			name: "402 without a body is a declined card", status: 402,
			wantClass: payment.ErrDeclined, wantRefusal: true, wantReason: payment.ReasonCardDeclined,
			wantMessage: "402 Payment Required",
		},
		{
			name: "402 with a reason that is not a condition reason keeps it in the message", status: 402,
			body:      `{"reason":"insufficient-funds","message":"no money"}`,
			wantClass: payment.ErrDeclined, wantRefusal: true, wantReason: payment.ReasonCardDeclined,
			wantMessage: "insufficient-funds: no money",
		},
		{
			name: "402 with a snake_case reason, a valid condition reason", status: 402, body: `{"reason":"insufficient_funds","message":"no money"}`,
			wantClass: payment.ErrDeclined, wantRefusal: true, wantReason: "insufficient_funds", wantMessage: "no money",
		},
		{
			name: "402 with problem details", status: 402,
			header:    map[string]string{"Content-Type": "application/problem+json"},
			body:      `{"type":"about:blank","title":"Payment Required","detail":"card expired"}`,
			wantClass: payment.ErrDeclined, wantRefusal: true, wantReason: payment.ReasonCardDeclined,
			wantMessage: "card expired",
		},
		{
			name: "402 with a text body does not copy it", status: 402,
			header:    map[string]string{"Content-Type": "text/plain; charset=utf-8"},
			body:      "card\nrefused by the issuer\n",
			wantClass: payment.ErrDeclined, wantRefusal: true, wantReason: payment.ReasonCardDeclined,
			wantMessage: "payment service answered 402 Payment Required", notWant: "issuer",
		},
		{
			name: "400 with an HTML body does not copy it", status: 400,
			header:    map[string]string{"Content-Type": "text/html"},
			body:      "<html><body>internal admin console</body></html>",
			wantClass: payment.ErrInvalid, wantRefusal: true, wantReason: payment.ReasonInvalidRequest,
			wantMessage: "payment service answered 400 Bad Request", notWant: "console",
		},
		{
			name: "402 with a long message keeps 200 characters", status: 402,
			body:      `{"message":"` + strings.Repeat("m", 200) + `tail"}`,
			wantClass: payment.ErrDeclined, wantRefusal: true, wantReason: payment.ReasonCardDeclined,
			wantMessage: strings.Repeat("m", 200) + "...", notWant: "tail",
		},
		{
			name: "422 is a reused key", status: 422, body: `{"message":"key used with another body"}`,
			wantClass: payment.ErrKeyReused, wantRefusal: true, wantReason: payment.ReasonKeyReused,
			wantMessage: "key used with another body",
		},

		// Uncertain outcomes.
		{
			name: "409 is in flight with Retry-After", status: 409, header: map[string]string{"Retry-After": "3"},
			wantClass: payment.ErrInFlight, wantRetryAfter: 3 * time.Second,
		},
		{name: "409 without Retry-After", status: 409, wantClass: payment.ErrInFlight},
		{
			name: "429 with Retry-After in seconds", status: 429, header: map[string]string{"Retry-After": "7"},
			body: `{"message":"slow down"}`, wantRetryAfter: 7 * time.Second, wantMessage: "429 Too Many Requests; the service said: slow down",
		},
		{name: "500", status: 500, wantMessage: "500 Internal Server Error"},
		{
			name: "502 with a text body does not copy it", status: 502,
			header:      map[string]string{"Content-Type": "text/plain"},
			body:        "upstream 10.0.0.7:8080 refused; redis_password=hunter2",
			wantMessage: "payment service answered 502 Bad Gateway", notWant: "10.0.0.7",
		},
		{
			name: "503 with a Retry-After over the cap", status: 503, header: map[string]string{"Retry-After": "86400"},
			wantRetryAfter: 10 * time.Minute, wantMessage: "503 Service Unavailable",
		},
		{
			name: "502 with a Retry-After date far ahead", status: 502,
			header:         map[string]string{"Retry-After": time.Now().Add(48 * time.Hour).UTC().Format(http.TimeFormat)},
			wantRetryAfter: 10 * time.Minute, wantMessage: "502 Bad Gateway",
		},
		{
			name: "503 with a Retry-After date in the past", status: 503,
			header:      map[string]string{"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"},
			wantMessage: "503 Service Unavailable",
		},
		{name: "599 is a 5xx", status: 599, wantMessage: "answered 599"},

		// Configuration problems: not processed, but not the job's fault.
		{
			name: "401", status: 401, body: `{"message":"bad token"}`,
			wantMessage: "payment service answered 401 Unauthorized: check the PaymentProvider's secret (spec.http.secretKeyRef); the service said: bad token",
		},
		{name: "403", status: 403, wantMessage: "403 Forbidden: check that the token"},
		{name: "404", status: 404, wantMessage: "404 Not Found: check the PaymentProvider's url (spec.http.url)"},
		{
			name: "404 with a text body keeps the hint only", status: 404,
			header:      map[string]string{"Content-Type": "text/plain"},
			body:        "404 page not found: /admin/secrets",
			wantMessage: "payment service answered 404 Not Found: check the PaymentProvider's url (spec.http.url)", notWant: "secrets",
		},
		{name: "405", status: 405, wantMessage: "405 Method Not Allowed: check the PaymentProvider's url"},
		{name: "418, another 4xx", status: 418, wantMessage: "418 I'm a teapot: the contract does not use this status"},
		{name: "304, a 3xx", status: 304, wantMessage: "304 Not Modified: redirects are not followed"},
	}
	runAnswers(t, chargeCall, tests)
}

// runAnswers sends one request with call to a service that answers each of
// tests, and checks what call makes of the answer.
func runAnswers(t *testing.T, call func(ctx context.Context, p payment.Provider) (payment.Outcome, error), tests []answerCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			srv, requests := newServer(t, answer(tt.status, tt.header, tt.body))
			p := newProvider(t, httpprovider.Config{URL: srv.URL, RefundURL: srv.URL, Token: testToken})

			got, err := call(context.Background(), p)

			tt.check(g, got, err)
			g.Expect(drain(requests)).To(HaveLen(1), "one request, whatever the answer")
		})
	}
}

func TestChargeTreatsBrokenAnswersAsTransient(t *testing.T) {
	tests := []struct {
		name        string
		maxBytes    int64
		respond     http.HandlerFunc
		wantMessage string
	}{
		{
			name:        "body shorter than its Content-Length",
			respond:     answer(http.StatusOK, map[string]string{"Content-Length": "100"}, `{"id":"ch_1","sta`),
			wantMessage: "could not be read in full",
		},
		{
			name:        "connection closed in the middle of the body",
			respond:     hangUp("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 64\r\n\r\n{\"id\":\"ch_1\","),
			wantMessage: "could not be read in full",
		},
		{
			name:        "connection closed in the middle of a chunked 402",
			respond:     hangUp("HTTP/1.1 402 Payment Required\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n{\"reason\":\"Ca"),
			wantMessage: "402 Payment Required, but its body could not be read in full",
		},
		{name: "connection closed before any answer", respond: hangUp(""), wantMessage: "cannot reach the payment service"},
		{name: "10 MiB body over the default 1 MiB limit", respond: huge(`{"id":"ch_1",`), wantMessage: "larger than 1048576 bytes"},
		{
			name:        "one byte over a configured limit",
			maxBytes:    33,
			respond:     answer(http.StatusOK, nil, `{"id":"ch_1","status":"succeeded"}`), // 34 bytes
			wantMessage: "larger than 33 bytes",
		},
	}
	for _, c := range creators {
		for _, tt := range tests {
			t.Run(c.name+"/"+tt.name, func(t *testing.T) {
				g := NewWithT(t)
				srv, _ := newServer(t, tt.respond)
				p := newProvider(t, httpprovider.Config{URL: srv.URL, RefundURL: srv.URL, MaxResponseBytes: tt.maxBytes})

				got, err := c.call(context.Background(), p)

				expectTransient(g, err)
				g.Expect(errors.Is(err, payment.ErrInFlight)).To(BeFalse())
				g.Expect(err.Error()).To(ContainSubstring(tt.wantMessage))
				g.Expect(got).To(Equal(payment.Outcome{}))
			})
		}
	}
}

func TestChargeReadsABodyOfExactlyTheLimit(t *testing.T) {
	g := NewWithT(t)
	body := `{"id":"ch_1","status":"succeeded"}`
	srv, _ := newServer(t, answer(http.StatusOK, nil, body))
	p := newProvider(t, httpprovider.Config{URL: srv.URL, MaxResponseBytes: int64(len(body))})

	got, err := p.Charge(context.Background(), testKey, testRequest)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.ID).To(Equal("ch_1"))
}

func TestChargeGivesUpAtTheContextDeadline(t *testing.T) {
	g := NewWithT(t)
	release := make(chan struct{})
	srv, requests := newServer(t, func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	// Runs before srv.Close, so a handler still waiting cannot hold it up.
	t.Cleanup(func() { close(release) })
	p := newProvider(t, httpprovider.Config{URL: srv.URL})

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := p.Charge(ctx, testKey, testRequest)

	expectTransient(g, err)
	g.Expect(err).To(MatchError(context.DeadlineExceeded))
	g.Expect(requests).To(HaveLen(1), "the request reached the service, so the charge may have happened")
}

func TestChargeWithADoneContextSendsNothing(t *testing.T) {
	for _, c := range creators {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			srv, requests := newServer(t, answer(http.StatusOK, nil, `{"id":"ch_1"}`))
			p := newProvider(t, httpprovider.Config{URL: srv.URL, RefundURL: srv.URL})

			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := c.call(ctx, p)

			expectCanceledBeforeSending(g, err, requests)
		})
	}
}

func TestChargeDoesNotFollowRedirects(t *testing.T) {
	g := NewWithT(t)
	var followed atomic.Int64
	srv, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			followed.Add(1)
			answer(http.StatusOK, nil, `{"id":"ch_1","status":"succeeded"}`)(w, r)
			return
		}
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	})
	p := newProvider(t, httpprovider.Config{URL: srv.URL + "/charges", Token: testToken})

	_, err := p.Charge(context.Background(), testKey, testRequest)

	expectTransient(g, err)
	g.Expect(err.Error()).To(ContainSubstring("307 Temporary Redirect: redirects are not followed"))
	g.Expect(followed.Load()).To(BeZero())
}

func TestChargeNeverPutsTheTokenInAnError(t *testing.T) {
	tests := []struct {
		name    string
		respond http.HandlerFunc
	}{
		{name: "400 message", respond: echoToken(400, jsonType, `{"message":"bad request from TOKEN"}`)},
		{name: "402 message", respond: echoToken(402, jsonType, `{"reason":"CardDeclined","message":"declined for TOKEN"}`)},
		{name: "402 reason", respond: echoToken(402, jsonType, `{"reason":"TOKEN"}`)},
		{name: "402 problem detail", respond: echoToken(402, "application/problem+json", `{"title":"TOKEN","detail":"Bearer TOKEN"}`)},
		{name: "402 text", respond: echoToken(402, "text/plain", "Authorization: Bearer TOKEN")},
		{name: "422 message", respond: echoToken(422, jsonType, `{"message":"key reused by TOKEN"}`)},
		{name: "401 message", respond: echoToken(401, jsonType, `{"message":"TOKEN is not a valid token"}`)},
		{name: "403 text", respond: echoToken(403, "text/plain", "TOKEN")},
		{name: "429 title", respond: echoToken(429, "application/problem+json", `{"title":"TOKEN"}`)},
		{name: "500 message", respond: echoToken(500, jsonType, `{"message":"panic: header Bearer TOKEN"}`)},
		{name: "200 failed message", respond: echoToken(200, jsonType, `{"id":"ch_1","status":"failed","message":"TOKEN"}`)},
		{name: "200 failed reason", respond: echoToken(200, jsonType, `{"id":"ch_1","status":"failed","reason":"TOKEN"}`)},
		{name: "200 unknown status", respond: echoToken(200, jsonType, `{"id":"ch_1","status":"TOKEN"}`)},
		{name: "200 malformed", respond: echoToken(200, jsonType, `{"id":"TOKEN`)},
		{name: "200 malformed created", respond: echoToken(200, jsonType, `{"id":"ch_1","created":"TOKEN"}`)},
		{name: "200 wrong type", respond: echoToken(200, jsonType, `{"id":["TOKEN"]}`)},
		{name: "message split across lines", respond: echoToken(402, jsonType, `{"message":"a TOKEN\nb"}`)},
		{name: "message longer than the cut", respond: echoToken(402, jsonType, `{"message":"`+strings.Repeat("x", 490)+`TOKEN"}`)},
	}
	for _, c := range creators {
		for _, tt := range tests {
			t.Run(c.name+"/"+tt.name, func(t *testing.T) {
				g := NewWithT(t)
				srv, _ := newServer(t, tt.respond)
				p := newProvider(t, httpprovider.Config{URL: srv.URL, RefundURL: srv.URL, Token: testToken})

				_, err := c.call(context.Background(), p)

				expectNoToken(g, err)
				if r, ok := payment.IsRefusal(err); ok {
					g.Expect(r.Reason).NotTo(ContainSubstring(testToken))
					g.Expect(r.Message).NotTo(ContainSubstring(testToken))
				}
			})
		}
	}

	t.Run("service unreachable", func(t *testing.T) {
		g := NewWithT(t)
		srv := httptest.NewServer(http.NotFoundHandler())
		addr := srv.URL
		srv.Close()
		p := newProvider(t, httpprovider.Config{URL: addr, Token: testToken})

		_, err := p.Charge(context.Background(), testKey, testRequest)

		expectTransient(g, err)
		g.Expect(err.Error()).To(ContainSubstring("cannot reach the payment service"))
		g.Expect(err.Error()).NotTo(ContainSubstring(testToken))
	})
}
