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

package campaign

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// The oracle: the three books read whole, the provider's (the sandbox's
// charges and refunds), the cluster's (the objects in the fake API server)
// and the ledger's (the PaymentLedger pages), and the invariants between
// them and the model.

// intents lists every PaymentIntent of the provider's first account.
func (w *world) intents() ([]sandbox.Intent, error) { return allIntents(w.sbx) }

// allIntents lists every PaymentIntent of e, page after page.
func allIntents(e *sandbox.Engine) ([]sandbox.Intent, error) {
	var all []sandbox.Intent
	q := sandbox.ListQuery{Limit: sandbox.MaxListLimit}
	for {
		page, more, err := e.ListIntents(q)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if !more || len(page) == 0 {
			return all, nil
		}
		q.StartingAfter = page[len(page)-1].ID
	}
}

// read reads the three books, the provider's of both accounts.
func (w *world) read(ctx context.Context) (books, error) {
	b := books{intents: map[string]sandbox.Intent{}, refunds: map[string]sandbox.Refund{}, accounts: map[string]string{},
		charged: map[string]map[string]int{}, stats: sumStats(w.sbx.Stats(), w.other.Stats())}
	for _, e := range []*sandbox.Engine{w.sbx, w.other} {
		b.charged[e.Account()] = e.Stats().ChargesByKey
		intents, err := allIntents(e)
		if err != nil {
			return b, fmt.Errorf("cannot list the charges of %s: %w", e.Account(), err)
		}
		for _, in := range intents {
			b.intents[in.ID] = in
			b.accounts[in.ID] = e.Account()
		}
		for _, r := range e.ListRefunds("") {
			b.refunds[r.ID] = r
		}
	}
	var jobs paymentsv1alpha1.PaymentJobList
	if err := w.store.List(ctx, &jobs); err != nil {
		return b, fmt.Errorf("cannot list jobs: %w", err)
	}
	b.jobs = jobs.Items
	var refs paymentsv1alpha1.PaymentRefundList
	if err := w.store.List(ctx, &refs); err != nil {
		return b, fmt.Errorf("cannot list refunds: %w", err)
	}
	b.refs = refs.Items
	err := ledger.ReadAll(ctx, w.store, func(e ledger.Entry) error {
		b.ledger = append(b.ledger, e)
		return nil
	})
	return b, err
}

// checkSafety is the "" action of t.Repeat: the invariants that hold after
// every step, whatever the faults.
func (c *campaign) checkSafety(t *rapid.T) {
	b, err := c.w.read(context.Background())
	if err != nil {
		t.Fatalf("cannot read the books: %v", err)
	}
	// The refunds sent are not in the books: the providers noted them.
	if v := slices.Concat(c.m.violations(b), c.w.refundsSent.violations(), c.finalViolations(b), c.w.takenBackViolations()); len(v) > 0 {
		t.Fatalf("the books disagree:\n  %s", strings.Join(v, "\n  "))
	}
	c.remember(b)
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

func objectKey(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}
