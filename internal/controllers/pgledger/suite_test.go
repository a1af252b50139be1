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

// Package pgledger runs the operator with the outcome ledger on PostgreSQL
// end to end: pkg/operator.Setup with LedgerBackend postgres in managers of
// the test process (through pkg/paymentjobtest), the self-built API server,
// a real PostgreSQL server (internal/testing/pgserver) and the payment
// sandbox. Each test starts a server of its own, so that one that kills its
// server or makes it read-only disturbs no other. Tests only; they need the
// postgres build tag.
package pgledger

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/pgserver"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/testenv"
	"github.com/idempotency-dev/paymentjob-operator/pkg/operator"
	"github.com/idempotency-dev/paymentjob-operator/pkg/paymentjobtest"
)

// The control plane the tests share; each test works in a namespace of its
// own.
var (
	env       *testenv.Env
	k8sClient client.Client
)

const (
	// timeout bounds every wait for the operator to reach a state.
	timeout = 30 * time.Second
	// poll is how often the waits read the API server or the database.
	poll = 50 * time.Millisecond
	// providerName is the PaymentProvider of every test namespace.
	providerName = "sandbox"
	// clusterName names the test's cluster in the rows of the ledger.
	clusterName = "envtest"
)

func TestMain(m *testing.M) {
	// What logs outside the managers (client-go's reflectors) logs errors
	// only.
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := paymentsv1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	if k8sClient, err = client.New(env.Config, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintf(os.Stderr, "cannot create a client: %v\n", err)
	} else {
		code = m.Run()
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "cannot stop the control plane: %v\n", err)
	}
	os.Exit(code)
}

// scenario is one test's PostgreSQL server, its namespace with a Ready
// PaymentProvider, and the operator watching it with the ledger in the
// server's database.
type scenario struct {
	*WithT
	t  *testing.T
	ns string
	db *pgserver.Server
	// dsn reaches the ledger's database.
	dsn string
	// kit runs the operator and the sandbox the provider charges at.
	kit *paymentjobtest.Env
}

// newScenario starts a PostgreSQL server with a database for the ledger,
// creates a namespace and starts the operator on it (tune changes its
// options), then creates the namespace's PaymentProvider and waits until it
// is Ready.
func newScenario(t *testing.T, tune func(*operator.Options)) *scenario {
	t.Helper()
	return newScenarioOn(t, func(db *pgserver.Server) string { return db.CreateDatabase(t, "ledger") }, tune)
}

// newScenarioOn is newScenario with the ledger in the database that
// database makes on the server, and reaches through the DSN it returns.
func newScenarioOn(t *testing.T, database func(*pgserver.Server) string, tune func(*operator.Options)) *scenario {
	t.Helper()
	s := &scenario{WithT: NewWithT(t), t: t, ns: "pg-" + rand.String(6), db: pgserver.Start(t)}
	s.dsn = database(s.db)
	s.Expect(k8sClient.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}})).To(Succeed())
	s.kit = s.startOperator("replica-a", tune)
	s.Expect(s.kit.CreateProvider(t.Context(), s.ns, providerName)).To(Succeed())
	return s
}

// startOperator runs the operator in a manager of its own, named holder in
// its claims, with the PostgreSQL ledger in the scenario's database, leader
// election off (as every kit manager), watching the scenario's namespace.
// It comes with a sandbox of its own, which only the providers made by its
// CreateProvider charge at. It stops when the test ends, before the
// database server does.
func (s *scenario) startOperator(holder string, tune func(*operator.Options)) *paymentjobtest.Env {
	s.t.Helper()
	opts := operator.Options{
		Holder:        holder + "/" + rand.String(6),
		LedgerBackend: operator.LedgerPostgres,
		// One server, with no standby.
		Postgres: operator.PostgresLedger{DSN: s.dsn, Cluster: clusterName, Durability: operator.DurabilityLocal},
	}
	if tune != nil {
		tune(&opts)
	}
	return paymentjobtest.StartT(s.t, paymentjobtest.Options{
		Config:     env.Config,
		Namespaces: []string{s.ns},
		Operator:   opts,
		Logger:     testLogger(),
	})
}

// testLogger writes the operator's logs to stderr when
// PAYMENTJOB_TEST_VERBOSE is set, and discards them otherwise: a database
// that does not answer is logged at every attempt.
func testLogger() logr.Logger {
	if os.Getenv("PAYMENTJOB_TEST_VERBOSE") == "" {
		return logr.Logger{}
	}
	return zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true))
}

// createJobs creates a PaymentJob the sandbox charges under each name.
func (s *scenario) createJobs(names ...string) {
	s.t.Helper()
	for _, name := range names {
		job := &paymentsv1alpha1.PaymentJob{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
			Spec: paymentsv1alpha1.PaymentJobSpec{
				ProviderRef:   paymentsv1alpha1.ProviderReference{Name: providerName},
				Amount:        2000,
				Currency:      "usd",
				PaymentMethod: paymentjobtest.PaymentMethodSucceeds,
				Description:   "March invoice",
			},
		}
		s.Expect(k8sClient.Create(s.t.Context(), job)).To(Succeed(), "creating %s", name)
	}
}

// names returns prefix-00, prefix-01, ... n names.
func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	return out
}

// jobs reads the scenario's PaymentJobs from the API server, by name.
func (s *scenario) jobs(g Gomega) map[string]paymentsv1alpha1.PaymentJob {
	var list paymentsv1alpha1.PaymentJobList
	g.Expect(k8sClient.List(s.t.Context(), &list, client.InNamespace(s.ns))).To(Succeed())
	byName := make(map[string]paymentsv1alpha1.PaymentJob, len(list.Items))
	for _, job := range list.Items {
		byName[job.Name] = job
	}
	return byName
}

