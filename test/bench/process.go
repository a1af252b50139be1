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
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/testing/childproc"
)

// process is a child process of the benchmark: manager or sandbox.
type process = childproc.Process

// processes are every child the benchmark started, so that the end of the
// run can stop any that is left.
var processes struct {
	mu   sync.Mutex
	list []*process
}

// startProcess starts a child (see childproc.Start) and registers it.
func startProcess(name, bin, logPath string, env []string, stdout io.Writer, args ...string) (*process, error) {
	p, err := childproc.Start(name, bin, logPath, env, stdout, args...)
	if err != nil {
		return nil, err
	}
	track(p)
	return p, nil
}

// track registers a child, so that the end of the run stops it if it is
// left.
func track(p *process) {
	processes.mu.Lock()
	processes.list = append(processes.list, p)
	processes.mu.Unlock()
}

// stopAll stops every child still running and returns an error naming
// them.
func stopAll(grace time.Duration) error {
	processes.mu.Lock()
	list := append([]*process(nil), processes.list...)
	processes.mu.Unlock()
	var left []string
	for _, p := range list {
		if !p.Exited() {
			left = append(left, fmt.Sprintf("%s (pid %d)", p.Name, p.Pid()))
			p.Stop(grace)
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("stopped processes left running: %s", strings.Join(left, ", "))
	}
	return nil
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
