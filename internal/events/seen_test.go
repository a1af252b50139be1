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

package events

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

// TestEventIDsAreRememberedForTheirTTLAndBounded: an id is handled once
// for 72 hours, per provider, and the oldest is forgotten beyond the bound.
func TestEventIDsAreRememberedForTheirTTLAndBounded(t *testing.T) {
	g := NewWithT(t)
	a, b := types.NamespacedName{Namespace: "n", Name: "a"}, types.NamespacedName{Namespace: "n", Name: "b"}
	s := seenIDs{ttl: DefaultRemember, perProvider: 2}
	g.Expect(s.first(a, "evt_1", testNow)).To(BeTrue())
	g.Expect(s.first(a, "evt_1", testNow.Add(DefaultRemember-time.Second))).To(BeFalse(), "a Stripe retry on its third day")
	g.Expect(s.first(b, "evt_1", testNow)).To(BeTrue(), "another provider's memory is its own")
	g.Expect(s.first(a, "evt_1", testNow.Add(DefaultRemember))).To(BeTrue(), "forgotten after 72 hours")

	g.Expect(s.first(a, "evt_2", testNow.Add(DefaultRemember))).To(BeTrue())
	g.Expect(s.first(a, "evt_3", testNow.Add(DefaultRemember))).To(BeTrue())
	g.Expect(s.first(a, "evt_1", testNow.Add(DefaultRemember))).To(BeTrue(), "the oldest of three, beyond the bound of two")
	g.Expect(s.first(a, "evt_3", testNow.Add(DefaultRemember))).To(BeFalse())
}
