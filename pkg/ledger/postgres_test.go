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

package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/gomega"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	internalledger "github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger/pgledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/pgserver"
	"github.com/idempotency-dev/paymentjob-operator/pkg/ledger"
)

// recordedKeys are the keys recordPostgres records, in the order of their
// time.
var recordedKeys = []string{"shop/order-1", "eu:shop/order-2", "shop.refund/order-1", "other/order-1",
	hashedEU, "shop/order-3"}

// recordPostgres records the entries of the example ledger in a database of
// srv, with the operator's ledger, and returns the database's DSN.
func recordPostgres(t *testing.T, srv *pgserver.Server) string {
	t.Helper()
	dsn := srv.CreateDatabase(t, "ledger")
	w, err := pgledger.Open(t.Context(), dsn, pgledger.Options{Cluster: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// Recorded out of time order: the reader orders them by time.
	for i := len(recordedKeys) - 1; i >= 0; i-- {
		key := recordedKeys[i]
		e := internalledger.Entry{Key: key, Fingerprint: fmt.Sprintf("sha256:f%d", i+1), Provider: stripe,
			Outcome: paymentsv1alpha1.LedgerCompleted, At: t0.Add(time.Duration(i) * time.Hour)}
		if strings.HasPrefix(key, "eu:") {
			e.Provider = stripeEU
		}
		if i == 0 {
			e.Charge, e.Amount, e.Currency = "pi_1", 1250, "eur"
		}
		if err := w.Record(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	return dsn
}

func TestPostgresReader(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	srv := pgserver.Start(t)
	r, err := ledger.OpenPostgres(ctx, recordPostgres(t, srv))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(r.Close)

	t.Run("Find", func(t *testing.T) {
		tests := []struct {
			key  string
			want []string
		}{
			{key: ledger.SentKey("shop", "order-1"), want: []string{"shop/order-1"}},
			{key: ledger.SentKey("shop", "order-2"), want: []string{"eu:shop/order-2"}},
			{key: "shop/" + longKey, want: []string{recordedKeys[4]}},
			{key: ledger.RefundKey("shop", "order-1"), want: []string{"shop.refund/order-1"}},
			{key: ledger.SentKey("shop", "order-9")},
		}
		for _, tt := range tests {
			g := NewWithT(t)
			got, err := r.Find(ctx, tt.key)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(keysOf(got)).To(Equal(append([]string{}, tt.want...)), tt.key)
		}
		got, err := r.Find(ctx, "shop/order-1")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal([]ledger.Entry{{Key: "shop/order-1", Namespace: "shop", Fingerprint: "sha256:f1",
			Outcome: paymentsv1alpha1.LedgerCompleted, Charge: "pi_1", Amount: 1250, Currency: "eur", At: t0,
			Provider: stripe}}))
	})

	t.Run("Each", func(t *testing.T) {
		tests := []struct {
			name   string
			filter ledger.Filter
			want   []string
		}{
			{name: "everything, oldest first", want: recordedKeys},
			{name: "since", filter: ledger.Filter{Since: t0.Add(2 * time.Hour)}, want: recordedKeys[2:]},
			{name: "a namespace", filter: ledger.Filter{Namespace: "shop"},
				want: []string{recordedKeys[0], recordedKeys[1], recordedKeys[2], recordedKeys[4], recordedKeys[5]}},
			{name: "a namespace since", filter: ledger.Filter{Namespace: "other", Since: t0.Add(time.Hour)},
				want: []string{"other/order-1"}},
			{name: "none", filter: ledger.Filter{Since: t0.Add(6 * time.Hour)}},
		}
		for _, tt := range tests {
			g := NewWithT(t)
			var got []ledger.Entry
			g.Expect(r.Each(ctx, tt.filter, func(e ledger.Entry) error {
				got = append(got, e)
				return nil
			})).To(Succeed())
			g.Expect(keysOf(got)).To(Equal(append([]string{}, tt.want...)), tt.name)
		}
	})
}

func TestOpenPostgresOnAnEmptyDatabaseCreatesNothing(t *testing.T) {
	g := NewWithT(t)
	srv := pgserver.Start(t)
	dsn := srv.CreateDatabase(t, "empty")
	r, err := ledger.OpenPostgres(t.Context(), dsn)
	g.Expect(r).To(BeNil())
	g.Expect(err).To(MatchError(ledger.ErrSchema))
	g.Expect(errors.Is(err, ledger.ErrUnavailable)).To(BeFalse())

	pool, err := pgxpool.New(t.Context(), dsn)
	g.Expect(err).NotTo(HaveOccurred())
	defer pool.Close()
	var tables int
	g.Expect(pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&tables)).To(Succeed())
	g.Expect(tables).To(BeZero())
}

func TestOpenPostgresOnAnUnreachableDatabase(t *testing.T) {
	g := NewWithT(t)
	// A port nobody listens on: taken, then given back.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	addr := lis.Addr().String()
	g.Expect(lis.Close()).To(Succeed())

	const password = "s3cr3t-pa55word"
	for _, dsn := range []string{
		"postgres://reader:" + password + "@" + addr + "/ledger?connect_timeout=5",
		"host=127.0.0.1 port=" + addr[len("127.0.0.1:"):] + " user=reader password=" + password + " dbname=ledger",
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		r, err := ledger.OpenPostgres(ctx, dsn)
		cancel()
		g.Expect(r).To(BeNil())
		g.Expect(err).To(MatchError(ledger.ErrUnavailable))
		g.Expect(err).To(MatchError(pgledger.ErrUnavailable))
		g.Expect(err.Error()).NotTo(ContainSubstring(password))
		t.Log(err)
	}

	_, err = ledger.OpenPostgres(t.Context(), "postgres://reader:"+password+"@[::1")
	g.Expect(err).To(HaveOccurred(), "a DSN that does not parse")
	g.Expect(err.Error()).NotTo(ContainSubstring(password))
}
