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

package childproc_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/testing/childproc"
)

func TestStartSignalsAndStops(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	listening := childproc.NewLineSignal("listening on ")
	// The shell ignores SIGTERM only if told to; this one ends on it.
	p, err := childproc.Start("shell", "/bin/sh", filepath.Join(dir, "shell.log"), []string{"GREETING=hello"}, listening,
		"-c", `echo "$GREETING"; echo "listening on 127.0.0.1:4242 "; exec sleep 30`)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(p.Kill)

	g.Eventually(listening.Found(), 5*time.Second).Should(Receive(Equal("127.0.0.1:4242")))
	g.Expect(p.Exited()).To(BeFalse())
	g.Eventually(p.ReadLog, 5*time.Second).Should(ContainSubstring("hello\n"))

	start := time.Now()
	p.Stop(10 * time.Second)
	g.Expect(p.Exited()).To(BeTrue())
	g.Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second), "SIGTERM ended it, not the SIGKILL after the grace")
	g.Expect(p.Done()).To(BeClosed())
}

func TestStopKillsAfterTheGrace(t *testing.T) {
	g := NewWithT(t)
	p, err := childproc.Start("stubborn", "/bin/sh", filepath.Join(t.TempDir(), "stubborn.log"), nil, nil,
		"-c", `trap "" TERM; echo ready; while :; do sleep 1; done`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(p.ReadLog, 5*time.Second).Should(ContainSubstring("ready"))
	p.Stop(200 * time.Millisecond)
	g.Expect(p.Exited()).To(BeTrue())
}

func TestExitErrorCarriesTheLog(t *testing.T) {
	g := NewWithT(t)
	p, err := childproc.Start("failing", "/bin/sh", filepath.Join(t.TempDir(), "failing.log"), nil, nil,
		"-c", `for i in $(seq 1 30); do echo "line $i"; done; exit 3`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(p.Done(), 5*time.Second).Should(BeClosed())
	g.Expect(p.ExitCode()).To(Equal(3))
	msg := p.ExitError().Error()
	g.Expect(msg).To(ContainSubstring("failing (pid"))
	g.Expect(msg).To(ContainSubstring("exit status 3"))
	g.Expect(msg).To(ContainSubstring("line 30"))
	g.Expect(msg).NotTo(ContainSubstring("line 10\n"), "only the last 20 lines")
}

func TestStartRefusesAMissingBinary(t *testing.T) {
	g := NewWithT(t)
	_, err := childproc.Start("manager", filepath.Join(t.TempDir(), "manager"), filepath.Join(t.TempDir(), "m.log"), nil, nil)
	g.Expect(err).To(MatchError(ContainSubstring("manager binary missing")))
}

func TestTail(t *testing.T) {
	g := NewWithT(t)
	path := filepath.Join(t.TempDir(), "log")
	g.Expect(os.WriteFile(path, []byte("a\nb\nc\nd\n"), 0o600)).To(Succeed())
	g.Expect(childproc.Tail(path, 2)).To(Equal("c\nd"))
	g.Expect(childproc.Tail(path, 10)).To(Equal("a\nb\nc\nd"))
	g.Expect(childproc.Tail(filepath.Join(t.TempDir(), "missing"), 2)).To(BeEmpty())
}

func TestFreeLoopbackAddr(t *testing.T) {
	g := NewWithT(t)
	addr, err := childproc.FreeLoopbackAddr()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.HasPrefix(addr, "127.0.0.1:")).To(BeTrue(), addr)
}
