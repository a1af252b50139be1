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
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/ledger"
)

// keysOf are the keys of entries, in their order.
func keysOf(entries []ledger.Entry) []string {
	keys := make([]string, 0, len(entries))
	for _, e := range entries {
		keys = append(keys, e.Key)
	}
	return keys
}

func TestCRDReaderFind(t *testing.T) {
	tests := []struct {
		name string
		key  string
		want []string
	}{
		{name: "exactly the key", key: ledger.SentKey("shop", "order-1"), want: []string{"shop/order-1"}},
		{name: "the key under a provider's key scope", key: ledger.SentKey("shop", "order-2"), want: []string{"eu:shop/order-2"}},
		{name: "the scoped key itself", key: "eu:shop/order-2", want: []string{"eu:shop/order-2"}},
		{name: "a long key as written, hashed under a key scope", key: "shop/" + longKey, want: []string{hashedEU}},
		{name: "a hashed key as sent under a key scope", key: hashedEU, want: []string{hashedEU}},
		{name: "a hashed key as sent without a scope is not the scoped one", key: ledger.SentKey("shop", longKey)},
		{name: "a refund's key, apart from its charge's", key: ledger.RefundKey("shop", "order-1"), want: []string{"shop.refund/order-1"}},
		{name: "a key of another namespace", key: ledger.SentKey("other", "order-2")},
		{name: "a key not recorded", key: ledger.SentKey("shop", "order-9")},
		{name: "a key's suffix is not the key", key: "order-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ledger.NewCRDReader(exampleLedger()).Find(t.Context(), tt.key)
			g.Expect(err).NotTo(HaveOccurred())
			if tt.want == nil {
				g.Expect(got).To(BeEmpty())
				return
			}
			g.Expect(keysOf(got)).To(Equal(tt.want))
		})
	}
}

func TestCRDReaderFindsALongKeyAsWritten(t *testing.T) {
	g := NewWithT(t)
	sent := ledger.SentKey("shop", longKey)
	page := &paymentsv1alpha1.PaymentLedger{
		ObjectMeta: metav1.ObjectMeta{Name: "page-00000001"},
		Providers:  []paymentsv1alpha1.ProviderIdentity{stripe},
		Entries: []paymentsv1alpha1.LedgerEntry{{Key: sent, Fingerprint: "sha256:f", Outcome: paymentsv1alpha1.LedgerCompleted,
			At: metav1.NewTime(t0)}},
	}
	c := fake.NewClientBuilder().WithScheme(exampleScheme()).WithObjects(page).Build()
	for _, key := range []string{sent, "shop/" + longKey} {
		got, err := ledger.NewCRDReader(c).Find(t.Context(), key)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(keysOf(got)).To(Equal([]string{sent}), key)
	}
}

func TestCRDReaderFindGivesTheWholeEntry(t *testing.T) {
	g := NewWithT(t)
	got, err := ledger.NewCRDReader(exampleLedger()).Find(t.Context(), "shop/order-1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal([]ledger.Entry{{
		Key: "shop/order-1", Namespace: "shop", Fingerprint: "sha256:f1", Outcome: paymentsv1alpha1.LedgerCompleted,
		Charge: "pi_1", Amount: 1250, Currency: "eur", At: t0, Provider: stripe,
	}}))
	g.Expect(got[0].At.Location()).To(Equal(time.UTC))

	refunds, err := ledger.NewCRDReader(exampleLedger()).Find(t.Context(), ledger.RefundKey("shop", "order-1"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refunds).To(HaveLen(1))
	g.Expect(refunds[0].Refund).To(BeTrue())
	g.Expect(refunds[0].Namespace).To(Equal("shop"))
}

func TestCRDReaderEach(t *testing.T) {
	tests := []struct {
		name   string
		filter ledger.Filter
		want   []string
	}{
		{name: "everything, in the order recorded", want: []string{"shop/order-1", "eu:shop/order-2",
			"shop.refund/order-1", "other/order-1", hashedEU, "shop/order-3"}},
		{name: "since a time, that time included", filter: ledger.Filter{Since: t0.Add(2 * time.Hour)},
			want: []string{"shop.refund/order-1", "other/order-1", hashedEU, "shop/order-3"}},
		{name: "a namespace under every key scope, refunds included", filter: ledger.Filter{Namespace: "shop"},
			want: []string{"shop/order-1", "eu:shop/order-2", "shop.refund/order-1", hashedEU, "shop/order-3"}},
		{name: "a namespace since a time", filter: ledger.Filter{Namespace: "other", Since: t0.Add(time.Hour)},
			want: []string{"other/order-1"}},
		{name: "a namespace with no entries", filter: ledger.Filter{Namespace: "sho"}},
		{name: "after the newest entry", filter: ledger.Filter{Since: t0.Add(6 * time.Hour)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var got []ledger.Entry
			err := ledger.NewCRDReader(exampleLedger()).Each(t.Context(), tt.filter, func(e ledger.Entry) error {
				got = append(got, e)
				return nil
			})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(keysOf(got)).To(Equal(append([]string{}, tt.want...)))
		})
	}
}

