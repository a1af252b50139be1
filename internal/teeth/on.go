//go:build campaignteeth

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

package teeth

import "sync/atomic"

// on holds the variants switched on, one bit each. Reconcilers read it
// from their workers while a test switches it, hence the atomic.
var on atomic.Uint64

// On reports whether v is switched on.
func On(v Variant) bool { return on.Load()&(1<<v) != 0 }

// Break switches the variants vs on, for the whole process, and returns
// what switches them back off. Variants are process-wide: a test that
// breaks one must not run in parallel with tests that expect the protocol
// whole.
//
//	t.Cleanup(teeth.Break(teeth.UnguardedClaim))
func Break(vs ...Variant) (restore func()) {
	var bits uint64
	for _, v := range vs {
		bits |= 1 << v
	}
	on.Or(bits)
	return func() { on.And(^bits) }
}
