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

package sandbox

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// Sending webhooks: one goroutine per Engine with webhooks on takes the
// events that are due from a queue, applies the faults, signs and POSTs
// them without the lock, and retries those not answered with a 2xx. On
// every tick it also decides the bank debits and refunds that fell due,
// so that their events leave on time even when no one reads the Engine.

// webhookTick is how often the goroutine looks for due events, debits and
// refunds.
const webhookTick = 20 * time.Millisecond

// reorderHold is how long an event held to be reordered waits for a next
// event before it is sent anyway.
const reorderHold = time.Second

// badSignatureSecret signs the events of the BadSignature fault: a secret
// no receiver holds.
const badSignatureSecret = "whsec_sandbox_forged_signature"

// delivery is one event on its way.
type delivery struct {
	id    string
	body  []byte
	ready time.Time
	// attempt counts the attempts made; faults are drawn before the first.
	attempt int
	drawn   bool
	delayed bool
	bad     bool
}

// webhooks is the state of an Engine's webhooks, guarded by the Engine's
// lock but for wake, stop and done.
type webhooks struct {
	cfg    WebhookConfig
	rnd    *rand.Rand
	queue  []*delivery
	held   *delivery
	heldAt time.Time
	stats  WebhookStats
	wake   chan struct{}
	stop   chan struct{}
	done   chan struct{}
}

func newWebhooks() *webhooks {
	return &webhooks{wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// now is the wall clock: signatures are checked against the receiver's.
func (h *webhooks) now() time.Time { return time.Now() }

// signal wakes the goroutine without waiting.
func (h *webhooks) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// enqueue puts d in the queue, ordered by when it is ready, after the
// ones ready at the same time.
func (h *webhooks) enqueue(d *delivery) {
	i, _ := slices.BinarySearchFunc(h.queue, d.ready, func(x *delivery, t time.Time) int {
		if x.ready.After(t) {
			return 1
		}
		return -1
	})
	h.queue = slices.Insert(h.queue, i, d)
	h.signal()
}

// chance draws from the seeded source.
func (h *webhooks) chance(p float64) bool {
	return p > 0 && h.rnd.Float64() < p
}

// post is one attempt to send, with what it needs, read under the lock.
type post struct {
	d      *delivery
	url    string
	secret string
	header string
	client *http.Client
}

// deliver is the goroutine of h: it runs until h.stop is closed.
func (e *Engine) deliver(h *webhooks) {
	defer close(h.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-h.stop
		cancel()
	}()
	tick := time.NewTicker(webhookTick)
	defer tick.Stop()
	for {
		for _, p := range e.due(h) {
			ok := p.send(ctx)
			e.sent(h, p.d, ok)
		}
		select {
		case <-h.stop:
			return
		case <-h.wake:
		case <-tick.C:
		}
	}
}

// due decides the debits and refunds that fell due (which may queue
// events) and returns the attempts to make now, faults applied.
func (e *Engine) due(h *webhooks) []post {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.hooks != h {
		return nil
	}
	e.settleDebitsLocked()
	e.settleRefundsLocked()
	now := h.now()
	var ready []*delivery
	for len(h.queue) > 0 && !h.queue[0].ready.After(now) {
		d := h.queue[0]
		h.queue = h.queue[1:]
		held := h.held
		out := e.drawLocked(h, d, now)
		ready = append(ready, out...)
		// An event held before this one goes right after it.
		if held != nil && len(out) > 0 {
			ready = append(ready, held)
			h.held = nil
		}
	}
	if h.held != nil && now.Sub(h.heldAt) >= reorderHold {
		ready = append(ready, h.held)
		h.held = nil
	}
	if h.cfg.URL == "" {
		return nil
	}
	header := StripeSignatureHeader
	if h.cfg.Format == WebhookFormatHTTP {
		header = HTTPSignatureHeader
	}
	posts := make([]post, 0, len(ready))
	for _, d := range ready {
		secret := h.cfg.Secret
		if d.bad {
			secret = badSignatureSecret
		}
		posts = append(posts, post{d: d, url: h.cfg.URL, secret: secret, header: header, client: h.cfg.Client})
	}
	return posts
}

// drawLocked applies the faults to d the first time it is due, and
// returns what to send now: nothing (dropped, delayed or held), d, or d
// and its duplicate. The caller holds the lock.
func (e *Engine) drawLocked(h *webhooks, d *delivery, now time.Time) []*delivery {
	if d.drawn {
		return []*delivery{d}
	}
	f := h.cfg.Faults
	if !d.delayed && f.Delay > 0 {
		d.delayed = true
		d.ready = now.Add(f.Delay)
		h.stats.Delayed++
		h.enqueue(d)
		return nil
	}
	d.drawn = true
	if h.chance(f.Drop) {
		h.stats.Dropped++
		return nil
	}
	if h.chance(f.BadSignature) {
		d.bad = true
		h.stats.BadSignatures++
	}
	out := []*delivery{d}
	if h.chance(f.Duplicate) {
		h.stats.Duplicated++
		dup := *d
		out = append(out, &dup)
	}
	if h.held == nil && h.chance(f.Reorder) {
		h.stats.Reordered++
		h.held, h.heldAt = out[0], now
		out = out[1:]
	}
	return out
}

// sent counts an attempt and queues a retry of one that failed.
func (e *Engine) sent(h *webhooks, d *delivery, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.hooks != h {
		return
	}
	h.stats.Attempts++
	if d.attempt > 0 {
		h.stats.Retries++
	}
	d.attempt++
	if ok {
		h.stats.Delivered++
		return
	}
	h.stats.Failed++
	if d.attempt >= WebhookMaxAttempts {
		h.stats.GaveUp++
		return
	}
	d.ready = h.now().Add(WebhookRetryBackoff << (d.attempt - 1))
	h.enqueue(d)
}

// send POSTs the event signed now, and reports whether it was answered
// with a 2xx.
func (p post) send(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(p.d.body))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "paymentjob-sandbox-webhooks/1")
	req.Header.Set(p.header, Sign(p.secret, time.Now(), p.d.body))
	resp, err := p.client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 300
}

// Sign returns the signature header value of body signed with secret at
// t: "t=<unix seconds>,v1=<hex HMAC-SHA256 of secret over "<t>.<body>">",
// Stripe's scheme, used by both webhook formats.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts))
	mac.Write([]byte("."))
	mac.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

// settleRefundsLocked settles the pending refunds whose delay has passed.
// The caller holds the lock.
func (e *Engine) settleRefundsLocked() {
	if len(e.settles) == 0 {
		return
	}
	now := e.now()
	var due []string
	for id, at := range e.settles {
		if !now.Before(at) {
			due = append(due, id)
		}
	}
	// In the order they fell due, so that their events are too.
	slices.SortFunc(due, func(a, b string) int {
		return cmp.Or(e.settles[a].Compare(e.settles[b]), cmp.Compare(a, b))
	})
	for _, id := range due {
		e.settleLocked(e.refunds[id])
	}
}
