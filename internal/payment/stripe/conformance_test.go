//go:build conformance

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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	stripego "github.com/stripe/stripe-go/v85"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// conformanceKey is a test-mode key of the shape stripe-mock accepts.
const conformanceKey = "sk_test_conformance123"

// stripeMockAddress matches the line in which stripe-mock reports the
// address of its HTTP listener.
var stripeMockAddress = regexp.MustCompile(`Listening for HTTP at address: (127\.0\.0\.1:\d+)`)

// TestConformance runs the adapter's requests against stripe-mock, Stripe's
// official mock, which validates every request against Stripe's OpenAPI
// spec and answers with fixture data. It ignores idempotency and never
// charges, so the tests assert only that our requests validate.
func TestConformance(t *testing.T) {
	base := startStripeMock(t)

	t.Run("Charge with every field", func(t *testing.T) {
		c := newConformanceCall(t, base)

		// stripe-mock answers with a fixture in requires_payment_method,
		// which Charge reports as declined; any other answer is fine as
		// long as stripe-mock accepted every parameter.
		out, err := c.p.Charge(c.ctx, "conformance/charge-1", payment.ChargeRequest{
			Amount:        2000,
			Currency:      "usd",
			Customer:      "cus_123",
			PaymentMethod: "pm_card_visa",
			Description:   "conformance test",
			Metadata:      map[string]string{"invoice": "42", "team": "billing"},
		})
		t.Logf("Charge answered: outcome %+v, error %v", out, err)
		c.expectCreateAccepted(err)
		c.g.Expect(c.rec.count(http.MethodPost, "/v1/payment_intents")).To(Equal(1))
		// Our metadata entries went with the user's, and were accepted.
		form := c.rec.form(http.MethodPost, "/v1/payment_intents")
		c.g.Expect(form.Get("metadata[" + payment.MetadataKeyIdempotencyKey + "]")).To(Equal("conformance/charge-1"))
		c.g.Expect(form.Get("metadata[" + payment.MetadataKeyFingerprint + "]")).To(HavePrefix("sha256:"))
		c.g.Expect(form.Get("metadata[invoice]")).To(Equal("42"))
		// No customer is present: confirmed off-session.
		c.g.Expect(form.Get("off_session")).To(Equal("true"))
	})

	t.Run("an intent waiting for the customer is canceled", func(t *testing.T) {
		c := newConformanceCall(t, base)
		// stripe-mock's fixture is made to wait for 3-D Secure, so that
		// the cancel request is sent and checked.
		c.rec.rewrite = func(req *http.Request, n int, body map[string]any) {
			if req.Method == http.MethodPost && req.URL.Path == "/v1/payment_intents" && n == 0 {
				body["status"] = string(stripego.PaymentIntentStatusRequiresAction)
			}
		}

		out, err := c.p.Charge(c.ctx, "conformance/charge-3ds", payment.ChargeRequest{
			Amount: 2000, Currency: "usd", PaymentMethod: "pm_card_authenticationRequired"})
		t.Logf("Charge answered: outcome %+v, error %v", out, err)
		c.expectCreateAccepted(err)
		c.g.Expect(c.rec.count(http.MethodPost, "/v1/payment_intents")).To(Equal(1))
		c.g.Expect(c.rec.count(http.MethodPost, "")).To(Equal(2), "one create, one cancel")
		cancel := c.rec.cancelForm()
		c.g.Expect(cancel).NotTo(BeNil(), "no cancel request was sent")
		c.g.Expect(cancel.Get("cancellation_reason")).To(Equal(string(stripego.PaymentIntentCancellationReasonAbandoned)))
	})

	t.Run("Charge with required fields only", func(t *testing.T) {
		c := newConformanceCall(t, base)

		_, err := c.p.Charge(c.ctx, "conformance/charge-2", payment.ChargeRequest{Amount: 150, Currency: "eur"})
		c.expectCreateAccepted(err)
	})

	t.Run("polling reads the intent", func(t *testing.T) {
		c := newConformanceCall(t, base)

		in, err := c.p.retrieve(c.ctx, "pi_123")
		c.g.Expect(err).NotTo(HaveOccurred())
		c.g.Expect(in.ID).NotTo(BeEmpty())

		// An intent seen processing is read again with GET, never created
		// again; the fixture it reads is final.
		_, err = c.p.settle(c.ctx, &stripego.PaymentIntent{ID: "pi_123", Status: stripego.PaymentIntentStatusProcessing}, false)
		if err != nil {
			var te *payment.TransientError
			c.g.Expect(errors.As(err, &te)).To(BeFalse(), "polling failed: %v", err)
		}
		c.expectReadsOnly("/v1/payment_intents/pi_123", 2)
	})

	t.Run("Lookup searches by the keys and follows pages", func(t *testing.T) {
		c := newConformanceCall(t, base)
		// stripe-mock answers one page; the first answer is made to say
		// there is another, so that the request for it is checked too.
		c.rec.rewrite = func(req *http.Request, n int, body map[string]any) {
			if req.URL.Path == "/v1/payment_intents/search" && n == 0 {
				body["has_more"] = true
				body["next_page"] = "page_2"
			}
		}

		// The fixtures carry none of our metadata, so nothing is found;
		// the quote must be escaped for the query to be valid.
		found, err := c.p.Lookup(c.ctx, []string{"conformance/lookup-1", "conformance/o'brien-2", "conformance/lookup-3"})
		c.g.Expect(err).NotTo(HaveOccurred())
		c.g.Expect(found).To(BeEmpty())
		c.expectReadsOnly("/v1/payment_intents/search", 2)
	})

	t.Run("Settle reads the intent", func(t *testing.T) {
		c := newConformanceCall(t, base)
		// The fixture carries no key; it is given the one it is settled
		// under, so that Settle goes on to its status.
		const key = "conformance/settle-1"
		c.rec.rewrite = func(_ *http.Request, _ int, body map[string]any) {
			body["metadata"] = map[string]any{payment.MetadataKeyIdempotencyKey: key}
		}

		out, err := c.p.Settle(c.ctx, key, "pi_123")
		t.Logf("Settle answered: outcome %+v, error %v", out, err)
		// The fixture is in requires_payment_method: declined.
		c.g.Expect(errors.Is(err, payment.ErrDeclined)).To(BeTrue(), "Settle failed: %v", err)
		c.expectReadsOnly("/v1/payment_intents/pi_123", 1)
	})

	t.Run("Account reads the account of the key", func(t *testing.T) {
		c := newConformanceCall(t, base)

		id, err := c.p.Account(c.ctx)
		c.g.Expect(err).NotTo(HaveOccurred())
		c.g.Expect(id).To(HavePrefix("acct_"))
		c.expectReadsOnly("/v1/account", 1)
	})
}

