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

// Package operator puts the paymentjob-operator into a controller-runtime
// manager. Setup adds, as Options configure them: the engine with its two
// kinds (PaymentJob, a charge; PaymentRefund, a refund) and the refund
// watch, the PaymentProvider reconciler and the provider adapters behind
// the egress policy (internal/providercache), the outcome ledger (on
// PaymentLedger objects or PostgreSQL) with the collector of finished
// objects, the PaymentReconciliation runs, the audit of the admission
// policies, and the watch for an etcd restored under the manager
// (ErrEtcdRestored).
//
// The manager's own settings are here too, for whoever builds the manager:
// CacheOptions (finished objects and foreign Secrets stay out of its
// cache), the client's DefaultKubeAPIQPS and DefaultKubeAPIBurst, and the
// LeaderElectionID its replicas share. The manager binary (cmd/main.go) is
// this package and its flags; pkg/paymentjobtest runs the same in a test
// process. The reconcilers themselves stay in internal/: Options, Setup and
// these settings are the whole surface.
package operator