func TestCRDReaderEachEndsOnAnErrorOfFn(t *testing.T) {
	g := NewWithT(t)
	stop := errors.New("stop")
	calls := 0
	err := ledger.NewCRDReader(exampleLedger()).Each(t.Context(), ledger.Filter{}, func(ledger.Entry) error {
		calls++
		return stop
	})
	g.Expect(err).To(MatchError(stop))
	g.Expect(calls).To(Equal(1))
}

func TestCRDReaderTellsAnAPIServerThatDidNotAnswer(t *testing.T) {
	gr := schema.GroupResource{Group: paymentsv1alpha1.GroupVersion.Group, Resource: "paymentledgers"}
	tests := []struct {
		name        string
		err         error
		unavailable bool
	}{
		{name: "unavailable", err: apierrors.NewServiceUnavailable("etcd is down"), unavailable: true},
		{name: "a timeout", err: apierrors.NewTimeoutError("slow", 1), unavailable: true},
		{name: "forbidden", err: apierrors.NewForbidden(gr, "", errors.New("no RBAC"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := interceptor.NewClient(exampleLedger().(client.WithWatch), interceptor.Funcs{
				List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
					return tt.err
				},
			})
			r := ledger.NewCRDReader(c)
			_, findErr := r.Find(t.Context(), "shop/order-1")
			eachErr := r.Each(t.Context(), ledger.Filter{}, func(ledger.Entry) error { return nil })
			for _, err := range []error{findErr, eachErr} {
				g.Expect(err).To(HaveOccurred())
				g.Expect(errors.Is(err, ledger.ErrUnavailable)).To(Equal(tt.unavailable), err.Error())
				g.Expect(errors.Is(err, tt.err)).To(BeTrue(), "the API server's error is kept")
			}
		})
	}
}

func TestCSVWriter(t *testing.T) {
	g := NewWithT(t)
	var buf bytes.Buffer
	w := ledger.NewCSVWriter(&buf)
	e := ledger.Entry{
		Key: "shop/order,\"7\"\nx", Namespace: "shop", Fingerprint: "sha256:f", Outcome: paymentsv1alpha1.LedgerFailed,
		Reason: "Resolved", ResolvedBy: "=cmd", Charge: "pi_1", Amount: 1250, Currency: "eur",
		At:       time.Date(2026, 3, 1, 13, 0, 0, 500_000_000, time.FixedZone("CET", 3600)),
		Provider: stripe,
	}
	g.Expect(w.Write(e)).To(Succeed())
	g.Expect(w.Write(ledger.Entry{Key: "old/k", Outcome: paymentsv1alpha1.LedgerCompleted, At: t0})).To(Succeed())
	g.Expect(w.Flush()).To(Succeed())
	g.Expect(buf.String()).To(Equal(
		"at,key,namespace,outcome,reason,charge,amount,currency,fingerprint,provider_endpoint,provider_account,resolved_by\n" +
			"2026-03-01T12:00:00.5Z,\"shop/order,\"\"7\"\"\nx\",shop,Failed,Resolved,pi_1,1250,eur,sha256:f,https://api.stripe.com,acct_1,=cmd\n" +
			"2026-03-01T12:00:00Z,old/k,,Completed,,,,,,,,\n"))

	records, err := csv.NewReader(&buf).ReadAll()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(records).To(HaveLen(3))
	g.Expect(records[0]).To(Equal(ledger.CSVHeader))
	g.Expect(records[1][1]).To(Equal(e.Key), "a field with a comma, quotes and a newline reads back as it was")
}

func TestCSVWriterWritesTheHeaderOfAnEmptyExport(t *testing.T) {
	g := NewWithT(t)
	var buf bytes.Buffer
	g.Expect(ledger.NewCSVWriter(&buf).Flush()).To(Succeed())
	g.Expect(buf.String()).To(Equal(
		"at,key,namespace,outcome,reason,charge,amount,currency,fingerprint,provider_endpoint,provider_account,resolved_by\n"))
}
