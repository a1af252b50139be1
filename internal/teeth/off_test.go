//go:build !campaignteeth

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

package teeth_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/teeth"
)

// TestNeverOnWithoutTheTag: in a build without the campaignteeth tag (the
// shipped one) no variant is on, and none can be switched on (Break does
// not exist there).
func TestNeverOnWithoutTheTag(t *testing.T) {
	g := NewWithT(t)
	g.Expect(teeth.All()).To(HaveLen(6))
	for _, v := range teeth.All() {
		g.Expect(teeth.On(v)).To(BeFalse(), "%s", v)
		g.Expect(v.String()).NotTo(Equal("unknown"), "every variant has a name")
	}
}
