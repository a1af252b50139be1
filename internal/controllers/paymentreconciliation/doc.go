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

// Package paymentreconciliation runs PaymentReconciliations: for one
// provider account and time window, it gathers the cluster's records
// (PaymentJobs and PaymentRefunds, finished ones read from the API server
// since the manager's cache leaves them out, and the outcome ledger's
// entries) and the provider's books (its list of charges, refunds and
// disputes, or, for a provider without a list, a lookup of the cluster's
// keys), compares them with internal/books, writes the report in
// PaymentReconciliationReport pages and the counts and the report's sha256
// in the status.
//
// A run only reads: no charge, refund or change to a job. It is re-run
// from the start if the manager restarts in the middle, which is harmless
// for the same reason. The provider requests of a run go through a token
// bucket of its own (spec.requestsPerSecond), apart from the charges' and
// the lookups', so a reconciliation never starves the payments.
package paymentreconciliation
