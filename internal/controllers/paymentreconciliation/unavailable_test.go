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

package paymentreconciliation

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/sandboxprovider"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// errConnect is what pgx says of a database it cannot reach.
var errConnect = errors.New("cannot read the outcome ledger: the outcome ledger's database did not answer: " +
	"failed to connect to `user=ledgerwriter database=outcomes`: 10.0.0.7:5432 (10.0.0.7): dial error: connection refused")

// unreachable is a ledger whose database does not answer: opening it
// fails (open), or reading it does.
type unreachable struct{ open bool }

func (u unreachable) Reader(context.Context) (LedgerReader, error) {
	if u.open {
		return nil, errConnect
	}
	return u, nil
}

func (unreachable) Between(context.Context, time.Time, time.Time, func(ledger.Entry) error) error {
	return errConnect
}

func (unreachable) FindAll(context.Context, []string) (map[string]ledger.Entry, error) {
	return nil, errConnect
}

// A run whose ledger does not answer is tried again, and its status says
// the operator's ledger is unavailable and where the cause is: never the
// database's user, name, host or port.
func TestUnfinishedRunHidesTheLedgersConnectionDetails(t *testing.T) {
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	engine := sandbox.NewEngine(sandbox.WithAccount("acct_down"), sandbox.WithClock(func() time.Time { return base }))
	engine.PutIntent(sandbox.Intent{Amount: 1000, Currency: "eur", Created: base.Add(time.Second),
		Metadata: map[string]string{payment.MetadataKeyIdempotencyKey: "shop/order-1"}})
	account := paymentsv1alpha1.ProviderIdentity{UID: "uid", Endpoint: "https://api.stripe.com", Account: "acct_down", Mode: "test"}
	scheme := runtime.NewScheme()
	NewWithT(t).Expect(paymentsv1alpha1.AddToScheme(scheme)).To(Succeed())
	perSecond := int32(100)
	pr := &paymentsv1alpha1.PaymentReconciliation{Spec: paymentsv1alpha1.PaymentReconciliationSpec{RequestsPerSecond: &perSecond}}

	for _, tt := range []struct {
		name   string
		ledger unreachable
	}{
		{name: "the ledger cannot be opened", ledger: unreachable{open: true}},
		{name: "a slice of it cannot be read", ledger: unreachable{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := &Reconciler{Reader: fake.NewClientBuilder().WithScheme(scheme).Build(), Ledger: tt.ledger, Clock: clock.RealClock{}}
			_, _, err := r.run(t.Context(), pr, &lister{Provider: sandboxprovider.NewProvider(engine), engine: engine},
				scope{account: account, accountsOnly: true, from: base, to: base.Add(time.Minute)})
			g.Expect(err).To(MatchError(errConnect))
			phase, _, again := unfinished(err)
			g.Expect(again).To(BeTrue(), "tried again")
			g.Expect(phase).To(Equal(paymentsv1alpha1.ReconciliationRunning))
			msg := unfinishedMessage(err)
			for _, detail := range []string{"ledgerwriter", "outcomes", "10.0.0.7", "5432", "failed to connect"} {
				g.Expect(msg).NotTo(ContainSubstring(detail))
			}
			g.Expect(msg).To(ContainSubstring("the operator's ledger is unavailable"))
			g.Expect(msg).To(ContainSubstring("manager's log"))
		})
	}
}