// conformanceCall is what one subtest of TestConformance works with: a
// provider for stripe-mock whose exchanges rec records, the subtest's
// assertions, and a context that bounds its calls.
type conformanceCall struct {
	g   *WithT
	ctx context.Context
	p   *Provider
	rec *recorder
}

// newConformanceCall is a conformanceCall for stripe-mock at base, whose
// context ends after 30 seconds or with the subtest.
func newConformanceCall(t *testing.T, base string) conformanceCall {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	p, rec := conformanceProvider(t, base)
	return conformanceCall{g: NewWithT(t), ctx: ctx, p: p, rec: rec}
}

// expectCreateAccepted asserts that stripe-mock accepted every request of
// a Charge that answered err: none is refused as invalid.
func (c conformanceCall) expectCreateAccepted(err error) {
	c.rec.expectAccepted(c.g)
	c.g.Expect(errors.Is(err, payment.ErrInvalid)).To(BeFalse(), "stripe-mock refused the request: %v", err)
}

// expectReadsOnly asserts that stripe-mock accepted every request, that n
// of them were GETs of path, and that nothing was created.
func (c conformanceCall) expectReadsOnly(path string, n int) {
	c.rec.expectAccepted(c.g)
	c.g.Expect(c.rec.count(http.MethodGet, path)).To(Equal(n))
	c.g.Expect(c.rec.count(http.MethodPost, "")).To(Equal(0))
}

// startStripeMock starts the stripe-mock binary named by STRIPE_MOCK on
// free loopback ports, waits until it answers, and stops it when the test
// ends. It returns the base URL of its HTTP listener.
func startStripeMock(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("STRIPE_MOCK")
	if bin == "" {
		t.Fatal("STRIPE_MOCK is not set: set it to the stripe-mock binary (make test-conformance installs github.com/stripe/stripe-mock@v0.203.0 into bin/ and sets it)")
	}
	if info, err := os.Stat(bin); err != nil || info.IsDir() {
		t.Fatalf("STRIPE_MOCK=%s is not a stripe-mock binary: %v (make test-conformance installs github.com/stripe/stripe-mock@v0.203.0 into bin/)", bin, err)
	}

	// -http-addr alone leaves HTTPS on its default port on every address,
	// so both listeners are bound to loopback, on ports the system picks.
	out := &mockOutput{found: make(chan string, 1)}
	cmd := exec.Command(bin, "-http-addr", "127.0.0.1:0", "-https-addr", "127.0.0.1:0")
	cmd.Stdout = out
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		t.Fatalf("cannot start stripe-mock: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		t.Logf("stripe-mock stopped: %v", <-exited)
	})

	var addr string
	select {
	case addr = <-out.found:
	case err := <-exited:
		t.Fatalf("stripe-mock exited before listening: %v\n%s", err, out.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("stripe-mock did not report its address within 30s:\n%s", out.String())
	}
	base := "http://" + addr

	// The listener is bound before the address is printed; wait until the
	// server answers a request.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if err := ping(ctx, base); err == nil {
			return base
		} else if ctx.Err() != nil {
			t.Fatalf("stripe-mock at %s did not answer within 30s: %v\n%s", base, err, out.String())
		}
		select {
		case err := <-exited:
			t.Fatalf("stripe-mock exited: %v\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ping asks stripe-mock for an intent.
func ping(ctx context.Context, base string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/payment_intents/pi_123", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+conformanceKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("answered %s", resp.Status)
	}
	return nil
}

// mockOutput collects stripe-mock's output and sends the address of its
// HTTP listener on found once it is printed.
type mockOutput struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	sent  bool
	found chan string
}

