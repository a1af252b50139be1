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

package operator_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger/ledgercopy"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger/pgledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/pgserver"
	"github.com/idempotency-dev/paymentjob-operator/pkg/operator"
)

// A cluster that ran on the CRD ledger is switched to PostgreSQL: Setup
// refuses while the pages hold an outcome the database lacks (a manifest of
// that payment re-created would be charged again), starts with
// SkipMigrationCheck, and starts without it once the outcome is copied.
func TestSetupOnPostgresRefusesADatabaseThatLacksThePages(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	pages, err := ledgercopy.StartCRD(ctx, rest.CopyConfig(env.Config), ledger.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	paid := ledger.Entry{Key: "billing/invoice-2026-0042", Fingerprint: "sha256:42", Charge: "pi_42",
		Provider: paymentsv1alpha1.ProviderIdentity{UID: "uid", Endpoint: "https://api.stripe.com", Account: "acct_1", Mode: "live"},
		Outcome:  paymentsv1alpha1.LedgerCompleted, At: time.Now().UTC().Truncate(time.Second)}
	g.Expect(pages.Record(ctx, paid)).To(Succeed())
	t.Cleanup(func() {
		// The other tests of the package start with no page.
		g.Expect(c.DeleteAllOf(context.Background(), &paymentsv1alpha1.PaymentLedger{})).To(Succeed())
	})

	dsn := pgserver.Start(t).CreateDatabase(t, "ledger")
	setup := func(skip bool) error {
		mgr, err := ctrl.NewManager(rest.CopyConfig(env.Config), ctrl.Options{
			Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
			Cache:      operator.CacheOptions(),
			Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		})
		g.Expect(err).NotTo(HaveOccurred())
		// Never started: Setup's answer is what is tested.
		return operator.Setup(mgr, operator.Options{LedgerBackend: operator.LedgerPostgres,
			Postgres: operator.PostgresLedger{DSN: dsn, SkipMigrationCheck: skip, Durability: operator.DurabilityLocal}})
	}

	err = setup(false)
	g.Expect(err).To(MatchError(ContainSubstring("lacks 1 of the 1 outcomes recorded in this cluster's PaymentLedger pages")))
	g.Expect(err).To(MatchError(ContainSubstring("billing/invoice-2026-0042")))
	g.Expect(err).To(MatchError(ContainSubstring("manager ledger copy --from=crd --to=postgres")))
	g.Expect(err.Error()).NotTo(ContainSubstring(dsn), "the DSN stays out of the error")

	g.Expect(setup(true)).To(Succeed(), "told to go on without them")

	db, err := pgledger.Open(ctx, dsn, pgledger.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	defer db.Close()
	copied, err := ledgercopy.Copy(ctx, ledgercopy.Pages(c), db, ledgercopy.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(copied.Copied).To(Equal(1))
	g.Expect(setup(false)).To(Succeed(), "every outcome of the pages is in the database")
}

// The manager needs a commit to wait for a synchronous standby: Setup on a
// PostgreSQL server without one refuses to start, says what is lost and
// names the flag that accepts it (never the DSN); with a standby made
// synchronous it starts, and with DurabilityLocal a single server does.
func TestSetupOnPostgresRefusesADatabaseWithoutASynchronousStandby(t *testing.T) {
	g := NewWithT(t)
	primary := pgserver.Start(t)
	dsn := primary.CreateDatabase(t, "ledger")
	setup := func(durability operator.LedgerDurability) error {
		mgr, err := ctrl.NewManager(rest.CopyConfig(env.Config), ctrl.Options{
			Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
			Cache:      operator.CacheOptions(),
			Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		})
		g.Expect(err).NotTo(HaveOccurred())
		// Never started: Setup's answer is what is tested.
		return operator.Setup(mgr, operator.Options{LedgerBackend: operator.LedgerPostgres,
			Postgres: operator.PostgresLedger{DSN: dsn, Durability: durability}})
	}

	err := setup("")
	g.Expect(err).To(MatchError(pgledger.ErrNotSynchronous), "the default needs a synchronous standby")
	g.Expect(err).To(MatchError(ContainSubstring("synchronous_standby_names is empty")))
	g.Expect(err).To(MatchError(ContainSubstring("lost in a failover")))
	g.Expect(err).To(MatchError(ContainSubstring("--ledger-postgres-durability=local")))
	g.Expect(err.Error()).NotTo(ContainSubstring(primary.Addr()), "the DSN stays out of the error")
	g.Expect(setup(operator.DurabilityLocal)).To(Succeed(), "a single server, accepted when told")

	primary.StartStandby(t)
	primary.SetSynchronousStandbyNames(t, "*")
	g.Expect(setup(operator.DurabilitySynchronous)).To(Succeed(), "a synchronous standby")
}
