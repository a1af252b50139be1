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

package pgledger

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The durability an acknowledged outcome needs. Once Record returns, the
// job's finalizer comes off and its TTL may delete it: the row is then the
// only record that the payment was made. A primary that acknowledges a
// commit before a standby holds it loses that row in a failover, and a
// manifest applied again is charged again. So the manager asks, at start,
// that a commit wait for a synchronous standby.

// ErrNotSynchronous is wrapped by the error of CheckSynchronous, and of New
// and Open with Options.RequireSynchronous, when the database acknowledges
// a commit before any standby holds it.
var ErrNotSynchronous = errors.New("the outcome ledger's database acknowledges a commit before a synchronous standby holds it")

// syncCommitLevels are the values of synchronous_commit with which a commit
// waits for the synchronous standbys (when there are any): on and
// remote_apply wait until a standby has flushed (and applied) the commit,
// remote_write until it has written it. off and local do not wait.
var syncCommitLevels = []string{"on", "remote_write", "remote_apply"}

// CheckSynchronous checks that the database the pool reaches waits, before
// it acknowledges a commit of this ledger's sessions, until a synchronous
// standby holds it: synchronous_standby_names is set and
// synchronous_commit is on, remote_write or remote_apply. Otherwise the
// error wraps ErrNotSynchronous and says which setting is missing. A
// database that does not answer is an error wrapping ErrUnavailable.
func CheckSynchronous(ctx context.Context, pool *pgxpool.Pool) error {
	var names, commit string
	err := pool.QueryRow(ctx, "SELECT current_setting('synchronous_standby_names'), current_setting('synchronous_commit')").
		Scan(&names, &commit)
	if err != nil {
		return wrapErr("read the outcome ledger's database's replication settings", err)
	}
	switch {
	case names == "":
		return fmt.Errorf("%w: synchronous_standby_names is empty, so the primary does not wait for any standby", ErrNotSynchronous)
	case !slices.Contains(syncCommitLevels, commit):
		return fmt.Errorf("%w: synchronous_commit is %q for the ledger's sessions, so a commit does not wait for the standbys",
			ErrNotSynchronous, commit)
	}
	return nil
}
