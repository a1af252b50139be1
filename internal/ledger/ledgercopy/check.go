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
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger/pgledger"
)

// The manager's check at start on PostgreSQL: the outcomes of the CRD ledger
// are in the database, or a manifest paid before the move would be charged
// again.

// SkipMigrationCheckFlag is the manager's flag that starts it on PostgreSQL
// without CheckMigrated.
const SkipMigrationCheckFlag = "--ledger-postgres-skip-migration-check"

// checkBatch is how many keys CheckMigrated asks the database about at once.
const checkBatch = 1000

// NotMigratedError is CheckMigrated's answer when the PaymentLedger pages
// hold entries whose key the PostgreSQL ledger lacks.
type NotMigratedError struct {
	// Missing is how many entries of the pages the database lacks.
	Missing int
	// Entries is how many entries the pages hold.
	Entries int
	// Keys names the first few that are missing.
	Keys []string
}

// Error says how many are missing and what to do.
func (e *NotMigratedError) Error() string {
	return fmt.Sprintf("the PostgreSQL outcome ledger lacks %d of the %d outcomes recorded in this cluster's PaymentLedger pages "+
		"(such as %s): a job re-created from one of those manifests would be charged again. Copy them first, with the manager "+
		"running on either ledger: `manager ledger copy --from=crd --to=postgres --ledger-postgres-dsn-file=FILE` "+
		"(docs/postgres-ledger.md, \"Moving the ledger to PostgreSQL (and back)\"), then start the manager again; "+
		"or start it with %s to go on without them",
		e.Missing, e.Entries, strings.Join(e.Keys, ", "), SkipMigrationCheckFlag)
}

// CheckMigrated reports whether every entry of the PaymentLedger pages, read
// through pages (an API server reader, not a cache: the manager's
// APIReader), has an entry under its key in db: nil if so, a
// *NotMigratedError if not, another error if either did not answer. It
// reads the pages a few at a time and asks db about checkBatch keys a
// statement. An entry under the key with another fingerprint counts as
// there: that is for a copy's conflicts to show.
func CheckMigrated(ctx context.Context, pages client.Reader, db *pgledger.Ledger) error {
	res := &NotMigratedError{}
	keys := make([]string, 0, checkBatch)
	check := func() error {
		missing, err := db.Missing(ctx, keys)
		if err != nil {
			return err
		}
		res.Missing += len(missing)
		res.Keys = append(res.Keys, missing[:min(len(missing), examples-len(res.Keys))]...)
		keys = keys[:0]
		return nil
	}
	err := ledger.ReadAll(ctx, pages, func(e ledger.Entry) error {
		res.Entries++
		keys = append(keys, e.Key)
		if len(keys) < checkBatch {
			return nil
		}
		return check()
	})
	if err == nil && len(keys) > 0 {
		err = check()
	}
	switch {
	case err != nil:
		return fmt.Errorf("cannot check that the PostgreSQL ledger holds the CRD ledger's outcomes: %w", err)
	case res.Missing > 0:
		return res
	}
	return nil
}
