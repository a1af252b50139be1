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

// Package providercache turns a ready PaymentProvider into the
// payment.Provider that pays through it: the table of provider kinds (which
// spec field, which Secret key, which URLs, how the adapter is built), the
// adapters behind the egress policy, the one place a credential is read, and
// the ProviderCache that keeps one adapter, one token bucket and one lookup
// batcher per provider configuration, shared by all its payments. The
// engine resolves providers from it and compares their identities with it;
// the PaymentProvider reconciler refreshes it; the reconciliation and
// pkg/providerlookup read through it. It sits beside internal/controllers,
// not in it, because it imports no reconciler and several import it.
// It registers paymentjob_lookup_requests_total and
// paymentjob_lookup_keys_total.
package providercache
