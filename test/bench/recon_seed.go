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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentjob"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// This file seeds the books of the reconciliation phase: the same payments
// on both sides, the cluster's as full pages of the outcome ledger (their
// jobs long deleted) and the provider's as PaymentIntents of the sandbox
// at Stripe's live-mode limits, written with its PUT /_sandbox/intents/{id}.

const (
	// reconSpan is the length of the reconciled window.
	reconSpan = 30 * 24 * time.Hour
	// reconWindowEnd is how long before the phase the window ends: before
	// any charge the run itself made at the same sandbox (phase 4, and the
	// jobs charged beside the reconciliation), so that the books hold only
	// the seeded payments.
	reconWindowEnd = 24 * time.Hour
	// intentWriters put the sandbox's intents, each over its own
	// keep-alive connection.
	intentWriters = 8
)

// reconWindow is the window of the reconciliation: [from, to), in whole
// seconds, as the run resolves it.
type reconWindow struct {
	from, to time.Time
}

// reconWindowBefore is the window that ends reconWindowEnd before now.
func reconWindowBefore(now time.Time) reconWindow {
	to := now.Add(-reconWindowEnd).UTC().Truncate(time.Second)
	return reconWindow{from: to.Add(-reconSpan), to: to}
}

// reconPayment is one seeded payment, the same on both sides.
type reconPayment struct {
	key, fingerprint, id string
	amount               int64
	currency             string
	created              time.Time
	request              payment.ChargeRequest
}

// reconPaymentOf is the i-th of n payments of the window: the job
// invoice-NNNNNNNN of ns the operator charged and has since deleted, with
// the key and fingerprint paymentjob.ChargeOf derives for it, created at
// the i-th of n even steps of the window (whole seconds, oldest first).
func reconPaymentOf(ns string, i, n int, w reconWindow) reconPayment {
	job := &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("invoice-%08d", i), Namespace: ns},
		Spec: paymentsv1alpha1.PaymentJobSpec{
			Amount:        int64(100 + (i*7919)%99900),
			Currency:      benchCurrency,
			PaymentMethod: benchPaymentMethod,
			Description:   fmt.Sprintf("Invoice %08d", i),
		},
	}
	c := paymentjob.ChargeOf(job)
	step := w.to.Sub(w.from) / time.Duration(n)
	return reconPayment{
		key: c.Key, fingerprint: c.Fingerprint, id: fmt.Sprintf("pi_recon%016d", i),
		amount: job.Spec.Amount, currency: job.Spec.Currency,
		created: w.from.Add(time.Duration(i) * step).Truncate(time.Second), request: c.Request,
	}
}

// reconLedgerPage is page seq (from 1) of the ledger of n payments of ns in
// w, perPage entries a page, oldest first, every entry Completed at the
// account id, with the charge's id, amount and currency: what the
// operator's ledger holds for them.
func reconLedgerPage(seq, perPage, n int, ns string, id paymentsv1alpha1.ProviderIdentity, w reconWindow) *paymentsv1alpha1.PaymentLedger {
	p := &paymentsv1alpha1.PaymentLedger{
		ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("page-%08d", seq),
			Labels: map[string]string{"app.kubernetes.io/managed-by": "paymentjob-operator"},
		},
		Providers: []paymentsv1alpha1.ProviderIdentity{id},
	}
	for i := (seq - 1) * perPage; i < min(seq*perPage, n); i++ {
		pay := reconPaymentOf(ns, i, n, w)
		p.Entries = append(p.Entries, paymentsv1alpha1.LedgerEntry{
			Key: pay.key, Fingerprint: pay.fingerprint, Charge: pay.id,
			Amount: pay.amount, Currency: pay.currency,
			Outcome: paymentsv1alpha1.LedgerCompleted, At: metav1.NewTime(pay.created),
		})
	}
	if len(p.Entries) > 0 {
		p.Summary = paymentsv1alpha1.LedgerSummary{
			Entries: int32(len(p.Entries)),
			Oldest:  &p.Entries[0].At,
			Newest:  &p.Entries[len(p.Entries)-1].At,
		}
	}
	return p
}

// reconPages is the number of ledger pages of n payments.
func reconPages(n int) int { return (n + seedEntriesPerPage - 1) / seedEntriesPerPage }

// seedReconLedger creates the ledger pages of n payments of ns in w at
// the account id. The manager must be stopped, and the ledger empty.
func (c *cluster) seedReconLedger(ctx context.Context, n int, ns string, id paymentsv1alpha1.ProviderIdentity, w reconWindow) error {
	return runWorkers(ctx, seedWriters, reconPages(n), func(ctx context.Context, i int) error {
		p := reconLedgerPage(i+1, seedEntriesPerPage, n, ns, id, w)
		if err := c.creator.Create(ctx, p); err != nil {
			return fmt.Errorf("cannot create ledger page %s: %w", p.Name, err)
		}
		return nil
	})
}

// intentBody is the body of the sandbox's PUT /_sandbox/intents/{id} for
// a payment: succeeded, created when it was, with the metadata the
// operator's adapter sends (payment.LookupMetadata: the key and the
// request's fingerprint).
func (p reconPayment) intentBody() map[string]any {
	return map[string]any{
		"amount":         p.amount,
		"currency":       p.currency,
		"paymentMethod":  p.request.PaymentMethod,
		"description":    p.request.Description,
		"status":         "succeeded",
		"created":        p.created.Unix(),
		"metadata":       payment.LookupMetadata(p.key, p.request),
		"idempotencyKey": p.key,
	}
}

// seedReconIntents puts the PaymentIntents of n payments of ns in w at the
// sandbox at baseURL, one PUT each, from intentWriters keep-alive
// connections.
func seedReconIntents(ctx context.Context, baseURL string, n int, ns string, w reconWindow) error {
	hc := &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: intentWriters, MaxConnsPerHost: intentWriters},
	}
	defer hc.CloseIdleConnections()
	return runWorkers(ctx, intentWriters, n, func(ctx context.Context, i int) error {
		p := reconPaymentOf(ns, i, n, w)
		data, err := json.Marshal(p.intentBody())
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, baseURL+"/_sandbox/intents/"+p.id, bytes.NewReader(data))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return fmt.Errorf("cannot put intent %s at the sandbox: %w", p.id, err)
		}
		answer, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		if err != nil {
			return fmt.Errorf("cannot put intent %s at the sandbox: %w", p.id, err)
		}
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
			return fmt.Errorf("PUT /_sandbox/intents/%s: %s: %.256s", p.id, resp.Status, answer)
		}
		return nil
	})
}
