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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/httpprovider"
)

// This file holds the rule of docs/providers.md, "Events": the events a
// service sends are signed, fresh, one id per event, and carry the
// documented fields. It runs only with Options.Events: a service that
// sends no events skips it.

// DefaultEventsWithin bounds how long the events rule waits for the events
// of its payments when Events.Within is zero.
const DefaultEventsWithin = 30 * time.Second

// Events says how to make the service send its events to the kit, for the
// events rule.
type Events struct {
	// Secret is the shared secret the service signs its events with (the
	// PaymentProvider's spec.events.secretRef). Required. It never appears
	// in a Result.
	Secret string
	// SendTo makes the service send its events to url, a receiver the kit
	// serves on 127.0.0.1 for the rule, from now on; the rule calls it
	// with "" when it ends, to stop them. Required. The sandbox:
	//
	//	SendTo: func(url string) error {
	//		return engine.SetWebhooks(sandbox.WebhookConfig{URL: url, Secret: secret, Format: sandbox.WebhookFormatHTTP})
	//	}
	SendTo func(url string) error
	// Within bounds how long the rule waits for an event on each payment
	// it makes; DefaultEventsWithin when zero.
	Within time.Duration
}

// eventsSkip is the message of the events rule's skip.
const eventsSkip = "Options.Events is not set: the service was not asked to send signed events, " +
	"so the rule was not run (the providertest command does not run it: a Go test sets Options.Events)"

// received is one request the kit's receiver was sent.
type received struct {
	at     time.Time
	header string
	body   []byte
}

// receiver records the events sent to it and answers 200.
type receiver struct {
	mu   sync.Mutex
	got  []received
	seen chan struct{}
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, payment.MaxEventBytes+1))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.got = append(r.got, received{at: time.Now(), header: req.Header.Get(httpprovider.SignatureHeader), body: body})
	r.mu.Unlock()
	select {
	case r.seen <- struct{}{}:
	default:
	}
	w.WriteHeader(http.StatusOK)
}

// events returns what the receiver was sent so far.
func (r *receiver) events() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// checkEvents: with the service sending its events to the kit, a charge
// (and a processing payment settled, with Options.Pending) brings an event
// naming each payment; every event carries a valid Paymentjob-Signature
// over its timestamp and body, within five minutes of the kit's clock, and
// the documented fields; an event id is never used for another event.
func checkEvents(ctx context.Context, s *session) (Status, string) {
	ev := s.opts.Events
	if ev == nil {
		return Skip, eventsSkip
	}
	r := &receiver{seen: make(chan struct{}, 1)}
	srv := httptest.NewServer(r)
	defer srv.Close()
	if err := ev.SendTo(srv.URL); err != nil {
		return Fail, fmt.Sprintf("Events.SendTo(%q) failed: %v", srv.URL, err)
	}
	defer func() { _ = ev.SendTo("") }()

	want := map[string]string{} // payment id: key
	key, req := s.key(RuleEvents), s.succeeding()
	a := s.charge(ctx, key, req, nil)
	if msg := notNewCharge(key, req.PaymentMethod, a); msg != "" {
		return Fail, msg
	}
	want[a.outcome.ID] = key
	if p := s.opts.Pending; p != nil {
		key, req := s.key(RuleEvents), s.request(p.PaymentMethod)
		if settling, ok := payment.IsSettling(s.charge(ctx, key, req, nil).err); ok {
			want[settling.ID] = key
			if p.Settle != nil {
				p.Settle()
			}
		}
	}
	got, failure := waitForEvents(ctx, r, want, ev.Within)
	if failure != "" {
		return Fail, failure
	}
	if failure := checkEachEvent(got, want, ev.Secret); failure != "" {
		return Fail, failure
	}
	return Pass, fmt.Sprintf("%d events for %d payments, each signed with the secret within 5 minutes, "+
		"with its own id and the documented fields", len(got), len(want))
}