// key is the idempotency key the operator sends for the job name: the
// sandbox counts charges under it, and the ledger records the outcome
// under it.
func (s *scenario) key(name string) string { return s.ns + "/" + name }

// charges is how many times the sandbox charged each job of names (money
// moved; with idempotency off, every create request that reached it).
func (s *scenario) charges(names []string) map[string]int {
	byKey := s.kit.Sandbox().Stats().ChargesByKey
	out := make(map[string]int, len(names))
	for _, name := range names {
		out[name] = byKey[s.key(name)]
	}
	return out
}

// each maps every name to n.
func each(names []string, n int) map[string]int {
	out := make(map[string]int, len(names))
	for _, name := range names {
		out[name] = n
	}
	return out
}

// row is an entry of the ledger's table.
type row struct {
	Charge, Outcome, Cluster string
	// Rows is how many rows hold the key: the primary key makes it 1.
	Rows int
}

// ledgerRows reads the ledger's rows of the scenario's keys straight from
// the database, by job name.
func (s *scenario) ledgerRows(g Gomega) map[string]row {
	rows := map[string]row{}
	s.query(g, func(ctx context.Context, conn *pgx.Conn) error {
		res, err := conn.Query(ctx, `SELECT key, min(charge), min(outcome), min(cluster), count(*)
FROM paymentjob_outcomes WHERE starts_with(key, $1) GROUP BY key`, s.ns+"/")
		if err != nil {
			return err
		}
		defer res.Close()
		for res.Next() {
			var key string
			var r row
			if err := res.Scan(&key, &r.Charge, &r.Outcome, &r.Cluster, &r.Rows); err != nil {
				return err
			}
			rows[key[len(s.ns)+1:]] = r
		}
		return res.Err()
	})
	return rows
}

// duplicateKeys lists the keys held by more than one row of the ledger's
// table, whoever recorded them.
func (s *scenario) duplicateKeys(g Gomega) []string {
	var keys []string
	s.query(g, func(ctx context.Context, conn *pgx.Conn) error {
		res, err := conn.Query(ctx, `SELECT key FROM paymentjob_outcomes GROUP BY key HAVING count(*) > 1`)
		if err != nil {
			return err
		}
		keys, err = pgx.CollectRows(res, pgx.RowTo[string])
		return err
	})
	return keys
}

// query runs use on a connection of its own to the ledger's database.
func (s *scenario) query(g Gomega, use func(context.Context, *pgx.Conn) error) {
	ctx, cancel := context.WithTimeout(s.t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.dsn)
	g.Expect(err).NotTo(HaveOccurred(), "connecting to the ledger's database")
	defer conn.Close(ctx)
	g.Expect(use(ctx, conn)).To(Succeed(), "reading the ledger's table")
}

// expectPaidOnce checks what users are promised once the operator is done
// with the jobs of names, against the API server, the sandbox and the
// database: every job is Completed and finished (its finalizer off, its
// finished label on), charged exactly once at the provider, and recorded
// exactly once in the ledger with the charge its status names.
func (s *scenario) expectPaidOnce(g Gomega, names []string) {
	jobs := s.jobs(g)
	rows := s.ledgerRows(g)
	for _, name := range names {
		job, ok := jobs[name]
		g.Expect(ok).To(BeTrue(), "job %s exists", name)
		g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted), "job %s: %s", name, ready(&job))
		g.Expect(job.Status.IdempotencyKey).To(Equal(s.key(name)))
		g.Expect(controllerutil.ContainsFinalizer(&job, paymentsv1alpha1.Finalizer)).To(BeFalse(),
			"job %s keeps its finalizer until its outcome is in the ledger", name)
		g.Expect(job.Labels).To(HaveKeyWithValue(paymentsv1alpha1.LabelFinished, "true"), "job %s", name)
		g.Expect(rows).To(HaveKeyWithValue(name, row{Charge: job.Status.ProviderResponse.ID,
			Outcome: string(paymentsv1alpha1.LedgerCompleted), Cluster: clusterName, Rows: 1}), "the ledger's row of %s", name)
	}
	g.Expect(s.charges(names)).To(Equal(each(names, 1)), "charges at the provider, by job")
	g.Expect(rows).To(HaveLen(len(names)), "no other rows for the namespace")
	g.Expect(s.duplicateKeys(g)).To(BeEmpty(), "keys recorded more than once")
}

// ready describes the job's phase and Ready condition, for failures.
func ready(job *paymentsv1alpha1.PaymentJob) string {
	c := meta.FindStatusCondition(job.Status.Conditions, paymentsv1alpha1.ConditionReady)
	if c == nil {
		return fmt.Sprintf("phase %q, no Ready condition", job.Status.Phase)
	}
	return fmt.Sprintf("phase %q, Ready=%s %s: %s", job.Status.Phase, c.Status, c.Reason, c.Message)
}

// waitingForLedger reports whether the job waits, never claimed, for the
// ledger to answer: Pending with Ready=False LedgerUnavailable.
func waitingForLedger(job *paymentsv1alpha1.PaymentJob) bool {
	c := meta.FindStatusCondition(job.Status.Conditions, paymentsv1alpha1.ConditionReady)
	return job.Status.Phase == paymentsv1alpha1.PhasePending && job.Status.Attempts == 0 &&
		c != nil && c.Status == metav1.ConditionFalse && c.Reason == paymentsv1alpha1.ReasonLedgerUnavailable
}

// ledgerErrors reads paymentjob_ledger_errors_total{operation} from the
// process's registry, which every manager of the process shares.
func ledgerErrors(g Gomega, operation string) float64 {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "paymentjob_ledger_errors_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "operation" && l.GetValue() == operation {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
