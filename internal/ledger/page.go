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

package ledger

import (
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// pagePrefix starts every page's name; the rest is its sequence number, so
// that kubectl get lists pages oldest first.
const pagePrefix = "page-"

func pageName(seq int) string {
	return fmt.Sprintf("%s%08d", pagePrefix, seq)
}

// pageSeq is the sequence number in a page's name, or 0 for an object that
// is not a page.
func pageSeq(name string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(name, pagePrefix))
	if err != nil || !strings.HasPrefix(name, pagePrefix) || n <= 0 {
		return 0
	}
	return n
}

func newPage(seq int) *paymentsv1alpha1.PaymentLedger {
	return &paymentsv1alpha1.PaymentLedger{ObjectMeta: metav1.ObjectMeta{
		Name:   pageName(seq),
		Labels: map[string]string{"app.kubernetes.io/managed-by": "paymentjob-operator"},
	}}
}

// full reports whether p takes no more entries: by count, or by an estimate
// of its size that errs on the large side.
func full(p *paymentsv1alpha1.PaymentLedger, maxEntries int) bool {
	if len(p.Entries) >= maxEntries {
		return true
	}
	size := 0
	for _, pr := range p.Providers {
		size += len(pr.UID) + len(pr.Endpoint) + len(pr.Account) + 64
	}
	for _, e := range p.Entries {
		size += entrySize(e)
	}
	return size >= maxPageBytes
}

func entrySize(e paymentsv1alpha1.LedgerEntry) int {
	size := len(e.Key) + len(e.Fingerprint) + len(e.Charge) + len(e.Reason) + len(e.ResolvedBy) + entryOverhead
	if e.RefundedCharge != "" {
		// "refundedCharge":"...",
		size += 20 + len(e.RefundedCharge)
	}
	if e.Amount != 0 || e.Currency != "" {
		// "amount":N,"currency":"...", with N's digits.
		size += 25 + len(strconv.FormatInt(e.Amount, 10)) + len(e.Currency)
	}
	return size
}

// addEntry appends e to p, with its provider account written once per page.
func addEntry(p *paymentsv1alpha1.PaymentLedger, e Entry) {
	idx := -1
	for i, pr := range p.Providers {
		if pr == e.Provider {
			idx = i
			break
		}
	}
	if idx < 0 {
		p.Providers = append(p.Providers, e.Provider)
		idx = len(p.Providers) - 1
	}
	at := metav1.NewTime(e.At.UTC().Truncate(1e9))
	p.Entries = append(p.Entries, paymentsv1alpha1.LedgerEntry{
		Key:            e.Key,
		Fingerprint:    e.Fingerprint,
		Provider:       int32(idx),
		Charge:         e.Charge,
		Amount:         e.Amount,
		Currency:       e.Currency,
		RefundedCharge: e.RefundedCharge,
		Outcome:        e.Outcome,
		Reason:         e.Reason,
		ResolvedBy:     e.ResolvedBy,
		At:             at,
	})
	// Outcomes are appended as they are recorded, not in time order (a
	// job finished before the upgrade that brought the ledger is recorded
	// late), so the span is kept as a minimum and a maximum.
	p.Summary.Entries = int32(len(p.Entries))
	if p.Summary.Oldest == nil || at.Before(p.Summary.Oldest) {
		p.Summary.Oldest = &at
	}
	if p.Summary.Newest == nil || p.Summary.Newest.Before(&at) {
		p.Summary.Newest = &at
	}
}

// entryOf is e as the controller reads it, with its provider account: the
// way back of addEntry's mapping, field for field, kept apart on purpose
// (the two types differ in the provider, an index into the page's
// Providers, and in the time's type), so a field added to Entry is added
// to both.
func entryOf(p *paymentsv1alpha1.PaymentLedger, e paymentsv1alpha1.LedgerEntry) Entry {
	out := Entry{
		Key:            e.Key,
		Fingerprint:    e.Fingerprint,
		Charge:         e.Charge,
		Amount:         e.Amount,
		Currency:       e.Currency,
		RefundedCharge: e.RefundedCharge,
		Outcome:        e.Outcome,
		Reason:         e.Reason,
		ResolvedBy:     e.ResolvedBy,
		At:             e.At.Time,
	}
	if int(e.Provider) < len(p.Providers) {
		out.Provider = p.Providers[e.Provider]
	}
	return out
}
