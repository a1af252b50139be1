//go:build postgres

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

package pgledger_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger/pgledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/pgserver"
)

// The size of a row as docs/postgres-ledger.md gives it: 20,000 outcomes of
// Stripe-shaped charges (real key, fingerprint, identity and intent id
// lengths) recorded through the ledger, then the table with its indexes
// (primary key, date) and TOAST measured by the server.
func TestRowSize(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := pgserver.Start(t)
	dsn := srv.CreateDatabase(t, "ledger")
	l := newLedger(t, dsn, pgledger.Options{}, nil)
	const n = 20000
	at := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		key := payment.SentKey("billing", fmt.Sprintf("invoice-%06d", i))
		e := ledger.Entry{
			Key:         key,
			Fingerprint: payment.RequestHash(key, payment.ChargeRequest{Amount: 4999, Currency: "eur"}),
			Provider: paymentsv1alpha1.ProviderIdentity{UID: "6f1c0b52-93a4-4e8e-9d7e-0c5b1f2a7d41",
				Endpoint: "https://api.stripe.com", Account: "acct_1Pq2Rs3Tu4Vw5Xy6", Mode: "live"},
			Charge: fmt.Sprintf("pi_3P%022d", i), Outcome: paymentsv1alpha1.LedgerCompleted,
			At: at.Add(time.Duration(i) * time.Second),
		}
		wg.Go(func() { errs <- l.Record(ctx, e) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
	pool := newPool(t, dsn, nil)
	_, err := pool.Exec(ctx, "VACUUM ANALYZE paymentjob_outcomes")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(count(t, pool, "SELECT count(*) FROM paymentjob_outcomes")).To(Equal(n))
	total := count(t, pool, "SELECT pg_total_relation_size('paymentjob_outcomes')::int")
	perRow := float64(total) / n
	t.Logf("%d rows take %d bytes with their indexes: %.0f bytes a row", n, total, perRow)
	g.Expect(perRow).To(BeNumerically("~", 360, 60),
		"docs/postgres-ledger.md gives about 360 bytes a row with its indexes; measured %.0f", perRow)
}
