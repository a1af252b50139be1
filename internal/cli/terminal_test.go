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

package cli_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	. "github.com/onsi/gomega"
)

// On a terminal, reconcile keeps one progress line, rewritten in place
// while the run waits and runs, and clears it before the summary. The
// command runs in a pseudo-terminal, as in a user's shell.
func TestReconcileProgressLineOnATerminal(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, "books-tty")
	createJob(t, ns, "invoice-1", 1000, "Completed")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A window that ends in a second waits for its end and the operator's
	// settle margin (settleMargin): the progress line has something to show.
	now := time.Now()
	cmd := exec.CommandContext(ctx, kubectl, "payments", "reconcile", "--name", "books-tty", "--provider", ns+"/stripe",
		"--namespaces", ns, "--from", now.Add(-5*time.Minute).UTC().Format(time.RFC3339), "--to", now.Add(time.Second).UTC().Format(time.RFC3339))
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"), "TERM=xterm")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 160})
	g.Expect(err).NotTo(HaveOccurred())
	defer tty.Close()
	var screen bytes.Buffer
	_, err = io.Copy(&screen, tty)
	// Linux answers EIO on the terminal's side once the command exited.
	if !errors.Is(err, syscall.EIO) {
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(cmd.Wait()).To(Succeed(), screen.String())
	out := screen.String()

	// Each frame returns to the line's start and clears it: \r ESC[K.
	frames := regexp.MustCompile(`\r\x1b\[K([|/\\-]) precon/books-tty \d+s, \d+ provider requests: ([^\r]*)`).FindAllStringSubmatch(out, -1)
	g.Expect(len(frames)).To(BeNumerically(">=", 2), "frames of the progress line in:\n%q", out)
	states := make([]string, 0, len(frames))
	for _, f := range frames {
		states = append(states, f[2])
	}
	g.Expect(states).To(ContainElement(ContainSubstring("Pending (WaitingForWindow): The window ends at")),
		"frames while the run waits for its window to settle")
	g.Expect(frames[0][1]).NotTo(Equal(frames[1][1]), "the spinner turns")
	g.Expect(out).NotTo(ContainSubstring("\n|"), "the progress line is never left behind as a line of its own")
	// The summary starts on a cleared line, after the last frame.
	g.Expect(out).To(MatchRegexp(`\r\x1b\[Kprecon/books-tty Completed: the books balance\r?\n`))
	g.Expect(out).To(MatchRegexp(`Matched:\s+1\r?\n`))
}
