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
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/operator"
)

// The operator in a manager of your own, as cmd/main.go runs it: the cache
// options first, then Setup, then the manager's Start. (It needs an API
// server at the address, so it is compiled, not run; pkg/paymentjobtest
// runs the same with a control plane.)
func Example() {
	scheme := runtime.NewScheme()
	_ = paymentsv1alpha1.AddToScheme(scheme)
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:6443"}, ctrl.Options{
		Scheme: scheme,
		Cache:  operator.CacheOptions(),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := operator.Setup(mgr, operator.Options{ClaimLease: time.Minute, InsecureProviderHosts: []string{"payments.internal"}}); err != nil {
		fmt.Println(err)
		return
	}
	_ = mgr.Start(ctrl.SetupSignalHandler())
}

// The outcome ledger in PostgreSQL instead of the cluster's etcd: the
// connection string as the manager reads it from a mounted Secret, TLS
// checked against the database's CA (sslmode=verify-full), and this
// cluster's name in the rows, for a fleet that shares the database.
// (Compiled, not run: it needs an API server and a database.)
func ExampleOptions_postgres() {
	scheme := runtime.NewScheme()
	_ = paymentsv1alpha1.AddToScheme(scheme)
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:6443"}, ctrl.Options{
		Scheme: scheme,
		Cache:  operator.CacheOptions(),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	dsn, err := os.ReadFile("/etc/paymentjob-operator/ledger-postgres/dsn")
	if err != nil {
		fmt.Println(err)
		return
	}
	err = operator.Setup(mgr, operator.Options{
		LedgerBackend: operator.LedgerPostgres,
		Postgres: operator.PostgresLedger{
			DSN:        strings.TrimSpace(string(dsn)),
			RootCAFile: "/etc/paymentjob-operator/ledger-postgres/ca.crt",
			Cluster:    "eu-west-1",
		},
	})
	if err != nil {
		fmt.Println(err) // the database did not answer within a minute, refused the schema, or has no synchronous standby
		return
	}
	_ = mgr.Start(ctrl.SetupSignalHandler())
}
