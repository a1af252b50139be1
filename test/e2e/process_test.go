//go:build e2e

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

package e2e

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is a child process in a process group of its own, with its
// stdout and stderr in a log file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// startProcess starts bin with args, the suite's environment plus env, and
// its output in logPath. stdout, when set, also receives its standard
// output.
func startProcess(name, bin, logPath string, env []string, stdout io.Writer, args ...string) (*process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if stdout != nil {
		cmd.Stdout = io.MultiWriter(logFile, stdout)
	}
	// A group of its own, so that a kill reaches any child too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("cannot start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	register(p)
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL to the process group and waits for the process to end.
func (p *process) kill() {
	if p.exited() {
		return
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	<-p.done
}

// stop sends SIGTERM to the process group, and SIGKILL when it has not
// ended after grace.
func (p *process) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.kill()
	}
}

// logContains reports whether the process's log holds s.
func (p *process) logContains(s string) bool {
	return strings.Contains(p.readLog(), s)
}

// logContainsFold reports whether the process's log holds s, ignoring case.
func (p *process) logContainsFold(s string) bool {
	return strings.Contains(strings.ToLower(p.readLog()), strings.ToLower(s))
}

// readLog returns the process's log so far.
func (p *process) readLog() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// lineSignal is an io.Writer that sends, once, the rest of the first line
// that starts with prefix.
type lineSignal struct {
	prefix string
	found  chan string

	mu   sync.Mutex
	buf  []byte
	sent bool
}

func newLineSignal(prefix string) *lineSignal {
	return &lineSignal{prefix: prefix, found: make(chan string, 1)}
}

func (w *lineSignal) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sent {
		return len(b), nil
	}
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		line := string(w.buf[:i])
		w.buf = w.buf[i+1:]
		if rest, ok := strings.CutPrefix(line, w.prefix); ok {
			w.sent, w.buf = true, nil
			w.found <- strings.TrimSpace(rest)
			return len(b), nil
		}
	}
}
