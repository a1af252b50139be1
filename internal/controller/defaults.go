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

// Client-side limits of the manager's requests to the API server, the
// defaults of --kube-api-qps and --kube-api-burst. A job costs four writes
// and no reads (reads come from the cache), so these allow well over a
// hundred jobs per second; the API server's Priority and Fairness, not the
// client, is what protects a shared control plane. See docs/operations.md.
const (
	DefaultKubeAPIQPS   = 500
	DefaultKubeAPIBurst = 1000
)
