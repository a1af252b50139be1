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

package controller

import "time"

// Client-side limits of the manager's requests to the API server, the
// defaults of --kube-api-qps and --kube-api-burst. A job costs four writes
// and no reads (reads come from the cache), so these allow well over a
// hundred jobs per second; the API server's Priority and Fairness, not the
// client, is what protects a shared control plane. See docs/operations.md.
const (
	DefaultKubeAPIQPS   = 500
	DefaultKubeAPIBurst = 1000
)

// DefaultLookupRequestsPerSecond limits a provider's lookup requests when
// spec.lookup.requestsPerSecond is unset: Stripe's search limit in live mode.
// One request looks up to payment.MaxLookupKeys keys up.
const DefaultLookupRequestsPerSecond = 20

// Lookup batching: a batch waits up to lookupBatchWindow for more keys
// unless it is full, and a result is reused for lookupResultTTL (a failure
// for lookupFailureTTL, or the provider's Retry-After) before the key is
// looked up again. At Stripe's live write limit (100 charges/s) keys come in
// at up to 100/s, so 200 ms fills a batch of 10: about 0.1 lookup request
// per job, for at most 200 ms more latency before a first charge. Jobs wait
// for their lookup without a worker, so throughput does not pay for it.
const (
	lookupBatchWindow = 200 * time.Millisecond
	lookupResultTTL   = 30 * time.Second
	lookupFailureTTL  = time.Second
	// lookupWakeBackstop requeues a job waiting for its lookup, in case
	// the wake-up is lost.
	lookupWakeBackstop = 10 * time.Second
)

// rateLimitNotice is how long a job waits in all for its provider's rate
// limit before its status says so (ReasonRateLimited); shorter waits only
// requeue.
const rateLimitNotice = 5 * time.Second
