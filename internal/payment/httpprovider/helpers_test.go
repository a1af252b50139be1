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

// Helpers of the tests of the charge and lookup endpoints: a loopback
// service that records what it receives, and the answers it gives.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/paymenttest"
)

const (
	testKey      = "billing/invoice-2026-0001"
	otherKey     = "billing/invoice-2026-0002"
	testToken    = "tok_live_S3cr3tValue9xq"
	testCharge   = `{"idempotencyKey":"billing/invoice-2026-0001","id":"ch_1","status":"%s","amount":1999,"currency":"eur"}`
	noCharges    = `{"charges":[]}`
	testAccount  = "acct_42"
	lookupPath   = "/v1/charges/lookup"
	chargePath   = "/v1/charges"
	jsonType     = "application/json"
	testFinger   = "sha256:0123abcd"
	otherFinger  = "sha256:ffff0000"
	createdEpoch = 1772368200
	// tenMiB is ten times the default limit of a response body.
	tenMiB = 10 << 20
)

// classes are the error classes a caller tests for with errors.Is.
var classes = []error{payment.ErrDeclined, payment.ErrInvalid, payment.ErrKeyReused, payment.ErrInFlight}

// creators are the calls that send a request that creates something at the
// service under testKey: a charge, a refund.
var creators = []struct {
	name string
	call func(ctx context.Context, p payment.Provider) (payment.Outcome, error)
}{
	{name: "Charge", call: chargeCall},
	{name: "Refund", call: refundCall},
}

// chargeCall charges testRequest under testKey.
func chargeCall(ctx context.Context, p payment.Provider) (payment.Outcome, error) {
	return p.Charge(ctx, testKey, testRequest)
}

// refundCall refunds testRefund under testKey.
func refundCall(ctx context.Context, p payment.Provider) (payment.Outcome, error) {
	return p.(payment.Refunder).Refund(ctx, testKey, testRefund)
}

// received is a request as the payment service saw it.
type received struct {
	method string
	path   string
	query  url.Values
	header http.Header
	body   []byte
}

// newServer starts a loopback server that records each request on the
// returned channel and answers with respond. The server is closed when the
// test ends.
func newServer(t *testing.T, respond http.HandlerFunc) (*httptest.Server, <-chan received) {
	t.Helper()
	requests := make(chan received, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		requests <- received{method: r.Method, path: r.URL.Path, query: r.URL.Query(), header: r.Header.Clone(), body: body}
		respond(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, requests
}

// answer returns a handler that writes status, headers and body.
func answer(status int, header map[string]string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		if _, ok := header["Content-Type"]; !ok && body != "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// expectTransient asserts that err is an uncertain outcome
// (paymenttest.CheckTransient) of no refusal class.
func expectTransient(g Gomega, err error) {
	g.Expect(paymenttest.CheckTransient(err)).To(Succeed())
	for _, class := range classes[:3] {
		g.Expect(errors.Is(err, class)).To(BeFalse(), "a transient error must not be %v", class)
	}
}

// expectCanceledBeforeSending asserts that err is the uncertain error of a
// call whose context was done before it started, and that nothing reached
// the service.
func expectCanceledBeforeSending(g Gomega, err error, requests <-chan received) {
	expectTransient(g, err)
	g.Expect(err).To(MatchError(context.Canceled))
	g.Expect(requests).To(BeEmpty())
}

// expectNoToken asserts that err says nothing of the token.
func expectNoToken(g Gomega, err error) {
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).NotTo(ContainSubstring(testToken))
	g.Expect(err.Error()).NotTo(ContainSubstring(testToken[:12]), "no recognisable part of the token either")
}

// sequence returns a handler that writes the i-th body with 200 to the i-th
// request, and the last body to every later one.
func sequence(bodies ...string) http.HandlerFunc {
	var n atomic.Int64
	return func(w http.ResponseWriter, r *http.Request) {
		i := min(int(n.Add(1))-1, len(bodies)-1)
		answer(http.StatusOK, nil, bodies[i])(w, r)
	}
}

// charges is a lookup answer holding the charges, each a JSON object.
func charges(c ...string) string {
	return `{"charges":[` + strings.Join(c, ",") + `]}`
}

// refundEntry is a refund of ch_1 in a lookup answer, with the extra
// fields, each a JSON "name":value, after its own (one named as its own
// wins over it).
func refundEntry(key, id, status string, amount, created int64, extra ...string) string {
	fields := append([]string{fmt.Sprintf(`"idempotencyKey":%q,"id":%q,"status":%q,"amount":%d,"currency":"eur","created":%d,"fingerprint":"sha256:%s","charge":"ch_1"`,
		key, id, status, amount, created, id)}, extra...)
	return "{" + strings.Join(fields, ",") + "}"
}

// book is a lookup answer holding the charges and the refunds, each a
// JSON object.
func book(charges, refunds []string) string {
	return `{"charges":[` + strings.Join(charges, ",") + `],"refunds":[` + strings.Join(refunds, ",") + `]}`
}

// drain returns every request received so far.
func drain(requests <-chan received) []received {
	var got []received
	for {
		select {
		case r := <-requests:
			got = append(got, r)
		default:
			return got
		}
	}
}

// hangUp returns a handler that writes head, the start of an answer as it
// goes on the wire, and closes the connection in the middle of it.
func hangUp(head string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		_, _ = buf.WriteString(head)
		_ = buf.Flush()
		_ = conn.Close()
	}
}

// huge returns a handler that answers 200 with a JSON object of ten MiB:
// start, then a padding field.
func huge(start string) http.HandlerFunc {
	return answer(http.StatusOK, nil, start+`"padding":"`+strings.Repeat("x", tenMiB)+`"}`)
}

// echoToken returns a handler that answers status with a body of
// contentType, format with TOKEN replaced by the bearer token the service
// received, as a careless or hostile service might.
func echoToken(status int, contentType, format string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, strings.ReplaceAll(format, "TOKEN", token))
	}
}

// cancelAfterAnswer is a transport that calls cancel when the body of an
// answer is closed, after the caller read it.
type cancelAfterAnswer struct {
	next   http.RoundTripper
	cancel context.CancelFunc
}

// RoundTrip sends r with the next transport.
func (c cancelAfterAnswer) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = cancelOnClose{ReadCloser: resp.Body, cancel: c.cancel}
	return resp, nil
}

// cancelOnClose calls cancel when it is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

// Close closes the body, then calls cancel.
func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
