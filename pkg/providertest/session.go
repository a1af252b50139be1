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

package providertest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/httpprovider"
)

// This file is the harness the rules share: a session sends charges with
// the operator's own client (httpprovider) through a transport that records
// each raw answer (transport.go), so that a rule sees both what the service
// answered and how the operator reads it.

// Bounds of the retries of a rule that waits for a final answer, such as
// the retry after a lost response that may find the first request still in
// flight.
const (
	maxAttempts  = 10
	minRetryWait = 100 * time.Millisecond
	maxRetryWait = 2 * time.Second
)

// session is one run of the rules against a service.
type session struct {
	opts     Options
	client   *http.Client
	provider payment.Provider
	// looker is nil without a lookup endpoint.
	looker *httpprovider.LookupProvider
	// refunder is nil without a refund endpoint.
	refunder payment.Refunder
	// lister is nil without a list endpoint.
	lister payment.Lister
	keys   atomic.Int64
}

// newSession validates opts and builds the operator's client for them.
func newSession(opts Options) (*session, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	// The longest key sent is the prefix, a rule's name and a counter.
	longest := ""
	for _, r := range rules {
		if len(r.name) > len(longest) {
			longest = r.name
		}
	}
	if !payment.ValidKey(opts.KeyPrefix + longest + "-999") {
		return nil, errors.New("cannot use the key prefix: keys must be at most 255 visible ASCII characters")
	}
	base := opts.HTTPClient
	if base == nil {
		base = payment.NewHTTPClient()
	}
	client := *base
	client.Transport = recorder{next: transportOf(base.Transport)}
	s := &session{opts: opts, client: &client}
	if s.provider, err = s.newProvider(opts.Token); err != nil {
		return nil, err
	}
	s.looker, _ = s.provider.(*httpprovider.LookupProvider)
	if opts.RefundURL != "" {
		s.refunder, _ = s.provider.(payment.Refunder)
	}
	if opts.ListURL != "" {
		s.lister, _ = s.provider.(payment.Lister)
	}
	return s, nil
}

// transportOf is t, or http.DefaultTransport when t is nil.
func transportOf(t http.RoundTripper) http.RoundTripper {
	if t == nil {
		return http.DefaultTransport
	}
	return t
}

// newProvider is the operator's client of the service with token.
func (s *session) newProvider(token string) (payment.Provider, error) {
	p, err := httpprovider.New(httpprovider.Config{
		URL:          s.opts.URL,
		LookupURL:    s.opts.LookupURL,
		RefundURL:    s.opts.RefundURL,
		ListURL:      s.opts.ListURL,
		Token:        token,
		HTTPClient:   s.client,
		PollInterval: minRetryWait,
	})
	if err != nil {
		return nil, fmt.Errorf("cannot check the payment service: %w", err)
	}
	return p, nil
}

// run runs one rule and returns its result, without the token.
func (s *session) run(ctx context.Context, r rule) Result {
	status, message := r.check(ctx, s)
	if ctx.Err() != nil && status != Skip {
		status, message = Fail, fmt.Sprintf("stopped before the end (%v): %s", context.Cause(ctx), message)
	}
	if tok := strings.TrimSpace(s.opts.Token); tok != "" {
		message = strings.ReplaceAll(message, tok, "[token]")
	}
	if ev := s.opts.Events; ev != nil && strings.TrimSpace(ev.Secret) != "" {
		message = strings.ReplaceAll(message, strings.TrimSpace(ev.Secret), "[secret]")
	}
	return Result{Rule: r.name, Status: status, Message: message}
}

// key returns a new idempotency key for the rule named name.
func (s *session) key(name string) string {
	return fmt.Sprintf("%s%s-%d", s.opts.KeyPrefix, name, s.keys.Add(1))
}

// request is the charge request of the rules, with the payment method pm.
func (s *session) request(pm string) payment.ChargeRequest {
	return payment.ChargeRequest{
		Amount:        s.opts.Amount,
		Currency:      s.opts.Currency,
		PaymentMethod: pm,
		Description:   "paymentjob-operator conformance check",
	}
}

// succeeding is the request of a charge that succeeds.
func (s *session) succeeding() payment.ChargeRequest {
	return s.request(s.opts.SucceedingPaymentMethod)
}

// answer is the service's answer to one charge (or refund) and the
// operator's reading.
type answer struct {
	// refund is true for the answer of the refund endpoint.
	refund bool
	// status is 0 when no answer was read.
	status int
	header http.Header
	body   []byte
	// outcome and err are what the operator's client made of it: err is nil
	// for a charge, a *payment.Refusal when nothing was charged, anything
	// else when the outcome is uncertain.
	outcome payment.Outcome
	err     error
}

// charged reports whether the operator reads the answer as a charge.
func (a answer) charged() bool { return a.err == nil }

// refused reports whether the operator reads the answer as a refusal of
// class class.
func (a answer) refused(class error) bool {
	r, ok := payment.IsRefusal(a.err)
	return ok && errors.Is(r, class)
}