// Write collects p and looks for the address.
func (o *mockOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	if !o.sent {
		if m := stripeMockAddress.FindStringSubmatch(o.buf.String()); m != nil {
			o.sent = true
			o.found <- m[1]
		}
	}
	return len(p), nil
}

// String returns the output so far.
func (o *mockOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// conformanceProvider is a Provider for stripe-mock at base whose HTTP
// client records every exchange.
func conformanceProvider(t *testing.T, base string) (*Provider, *recorder) {
	t.Helper()
	rec := &recorder{next: http.DefaultTransport}
	p, err := New(Config{
		APIKey:          conformanceKey,
		APIBase:         base,
		HTTPClient:      &http.Client{Transport: rec},
		PollInterval:    time.Millisecond,
		MaxPollInterval: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("cannot create provider: %v", err)
	}
	return p, rec
}

// exchange is one request to stripe-mock and its answer.
type exchange struct {
	method, path string
	// form is the request's form body.
	form   url.Values
	status int
	body   string
}

// recorder is an http.RoundTripper that records every exchange, with the
// body of answers that are errors.
type recorder struct {
	next http.RoundTripper
	// rewrite, if set, changes the JSON of each successful answer to req,
	// the nth with its path, before the adapter reads it: stripe-mock
	// answers with fixtures, and some paths are only taken with others.
	rewrite   func(req *http.Request, n int, body map[string]any)
	mu        sync.Mutex
	exchanges []exchange
}

// RoundTrip sends req and records it.
func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	e := exchange{method: req.Method, path: req.URL.Path}
	if req.Body != nil {
		sent, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		if e.form, err = url.ParseQuery(string(sent)); err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(sent))
	}
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	e.status = resp.StatusCode
	switch {
	case resp.StatusCode >= http.StatusBadRequest:
		body, err := replaceBody(resp)
		if err != nil {
			return nil, err
		}
		e.body = string(body)
	case r.rewrite != nil:
		body, err := replaceBody(resp)
		if err != nil {
			return nil, err
		}
		var answer map[string]any
		if err := json.Unmarshal(body, &answer); err != nil {
			return nil, fmt.Errorf("cannot rewrite the answer of stripe-mock: %w", err)
		}
		r.rewrite(req, r.count(req.Method, req.URL.Path), answer)
		if body, err = json.Marshal(answer); err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Del("Content-Length")
	}
	r.mu.Lock()
	r.exchanges = append(r.exchanges, e)
	r.mu.Unlock()
	return resp, nil
}

// replaceBody reads the body of resp, replaces it with a copy, and returns
// it.
func replaceBody(resp *http.Response) ([]byte, error) {
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

// form is the form body of the first exchange with method and path.
func (r *recorder) form(method, path string) url.Values {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.exchanges {
		if e.method == method && e.path == path {
			return e.form
		}
	}
	return nil
}

// cancelForm is the form body of the first cancel of an intent, or nil.
func (r *recorder) cancelForm() url.Values {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.exchanges {
		if e.method == http.MethodPost && strings.HasPrefix(e.path, "/v1/payment_intents/") &&
			strings.HasSuffix(e.path, "/cancel") {
			if e.form == nil {
				return url.Values{}
			}
			return e.form
		}
	}
	return nil
}

// expectAccepted asserts that requests were sent and that stripe-mock
// accepted every one: a 4xx from stripe-mock means the request does not
// match Stripe's OpenAPI spec.
func (r *recorder) expectAccepted(g Gomega) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g.Expect(r.exchanges).NotTo(BeEmpty(), "no request reached stripe-mock")
	for _, e := range r.exchanges {
		g.Expect(e.status).To(BeNumerically("<", http.StatusBadRequest),
			"stripe-mock rejected %s %s with HTTP %d: %s", e.method, e.path, e.status, strings.TrimSpace(e.body))
	}
}

// count is the number of exchanges with method whose path is path, or any
// path when path is empty.
func (r *recorder) count(method, path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.exchanges {
		if e.method == method && (path == "" || e.path == path) {
			n++
		}
	}
	return n
}
