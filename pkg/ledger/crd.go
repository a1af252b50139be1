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
	"net"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	internalledger "github.com/idempotency-dev/paymentjob-operator/internal/ledger"
)

// crdReader reads the PaymentLedger pages.
type crdReader struct {
	reader client.Reader
}

// NewCRDReader returns a Reader of the PaymentLedger pages that c reads
// from the API server; c needs the scheme of api/v1alpha1 and the right to
// list paymentledgers. It must not be a cache-backed reader (a manager's
// GetClient): a plain client.New client, or a manager's GetAPIReader, is
// fine.
//
// Find and Each read every page, a few pages a request, in the order of
// their names: the order in which the operator recorded the outcomes, page
// after page. That is oldest first, except for an outcome recorded late
// (one finished before the ledger was installed, say), which comes where
// it was recorded. A list that outlives the API server's compaction goes
// on from where it was; an entry is never handed over twice, and one
// recorded meanwhile may be left out.
func NewCRDReader(c client.Reader) Reader {
	return &crdReader{reader: c}
}

// Find reads every page and returns the entries recorded under key.
func (r *crdReader) Find(ctx context.Context, key string) ([]Entry, error) {
	m := newKeyMatch(key)
	var found []Entry
	err := internalledger.ReadAll(ctx, r.reader, func(e internalledger.Entry) error {
		if m.matches(e) {
			found = append(found, entryOf(e))
		}
		return nil
	})
	if err != nil {
		return nil, crdErr(err)
	}
	return found, nil
}

// Each reads every page and hands fn the entries that pass f, in the order
// they were recorded.
func (r *crdReader) Each(ctx context.Context, f Filter, fn func(Entry) error) error {
	var fnErr error
	err := internalledger.ReadAll(ctx, r.reader, func(e internalledger.Entry) error {
		if !f.passes(e) {
			return nil
		}
		fnErr = fn(entryOf(e))
		return fnErr
	})
	if err != nil && fnErr == nil {
		return crdErr(err)
	}
	return err
}

// crdErr marks an error of the API server that means it did not answer.
func crdErr(err error) error {
	var netErr net.Error
	if errors.As(err, &netErr) || apierrors.IsServiceUnavailable(err) || apierrors.IsTimeout(err) ||
		apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err) ||
		errors.Is(err, context.DeadlineExceeded) {
		return &unavailableError{err: err}
	}
	return err
}
