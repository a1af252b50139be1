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

package pgserver_test

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/testing/pgserver"
)

// A program (hack/localenv, test/bench) starts the server through
// Program: a failure ends the call with an error, cleanups run last first
// and once, and a method the server never calls is an error, not a crash.
func TestProgramTurnsFailuresIntoErrors(t *testing.T) {
	g := NewWithT(t)
	tb := &pgserver.Program{}
	var order []string
	err := tb.Do(func() {
		tb.Helper()
		tb.Cleanup(func() { order = append(order, "first") })
		tb.Cleanup(func() { order = append(order, "second"); tb.Errorf("cannot remove %s", "the folder") })
		tb.Fatalf("initdb failed (%v)", errors.New("exit status 1"))
		order = append(order, "after Fatalf")
	})
	g.Expect(err).To(MatchError("initdb failed (exit status 1)"))
	g.Expect(order).To(BeEmpty(), "Fatalf ends the call")
	g.Expect(tb.Close()).To(MatchError("cannot remove the folder"))
	g.Expect(order).To(Equal([]string{"second", "first"}), "last registered, first run")
	g.Expect(tb.Close()).To(MatchError("cannot remove the folder"), "each cleanup runs once")
	g.Expect(order).To(HaveLen(2))

	g.Expect(tb.Do(func() {})).To(Succeed())
	err = tb.Do(func() { _ = tb.Name() })
	g.Expect(err).To(MatchError(ContainSubstring("a testing.TB method Program lacks")), "a method pgserver never called")

	tb = &pgserver.Program{}
	tb.Cleanup(func() { tb.Fatalf("cannot stop the server") })
	g.Expect(tb.Close()).To(MatchError("cannot stop the server"), "a Fatalf in a cleanup is reported too")
}
