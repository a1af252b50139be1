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

// Package controller holds the reconcilers of the operator: PaymentJob, which
// runs the exactly-once payment protocol, and PaymentProvider, which reports
// whether a provider can be used. It is the only package where Kubernetes
// objects and payment providers meet.
//
// `make manifests` turns the RBAC markers of the reconcilers, and the ones
// below, into config/rbac/role.yaml. Secrets are only read with get, one at a
// time: the manager never lists or watches Secrets.
//
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
package controller
