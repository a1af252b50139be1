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

// Package controllers holds the operator's reconcilers, one package each,
// and the envtest suite that runs them together against one control plane
// (its tests, package controllers_test):
//
//   - engine: the exactly-once payment protocol, once for every kind that
//     moves money (the Reconciler: claim, provider call, outcome, backoff,
//     guards, ledger, resolution), with the Reconciler's defaults, its
//     metrics and field indexes. A Kind supplies what differs.
//   - paymentjob: the PaymentJob kind, a charge.
//   - paymentrefund: the PaymentRefund kind, a refund, and the RefundWatch.
//   - paymentprovider: the PaymentProvider reconciler (Ready, the finalizer).
//     The adapters it keeps, which the engine resolves providers from, are
//     internal/providercache, beside this tree: no reconciler.
//   - paymentreconciliation: PaymentReconciliation runs, which read both
//     sides a slice at a time and compare them with internal/books; they
//     never charge.
//   - audit: the Auditor of the admission policies and the finished labels.
//   - ttl: the FinishedJobCollector.
//   - rewind: the watch for an etcd restored under the running manager.
//   - protocol: the engine's state machine as a table, with no API server.
//   - pgledger: the operator on the PostgreSQL ledger end to end (tests
//     only).
//
// The manager's own settings (its cache options, client limits and leader
// election) are pkg/operator's, which puts these reconcilers in a manager.
//
// With internal/providercache, it is the only place where Kubernetes
// objects and payment providers meet.
// `make manifests` turns the RBAC markers of the packages, and the ones
// below, into config/rbac/role.yaml. Secrets are read only from the
// manager's cache, which lists and watches the Secrets labelled for the
// operator: the manager never asks the API server for a Secret by name.
//
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
package controllers