// uncertain reports whether the operator would send the request again.
func (a answer) uncertain() bool {
	_, refused := payment.IsRefusal(a.err)
	return a.err != nil && !refused
}

// charge sends req under key with the session's token and returns the
// answer, within the request timeout; x may ask the transport to tamper.
func (s *session) charge(ctx context.Context, key string, req payment.ChargeRequest, x *exchange) answer {
	return s.chargeWith(ctx, s.provider, key, req, x)
}

// chargeWith is charge through the provider p.
func (s *session) chargeWith(ctx context.Context, p payment.Provider, key string, req payment.ChargeRequest,
	x *exchange) answer {
	return s.send(ctx, x, func(ctx context.Context) (payment.Outcome, error) { return p.Charge(ctx, key, req) })
}

// send makes one request with call, within the request timeout, and returns
// its answer; x may ask the transport to tamper.
func (s *session) send(ctx context.Context, x *exchange, call func(context.Context) (payment.Outcome, error)) answer {
	if x == nil {
		x = &exchange{}
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	if x.cancelAfterWrite {
		x.cancel = cancel
	}
	out, err := call(context.WithValue(ctx, exchangeKey{}, x))
	return answer{status: x.status, header: x.header, body: x.body, outcome: out, err: err}
}

// chargeUntilFinal sends req under key until the operator would stop
// retrying: a charge or a refusal. It waits the answer's Retry-After,
// within bounds, between attempts, and returns the last answer.
func (s *session) chargeUntilFinal(ctx context.Context, key string, req payment.ChargeRequest) answer {
	return untilFinal(ctx, func() answer { return s.charge(ctx, key, req, nil) })
}

// untilFinal sends with send until the operator would stop retrying, as
// chargeUntilFinal says.
func untilFinal(ctx context.Context, send func() answer) answer {
	var a answer
	for range maxAttempts {
		if a = send(); !a.uncertain() {
			return a
		}
		wait := min(max(payment.RetryAfter(a.err), minRetryWait), maxRetryWait)
		select {
		case <-ctx.Done():
			return a
		case <-time.After(wait):
		}
	}
	return a
}

// lookup sends one lookup of keys; failure says what the service must
// change when the operator cannot use the answer, "" otherwise.
func (s *session) lookup(ctx context.Context, keys []string) (found map[string][]payment.Found, failure string) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	x := &exchange{}
	found, err := s.looker.Lookup(context.WithValue(ctx, exchangeKey{}, x), keys)
	if err != nil {
		return nil, lookupAdvice("the lookup of "+quoteKeys(keys), x, err)
	}
	return found, ""
}

// account sends the lookup without keys (the account probe); failure is as
// for lookup.
func (s *session) account(ctx context.Context) (failure string) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	x := &exchange{}
	if _, err := s.looker.Account(context.WithValue(ctx, exchangeKey{}, x)); err != nil {
		return lookupAdvice("the lookup without keys (the account probe)", x, err)
	}
	return ""
}

// quoteKeys is `key "a"` or `keys "a" and "b"`, for a message.
func quoteKeys(keys []string) string {
	quoted := make([]string, 0, len(keys))
	for _, k := range keys {
		quoted = append(quoted, fmt.Sprintf("%q", k))
	}
	if len(quoted) == 1 {
		return "key " + quoted[0]
	}
	return "keys " + strings.Join(quoted[:len(quoted)-1], ", ") + " and " + quoted[len(quoted)-1]
}

// charges returns the charges the lookup holds under key that moved or may
// still move money; ok is false without a lookup endpoint, failure is as for
// lookup.
func (s *session) charges(ctx context.Context, key string) (found []payment.Found, ok bool, failure string) {
	if s.looker == nil {
		return nil, false, ""
	}
	all, failure := s.lookup(ctx, []string{key})
	if failure != "" {
		return nil, true, failure
	}
	for _, f := range all[key] {
		if f.State != payment.StateNotCharged {
			found = append(found, f)
		}
	}
	return found, true, ""
}

// onlyCharge checks with the lookup, when there is one, that id is the only
// charge under key that moved or may move money. It returns a failure
// message, or "" and a note for the message of a pass.
func (s *session) onlyCharge(ctx context.Context, key, id string) (failure, note string) {
	found, ok, failure := s.charges(ctx, key)
	switch {
	case !ok:
		return "", " (no lookup endpoint to count the charges)"
	case failure != "":
		return failure, ""
	case len(found) == 1 && found[0].ID == id:
		return "", "; the lookup holds that one charge"
	}
	ids := make([]string, 0, len(found))
	for _, f := range found {
		ids = append(ids, fmt.Sprintf("%q (%s)", f.ID, f.Status))
	}
	slices.Sort(ids)
	return fmt.Sprintf("the lookup holds %d charges under key %q, [%s], where only %q was answered",
		len(found), key, strings.Join(ids, ", "), id), ""
}
