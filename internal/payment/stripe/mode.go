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

package stripe

import "strings"

// Mode is "live" or "test" for a Stripe secret or restricted key, and ""
// for anything else. A test-mode and a live-mode key of one account reach
// the same account id (GET /v1/account) but different books: a payment made
// with one is unknown to the other, so the mode is part of where a payment
// was made.
func Mode(apiKey string) string {
	for _, prefix := range []string{"sk_", "rk_"} {
		switch {
		case strings.HasPrefix(apiKey, prefix+"live_"):
			return "live"
		case strings.HasPrefix(apiKey, prefix+"test_"):
			return "test"
		}
	}
	return ""
}
