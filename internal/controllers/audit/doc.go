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

// Package audit holds the Auditor: it looks, at start and then every
// interval, for what would leave PaymentJobs and PaymentRefunds unseen
// without anyone knowing (the admission policies of config/policy missing or
// not enforced, PaymentJobs and PaymentRefunds with the finished label and no
// outcome), and reports it in
// gauges, logs and events. It is also the engine's AttributionPolicy: it
// checks whether the resolve-attribution policy is enforced. It registers
// paymentjob_admission_policies_missing,
// paymentjob_finished_label_without_outcome and
// paymentjob_audit_errors_total.
package audit
