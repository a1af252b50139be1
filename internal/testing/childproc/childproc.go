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

// Package childproc runs the project's binaries (etcd and kube-apiserver
// aside: envtest starts those) as child processes: each in a process group of
// its own, with its output in a log file. The e2e suite, the benchmark and
// the local environment share it.
package childproc

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is a running or ended child process.
type Process struct {
	// Name names the process in errors.
	Name string
	// Log is the file that holds its standard output and error.
	Log string

	cmd  *exec.Cmd
	done chan struct{}
	// err is the result of Wait, set before done is closed.
	err error
}

// Start starts bin with args, this process's environment plus env, and its
// output in logPath. stdout, when set, also receives its standard output. The
// child gets a process group of its own: a Ctrl-C in the terminal reaches
// only the parent, which stops its children in order, and a kill reaches
// any grandchild.
func Start(name, bin, logPath string, env []string, stdout io.Writer, args ...string) (*Process, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s binary missing (make builds it): %w", name, err)
	}
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
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("cannot start %s: %w", name, err)
	}
	p := &Process{Name: name, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id, also the id of its process group.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
	default:
		return false
	}
	return true
}

// ExitCode is the process's exit code once it has Exited: -1 while it runs
// and when a signal ended it.
func (p *Process) ExitCode() int {
	if !p.Exited() {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// ExitError describes an end nobody asked for, with the last lines of the
// log. It is meant for a process that has Exited.
func (p *Process) ExitError() error {
	var waitErr error
	if p.Exited() {
		waitErr = p.err
	}
	return fmt.Errorf("%s (pid %d) exited unexpectedly (%v); last lines of %s:\n%s",
		p.Name, p.Pid(), waitErr, p.Log, Tail(p.Log, 20))
}

// Kill sends SIGKILL to the process group and waits for the process to end.
func (p *Process) Kill() {
	if p.Exited() {
		return
	}
	_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
	<-p.done
}

// Stop sends SIGTERM to the process group, and SIGKILL when the process has
// not ended after grace.
func (p *Process) Stop(grace time.Duration) {
	if p.Exited() {
		return
	}
	_ = syscall.Kill(-p.Pid(), syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
}

// ReadLog returns the process's log so far.
func (p *Process) ReadLog() string {
	b, _ := os.ReadFile(p.Log)
	return string(b)
}

// FreeLoopbackAddr returns 127.0.0.1:PORT with a port that was free a
// moment ago.
func FreeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("cannot find a free port: %w", err)
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

// LineSignal is an io.Writer that sends on Found, once, the rest of the
// first line that starts with a prefix: how a parent learns the address a
// child picked.
type LineSignal struct {
	prefix string
	found  chan string

	mu   sync.Mutex
	buf  []byte
	sent bool
}

// NewLineSignal watches for a line that starts with prefix.
func NewLineSignal(prefix string) *LineSignal {
	return &LineSignal{prefix: prefix, found: make(chan string, 1)}
}

// Found receives the rest of the line, trimmed.
func (w *LineSignal) Found() <-chan string { return w.found }

func (w *LineSignal) Write(b []byte) (int, error) {
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

// Tail returns the last n lines of a file, or "" when it cannot be read.
func Tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64*1024), 1024*1024)
	for s.Scan() {
		lines = append(lines, s.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
