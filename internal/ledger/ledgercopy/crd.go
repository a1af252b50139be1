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

package ledgercopy

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
)

// The CRD ledger as a source (its pages, read from the API server) and as a
// destination (a ledger process of the copy's own).

// Pages is the CRD ledger's PaymentLedger pages as a Source, read through
// reader, which must read from the API server, not from a cache: a few
// pages a request (ledger.ReadAll). It needs no running ledger.
func Pages(reader client.Reader) Source {
	return pages{reader: reader}
}

type pages struct{ reader client.Reader }

// Scan implements Source.
func (p pages) Scan(ctx context.Context, fn func(ledger.Entry) error) error {
	return ledger.ReadAll(ctx, p.reader, fn)
}

// keepEverything is the retention of the copy's own CRD ledger: it deletes
// no page, whatever its age. The managers' retention applies to the pages,
// as it does to every page.
const keepEverything = 200 * 365 * 24 * time.Hour

// loadTimeout bounds how long StartCRD waits for the pages to be indexed.
const loadTimeout = 2 * time.Minute

// StartCRD starts a CRD ledger of its own on the cluster that cfg reaches,
// as a manager replica runs one (it watches the pages' metadata, indexes
// them, and appends with resourceVersion-guarded writes, so managers may
// record at the same time), and returns it once it has indexed every page.
// It runs until ctx ends. It is the Destination of a copy to the CRD
// ledger, and what Verify asks there. opts.Retention is not used: this
// ledger deletes no page.
//
// It needs get, list, watch, create and update on paymentledgers.
func StartCRD(ctx context.Context, cfg *rest.Config, opts ledger.Options) (*ledger.Ledger, error) {
	scheme := runtime.NewScheme()
	if err := paymentsv1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("cannot make a client of the API server: %w", err)
	}
	informers, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("cannot make a cache of the ledger pages' metadata: %w", err)
	}
	opts.Retention = keepEverything
	l := ledger.New(c, c, opts)
	if err := l.WatchPages(ctx, informers); err != nil {
		return nil, err
	}
	logger := log.FromContext(ctx)
	go func() {
		if err := informers.Start(ctx); err != nil {
			logger.Error(err, "Cannot watch the ledger pages")
		}
	}()
	go func() {
		// Start logs what keeps it from loading, and retries.
		_ = l.Start(ctx)
	}()
	waitCtx, cancel := context.WithTimeout(ctx, loadTimeout)
	defer cancel()
	if !informers.WaitForCacheSync(waitCtx) {
		return nil, fmt.Errorf("cannot watch the ledger pages within %s (may this process watch paymentledgers?): %w",
			loadTimeout, context.Cause(waitCtx))
	}
	err = wait.PollUntilContextCancel(waitCtx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		return l.Loaded() == nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot load the CRD ledger within %s (may this process list paymentledgers?): %w", loadTimeout, err)
	}
	return l, nil
}
