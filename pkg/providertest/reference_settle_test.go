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

package providertest_test

import (
	"bytes"
	"cmp"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment/httpprovider"
	"github.com/idempotency-dev/paymentjob-operator/pkg/providertest"
)

// The reference service's bank debits and events, written from
// docs/providers.md, "Answers" and "Events": a debit is answered
// processing and decided by settle; every change of a charge is an event,
// signed with the shared secret when it is sent. Its switches break it on
// purpose, each in one way the pending or events rule checks.

// Test payment methods of the reference service's debits.
const (
	// refDebit is answered processing, and succeeds when settled.
	refDebit = "pm_ref_debit"
	// refDebitFails is answered processing, and fails with
	// InsufficientFunds when settled.
	refDebitFails = "pm_ref_debit_fails"
)

// refSettleSwitches break the reference service's debits and events.
type refSettleSwitches struct {
	// newOnProcessingRetry makes a new payment for a retry under a key
	// whose payment is still processing, as a service that saves only
	// final answers would.
	newOnProcessingRetry bool
	// wrongSecret signs events with another secret.
	wrongSecret bool
	// staleBy signs events with a timestamp this far in the past.
	staleBy time.Duration
	// reuseEventID sends every event under the same id.
	reuseEventID bool
	// noReason fails a debit without a reason.
	noReason bool
}

// refEvents is where the reference service sends its events, and with
// which secret; the zero value sends none.
type refEvents struct {
	url    string
	secret string
	sent   int
}

// newStatus is the status of a new charge of paymentMethod, and its
// payment method type.
func (s *refService) newStatus(paymentMethod string) (status, method string) {
	switch paymentMethod {
	case refDebit, refDebitFails:
		return "processing", "sepa_debit"
	}
	return cmp.Or(s.status, "succeeded"), ""
}

// settle decides every processing debit: refDebitFails fails, any other
// succeeds. It sends their events.
func (s *refService) settle() {
	s.mu.Lock()
	var changed []refCharge
	for i := range s.charges {
		c := &s.charges[i]
		if c.Status != "processing" {
			continue
		}
		c.Status = "succeeded"
		if c.paymentMethod == refDebitFails {
			c.Status, c.Reason = "failed", "InsufficientFunds"
			if s.settling.noReason {
				c.Reason = ""
			}
		}
		changed = append(changed, *c)
	}
	s.mu.Unlock()
	for _, c := range changed {
		s.emit(c)
	}
}

// current is the charge with id as it is now. The caller holds the lock.
func (s *refService) current(id string) *refCharge {
	for i := range s.charges {
		if s.charges[i].ID == id {
			return &s.charges[i]
		}
	}
	return nil
}

// sendEventsTo sends the events from now on to url, signed with secret;
// "" stops them.
func (s *refService) sendEventsTo(url, secret string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = refEvents{url: url, secret: secret}
	return nil
}

// emit sends the event of c's status, signed as the switches say, when
// events are on.
func (s *refService) emit(c refCharge) {
	s.mu.Lock()
	ev := s.events
	s.events.sent++
	s.mu.Unlock()
	if ev.url == "" {
		return
	}
	id := fmt.Sprintf("evt_%d", ev.sent+1)
	if s.settling.reuseEventID {
		id = "evt_1"
	}
	typ := "payment." + c.Status
	body := fmt.Appendf(nil, `{"id":%q,"type":%q,"created":%d,"account":"acct_ref","data":{"id":%q,"idempotencyKey":%q}}`,
		id, typ, time.Now().Unix(), c.ID, c.Key)
	secret := ev.secret
	if s.settling.wrongSecret {
		secret = "not-" + secret
	}
	req, err := http.NewRequest(http.MethodPost, ev.url, bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(httpprovider.SignatureHeader, httpprovider.Sign(secret, time.Now().Add(-s.settling.staleBy), body))
	if res, err := http.DefaultClient.Do(req); err == nil {
		_ = res.Body.Close()
	}
}

// skewedClock is the wall clock moved forward by Settle, for a sandbox
// whose processing debits a test decides now.
type skewedClock struct {
	mu     sync.Mutex
	offset time.Duration
}

// Now is the wall clock plus the offset.
func (c *skewedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Add moves the clock forward by d.
func (c *skewedClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// settleBroken returns the Options of a reference service whose debits
// or events are broken by sw.
func settleBroken(sw refSettleSwitches) func(t *testing.T) providertest.Options {
	return func(t *testing.T) providertest.Options { return refOptions(t, &refService{settling: sw}) }
}

// TestPendingFailureWithoutAReasonIsNoted: a debit that fails without the
// bank's reason still passes (the operator sets the job Failed, never
// charged), and the message says what the operator reports instead.
func TestPendingFailureWithoutAReasonIsNoted(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	opts := refOptions(t, &refService{settling: refSettleSwitches{noReason: true}})

	var pending providertest.Result
	for _, r := range check(t, opts) {
		if r.Rule == providertest.RulePending {
			pending = r
		}
	}

	g.Expect(pending.Status).To(Equal(providertest.Pass), pending.String())
	g.Expect(pending.Message).To(ContainSubstring(`the service gave no reason, so the operator reports "CardDeclined"`))
}
