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

package main

import (
	"bufio"
	"bytes"
	"errors"
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

// process is a child process in a process group of its own, with its
// stdout and stderr in a log file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	// err is the result of Wait, set before done is closed.
	err error
}

// processes are every child the benchmark started, so that the end of the
// run can stop any that is left.
var processes struct {
	mu   sync.Mutex
	list []*process
}

// startProcess starts bin with args, the benchmark's environment plus env,
// and its output in logPath. stdout, when set, also receives its standard
// output.
func startProcess(name, bin, logPath string, env []string, stdout io.Writer, args ...string) (*process, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s binary missing (make bench builds it): %w", name, err)
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
	// A group of its own: Ctrl-C reaches the benchmark, which stops the
	// children in order, and a kill reaches any grandchild.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("cannot start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	processes.mu.Lock()
	processes.list = append(processes.list, p)
	processes.mu.Unlock()
	go func() {
		p.err = cmd.Wait()
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

// exitError describes an unexpected end, with the last lines of the log.
func (p *process) exitError() error {
	return fmt.Errorf("%s (pid %d) exited unexpectedly (%v); last lines of %s:\n%s",
		p.name, p.pid(), p.err, p.log, tail(p.log, 20))
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
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
		<-p.done
	}
}

// stopAll stops every child still running and returns an error naming
// them.
func stopAll(grace time.Duration) error {
	processes.mu.Lock()
	list := append([]*process(nil), processes.list...)
	processes.mu.Unlock()
	var left []string
	for _, p := range list {
		if !p.exited() {
			left = append(left, fmt.Sprintf("%s (pid %d)", p.name, p.pid()))
			p.stop(grace)
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("stopped processes left running: %s", strings.Join(left, ", "))
	}
	return nil
}

// freeAddr returns 127.0.0.1:PORT with a port that was free a moment ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("cannot find a free port: %w", err)
	}
	addr := l.Addr().String()
	return addr, l.Close()
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

// tail returns the last n lines of a file.
func tail(path string, n int) string {
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

// fileSize returns the size of a file, 0 if it does not exist.
func fileSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// readFrom returns the bytes of a file from offset to its current end.
func readFrom(path string, offset int64) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}
