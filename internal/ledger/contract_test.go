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
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/ledgertest"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/testenv"
)

// contractPageSize is the pages' size in the contract suite: small, so that
// the two processes of CaseTwoProcesses also race to start pages, and the
// retention case holds a few pages.
const contractPageSize = 20

// TestContract runs the outcome ledger's contract suite against the CRD
// ledger. ledgertest imports this package, so this test is in package
// ledger_test and cannot reach the control plane of TestMain: it starts
// one of its own, whose pages no other test writes, and each case begins
// with no page.
func TestContract(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("cannot stop the control plane: %v", err)
		}
	})
	scheme := runtime.NewScheme()
	if err := paymentsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	admin, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}

	ledgertest.Run(t, ledgertest.Backend{
		PruneUnit: contractPageSize,
		NewStore: func(t testing.TB, opts ledgertest.Options) ledgertest.Store {
			deletePages(t, admin)
			return ledgertest.Store{Open: func(ctx context.Context) (ledgertest.Ledger, error) {
				return startProcess(ctx, t, env.Config, scheme, ledger.Options{
					Retention: opts.Retention, Clock: opts.Clock, MaxEntriesPerPage: contractPageSize,
				})
			}}
		},
	})
}

// deletePages deletes every page and waits until they are gone.
func deletePages(t testing.TB, c client.Client) {
	t.Helper()
	ctx := t.Context()
	if err := c.DeleteAllOf(ctx, &paymentsv1alpha1.PaymentLedger{}); err != nil {
		t.Fatalf("cannot delete the ledger pages: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var pages paymentsv1alpha1.PaymentLedgerList
		if err := c.List(ctx, &pages); err != nil {
			t.Fatalf("cannot list the ledger pages: %v", err)
		}
		if len(pages.Items) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d ledger pages are still there after DeleteAllOf", len(pages.Items))
		case <-tick.C:
		}
	}
}

// startProcess runs a ledger as one manager process does (engine.NewLedger):
// its own client, a watch of the pages' metadata, and Start, until t's
// test ends. It returns once the pages are loaded.
func startProcess(ctx context.Context, t testing.TB, cfg *rest.Config, scheme *runtime.Scheme, opts ledger.Options) (*ledger.Ledger, error) {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("cannot make a client: %w", err)
	}
	informers, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("cannot make a cache: %w", err)
	}
	l := ledger.New(c, c, opts)
	run, stop := context.WithCancel(context.Background())
	if err := l.WatchPages(run, informers); err != nil {
		stop()
		return nil, err
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = informers.Start(run) })
	wg.Go(func() { _ = l.Start(run) })
	t.Cleanup(func() { stop(); wg.Wait() })

	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for l.Loaded() != nil {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("the ledger did not load its pages: %w", ctx.Err())
		case <-tick.C:
		}
	}
	if !informers.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the watch of the pages did not sync: %w", ctx.Err())
	}
	return l, nil
}
