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

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
)

// PagesLedger is the Ledger of the PaymentLedger pages: Scan reads them from
// the API server a page at a time (the manager keeps only their keys'
// hashes), FindAll asks the ledger.
func PagesLedger(l *ledger.Ledger, reader client.Reader) Ledger {
	return pagesLedger{l: l, reader: reader}
}

type pagesLedger struct {
	l      *ledger.Ledger
	reader client.Reader
}

func (p pagesLedger) Scan(ctx context.Context, fn func(ledger.Entry) error) error {
	return ledger.ReadAll(ctx, p.reader, fn)
}

func (p pagesLedger) FindAll(ctx context.Context, keys []string) (map[string]ledger.Entry, error) {
	return p.l.FindAll(ctx, keys)
}