// waitForEvents waits until an event names each payment of want, within
// within, and returns every request received.
func waitForEvents(ctx context.Context, r *receiver, want map[string]string, within time.Duration) ([]received, string) {
	if within <= 0 {
		within = DefaultEventsWithin
	}
	timeout := time.After(within)
	for {
		got := r.events()
		missing := make([]string, 0, len(want))
		for id := range want {
			if !namesPayment(got, id) {
				missing = append(missing, fmt.Sprintf("%q", id))
			}
		}
		if len(missing) == 0 {
			return got, ""
		}
		select {
		case <-r.seen:
		case <-ctx.Done():
			return nil, fmt.Sprintf("no event for payment %s: %v", strings.Join(missing, ", "), ctx.Err())
		case <-timeout:
			return nil, fmt.Sprintf("no event named payment %s within %s (%d requests received): "+
				`a service with events sends one (such as "payment.succeeded") for each payment that changes`,
				strings.Join(missing, ", "), within, len(got))
		}
	}
}

// namesPayment reports whether a received body is an event whose data.id
// is the payment id, signed or not.
func namesPayment(got []received, id string) bool {
	for _, g := range got {
		var b eventFields
		if json.Unmarshal(g.body, &b) == nil && b.Data != nil && b.Data.ID == id && strings.HasPrefix(b.Type, "payment.") {
			return true
		}
	}
	return false
}

// eventFields are the documented fields of an event body.
type eventFields struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Created int64  `json:"created"`
	Data    *struct {
		ID             string `json:"id"`
		IdempotencyKey string `json:"idempotencyKey"`
		Payment        string `json:"payment"`
	} `json:"data"`
}

// checkEachEvent verifies every event received with secret at the time it
// arrived, and returns a failure message for the first that is not
// signed, fresh, well formed, or whose id was used for another event.
func checkEachEvent(got []received, want map[string]string, secret string) string {
	byID := map[string]string{}
	for i, g := range got {
		what := fmt.Sprintf("event %d of %d (%s)", i+1, len(got), snippet(g.body))
		if _, err := httpprovider.ParseEvent(g.body, g.header, secret, g.at); err != nil && !errors.Is(err, payment.ErrEventIgnored) {
			return fmt.Sprintf("%s was refused as the operator would refuse it: %v; %s", what, err, eventAdvice(err))
		}
		var b eventFields
		_ = json.Unmarshal(g.body, &b) // ParseEvent read it
		same := b.Type
		if b.Data != nil {
			same = strings.TrimSpace(fmt.Sprintf("%s %s %s", b.Type, b.Data.ID, b.Data.Payment))
			if key, ours := want[b.Data.ID]; ours && strings.HasPrefix(b.Type, "payment.") &&
				b.Data.IdempotencyKey != "" && b.Data.IdempotencyKey != key {
				return fmt.Sprintf("%s names payment %q with data.idempotencyKey %q, not the key %q it was charged under",
					what, b.Data.ID, b.Data.IdempotencyKey, key)
			}
		}
		if prev, seen := byID[b.ID]; seen && prev != same {
			return fmt.Sprintf("%s reuses event id %q of another event (%s): each event has its own id, "+
				"and only a retry of the same event sends it again", what, b.ID, prev)
		}
		byID[b.ID] = same
	}
	return ""
}

// eventAdvice says what the service must change for an event refused
// with err.
func eventAdvice(err error) string {
	switch {
	case errors.Is(err, payment.ErrEventUnsigned), errors.Is(err, payment.ErrEventBadSignature):
		return `sign each event with the shared secret: Paymentjob-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`
	case errors.Is(err, payment.ErrEventStale):
		return "sign each delivery when it is sent: t must be within 5 minutes of the receiver's clock, also on a retry"
	}
	return `the body must be {"id", "type", "created", "data": {"id", "idempotencyKey", "payment"}} as documented`
}
