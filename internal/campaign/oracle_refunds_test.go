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

package campaign

import (
	"context"
	"fmt"
	"sync"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/sandboxprovider"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// The rule "no refund is sent beyond what was left". The sandbox refuses a
// refund beyond what is left of its charge (amount_too_large), so the
// books never show one: a refund sent beyond what was left ends Failed,
// RefundExceedsCharge, exactly as one refused before it was sent, and the
// books alone cannot tell the two apart. Switching the sandbox's code off
// (sandbox.WithoutAmountTooLargeCode) would not help in process either:
// the in-process Provider maps the refusal with or without its code. So
// the campaign watches what the operator sends: each manager's provider
// is the sandbox's, wrapped (watchedProvider) to note, before it goes to
// the sandbox, every refund request and what was left of its charge at
// that moment. The first request under a key must fit in what was left:
// the operator looks at the charge's refunds in the same pass, before it
// claims, and nothing else moves money within a step. A retry under the
// same key may meet less (a dashboard refund after a first attempt that
// had no answer): it is the same request, and its refusal is honest.

// refundLog is what the operator sent as refunds in one history.
type refundLog struct {
	mu sync.Mutex
	// sent are the refund keys sent at least once.
	sent map[string]bool
	// beyond are the first requests sent for more than was left, one line
	// each.
	beyond []string
}

// note records a refund request about to be sent under key, with what
// is left of its charge at the sandbox now.
func (l *refundLog) note(sbx *sandbox.Engine, key string, req payment.RefundRequest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sent[key] {
		return
	}
	if l.sent == nil {
		l.sent = map[string]bool{}
	}
	l.sent[key] = true
	in, ok := sbx.GetPaymentIntent(req.Charge)
	if !ok || in.Status != sandbox.StatusSucceeded {
		return
	}
	if left := in.Amount - sbx.Refunded(in.ID); req.Amount > left {
		l.beyond = append(l.beyond, fmt.Sprintf("refund-within-what-is-left: key %s first sent for %d of %s, when %d of %d was left",
			key, req.Amount, in.ID, left, in.Amount))
	}
}

// violations are the refunds sent beyond what was left.
func (l *refundLog) violations() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.beyond...)
}

// watchedProvider is the sandbox's in-process provider, whose refund
// requests are noted in log before they are sent. Every other method
// (charges, lookups, settles) is the sandbox's own.
type watchedProvider struct {
	*sandboxprovider.Provider
	log *refundLog
}

// watched wraps p so that its refund requests are noted in the world's
// refund log.
func (w *world) watched(p *sandboxprovider.Provider) payment.Provider {
	return watchedProvider{Provider: p, log: &w.refundsSent}
}

// Refund notes the request, then sends it to the sandbox.
func (p watchedProvider) Refund(ctx context.Context, key string, req payment.RefundRequest) (payment.Outcome, error) {
	p.log.note(p.Engine(), key, req)
	return p.Provider.Refund(ctx, key, req)
}
