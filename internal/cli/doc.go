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

// Package cli is kubectl payments, the paymentjob-operator's kubectl
// plugin (cmd/kubectl-payments): commands that read and act on
// PaymentJobs, PaymentRefunds, the outcome ledger and reconciliations for
// the people who run payments (docs/kubectl-payments.md).
//
// It is a client of the API server and of the operator's public packages
// only (api/v1alpha1, pkg/ledger, pkg/providerlookup), as any user's
// program could be: it never imports the operator's reconcilers, and it
// changes nothing that kubectl could not (an annotation, spec.suspend, a
// new PaymentRefund or PaymentReconciliation).
package cli
