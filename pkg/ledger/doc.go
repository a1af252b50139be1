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

// Package ledger reads the paymentjob-operator's outcome ledger, the record
// of finished payments and refunds that outlives their PaymentJobs and
// PaymentRefunds, from either of its backends, and never writes to it:
//
//   - the PaymentLedger pages of the cluster (the default backend), with
//     NewCRDReader and a client that reads the API server directly;
//   - a PostgreSQL database (the operator's --ledger=postgres), with
//     OpenPostgres and the database's DSN.
//
// Both give a Reader: Find looks a key up, Each hands over the entries of a
// time window and a namespace a batch at a time, and CSVWriter writes them
// as CSV. SentKey and RefundKey turn a job's or a refund's key into the key
// the operator sent to the provider and recorded.
//
// An error that means the ledger did not answer (the database or the API
// server could not be reached, timed out, or is starting or shutting down)
// wraps ErrUnavailable; an error never holds the DSN, which may hold a
// password.
//
//	r, err := ledger.OpenPostgres(ctx, dsn)
//	if errors.Is(err, ledger.ErrUnavailable) {
//		return fmt.Errorf("ledger unreachable: %w", err)
//	}
//	defer r.Close()
//	entries, err := r.Find(ctx, ledger.SentKey("shop", "order-7"))
package ledger
