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

// Package books compares the cluster's record of the money it moved
// with the provider's books, and says, per charge and per refund, whether
// they agree and, where they do not, in which way and what a person should
// do about it.
//
// It is the pure part of a reconciliation run: no API server, no provider
// call. The caller gathers the two sides for one provider account and time
// window: Records from the PaymentJobs, the PaymentRefunds and the outcome
// ledger (a job deleted after its TTL is still in the ledger), Objects
// from the provider's list of charges and refunds created in the window
// (or, for a provider without a list, from the lookup of the cluster's
// keys). Compare returns one Finding per record and per provider object
// that no record accounts for, in a stable order, each joined to the job
// of the charge it concerns and to what is left of that charge (left.go);
// a Report holds them with
// their counts and renders the CSV and JSON that finance keeps, with the
// sha256 that proves which report a status speaks of.
//
// Reconciliation only reads. Nothing here charges, refunds or changes a
// job's outcome: a finding's Action names the existing path a person
// takes (a PaymentRefund, the resolve annotation, the provider's own
// dashboard).
package books
