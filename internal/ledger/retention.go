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

package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// Retention: whole pages are deleted once their newest entry is older than
// the retention, never the newest page, and never on a stale index.

// DefaultRetention keeps entries for 400 days: longer than a year of
// statements, refunds and disputes.
const DefaultRetention = 400 * 24 * time.Hour

// Prune deletes the pages whose newest entry is older than the retention,
// except the newest page, which appends still go to.
func (l *Ledger) Prune(ctx context.Context) error {
	cutoff := l.opts.Clock.Now().Add(-l.opts.Retention)
	l.mu.Lock()
	if l.stale {
		// Pruned once the index is rebuilt.
		l.mu.Unlock()
		return nil
	}
	type expired struct{ name, rv string }
	var victims []expired
	maxSeq := 0
	for _, p := range l.pages {
		maxSeq = max(maxSeq, p.seq)
	}
	for name, p := range l.pages {
		if p.seq < maxSeq && p.newest.Before(cutoff) && p.indexed == p.seen {
			victims = append(victims, expired{name, p.indexed})
		}
	}
	l.mu.Unlock()
	var errs []error
	for _, v := range victims {
		p := &paymentsv1alpha1.PaymentLedger{ObjectMeta: metav1.ObjectMeta{Name: v.name}}
		err := l.writer.Delete(ctx, p, client.Preconditions{ResourceVersion: &v.rv})
		switch {
		case err == nil || apierrors.IsNotFound(err):
			l.forget(v.name)
			prunedPagesTotal.Inc()
		case apierrors.IsConflict(err):
			// Written since it was read: looked at again next time.
		default:
			errs = append(errs, fmt.Errorf("cannot delete expired ledger page %s: %w", v.name, err))
		}
	}
	return errors.Join(errs...)
}
