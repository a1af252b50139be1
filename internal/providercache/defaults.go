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

package providercache

import "time"

// The cache's defaults. The manager's flags and the engine's settings are
// in the engine's defaults.go.

// KeptAdapterTTL is how long a retired adapter (its provider deleted, or its
// credentials gone) stays in memory after a Processing job last used it.
const KeptAdapterTTL = time.Hour

// DefaultLookupRequestsPerSecond limits a provider's lookup requests when
// spec.lookup.requestsPerSecond is unset: Stripe's search limit in live mode.
// One request looks up to payment.MaxLookupKeys keys up.
const DefaultLookupRequestsPerSecond = 20

// Lookup batching: a batch waits up to lookupBatchWindow for more keys
// unless it is full, and a result is reused for lookupResultTTL (a failure
// for LookupFailureTTL, or the provider's Retry-After) before the key is
// looked up again. At Stripe's live write limit (100 charges/s) keys come in
// at up to 100/s, so 200 ms fills a batch of 10: about 0.1 lookup request
// per job, for at most 200 ms more latency before a first charge. Jobs wait
// for their lookup without a worker, so throughput does not pay for it.
const (
	lookupBatchWindow = 200 * time.Millisecond
	lookupResultTTL   = 30 * time.Second
	// LookupFailureTTL is how long a failed lookup is kept, at least: a
	// job whose lookup failed waits as long before it asks again.
	LookupFailureTTL = time.Second
)
