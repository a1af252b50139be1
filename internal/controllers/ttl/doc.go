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

// Package ttl holds the FinishedJobCollector: it deletes the PaymentJobs and
// PaymentRefunds that finished ttlSecondsAfterFinished ago (or the manager's
// default), once the ledger holds their outcome. It is the engine's
// Scheduler: the Reconciler hands it every object it finishes, and a sweep
// of the finished objects catches the rest. It registers
// paymentjob_ttl_deletions_total.
package ttl
