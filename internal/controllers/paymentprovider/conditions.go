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

package paymentprovider

import paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"

// Reasons of a PaymentProvider's Ready condition and of its events: the
// API's constants (api/v1alpha1/reasons.go), under the names this package
// has always used.
const (
	// ReasonReady, ReasonSecretNotFound and ReasonSecretKeyMissing are the
	// reasons of a PaymentProvider's Ready condition. SecretNotFound also
	// covers a Secret without the label payments.idempotency.dev/credentials:
	// "true", which the operator never reads.
	ReasonReady            = paymentsv1alpha1.ReasonReady
	ReasonSecretNotFound   = paymentsv1alpha1.ReasonSecretNotFound
	ReasonSecretKeyMissing = paymentsv1alpha1.ReasonSecretKeyMissing
	// ReasonSecretReadFailed: the Secret could not be read; retried with
	// backoff.
	ReasonSecretReadFailed = paymentsv1alpha1.ReasonSecretReadFailed
	// ReasonEndpointRefused: the provider's URL is not allowed by the
	// manager's egress policy (https only, no link-local, loopback or
	// private addresses unless its host is in --insecure-provider-hosts).
	ReasonEndpointRefused = paymentsv1alpha1.ReasonEndpointRefused
	// ReasonInvalidConfiguration: the provider's adapter cannot be built
	// from its spec and credential.
	ReasonInvalidConfiguration = paymentsv1alpha1.ReasonInvalidConfiguration
)
