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

// Package pgledger keeps the outcome ledger in PostgreSQL: the same entries
// as the CRD ledger of package ledger (ledger.Entry), one row each in the
// table paymentjob_outcomes, for a payment history that outgrows etcd.
//
// The semantics are the CRD ledger's:
//
//   - First outcome wins. The key is the table's primary key and Record
//     inserts with ON CONFLICT (key) DO NOTHING: a second outcome under a key
//     changes nothing, and Record returns once the entry is stored or once an
//     entry under its key is there.
//   - Group commit. Concurrent Records share one INSERT: one goroutine sends
//     the entries collected while the previous statement was in flight, at
//     most Options.MaxBatch of them, as arrays (unnest), in one statement.
//   - Retention by date: Prune deletes the entries older than
//     Options.Retention, a bounded batch per statement.
//   - Nothing per key in memory. Find and Has ask the database (one SELECT
//     by primary key); the heap does not grow with the table.
//
// Several clusters may share one database. Options.Cluster names the cluster
// that recorded a row, in the column cluster; it does not scope the key: the
// same key recorded by two clusters of a fleet is one entry, and the first
// outcome wins there too. That is what keeps the same manifest, applied to
// two clusters that share the database and the provider account, from being
// charged twice.
//
// The provider identity (api/v1alpha1 ProviderIdentity) is stored as one text
// column per field (provider_uid, provider_endpoint, provider_account,
// provider_mode, provider_key_scope), not as one jsonb column: the struct is
// small and fixed, reconciliation reads the ledger by account and date (a
// plain column can be indexed and compared without JSON operators), and a new
// field then needs a migration, which is the moment to decide what older rows
// hold; a round-trip test fails when a field is added and not stored.
//
// Every database error is wrapped. Those that mean the ledger did not answer
// (no connection, a connection lost, a timeout, a read-only server, a server
// shutting down or starting up) wrap ErrUnavailable too: a caller tells them
// apart with errors.Is, and must not take a ledger that did not answer for
// one that holds no entry. The DSN is never logged nor put in an error: it
// may hold a password.
//
// The schema is migrated by Migrate (New calls it) from the SQL files
// embedded from migrations/, under a PostgreSQL advisory lock. A tool that
// only reads (pkg/ledger) sets Options.ReadOnly: New then checks the schema
// (CheckSchema, ErrSchema) instead of migrating it, and the ledger refuses
// to write (ErrReadOnly).
//
// A manager opens it once and shares it:
//
//	l, err := pgledger.Open(ctx, dsn, pgledger.Options{Cluster: "eu-west-1"})
//	if err != nil {
//		return err // errors.Is(err, pgledger.ErrUnavailable): try again later
//	}
//	defer l.Close()
//	e, found, err := l.Find(ctx, "shop/order-7")
//	// err wrapping ErrUnavailable: the job waits; nothing is charged.
//	err = l.Record(ctx, ledger.Entry{Key: "shop/order-7", ...})
package pgledger
