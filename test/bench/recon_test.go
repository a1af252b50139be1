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

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	psandbox "github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

func TestReconFloorIsTheListPagesAtTheBudget(t *testing.T) {
	tests := []struct {
		name      string
		n, pages  int
		perSecond int
		floor     time.Duration
	}{
		{"100,000 charges at the default budget", 100_000, 1002, 25, 40080 * time.Millisecond},
		{"20,000 charges", 20_000, 202, 25, 8080 * time.Millisecond},
		{"a partial last page", 101, 4, 25, 160 * time.Millisecond},
		{"one charge", 1, 3, 100, 30 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(reconListPages(tt.n)).To(Equal(tt.pages))
			g.Expect(reconFloor(tt.n, tt.perSecond)).To(BeNumerically("~", tt.floor, time.Millisecond))
		})
	}
}

// The ledger's pages and the sandbox's intents hold the same payments, in
// the window, under the keys the operator derives: the books balance by
// construction.
func TestReconSeedsTheSameBooksOnBothSides(t *testing.T) {
	g := NewWithT(t)
	const n = 1234
	w := reconWindowBefore(time.Date(2026, 12, 3, 10, 30, 15, 500, time.UTC))
	g.Expect(w.to).To(Equal(time.Date(2026, 12, 2, 10, 30, 15, 0, time.UTC)))
	g.Expect(w.to.Sub(w.from)).To(Equal(reconSpan))
	id := paymentsv1alpha1.ProviderIdentity{UID: "uid", Endpoint: "http://127.0.0.1:1", Account: "acct_bench", Mode: "test"}

	engine := psandbox.NewEngine()
	srv := httptest.NewServer(psandbox.NewServer(engine, psandbox.ServerOptions{}))
	defer srv.Close()
	g.Expect(seedReconIntents(context.Background(), srv.URL, n, nsRecon, w)).To(Succeed())

	var entries []paymentsv1alpha1.LedgerEntry
	g.Expect(reconPages(n)).To(Equal(3))
	for seq := 1; seq <= reconPages(n); seq++ {
		p := reconLedgerPage(seq, seedEntriesPerPage, n, nsRecon, id, w)
		g.Expect(p.Name).To(Equal(fmt.Sprintf("page-%08d", seq)))
		g.Expect(p.Providers).To(Equal([]paymentsv1alpha1.ProviderIdentity{id}))
		g.Expect(p.Summary.Entries).To(Equal(int32(len(p.Entries))))
		data, err := json.Marshal(p)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(len(data)).To(BeNumerically("<", 128<<10), "a page stays well under the ledger's page size")
		entries = append(entries, p.Entries...)
	}
	g.Expect(entries).To(HaveLen(n))

	keys := map[string]bool{}
	for i, e := range entries {
		g.Expect(keys[e.Key]).To(BeFalse(), "duplicate key %s", e.Key)
		keys[e.Key] = true
		g.Expect(e.Outcome).To(Equal(paymentsv1alpha1.LedgerCompleted))
		g.Expect(e.Provider).To(BeZero())
		at := e.At.Time
		g.Expect(!at.Before(w.from) && at.Before(w.to)).To(BeTrue(), "entry %d at %s is outside the window", i, at)

		in, ok := engine.GetPaymentIntent(e.Charge)
		g.Expect(ok).To(BeTrue(), "no intent %s", e.Charge)
		g.Expect(in.Amount).To(Equal(e.Amount))
		g.Expect(in.Currency).To(Equal(e.Currency))
		g.Expect(in.Status).To(Equal(psandbox.StatusSucceeded))
		g.Expect(in.Created.Unix()).To(Equal(at.Unix()))
		g.Expect(in.Metadata).To(HaveKeyWithValue(payment.MetadataKeyIdempotencyKey, e.Key))
		if i == 0 {
			g.Expect(e.Key).To(Equal(nsRecon + "/invoice-00000000"))
			g.Expect(e.Fingerprint).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
		}
	}
	// The list the reconciliation reads holds every intent of the window.
	listed := 0
	after := ""
	for {
		page, more, err := engine.ListIntents(psandbox.ListQuery{From: w.from, To: w.to, Limit: psandbox.MaxListLimit, StartingAfter: after})
		g.Expect(err).NotTo(HaveOccurred())
		listed += len(page)
		if !more {
			break
		}
		after = page[len(page)-1].ID
	}
	g.Expect(listed).To(Equal(n))
}

func TestCheckReconStatusFailsARunThatDidNotBalance(t *testing.T) {
	balanced := paymentsv1alpha1.PaymentReconciliationStatus{Listed: true,
		Summary: &paymentsv1alpha1.ReconciliationSummary{Charges: 10, Matched: 10}}
	tests := []struct {
		name   string
		mutate func(*paymentsv1alpha1.PaymentReconciliationStatus)
		ok     bool
	}{
		{"balanced", func(*paymentsv1alpha1.PaymentReconciliationStatus) {}, true},
		{"no summary", func(s *paymentsv1alpha1.PaymentReconciliationStatus) { s.Summary = nil }, false},
		{"a discrepancy", func(s *paymentsv1alpha1.PaymentReconciliationStatus) {
			s.Summary = &paymentsv1alpha1.ReconciliationSummary{Charges: 10, Matched: 9, Discrepancies: 1}
		}, false},
		{"fewer matched", func(s *paymentsv1alpha1.PaymentReconciliationStatus) {
			s.Summary = &paymentsv1alpha1.ReconciliationSummary{Charges: 9, Matched: 9}
		}, false},
		{"not listed", func(s *paymentsv1alpha1.PaymentReconciliationStatus) { s.Listed = false }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			st := *balanced.DeepCopy()
			tt.mutate(&st)
			if tt.ok {
				g.Expect(checkReconStatus(st, 10)).To(Succeed())
			} else {
				g.Expect(checkReconStatus(st, 10)).NotTo(Succeed())
			}
		})
	}
}
