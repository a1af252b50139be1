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

package sandbox_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// ordersQuery is a query of n clauses on metadata['order'], joined by
// connector.
func ordersQuery(n int, connector string) string {
	clauses := make([]string, n)
	for i := range clauses {
		clauses[i] = fmt.Sprintf("metadata['order']:'%d'", i)
	}
	return strings.Join(clauses, " "+connector+" ")
}

// ids returns the IDs of intents, in order.
func ids(intents []sandbox.Intent) []string {
	out := make([]string, 0, len(intents))
	for _, in := range intents {
		out = append(out, in.ID)
	}
	return out
}

func TestSearchQueries(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now))
	// Orders 0 to 11, one a second; order 11 is matched by no query of
	// at most 11 clauses.
	orders := make([]sandbox.Intent, 12)
	for i := range orders {
		clock.Add(time.Second)
		orders[i] = e.PutIntent(sandbox.Intent{Amount: 1, Currency: "eur",
			Metadata: map[string]string{"order": fmt.Sprint(i), "tenant": "acme"}})
	}
	newestFirst := func(from, to int) []string {
		var want []string
		for i := to; i >= from; i-- {
			want = append(want, orders[i].ID)
		}
		return want
	}

	tests := []struct {
		name    string
		query   string
		wantIDs []string
		wantErr string
	}{
		{name: "OR of 10 clauses", query: ordersQuery(10, "OR"), wantIDs: newestFirst(0, 9)},
		{name: "OR of 2 clauses", query: `metadata['order']:'3' OR metadata['order']:'5'`,
			wantIDs: []string{orders[5].ID, orders[3].ID}},
		{name: "AND of 10 clauses", query: ordersQuery(9, "AND") + ` AND metadata['tenant']:'acme'`, wantIDs: nil},
		{name: "AND", query: `metadata['order']:'3' AND metadata['tenant']:'acme'`, wantIDs: []string{orders[3].ID}},
		{name: "OR of 11 clauses", query: ordersQuery(11, "OR"), wantErr: "at most 10"},
		{name: "AND of 11 clauses", query: ordersQuery(11, "AND"), wantErr: "at most 10"},
		{name: "AND then OR", query: `metadata['order']:'1' AND metadata['tenant']:'acme' OR metadata['order']:'2'`,
			wantErr: "AND and OR cannot be mixed"},
		{name: "OR then AND", query: `metadata['order']:'1' OR metadata['order']:'2' AND metadata['tenant']:'acme'`,
			wantErr: "AND and OR cannot be mixed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			found, err := e.SearchPaymentIntents(tt.query)
			if tt.wantErr != "" {
				se := stripeError(g, err)
				g.Expect(se.HTTPStatus).To(Equal(http.StatusBadRequest))
				g.Expect(se.Param).To(Equal("query"))
				g.Expect(se.Message).To(ContainSubstring(tt.wantErr))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ids(found)).To(Equal(append([]string{}, tt.wantIDs...)))
		})
	}
	NewWithT(t).Expect(e.Stats().Searches).To(BeEquivalentTo(len(tests)))
}

func TestSearchLagHidesNewIntentsUntilTheClockPasses(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now), sandbox.WithSearchLag(time.Minute))
	g.Expect(e.SearchLag()).To(Equal(time.Minute))
	const query = `metadata['paymentjob']:'default/order-42'`
	search := func() []string {
		found, err := e.SearchPaymentIntents(query)
		g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
		return ids(found)
	}

	in, _, err := e.CreatePaymentIntent("key", request(1000, sandbox.PaymentMethodVisa))
	g.Expect(err).NotTo(HaveOccurred())
	// Made an hour ago: visible at once.
	old := e.PutIntent(sandbox.Intent{Amount: 1, Currency: "eur", Created: clock.Now().Add(-time.Hour),
		Metadata: map[string]string{"paymentjob": "default/order-42"}})
	g.Expect(search()).To(Equal([]string{old.ID}))
	// Retrieval by ID does not lag.
	_, ok := e.GetPaymentIntent(in.ID)
	g.Expect(ok).To(BeTrue())

	clock.Add(time.Minute - time.Nanosecond)
	g.Expect(search()).To(Equal([]string{old.ID}))
	clock.Add(time.Nanosecond)
	g.Expect(search()).To(Equal([]string{in.ID, old.ID}))

	// A status changed later is seen at once.
	g.Expect(e.SetIntentStatus(in.ID, sandbox.StatusCanceled)).To(Succeed())
	found, err := e.SearchPaymentIntents(query)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found[0].Status).To(Equal(sandbox.StatusCanceled))

	// Without lag, a new intent is found at once.
	e.SetSearchLag(0)
	again, _, err := e.CreatePaymentIntent("other", request(1000, sandbox.PaymentMethodVisa))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(search()).To(ContainElement(again.ID))
	e.SetSearchLag(-time.Second)
	g.Expect(e.SearchLag()).To(BeZero())
}

func TestSearchRateLimit(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now), sandbox.WithRateLimits(sandbox.RateLimits{Searches: 2}))
	const query = `metadata['a']:'b'`
	search := func() error {
		_, err := e.SearchPaymentIntents(query)
		return err
	}

	g.Expect(search()).To(Succeed())
	g.Expect(search()).To(Succeed())
	se := stripeError(g, search())
	g.Expect(se.HTTPStatus).To(Equal(http.StatusTooManyRequests))
	g.Expect(se.Code).To(Equal(sandbox.CodeRateLimit))
	g.Expect(se.RetryAfter).To(Equal(sandbox.RateLimitRetryAfter))
	g.Expect(se.Message).NotTo(ContainSubstring("injected"))

	// Two a second: one more after half a second.
	clock.Add(500 * time.Millisecond)
	g.Expect(search()).To(Succeed())
	g.Expect(search()).To(HaveOccurred())

	// Creates have their own bucket.
	_, _, err := e.CreatePaymentIntent("key", request(1000, sandbox.PaymentMethodVisa))
	g.Expect(err).NotTo(HaveOccurred())

	s := e.Stats()
	g.Expect(s.Searches).To(BeEquivalentTo(5))
	g.Expect(s.RateLimited).To(BeEquivalentTo(2))
	g.Expect(s.Faults).To(BeZero())
}
